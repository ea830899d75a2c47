/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workload.h -- the deterministic randomized workload shared by the reliability tests
 * (tests/crash, tests/fault, tests/corrupt): block h of seed s is always the same list of
 * transactions of puts and deletes over a fixed key space, so a parent process can follow a
 * child that is killed at any time. Also a trivial model (key -> value) and a "twin": a
 * database that applies the same blocks without faults, giving the expected root of every
 * height. Header-only (static functions); single-threaded.
 */
#ifndef QM_WORKLOAD_H
#define QM_WORKLOAD_H

#include "qmdb.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct wl_model {
    uint64_t seed;
    uint32_t nkeys;
    uint64_t height;
    unsigned char **val; /* NULL: absent */
    uint32_t *vlen;
} wl_model;

static inline uint64_t
wl_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

typedef struct wl_rng {
    uint64_t s;
} wl_rng;

static inline uint64_t
wl_next(wl_rng *r)
{
    r->s = wl_mix(r->s);
    return r->s;
}

/* Key i: "k" + 4 bytes of i + 0..6 filler bytes (lengths vary). */
static inline size_t
wl_key(uint32_t i, unsigned char *k)
{
    size_t n = 5 + i % 7;
    k[0] = 'k';
    k[1] = (unsigned char)(i >> 24);
    k[2] = (unsigned char)(i >> 16);
    k[3] = (unsigned char)(i >> 8);
    k[4] = (unsigned char)i;
    for (size_t j = 5; j < n; j++)
        k[j] = (unsigned char)('a' + j);
    return n;
}

static inline void
wl_model_init(wl_model *m, uint64_t seed, uint32_t nkeys)
{
    memset(m, 0, sizeof(*m));
    m->seed = seed;
    m->nkeys = nkeys;
    m->val = calloc(nkeys, sizeof(*m->val));
    m->vlen = calloc(nkeys, sizeof(*m->vlen));
    if (!m->val || !m->vlen)
        abort();
}

static inline void
wl_model_free(wl_model *m)
{
    for (uint32_t i = 0; m->val && i < m->nkeys; i++)
        free(m->val[i]);
    free(m->val);
    free(m->vlen);
    memset(m, 0, sizeof(*m));
}

/*
 * Builds block h into b (if not NULL) and applies it to m (if not NULL; m->height must be
 * h - 1). Applying the operations in order gives the block's result (last op wins inside a
 * transaction, and transactions apply in order).
 */
static inline void
wl_block(uint64_t seed, uint32_t nkeys, uint64_t h, qmdb_batch *b, wl_model *m)
{
    wl_rng r = {wl_mix(seed * 1000003u + h)};
    static unsigned char val[4096];
    unsigned char key[16];
    if (b)
        qmdb_batch_reset(b);
    unsigned ntx = (wl_next(&r) % 16 == 0) ? 0 : 1 + (unsigned)(wl_next(&r) % 3);
    for (unsigned t = 0; t < ntx; t++) {
        if (b && t > 0 && qmdb_batch_tx(b) != 0)
            abort();
        unsigned nops = (unsigned)(wl_next(&r) % 40);
        for (unsigned o = 0; o < nops; o++) {
            uint32_t ki = (uint32_t)(wl_next(&r) % nkeys);
            size_t kl = wl_key(ki, key);
            bool put = wl_next(&r) % 10 < 7;
            if (put) {
                size_t vl = 1 + wl_next(&r) % 40;
                if (wl_next(&r) % 64 == 0)
                    vl = 500 + wl_next(&r) % 3000;
                uint64_t x = wl_next(&r);
                for (size_t j = 0; j < vl; j++) {
                    if (j % 8 == 0)
                        x = wl_mix(x);
                    val[j] = (unsigned char)(x >> (8 * (j % 8)));
                }
                if (b && qmdb_batch_put(b, key, kl, val, vl) != 0)
                    abort();
                if (m) {
                    free(m->val[ki]);
                    m->val[ki] = malloc(vl);
                    if (!m->val[ki])
                        abort();
                    memcpy(m->val[ki], val, vl);
                    m->vlen[ki] = (uint32_t)vl;
                }
            } else {
                if (b && qmdb_batch_del(b, key, kl) != 0)
                    abort();
                if (m) {
                    free(m->val[ki]);
                    m->val[ki] = NULL;
                    m->vlen[ki] = 0;
                }
            }
        }
    }
    if (m)
        m->height = h;
}

/* Advances the model to height h (>= its height). */
static inline void
wl_model_advance(wl_model *m, uint64_t h)
{
    while (m->height < h)
        wl_block(m->seed, m->nkeys, m->height + 1, NULL, m);
}

/* Number of keys whose value in db differs from the model (errors count as differences;
 * the first few are printed). */
static inline long
wl_model_diff(qmdb_db *db, const wl_model *m, const char *what)
{
    long bad = 0;
    unsigned char key[16];
    static unsigned char buf[4096];
    for (uint32_t i = 0; i < m->nkeys; i++) {
        size_t kl = wl_key(i, key), vl = 0;
        int rc = qmdb_get(db, key, kl, buf, sizeof(buf), &vl);
        bool ok = m->val[i] ? (rc == 0 && vl == m->vlen[i] && memcmp(buf, m->val[i], vl) == 0)
                            : rc == QMDB_NOTFOUND;
        if (!ok && bad++ < 5)
            fprintf(stderr, "%s: key %u at height %llu: rc %d (%s), vlen %zu, model %s %u\n", what,
                    i, (unsigned long long)m->height, rc, qmdb_strerror(rc), vl,
                    m->val[i] ? "len" : "absent", m->vlen[i]);
    }
    return bad;
}

/* The twin: a fault-free database following the same blocks; roots[h] is the root of h. */
typedef struct wl_twin {
    qmdb_db *db;
    qmdb_batch *b;
    uint64_t seed;
    uint32_t nkeys;
    unsigned char (*roots)[32];
    uint64_t cap;
} wl_twin;

static inline int
wl_twin_open(wl_twin *t, const char *dir, const qmdb_options *o, uint64_t seed, uint32_t nkeys)
{
    memset(t, 0, sizeof(*t));
    t->seed = seed;
    t->nkeys = nkeys;
    int rc = qmdb_create(dir, o);
    if (!rc)
        rc = qmdb_open(dir, o, &t->db);
    if (!rc)
        rc = qmdb_batch_new(&t->b);
    t->cap = 1024;
    t->roots = malloc(t->cap * 32);
    if (!rc && (!t->roots || qmdb_root(t->db, 0, t->roots[0]) != 0))
        rc = -1;
    return rc;
}

/* Root of height h (advancing the twin as needed). */
static inline const unsigned char *
wl_twin_root(wl_twin *t, uint64_t h)
{
    while (qmdb_height(t->db) < h) {
        uint64_t n = qmdb_height(t->db) + 1;
        if (n >= t->cap) {
            t->cap *= 2;
            t->roots = realloc(t->roots, t->cap * 32);
            if (!t->roots)
                abort();
        }
        wl_block(t->seed, t->nkeys, n, t->b, NULL);
        int rc = qmdb_commit(t->db, n, t->b, t->roots[n]);
        if (rc) {
            fprintf(stderr, "twin commit %llu: %s\n", (unsigned long long)n, qmdb_strerror(rc));
            abort();
        }
    }
    return t->roots[h];
}

static inline void
wl_twin_close(wl_twin *t)
{
    qmdb_batch_free(t->b);
    qmdb_close(t->db);
    free(t->roots);
    memset(t, 0, sizeof(*t));
}

/* Small segments, tiny compaction threshold (1 with 1/1: every update compacts) and short
 * history, so segment rollover, compaction and pruning all happen within a few hundred
 * blocks. */
static inline void
wl_options(qmdb_options *o)
{
    qmdb_options_init(o);
    o->compact_thres = 1;
    o->utilization_ratio = 1;
    o->utilization_div = 1;
    o->history_blocks = 3;
    o->entry_segment_bytes = 65536;
    o->twig_segment_bytes = 128 * 1024;
}

/* A scratch directory on tmpfs when there is one (fsync is free there; the tests simulate
 * power loss themselves). */
static inline void
wl_tmpdir(char *out, size_t cap, const char *tag)
{
    const char *base = getenv("QMDB_TEST_TMP");
    if (!base)
        base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(out, cap, "%s/qmdb-%s-%d", base, tag, (int)getpid());
}

/* Removes a database directory (files only, then the directory). */
static inline void
wl_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char path[4096];
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

#endif /* QM_WORKLOAD_H */
