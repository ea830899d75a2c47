/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpt_selftest.c -- CTest `mpt_selftest`: checks the MPT baseline (mpt.c) against a naive
 * reference. After every block the trie's root must equal the root that a simple recursive
 * builder computes from scratch over the sorted live paths, with its own implementation of
 * the node encoding documented in mpt.h. Covers crafted paths with long shared prefixes
 * (deep extensions, leaves with empty paths, deletes that collapse branches into extensions
 * and leaves), hashed keys with overwrites of different value lengths, deletes of absent
 * keys, get of present and absent keys inside and after a block, a tiny node cache (every
 * load goes to RocksDB), close and reopen, and the qmdb-bench adapter. After every commit
 * and every reopen the stored state is compared too: the path-keyed node entries must be
 * exactly the reference trie's nodes (no stale path left by a collapse) and the flat table
 * exactly the live keys and values; hand-made collapses check the stored paths by name.
 * Usage: mpt_selftest DIR (a scratch directory, deleted and recreated). Single-threaded.
 * Owns: the reference trie builder and the checks above.
 */
#include "engines.h"
#include "mpt.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int failures;

#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            if (++failures > 20)                                                  \
                exit(1);                                                          \
        }                                                                         \
    } while (0)

/* ------------------------------------------------------------ reference model */

#define MAXV 300
typedef struct ent {
    uint8_t path[32];
    uint8_t val[MAXV];
    size_t vlen;
    int live;
} ent;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t
rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint8_t
nib(const uint8_t *path, int i)
{
    return (uint8_t)((i & 1) ? (path[i / 2] & 15) : (path[i / 2] >> 4));
}

/* The reference trie's nodes as (path key, hash): path key = nibble count, then the packed
 * nibbles zero-padded to 33 bytes (the RocksDB node key of mpt.h minus its 'n' byte). */
typedef struct refnode {
    uint8_t k[33];
    uint8_t h[32];
} refnode;
static refnode *refnodes;
static size_t nrefnodes, caprefnodes;

static void
record_node(const uint8_t *path, int depth, const uint8_t h[32])
{
    if (nrefnodes == caprefnodes) {
        caprefnodes = caprefnodes ? 2 * caprefnodes : 1024;
        refnodes = realloc(refnodes, caprefnodes * sizeof(*refnodes));
        if (!refnodes)
            exit(1);
    }
    refnode *r = &refnodes[nrefnodes++];
    memset(r->k, 0, sizeof(r->k));
    r->k[0] = (uint8_t)depth;
    memcpy(r->k + 1, path, (size_t)(depth + 1) / 2);
    if (depth & 1)
        r->k[1 + depth / 2] &= 0xf0;
    memcpy(r->h, h, 32);
}

/* Reference encodings, written from the format in mpt.h. */
static void
ref_hash_leaf(const ent *e, int depth, uint8_t out[32])
{
    uint8_t buf[2 + 32 + 2 + MAXV];
    size_t n = 0;
    int plen = 64 - depth;
    buf[n++] = 0;
    buf[n++] = (uint8_t)plen;
    memset(buf + n, 0, (size_t)(plen + 1) / 2);
    for (int i = 0; i < plen; i++) {
        uint8_t x = nib(e->path, depth + i);
        buf[n + (size_t)i / 2] |= (uint8_t)((i & 1) ? x : x << 4);
    }
    n += (size_t)(plen + 1) / 2;
    if (e->vlen < 128) {
        buf[n++] = (uint8_t)e->vlen;
    } else {
        buf[n++] = (uint8_t)(0x80 | (e->vlen & 0x7f));
        buf[n++] = (uint8_t)(e->vlen >> 7);
    }
    memcpy(buf + n, e->val, e->vlen);
    SHA256(buf, n + e->vlen, out);
    record_node(e->path, depth, out);
}

/* Root hash of the subtrie holding sorted entries v[lo, hi) (hi > lo), all sharing their
 * first depth nibbles. */
static void
ref_build(ent *const *v, size_t lo, size_t hi, int depth, uint8_t out[32])
{
    if (hi - lo == 1) {
        ref_hash_leaf(v[lo], depth, out);
        return;
    }
    int c = 0; /* common prefix beyond depth: first and last entries bound it (sorted) */
    while (nib(v[lo]->path, depth + c) == nib(v[hi - 1]->path, depth + c))
        c++;
    uint8_t child[32];
    if (c > 0) {
        ref_build(v, lo, hi, depth + c, child);
        uint8_t buf[2 + 32 + 32];
        size_t n = 0;
        buf[n++] = 1;
        buf[n++] = (uint8_t)c;
        memset(buf + n, 0, (size_t)(c + 1) / 2);
        for (int i = 0; i < c; i++) {
            uint8_t x = nib(v[lo]->path, depth + i);
            buf[n + (size_t)i / 2] |= (uint8_t)((i & 1) ? x : x << 4);
        }
        n += (size_t)(c + 1) / 2;
        memcpy(buf + n, child, 32);
        SHA256(buf, n + 32, out);
        record_node(v[lo]->path, depth, out);
        return;
    }
    uint8_t buf[3 + 16 * 32 + 1];
    size_t n = 3;
    unsigned bm = 0;
    size_t i = lo;
    while (i < hi) {
        uint8_t x = nib(v[i]->path, depth);
        size_t j = i;
        while (j < hi && nib(v[j]->path, depth) == x)
            j++;
        ref_build(v, i, j, depth + 1, buf + n);
        n += 32;
        bm |= 1u << x;
        i = j;
    }
    buf[0] = 2;
    buf[1] = (uint8_t)(bm & 0xff);
    buf[2] = (uint8_t)(bm >> 8);
    buf[n++] = 0;
    SHA256(buf, n, out);
    record_node(v[lo]->path, depth, out);
}

static int
cmp_ent(const void *a, const void *b)
{
    return memcmp((*(ent *const *)a)->path, (*(ent *const *)b)->path, 32);
}

/* Computes the reference root over the live entries (and the reference nodes). */
static void
ref_root(ent *es, size_t n, uint8_t out[32], size_t *live)
{
    nrefnodes = 0;
    ent **v = malloc((n ? n : 1) * sizeof(*v));
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (es[i].live)
            v[k++] = &es[i];
    *live = k;
    if (k == 0) {
        SHA256((const uint8_t *)"", 0, out);
    } else {
        qsort(v, k, sizeof(*v), cmp_ent);
        ref_build(v, 0, k, 0, out);
    }
    free(v);
}

/* ------------------------------------------------------------ driving the trie */

static void
rand_val(ent *e)
{
    e->vlen = rnd() % 8 == 0 ? 129 + rnd() % (MAXV - 129) : 1 + rnd() % 40;
    for (size_t i = 0; i < e->vlen; i++)
        e->val[i] = (uint8_t)rnd();
}

static void
check_gets(mpt *t, ent *es, size_t n, int samples)
{
    uint8_t buf[MAXV];
    for (int s = 0; s < samples; s++) {
        ent *e = &es[rnd() % n];
        size_t vl = 0;
        int rc = mpt_get_path(t, e->path, buf, sizeof(buf), &vl);
        if (e->live) {
            CHECK(rc == 0);
            CHECK(rc == 0 && vl == e->vlen && memcmp(buf, e->val, vl) == 0);
        } else {
            CHECK(rc == 1);
        }
    }
    uint8_t absent[32];
    for (int s = 0; s < samples / 4; s++) { /* never-inserted path next to a live one */
        memcpy(absent, es[rnd() % n].path, 32);
        absent[31] ^= (uint8_t)(1 + rnd() % 255);
        int known = 0;
        for (size_t i = 0; i < n; i++)
            if (es[i].live && memcmp(es[i].path, absent, 32) == 0)
                known = 1;
        size_t vl;
        if (!known)
            CHECK(mpt_get_path(t, absent, buf, sizeof(buf), &vl) == 1);
    }
}

/* ------------------------------------------------------------ stored state */

typedef struct scanned {
    refnode *v;
    size_t n, cap;
    int bad;
} scanned;

static int
scan_node(void *ctx, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    scanned *s = ctx;
    if (kl < 1 || k[0] > 64 || kl != 1 + (size_t)(k[0] + 1) / 2) {
        s->bad++;
        return 0;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
        if (!s->v)
            exit(1);
    }
    refnode *r = &s->v[s->n++];
    memset(r->k, 0, sizeof(r->k));
    memcpy(r->k, k, kl);
    SHA256(v, vl, r->h);
    return 0;
}

static int
cmp_refnode(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(refnode));
}

typedef struct flatscan {
    ent *const *live;
    size_t nlive, i;
    int bad;
} flatscan;

static int
scan_flat(void *ctx, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    flatscan *f = ctx;
    if (kl != 32 || f->i >= f->nlive) {
        f->bad++;
        return 0;
    }
    const ent *e = f->live[f->i++];
    if (memcmp(k, e->path, 32) != 0 || vl != e->vlen || memcmp(v, e->val, vl) != 0)
        f->bad++;
    return 0;
}

/* The stored state must be exactly the reference trie and the live set: the 'n' entries
 * are the reference trie's nodes (same set of paths, each entry hashing to the reference
 * node's hash at that path, so no stale path survives a collapse), and the 'f' entries are
 * the live keys with their values. */
static void
check_storage(mpt *t, ent *es, size_t n)
{
    uint8_t want[32];
    size_t live;
    ref_root(es, n, want, &live);
    scanned sc = {0};
    CHECK(mpt_scan(t, 'n', scan_node, &sc) == 0);
    CHECK(sc.bad == 0);
    if (nrefnodes)
        qsort(refnodes, nrefnodes, sizeof(*refnodes), cmp_refnode);
    if (sc.n)
        qsort(sc.v, sc.n, sizeof(*sc.v), cmp_refnode);
    CHECK(sc.n == nrefnodes);
    if (sc.n == nrefnodes)
        CHECK(nrefnodes == 0 || memcmp(sc.v, refnodes, nrefnodes * sizeof(*refnodes)) == 0);
    free(sc.v);

    ent **v = malloc((n ? n : 1) * sizeof(*v));
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (es[i].live)
            v[k++] = &es[i];
    if (k)
        qsort(v, k, sizeof(*v), cmp_ent);
    flatscan fs = {.live = v, .nlive = k};
    CHECK(mpt_scan(t, 'f', scan_flat, &fs) == 0);
    CHECK(fs.bad == 0 && fs.i == k);
    free(v);
}

static void
commit_and_compare(mpt *t, ent *es, size_t n, uint64_t height)
{
    uint8_t root[32], want[32], r2[32];
    size_t live;
    CHECK(mpt_commit(t, height, root) == 0);
    ref_root(es, n, want, &live);
    CHECK(memcmp(root, want, 32) == 0);
    mpt_root(t, r2);
    CHECK(memcmp(root, r2, 32) == 0);
    mpt_stats s;
    mpt_get_stats(t, &s);
    CHECK(s.count == live);
    CHECK(s.height == height);
    CHECK(s.dirty_nodes == 0);
    check_storage(t, es, n);
}

/* One block of random operations over es[0..n): puts (new keys and overwrites), deletes of
 * live keys, deletes of absent keys (must return 1). */
static void
random_block(mpt *t, ent *es, size_t n, int ops, int del_pct)
{
    for (int k = 0; k < ops; k++) {
        ent *e = &es[rnd() % n];
        if ((int)(rnd() % 100) < del_pct) {
            int rc = mpt_del_path(t, e->path);
            CHECK(rc == (e->live ? 0 : 1));
            e->live = 0;
        } else {
            rand_val(e);
            CHECK(mpt_put_path(t, e->path, e->val, e->vlen) == 0);
            e->live = 1;
        }
    }
}

static mpt *
open_trie(const char *dir, size_t node_cache)
{
    mpt_opts o = {.durable = 0, .node_cache_bytes = node_cache, .block_cache_bytes = 1 << 20};
    char err[256];
    mpt *t = NULL;
    if (mpt_open(&t, dir, &o, err, sizeof(err)) != 0) {
        fprintf(stderr, "mpt_open %s: %s\n", dir, err);
        exit(1);
    }
    return t;
}

static void
rm_dir(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* Crafted paths: a few random bases, each path differing from its base in one or two
 * nibbles at chosen depths, so the trie has long extensions, deep branches and leaves with
 * empty remaining paths; then everything is deleted again. */
static void
test_crafted(const char *dir)
{
    enum { N = 400 };
    ent *es = calloc(N, sizeof(*es));
    uint8_t base[4][32];
    for (int b = 0; b < 4; b++)
        for (int i = 0; i < 32; i++)
            base[b][i] = (uint8_t)rnd();
    static const int depths[] = {0, 1, 2, 7, 30, 31, 62, 63};
    for (size_t i = 0; i < N; i++) {
        memcpy(es[i].path, base[rnd() % 4], 32);
        for (int m = 0; m < 1 + (int)(rnd() % 2); m++) {
            int d = depths[rnd() % 8];
            uint8_t x = (uint8_t)(rnd() % 16);
            uint8_t *p = &es[i].path[d / 2];
            *p = (d & 1) ? (uint8_t)((*p & 0xf0) | x) : (uint8_t)((*p & 0x0f) | (x << 4));
        }
    }
    /* duplicates of a path would make two model entries for one key: drop them */
    for (size_t i = 1; i < N; i++)
        for (size_t j = 0; j < i; j++)
            if (memcmp(es[i].path, es[j].path, 32) == 0) {
                es[i].path[0] ^= 0x5a;
                es[i].path[17] ^= (uint8_t)(0x11 * (i % 15 + 1));
            }
    for (size_t i = 1; i < N; i++) /* the fix-up above must have left no duplicate */
        for (size_t j = 0; j < i; j++)
            if (memcmp(es[i].path, es[j].path, 32) == 0)
                es[i].live = -1;
    rm_dir(dir);
    mpt *t = open_trie(dir, 1 << 20);
    uint64_t h = 0;
    uint8_t root[32], empty[32];
    SHA256((const uint8_t *)"", 0, empty);
    mpt_root(t, root);
    CHECK(memcmp(root, empty, 32) == 0);
    size_t n = 0;
    for (size_t i = 0; i < N; i++)
        if (es[i].live != -1)
            es[n++] = es[i];
    for (int blk = 0; blk < 12; blk++) {
        random_block(t, es, n, 150, blk < 6 ? 20 : 55);
        check_gets(t, es, n, 60);
        commit_and_compare(t, es, n, ++h);
        check_gets(t, es, n, 60);
    }
    /* delete one by one down to empty, comparing after every few deletes */
    int since = 0;
    for (size_t i = 0; i < n; i++)
        if (es[i].live) {
            CHECK(mpt_del_path(t, es[i].path) == 0);
            es[i].live = 0;
            CHECK(mpt_del_path(t, es[i].path) == 1);
            if (++since % 7 == 0)
                commit_and_compare(t, es, n, ++h);
        }
    commit_and_compare(t, es, n, ++h);
    mpt_root(t, root);
    CHECK(memcmp(root, empty, 32) == 0);
    mpt_close(t);
    /* reopen: still empty, then refill */
    t = open_trie(dir, 1 << 20);
    mpt_root(t, root);
    CHECK(memcmp(root, empty, 32) == 0);
    check_storage(t, es, n);
    random_block(t, es, n, 200, 10);
    commit_and_compare(t, es, n, ++h);
    check_gets(t, es, n, 100);
    mpt_close(t);
    free(es);
}

/* Does RocksDB hold a node at the path of the given nibbles? */
typedef struct haspath {
    uint8_t k[33];
    int found;
} haspath;

static int
scan_has(void *ctx, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    (void)v;
    (void)vl;
    haspath *h = ctx;
    uint8_t x[33] = {0};
    memcpy(x, k, kl < 33 ? kl : 33);
    if (memcmp(x, h->k, 33) == 0)
        h->found = 1;
    return 0;
}

static int
stored(mpt *t, const char *nibs)
{
    haspath h;
    memset(&h, 0, sizeof(h));
    int n = (int)strlen(nibs);
    h.k[0] = (uint8_t)n;
    for (int i = 0; i < n; i++) {
        uint8_t x = (uint8_t)(nibs[i] - '0');
        h.k[1 + i / 2] |= (uint8_t)((i & 1) ? x : x << 4);
    }
    CHECK(mpt_scan(t, 'n', scan_has, &h) == 0);
    return h.found;
}

static int
scan_count(void *ctx, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    (void)k;
    (void)kl;
    (void)v;
    (void)vl;
    ++*(uint64_t *)ctx;
    return 0;
}

static uint64_t
stored_count(mpt *t, char prefix)
{
    uint64_t n = 0;
    CHECK(mpt_scan(t, prefix, scan_count, &n) == 0);
    return n;
}

/* Deletes that collapse branches, on hand-made tries, with the exact stored paths checked
 * (nibble paths written as digit strings; "" is the root). */
static void
test_collapse(const char *dir)
{
    ent es[3];
    memset(es, 0, sizeof(es));
    uint64_t h = 0;
    mpt_stats s0, s1;

    /* 1: root branch {0: branch "0" {leaf "00", leaf "01"}, 1: leaf "1"}. Deleting the key
     * under "01" collapses branch "0": its leaf moves up from "00" to "0". */
    rm_dir(dir);
    mpt *t = open_trie(dir, 1 << 20);
    es[0].path[0] = 0x00; /* nibbles 0,0,... */
    es[1].path[0] = 0x01; /* nibbles 0,1,... */
    es[2].path[0] = 0x10; /* nibbles 1,0,... */
    for (int i = 0; i < 3; i++) {
        es[i].path[31] = (uint8_t)(0x40 + i);
        rand_val(&es[i]);
        CHECK(mpt_put_path(t, es[i].path, es[i].val, es[i].vlen) == 0);
        es[i].live = 1;
    }
    commit_and_compare(t, es, 3, ++h);
    CHECK(stored(t, "") && stored(t, "0") && stored(t, "00") && stored(t, "01") && stored(t, "1"));
    CHECK(stored_count(t, 'n') == 5 && stored_count(t, 'f') == 3);
    mpt_get_stats(t, &s0);
    CHECK(mpt_del_path(t, es[1].path) == 0);
    es[1].live = 0;
    commit_and_compare(t, es, 3, ++h);
    CHECK(stored(t, "") && stored(t, "0") && stored(t, "1"));
    CHECK(!stored(t, "00") && !stored(t, "01")); /* stale paths of the collapse are gone */
    CHECK(stored_count(t, 'n') == 3 && stored_count(t, 'f') == 2);
    mpt_get_stats(t, &s1);
    CHECK(s1.nodes_deleted - s0.nodes_deleted == 2);
    /* deleting "1" collapses the root onto the leaf, which moves up from "0" to "" */
    CHECK(mpt_del_path(t, es[2].path) == 0);
    es[2].live = 0;
    commit_and_compare(t, es, 3, ++h);
    CHECK(stored(t, "") && !stored(t, "0") && !stored(t, "1"));
    CHECK(stored_count(t, 'n') == 1 && stored_count(t, 'f') == 1);
    CHECK(mpt_del_path(t, es[0].path) == 0);
    es[0].live = 0;
    commit_and_compare(t, es, 3, ++h);
    CHECK(stored_count(t, 'n') == 0 && stored_count(t, 'f') == 0);
    mpt_close(t);

    /* 2: root branch {0: branch "0" {leaf "00", leaf "01"}, 1: leaf "1"}; deleting "1"
     * collapses the root onto a branch child, which stays at "0" under a new one-nibble
     * extension at "". Then reopen with a one-entry cache and collapse again from disk. */
    rm_dir(dir);
    t = open_trie(dir, 1 << 20);
    h = 0;
    for (int i = 0; i < 3; i++) {
        CHECK(mpt_put_path(t, es[i].path, es[i].val, es[i].vlen) == 0);
        es[i].live = 1;
    }
    commit_and_compare(t, es, 3, ++h);
    CHECK(mpt_del_path(t, es[2].path) == 0);
    es[2].live = 0;
    commit_and_compare(t, es, 3, ++h);
    CHECK(stored(t, "") && stored(t, "0") && stored(t, "00") && stored(t, "01"));
    CHECK(!stored(t, "1"));
    mpt_close(t);
    t = open_trie(dir, 1);
    check_storage(t, es, 3);
    /* deleting "00" collapses branch "0" onto leaf "01", which merges with the extension
     * at "": one leaf at "" remains */
    CHECK(mpt_del_path(t, es[0].path) == 0);
    es[0].live = 0;
    commit_and_compare(t, es, 3, ++h);
    CHECK(stored(t, "") && !stored(t, "0") && !stored(t, "00") && !stored(t, "01"));
    CHECK(stored_count(t, 'n') == 1 && stored_count(t, 'f') == 1);
    mpt_close(t);
    t = open_trie(dir, 1);
    check_storage(t, es, 3);
    mpt_close(t);
}

/* Hashed keys ("key-<i>" through mpt_put/mpt_del/mpt_get), several thousand operations over
 * several blocks, then close, reopen with a tiny node cache, and continue. */
static void
test_hashed(const char *dir)
{
    enum { N = 1500 };
    ent *es = calloc(N, sizeof(*es));
    char key[32];
    for (size_t i = 0; i < N; i++) {
        int kl = snprintf(key, sizeof(key), "key-%zu", i);
        mpt_key_path(key, (size_t)kl, es[i].path);
    }
    uint8_t want[32];
    SHA256((const uint8_t *)"key-7", 5, want);
    CHECK(memcmp(es[7].path, want, 32) == 0);
    rm_dir(dir);
    mpt *t = open_trie(dir, 64 << 10);
    uint64_t h = 0;
    uint8_t buf[MAXV];
    for (int blk = 0; blk < 8; blk++) {
        for (int k = 0; k < 500; k++) {
            size_t i = rnd() % N;
            int kl = snprintf(key, sizeof(key), "key-%zu", i);
            if (rnd() % 100 < (blk < 3 ? 10u : 40u)) {
                CHECK(mpt_del(t, key, (size_t)kl) == (es[i].live ? 0 : 1));
                es[i].live = 0;
            } else {
                rand_val(&es[i]);
                CHECK(mpt_put(t, key, (size_t)kl, es[i].val, es[i].vlen) == 0);
                es[i].live = 1;
            }
            if (k % 50 == 0) { /* read inside the block through the key API */
                size_t j = rnd() % N, vl = 0;
                kl = snprintf(key, sizeof(key), "key-%zu", j);
                int rc = mpt_get(t, key, (size_t)kl, buf, sizeof(buf), &vl);
                CHECK(rc == (es[j].live ? 0 : 1));
                if (rc == 0)
                    CHECK(vl == es[j].vlen && memcmp(buf, es[j].val, vl) == 0);
            }
        }
        commit_and_compare(t, es, N, ++h);
        check_gets(t, es, N, 200);
    }
    /* a block with an uncommitted change is dropped by close */
    uint8_t before[32], after[32];
    mpt_root(t, before);
    CHECK(mpt_put(t, "uncommitted", 11, "x", 1) == 0);
    mpt_close(t);

    t = open_trie(dir, 1); /* node cache of one entry: every node load reads RocksDB */
    mpt_root(t, after);
    CHECK(memcmp(before, after, 32) == 0);
    check_storage(t, es, N); /* the dropped block left nothing behind */
    size_t vl;
    CHECK(mpt_get(t, "uncommitted", 11, buf, sizeof(buf), &vl) == 1);
    mpt_stats s;
    mpt_get_stats(t, &s);
    CHECK(s.height == h);
    check_gets(t, es, N, 300);
    for (int blk = 0; blk < 4; blk++) {
        random_block(t, es, N, 400, 50);
        commit_and_compare(t, es, N, ++h);
        check_gets(t, es, N, 100);
    }
    mpt_get_stats(t, &s);
    CHECK(s.db_reads > 0);
    CHECK(s.node_cache_entries <= 2);
    mpt_close(t);
    free(es);
}

/* The qmdb-bench adapter: put/get/del/commit through the vtable, and reopen. */
static void
test_engine(const char *dir)
{
    rm_dir(dir);
    bench_engine e;
    engine_mpt_init(&e);
    CHECK(strcmp(e.name, "mpt") == 0);
    bench_engine_cfg cfg = {.durable = 1, .key_size = 16, .value_size = 8};
    CHECK(e.open(&e, dir, &cfg) == 0);
    char k[16], v[8], buf[16];
    size_t vl;
    for (int blk = 1; blk <= 3; blk++) {
        CHECK(e.begin_block(&e, (uint64_t)blk) == 0);
        for (int i = 0; i < 100; i++) {
            memset(k, 0, sizeof(k));
            snprintf(k, sizeof(k), "k%d", i);
            memset(v, blk, sizeof(v));
            CHECK(e.tx(&e) == 0);
            CHECK(e.put(&e, k, sizeof(k), v, sizeof(v)) == 0);
        }
        if (blk == 3)
            CHECK(e.del(&e, "k5\0\0\0\0\0\0\0\0\0\0\0\0\0", 16) == 0);
        CHECK(e.commit_block(&e) == 0);
    }
    memset(k, 0, sizeof(k));
    snprintf(k, sizeof(k), "k%d", 42);
    CHECK(e.get(&e, k, sizeof(k), buf, sizeof(buf), &vl) == 0);
    CHECK(vl == 8 && buf[0] == 3 && buf[7] == 3);
    CHECK(e.get(&e, "k5\0\0\0\0\0\0\0\0\0\0\0\0\0", 16, buf, sizeof(buf), &vl) == 1);
    bench_engine_stats st;
    CHECK(e.stats(&e, &st) == 0);
    CHECK(st.live_entries == 99);
    char desc[256];
    e.describe(&e, desc, sizeof(desc));
    CHECK(strstr(desc, "height=3") != NULL);
    CHECK(e.close(&e) == 0);
    engine_mpt_init(&e);
    CHECK(e.open(&e, dir, &cfg) == 0);
    CHECK(e.get(&e, k, sizeof(k), buf, sizeof(buf), &vl) == 0);
    CHECK(vl == 8 && buf[0] == 3);
    char desc2[256];
    e.describe(&e, desc2, sizeof(desc2));
    const char *r1 = strstr(desc, "state_root="), *r2 = strstr(desc2, "state_root=");
    CHECK(r1 && r2 && strlen(r1) == 11 + 64 && strcmp(r1, r2) == 0);
    CHECK(strstr(desc2, "height=3") != NULL);
    CHECK(e.close(&e) == 0);
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mpt_selftest SCRATCH_DIR\n");
        return 2;
    }
    char d[1024];
    mkdir(argv[1], 0755);
    snprintf(d, sizeof(d), "%s/collapse", argv[1]);
    test_collapse(d);
    snprintf(d, sizeof(d), "%s/crafted", argv[1]);
    test_crafted(d);
    snprintf(d, sizeof(d), "%s/hashed", argv[1]);
    test_hashed(d);
    snprintf(d, sizeof(d), "%s/engine", argv[1]);
    test_engine(d);
    rm_dir(argv[1]);
    free(refnodes);
    if (failures) {
        fprintf(stderr, "mpt_selftest: %d check(s) failed\n", failures);
        return 1;
    }
    printf("mpt_selftest: ok\n");
    return 0;
}
