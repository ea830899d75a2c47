/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_proof.c -- proofs end to end through the public API (qmdb_prove / qmdb_proof_verify):
 *   inclusion    every live key of a database whose every shard spans >= 5 twigs, before and
 *                after reopening (also with QMDB_OPEN_FAST);
 *   exclusion    10,000 random absent keys;
 *   history      a randomized workload with compact_thres = 1, checked against an in-test
 *                model of every height (value or absence), with a reopen part-way; proofs
 *                through a deactivating entry must occur;
 *   pruning      a short history window: old heights answer QMDB_PRUNED or a valid proof,
 *                heights inside the window always prove;
 *   tamper       every single-byte change, truncation or extension of valid proofs of each
 *                kind, and every change of claimed value, key, height or root, is rejected.
 * With QMDB_PROOF_CORPUS=DIR set it also writes fuzz seeds (fuzz_proof_verify.c input format)
 * into DIR; that is how tests/fuzz/corpus/proof_verify was made.
 *
 * Thread: single.
 */
#include "prover.h"
#include "qmdb.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static u64 rng_state = 0x9e3779b97f4a7c15ull;
static u64
rnd(void)
{
    u64 z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *
make_dir(const char *tag)
{
    return test_make_dir("proof", tag);
}

static void
small_opts(qmdb_options *o)
{
    qmdb_options_init(o);
    o->entry_segment_bytes = 1 << 20;
    o->twig_segment_bytes = 128 * 1024;
}

/* ---- fuzz seeds ------------------------------------------------------------------------- */

static int seed_count;

/* Writes (claim, proof) in the fuzz target's input format (see fuzz_proof_verify.c). */
static void
write_seed(const u8 *proof, size_t len, const u8 root[32], const void *key, size_t klen,
           const void *val, size_t vlen, u64 height)
{
    const char *dir = getenv("QMDB_PROOF_CORPUS");
    if (!dir)
        return;
    char path[512];
    snprintf(path, sizeof(path), "%s/seed-%02d", dir, seed_count++);
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    u8 hdr[64];
    hdr[0] = (u8)((val ? 0 : 1) | (height == UINT64_MAX ? 2 : 0));
    fwrite(hdr, 1, 1, f);
    fwrite(root, 1, 32, f);
    for (int i = 0; i < 8; i++)
        hdr[i] = (u8)(height >> (8 * i));
    fwrite(hdr, 1, 8, f);
    hdr[0] = (u8)klen;
    fwrite(hdr, 1, 1, f);
    fwrite(key, 1, klen, f);
    for (int i = 0; i < 4; i++)
        hdr[i] = (u8)(vlen >> (8 * i));
    fwrite(hdr, 1, 4, f);
    if (val)
        fwrite(val, 1, vlen, f);
    fwrite(proof, 1, len, f);
    fclose(f);
}

/* ---- helpers ---------------------------------------------------------------------------- */

/* SN of the first entry record of a proof. */
static u64
proof_main_sn(const u8 *p, size_t len)
{
    REQUIRE(len > QM_PROOF_HDR + 4);
    u32 n =
        (u32)p[QM_PROOF_HDR] | ((u32)p[QM_PROOF_HDR + 1] << 8) | ((u32)p[QM_PROOF_HDR + 2] << 16);
    size_t off = QM_PROOF_HDR + 4 + n + 1;
    REQUIRE(off + 8 <= len);
    u64 sn = 0;
    for (int i = 7; i >= 0; i--)
        sn = (sn << 8) | p[off + i];
    return sn;
}

static void
key_of(unsigned i, char *buf, size_t *klen)
{
    *klen = (size_t)snprintf(buf, 32, "key-%u", i);
}

static void
val_of(unsigned i, unsigned ver, char *buf, size_t *vlen)
{
    *vlen = (size_t)snprintf(buf, 64, "value-%u-%u%.*s", i, ver, (int)((i * 7 + ver) % 23),
                             "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
}

/* Proves and verifies one claim; returns the proof (caller frees) or NULL on failure. */
static u8 *
prove_check(qmdb_db *db, const u8 root[32], const void *key, size_t klen, const void *val,
            size_t vlen, u64 height, size_t *len, qmdb_proof_info *info)
{
    u8 *p = NULL;
    int rc = qmdb_prove(db, key, klen, height, &p, len);
    CHECK_OK(rc);
    if (rc)
        return NULL;
    const char *why = NULL;
    u64 ph = 0;
    rc = qmdb_proof_verify(p, *len, root, key, klen, val, vlen, height, &ph, &why);
    if (rc) {
        fprintf(stderr, "verify failed at height %" PRIu64 " (%s): %s\n", height,
                val ? "present" : "absent", why);
    }
    CHECK_OK(rc);
    if (height != UINT64_MAX)
        CHECK_EQ_U64(ph, height);
    CHECK_OK(qmdb_proof_info_get(p, *len, info));
    if (rc) {
        free(p);
        return NULL;
    }
    return p;
}

/* ---- inclusion + exclusion on a database spanning >= 5 twigs per shard --------------------- */

#define NKEYS 56000u

static void
test_inclusion_exclusion(void)
{
    double t0 = now_s();
    char *dir = make_dir("incl");
    qmdb_options o;
    small_opts(&o);
    CHECK_OK(qmdb_create(dir, &o));
    qmdb_db *db;
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    char key[32], val[64];
    size_t klen, vlen;
    u64 h = 0;
    /* Creates in blocks of ~10K ops, then a block of updates and deletes. */
    for (unsigned i = 0; i < NKEYS; i++) {
        key_of(i, key, &klen);
        val_of(i, 0, val, &vlen);
        CHECK_OK(qmdb_batch_put(b, key, klen, val, vlen));
        if (i % 2500 == 2499)
            CHECK_OK(qmdb_batch_tx(b));
        if (i % 10000 == 9999 || i == NKEYS - 1) {
            CHECK_OK(qmdb_commit(db, ++h, b, NULL));
            qmdb_batch_reset(b);
        }
    }
    unsigned *ver = calloc(NKEYS, sizeof(unsigned));
    REQUIRE(ver);
    for (unsigned i = 0; i < NKEYS; i += 7) {
        key_of(i, key, &klen);
        if (i % 3 == 0) {
            CHECK_OK(qmdb_batch_del(b, key, klen));
            ver[i] = UINT32_MAX;
        } else {
            ver[i] = 1;
            val_of(i, 1, val, &vlen);
            CHECK_OK(qmdb_batch_put(b, key, klen, val, vlen));
        }
    }
    u8 root[32];
    CHECK_OK(qmdb_commit(db, ++h, b, root));
    qmdb_batch_free(b);
    fprintf(stderr, "inclusion: built %u keys in %.1fs\n", NKEYS, now_s() - t0);

    /* Every live key: inclusion proof, active, verifies; track the twigs spanned. */
    u64 max_sn[QMDB_SHARDS] = {0};
    size_t total = 0, nproofs = 0, nabsent = 0;
    bool first_seed = true;
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < NKEYS; i++) {
            /* Pass 1 (after reopening): every 5th key. */
            if (pass == 1 && i % 5)
                continue;
            key_of(i, key, &klen);
            size_t len;
            qmdb_proof_info info = QMDB_PROOF_INFO_INIT;
            u8 *p;
            if (ver[i] == UINT32_MAX) {
                p = prove_check(db, root, key, klen, NULL, 0, h, &len, &info);
                if (p) {
                    CHECK(info.absent == 1);
                    nabsent++;
                }
            } else {
                val_of(i, ver[i], val, &vlen);
                p = prove_check(db, root, key, klen, val, vlen, UINT64_MAX, &len, &info);
                if (p) {
                    CHECK(info.absent == 0 && info.deactivated == 0 && info.entries == 1);
                    CHECK_EQ_U64(info.height, h);
                    u64 sn = proof_main_sn(p, len);
                    if (sn > max_sn[info.shard])
                        max_sn[info.shard] = sn;
                    total += len;
                    nproofs++;
                    if (first_seed && pass == 0) {
                        write_seed(p, len, root, key, klen, val, vlen, h);
                        write_seed(p, len, root, key, klen, val, vlen, UINT64_MAX);
                        first_seed = false;
                    }
                }
            }
            free(p);
        }
        if (pass == 0) {
            /* Reopen (fast open on the second pass) and prove again against the same root. */
            CHECK_OK(qmdb_close(db));
            qmdb_options oo;
            qmdb_options_init(&oo);
            oo.flags = QMDB_OPEN_FAST | QMDB_OPEN_RDONLY;
            REQUIRE(qmdb_open(dir, &oo, &db) == 0);
            u8 r2[32];
            CHECK_OK(qmdb_root(db, UINT64_MAX, r2));
            CHECK_MEM(r2, root, 32);
        }
    }
    for (unsigned s = 0; s < QMDB_SHARDS; s++) {
        if ((max_sn[s] >> 11) < 4)
            fprintf(stderr, "shard %u: highest proven SN %" PRIu64 "\n", s, max_sn[s]);
        CHECK((max_sn[s] >> 11) >= 4); /* the proofs reach twig 4 or later: >= 5 twigs */
    }
    CHECK(nabsent > 1000);
    fprintf(stderr, "inclusion: %zu proofs, %.0f bytes each on average (%.1fs so far)\n", nproofs,
            (double)total / (double)(nproofs ? nproofs : 1), now_s() - t0);

    /* Exclusion: 10,000 random absent keys. */
    size_t excl_bytes = 0;
    for (unsigned i = 0; i < 10000; i++) {
        u8 k[40];
        size_t kl = 1 + rnd() % 40;
        for (size_t j = 0; j < kl; j++)
            k[j] = (u8)rnd();
        size_t got;
        CHECK_RC(qmdb_get(db, k, kl, NULL, 0, &got), QMDB_NOTFOUND);
        size_t len;
        qmdb_proof_info info = QMDB_PROOF_INFO_INIT;
        u8 *p = prove_check(db, root, k, kl, NULL, 0, i % 2 ? h : UINT64_MAX, &len, &info);
        if (!p)
            continue;
        CHECK(info.absent == 1 && info.entries == 1);
        excl_bytes += len;
        /* The same proof must not support a value for the key. */
        CHECK_RC(qmdb_proof_verify(p, len, root, k, kl, "v", 1, h, NULL, NULL), QMDB_BAD_PROOF);
        if (i == 0)
            write_seed(p, len, root, k, kl, NULL, 0, h);
        free(p);
    }
    fprintf(stderr, "exclusion: 10000 proofs, %.0f bytes each (%.1fs so far)\n",
            (double)excl_bytes / 10000.0, now_s() - t0);
    /* Heights above the latest are not provable. */
    u8 *p = NULL;
    size_t len = 0;
    key_of(1, key, &klen);
    CHECK_RC(qmdb_prove(db, key, klen, h + 1, &p, &len), QMDB_NOTFOUND);
    CHECK(p == NULL);
    CHECK_RC(qmdb_prove(db, key, 0, h, &p, &len), QMDB_INVALID);
    free(ver);
    CHECK_OK(qmdb_close(db));
    test_remove_dir(dir);
}

/* ---- history against a model of every height -------------------------------------------- */

#define HKEYS 300u
#define HBLOCKS 300u

typedef struct hist_model {
    int *val; /* [height][key]: value id or -1 */
} hist_model;

static void
hkey(unsigned i, char *buf, size_t *klen)
{
    *klen = (size_t)snprintf(buf, 32, "h%u", i);
}

static void
hval(unsigned i, int id, char *buf, size_t *vlen)
{
    *vlen = (size_t)snprintf(buf, 64, "v%u.%d%.*s", i, id, (int)((unsigned)id % 17),
                             "yyyyyyyyyyyyyyyyyyyyyyyyy");
}

/* Proves the model's answer for key k at height hh and checks the proof; counts kinds. */
static void
hist_check(qmdb_db *db, const u8 root[32], const int *model, unsigned k, u64 hh, unsigned *ndeact,
           unsigned *nabs, bool seed)
{
    char key[32], val[64];
    size_t klen, vlen = 0;
    hkey(k, key, &klen);
    int id = model[hh * HKEYS + k];
    if (id >= 0)
        hval(k, id, val, &vlen);
    size_t len;
    qmdb_proof_info info = QMDB_PROOF_INFO_INIT;
    u8 *p = prove_check(db, root, key, klen, id >= 0 ? val : NULL, vlen, hh, &len, &info);
    if (!p) {
        fprintf(stderr, "  key %u height %" PRIu64 " expected %d\n", k, hh, id);
        return;
    }
    CHECK_EQ_U64(info.absent, id < 0);
    *ndeact += (unsigned)info.deactivated;
    *nabs += (unsigned)info.absent;
    if (seed)
        write_seed(p, len, root, key, klen, id >= 0 ? val : NULL, vlen, hh);
    /* The opposite claim fails with the same proof. */
    if (id >= 0) {
        CHECK_RC(qmdb_proof_verify(p, len, root, key, klen, NULL, 0, hh, NULL, NULL),
                 QMDB_BAD_PROOF);
    } else {
        CHECK_RC(qmdb_proof_verify(p, len, root, key, klen, "x", 1, hh, NULL, NULL),
                 QMDB_BAD_PROOF);
    }
    free(p);
}

static void
test_history(u32 ratio, u32 div, unsigned max_ops)
{
    double t0 = now_s();
    char *dir = make_dir("hist");
    qmdb_options o;
    small_opts(&o);
    o.compact_thres = 1;
    o.utilization_ratio = ratio;
    o.utilization_div = div;
    CHECK_OK(qmdb_create(dir, &o));
    qmdb_db *db;
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    int *model = malloc((HBLOCKS + 1) * HKEYS * sizeof(int));
    REQUIRE(model);
    for (unsigned k = 0; k < HKEYS; k++)
        model[k] = -1;
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    int next_id = 0;
    unsigned ndeact = 0, nabs = 0, nchecks = 0;
    u8 root[32];
    bool seeded = false;
    for (u64 h = 1; h <= HBLOCKS; h++) {
        int *cur = model + h * HKEYS;
        memcpy(cur, model + (h - 1) * HKEYS, HKEYS * sizeof(int));
        qmdb_batch_reset(b);
        unsigned ntx = 1 + (unsigned)(rnd() % 4);
        for (unsigned t = 0; t < ntx; t++) {
            if (t)
                CHECK_OK(qmdb_batch_tx(b));
            unsigned nops = (unsigned)(rnd() % max_ops);
            for (unsigned j = 0; j < nops; j++) {
                unsigned k = (unsigned)(rnd() % HKEYS);
                char key[32], val[64];
                size_t klen, vlen;
                hkey(k, key, &klen);
                if (rnd() % 100 < 70) {
                    int id = next_id++;
                    hval(k, id, val, &vlen);
                    CHECK_OK(qmdb_batch_put(b, key, klen, val, vlen));
                    cur[k] = id;
                } else {
                    CHECK_OK(qmdb_batch_del(b, key, klen));
                    cur[k] = -1;
                }
            }
        }
        CHECK_OK(qmdb_commit(db, h, b, root));
        /* Now and then: proofs for the latest height and a few earlier ones, right away. */
        if (h % 16 == 0) {
            for (unsigned i = 0; i < 40; i++) {
                u64 hh = i < 10 ? h : rnd() % (h + 1);
                hist_check(db, root, model, (unsigned)(rnd() % HKEYS), hh, &ndeact, &nabs, false);
                nchecks++;
            }
        }
        if (h == HBLOCKS / 2) { /* reopen part-way: the history cache starts over */
            CHECK_OK(qmdb_close(db));
            REQUIRE(qmdb_open(dir, NULL, &db) == 0);
        }
    }
    qmdb_batch_free(b);
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    CHECK(st.compactions > 1000);
    fprintf(stderr, "history %u/%u: %" PRIu64 " compactions since reopening, %" PRIu64 " entries\n",
            ratio, div, st.compactions, st.total_entries);
    /* Random (height, key) pairs over the whole history, and every key at a few heights. */
    for (unsigned i = 0; i < 6000; i++) {
        u64 hh = rnd() % (HBLOCKS + 1);
        unsigned before = ndeact;
        hist_check(db, root, model, (unsigned)(rnd() % HKEYS), hh, &ndeact, &nabs,
                   !seeded && hh > 0);
        if (ndeact > before && !seeded)
            seeded = true;
        nchecks++;
    }
    const u64 hs[] = {0, 1, HBLOCKS / 3, HBLOCKS - 1, HBLOCKS};
    for (size_t j = 0; j < QM_ARRAY_LEN(hs); j++)
        for (unsigned k = 0; k < HKEYS; k++, nchecks++)
            hist_check(db, root, model, k, hs[j], &ndeact, &nabs, false);
    fprintf(stderr, "history: %u checks (%u through a deactivating entry, %u absent) in %.1fs\n",
            nchecks, ndeact, nabs, now_s() - t0);
    CHECK(ndeact > 100);
    CHECK(nabs > 100);
    free(model);
    CHECK_OK(qmdb_close(db));
    test_remove_dir(dir);
}

/* ---- pruning ---------------------------------------------------------------------------- */

static void
test_pruned(void)
{
    char *dir = make_dir("prune");
    qmdb_options o;
    small_opts(&o);
    o.compact_thres = 1;
    o.history_blocks = 3;
    CHECK_OK(qmdb_create(dir, &o));
    qmdb_db *db;
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    u8 root[32];
    const u64 H = 40;
    char key[32], val[64];
    size_t klen, vlen;
    /* 40 keys rewritten every block: old twigs die fast and get pruned. */
    for (u64 h = 1; h <= H; h++) {
        qmdb_batch_reset(b);
        for (unsigned k = 0; k < 40; k++)
            for (unsigned r = 0; r < 60; r++) {
                hkey(k, key, &klen);
                hval(k, (int)(h * 1000 + r), val, &vlen);
                CHECK_OK(qmdb_batch_put(b, key, klen, val, vlen));
                CHECK_OK(qmdb_batch_tx(b));
            }
        CHECK_OK(qmdb_commit(db, h, b, root));
        if (h % 8 == 0) { /* historical proofs while twigs get pruned (cache rebuilds) */
            hkey((unsigned)h % 40, key, &klen);
            hval((unsigned)h % 40, (int)((h - 1) * 1000 + 59), val, &vlen);
            size_t len;
            qmdb_proof_info info = QMDB_PROOF_INFO_INIT;
            free(prove_check(db, root, key, klen, val, vlen, h - 1, &len, &info));
        }
    }
    qmdb_batch_free(b);
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    CHECK(st.pruned_twigs > 0);
    unsigned pruned = 0, ok = 0;
    for (u64 hh = 0; hh <= H; hh++) {
        for (unsigned k = 0; k < 40; k += 3) {
            hkey(k, key, &klen);
            u8 *p = NULL;
            size_t len;
            int rc = qmdb_prove(db, key, klen, hh, &p, &len);
            if (hh + o.history_blocks >= H) {
                CHECK_OK(rc); /* inside the window: always provable */
            }
            if (rc == QMDB_PRUNED) {
                CHECK(p == NULL);
                pruned++;
                continue;
            }
            CHECK_OK(rc);
            if (rc)
                continue;
            /* Last put of block hh was r = 59 (block 0: absent). */
            const char *why = NULL;
            if (hh == 0) {
                rc = qmdb_proof_verify(p, len, root, key, klen, NULL, 0, hh, NULL, &why);
            } else {
                hval(k, (int)(hh * 1000 + 59), val, &vlen);
                rc = qmdb_proof_verify(p, len, root, key, klen, val, vlen, hh, NULL, &why);
            }
            if (rc)
                fprintf(stderr, "pruned test: height %" PRIu64 " key %u: %s\n", hh, k, why);
            CHECK_OK(rc);
            ok++;
            free(p);
        }
    }
    fprintf(stderr, "pruning: %u pruned twigs; %u heights/keys pruned, %u proven\n",
            (unsigned)st.pruned_twigs, pruned, ok);
    CHECK(pruned > 0);
    CHECK(ok > 0);
    CHECK_OK(qmdb_close(db));
    test_remove_dir(dir);
}

/* ---- tampering -------------------------------------------------------------------------- */

/* Every single-byte change, truncation and extension of p must be rejected. */
static void
tamper_bytes(const u8 *p, size_t len, const u8 root[32], const void *key, size_t klen,
             const void *val, size_t vlen, u64 h, bool active)
{
    u8 *q = malloc(len + 1);
    REQUIRE(q);
    static const u8 flips[] = {0x01, 0x80, 0xff, 0x5a};
    unsigned bad = 0;
    for (size_t i = 0; i < len; i++) {
        for (size_t f = 0; f < sizeof(flips); f++) {
            memcpy(q, p, len);
            q[i] ^= flips[f];
            if (qmdb_proof_verify(q, len, root, key, klen, val, vlen, h, NULL, NULL) !=
                QMDB_BAD_PROOF)
                bad++;
            /* Claiming "current" binds everything but the height field (8..15), which only
             * an explicit height authenticates (docs/PROOFS.md). */
            if (active && (i < 8 || i >= 16) &&
                qmdb_proof_verify(q, len, root, key, klen, val, vlen, UINT64_MAX, NULL, NULL) !=
                    QMDB_BAD_PROOF)
                bad++;
        }
    }
    CHECK_EQ_U64(bad, 0);
    for (size_t n = 0; n < len; n++)
        CHECK_RC(qmdb_proof_verify(p, n, root, key, klen, val, vlen, h, NULL, NULL),
                 QMDB_BAD_PROOF);
    memcpy(q, p, len);
    q[len] = 0;
    CHECK_RC(qmdb_proof_verify(q, len + 1, root, key, klen, val, vlen, h, NULL, NULL),
             QMDB_BAD_PROOF);
    CHECK_RC(qmdb_proof_verify(NULL, 0, root, key, klen, val, vlen, h, NULL, NULL), QMDB_BAD_PROOF);
    free(q);
}

/* Changes of the claim: value, key, height, root. */
static void
tamper_claim(const u8 *p, size_t len, const u8 root[32], const char *key, size_t klen,
             const char *val, size_t vlen, u64 h)
{
    const char *why = NULL;
    CHECK_OK(qmdb_proof_verify(p, len, root, key, klen, val, vlen, h, NULL, &why));
    u8 r2[32];
    for (unsigned i = 0; i < 32; i++) {
        memcpy(r2, root, 32);
        r2[i] ^= (u8)(1u << (i % 8));
        CHECK_RC(qmdb_proof_verify(p, len, r2, key, klen, val, vlen, h, NULL, NULL),
                 QMDB_BAD_PROOF);
    }
    CHECK_RC(qmdb_proof_verify(p, len, root, key, klen, val, vlen, h + 1, NULL, NULL),
             QMDB_BAD_PROOF);
    if (h > 0)
        CHECK_RC(qmdb_proof_verify(p, len, root, key, klen, val, vlen, h - 1, NULL, NULL),
                 QMDB_BAD_PROOF);
    char k2[300];
    memcpy(k2, key, klen);
    k2[klen - 1] ^= 1;
    CHECK_RC(qmdb_proof_verify(p, len, root, k2, klen, val, vlen, h, NULL, NULL), QMDB_BAD_PROOF);
    memcpy(k2, key, klen);
    k2[klen] = 'z';
    CHECK_RC(qmdb_proof_verify(p, len, root, k2, klen + 1, val, vlen, h, NULL, NULL),
             QMDB_BAD_PROOF);
    if (val) {
        char v2[300];
        memcpy(v2, val, vlen);
        v2[vlen - 1] ^= 1;
        CHECK_RC(qmdb_proof_verify(p, len, root, key, klen, v2, vlen, h, NULL, NULL),
                 QMDB_BAD_PROOF);
        CHECK_RC(qmdb_proof_verify(p, len, root, key, klen, val, vlen - 1, h, NULL, NULL),
                 QMDB_BAD_PROOF);
        CHECK_RC(qmdb_proof_verify(p, len, root, key, klen, NULL, 0, h, NULL, NULL),
                 QMDB_BAD_PROOF);
    } else {
        CHECK_RC(qmdb_proof_verify(p, len, root, key, klen, "a", 1, h, NULL, NULL), QMDB_BAD_PROOF);
    }
    /* Malformed claims. */
    CHECK_RC(qmdb_proof_verify(p, len, root, key, 0, val, vlen, h, NULL, NULL), QMDB_INVALID);
    CHECK_RC(qmdb_proof_verify(p, len, root, key, klen, "", 0, h, NULL, NULL), QMDB_INVALID);
}

static void
test_tamper(void)
{
    char *dir = make_dir("tamper");
    qmdb_options o;
    small_opts(&o);
    o.compact_thres = 1;
    CHECK_OK(qmdb_create(dir, &o));
    qmdb_db *db;
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    u8 root[32];
    char key[32], val[64];
    size_t klen, vlen;
    /* Block 1: keys 0..99. Block 2: update 0..9, delete 10..19. Block 3: touch others. */
    for (unsigned k = 0; k < 100; k++) {
        hkey(k, key, &klen);
        hval(k, 1, val, &vlen);
        CHECK_OK(qmdb_batch_put(b, key, klen, val, vlen));
    }
    CHECK_OK(qmdb_commit(db, 1, b, root));
    qmdb_batch_reset(b);
    for (unsigned k = 0; k < 20; k++) {
        hkey(k, key, &klen);
        hval(k, 2, val, &vlen);
        if (k < 10)
            CHECK_OK(qmdb_batch_put(b, key, klen, val, vlen));
        else
            CHECK_OK(qmdb_batch_del(b, key, klen));
    }
    CHECK_OK(qmdb_commit(db, 2, b, root));
    qmdb_batch_reset(b);
    for (unsigned k = 50; k < 60; k++) {
        hkey(k, key, &klen);
        hval(k, 3, val, &vlen);
        CHECK_OK(qmdb_batch_put(b, key, klen, val, vlen));
    }
    CHECK_OK(qmdb_commit(db, 3, b, root));
    qmdb_batch_free(b);

    struct {
        unsigned k;
        int ver; /* value id, -1 absent */
        u64 h;
        int want_deact;
    } cases[] = {
        {0, 2, 3, 0},     /* latest inclusion */
        {10, -1, 3, 0},   /* latest exclusion (deleted key) */
        {5000, -1, 3, 0}, /* latest exclusion (never written) */
        {0, 1, 1, 1},     /* historical, through the update of block 2 */
        {10, 1, 1, 1},    /* historical, through the delete of block 2 */
        {70, 1, 1, 0},    /* historical, still active */
        {10, -1, 2, -1},  /* historical absence */
        {0, -1, 0, -1},   /* height 0: only sentries */
    };
    for (size_t c = 0; c < QM_ARRAY_LEN(cases); c++) {
        hkey(cases[c].k, key, &klen);
        if (cases[c].ver >= 0)
            hval(cases[c].k, cases[c].ver, val, &vlen);
        const char *v = cases[c].ver >= 0 ? val : NULL;
        size_t len;
        qmdb_proof_info info = QMDB_PROOF_INFO_INIT;
        u8 *p = prove_check(db, root, key, klen, v, v ? vlen : 0, cases[c].h, &len, &info);
        if (!p)
            continue;
        if (cases[c].want_deact >= 0)
            CHECK_EQ_U64(info.deactivated, cases[c].want_deact);
        write_seed(p, len, root, key, klen, v, v ? vlen : 0, cases[c].h);
        tamper_bytes(p, len, root, key, klen, v, v ? vlen : 0, cases[c].h, !info.deactivated);
        tamper_claim(p, len, root, key, klen, v, v ? vlen : 0, cases[c].h);
        free(p);
    }
    CHECK_OK(qmdb_close(db));
    test_remove_dir(dir);
}

int
main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only || strcmp(only, "tamper") == 0)
        test_tamper();
    if (!only || strcmp(only, "history") == 0) {
        test_history(1, 1, 25);
        test_history(7, 10, 70);
    }
    if (!only || strcmp(only, "prune") == 0)
        test_pruned();
    if (!only || strcmp(only, "inclusion") == 0)
        test_inclusion_exclusion();
    fprintf(stderr, "%d checks, %d failures\n", test_checks, test_failures);
    return test_failures ? 1 : 0;
}
