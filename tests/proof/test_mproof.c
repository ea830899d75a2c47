/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_mproof.c -- multi-key proofs end to end through the public API (qmdb_prove_many /
 * qmdb_proof_verify_many):
 *   history   randomized workloads with compact_thres = 1 (ratios 1/1 and 7/10) and a short
 *             history window (pruning on), checked against an in-test model of every height:
 *             random key sets (present, absent, never-written, repeated keys) at the latest
 *             and at random earlier heights verify and report exactly the model's answers;
 *             heights inside the window always prove, older ones prove or say QMDB_PRUNED;
 *             a wrong root, height or key list is rejected;
 *   size      a multi-key proof is smaller than the single proofs of its keys together;
 *   tamper    every single-bit change, every truncation and extensions of a proof holding
 *             present, absent and historical answers are rejected.
 * With QMDB_MPROOF_CORPUS=DIR set it writes fuzz seeds (fuzz_mproof_verify.c input format)
 * into DIR; that is how tests/fuzz/corpus/mproof_verify was made.
 *
 * Thread: single.
 */
#include "qm_internal.h"
#include "qmdb.h"
#include "test.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NKEYS 400u /* key space of the workload */

static u64 rng_state = 0x2545f4914f6cdd1dull;
static u64
rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static char *
make_dir(const char *tag)
{
    char *d = malloc(256);
    REQUIRE(d);
    snprintf(d, 256, "/tmp/qmdb-test-mproof-%s-%d", tag, (int)getpid());
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    REQUIRE(system(cmd) == 0);
    return d;
}

static void
remove_dir(char *d)
{
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", d);
    free(d);
}

/* Keys 0..NKEYS-1 are written by the workload; keys >= NKEYS never are. */
static size_t
key_of(unsigned i, char *buf)
{
    return (size_t)snprintf(buf, 32, "m%u", i);
}

static size_t
val_of(unsigned i, int id, char *buf)
{
    return (size_t)snprintf(buf, 64, "w%u.%d%.*s", i, id, (int)((unsigned)id % 23),
                            "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz");
}

/* ---- fuzz seeds ------------------------------------------------------------------------- */

static int seed_count;

/* Writes (keys, root, height, proof) in the fuzz target's input format (fuzz_mproof_verify.c). */
static void
write_seed(const u8 *proof, size_t len, const u8 root[32], char (*keys)[32], const size_t *klens,
           size_t n, u64 height)
{
    const char *dir = getenv("QMDB_MPROOF_CORPUS");
    if (!dir || n > 40)
        return;
    char path[512];
    snprintf(path, sizeof(path), "%s/seed-%02d", dir, seed_count++);
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    u8 b[8];
    b[0] = height == UINT64_MAX ? 1 : 0;
    fwrite(b, 1, 1, f);
    fwrite(root, 1, 32, f);
    for (int i = 0; i < 8; i++)
        b[i] = (u8)(height >> (8 * i));
    fwrite(b, 1, 8, f);
    b[0] = (u8)n;
    fwrite(b, 1, 1, f);
    for (size_t i = 0; i < n; i++) {
        b[0] = (u8)klens[i];
        fwrite(b, 1, 1, f);
        fwrite(keys[i], 1, klens[i], f);
    }
    fwrite(proof, 1, len, f);
    fclose(f);
}

/* ---- one set ---------------------------------------------------------------------------- */

typedef struct kset {
    size_t n;
    unsigned id[256];
    char key[256][32];
    size_t klen[256];
    const void *kp[256];
} kset;

static void
kset_random(kset *s, size_t n)
{
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        /* Mostly workload keys; some never written; now and then a repeat. */
        unsigned id =
            rnd() % 10 == 0 ? NKEYS + (unsigned)(rnd() % 1000) : (unsigned)(rnd() % NKEYS);
        if (i > 0 && rnd() % 20 == 0)
            id = s->id[rnd() % i];
        s->id[i] = id;
        s->klen[i] = key_of(id, s->key[i]);
        s->kp[i] = s->key[i];
    }
}

/* Proves s at hh (UINT64_MAX: latest, model row `latest`), verifies under root and compares
 * every answer with the model. Returns the qmdb_prove_many code; counts answers. */
static int
check_set(qmdb_db *db, const u8 root[32], const int *model, u64 latest, const kset *s, u64 hh,
          unsigned *npresent, unsigned *nabsent, bool seed)
{
    u8 *p = NULL;
    size_t len = 0;
    int rc = qmdb_prove_many(db, s->kp, s->klen, s->n, hh, &p, &len);
    if (rc)
        return rc;
    u64 row = hh == UINT64_MAX ? latest : hh;
    qmdb_proof_answer ans[256];
    const char *why = NULL;
    u64 ph = 0;
    int vrc = qmdb_proof_verify_many(p, len, root, s->kp, s->klen, s->n, hh, &ph, ans, &why);
    CHECK_OK(vrc);
    if (vrc) {
        fprintf(stderr, "  set of %zu at height %" PRIu64 ": %s\n", s->n, hh, why);
    } else {
        CHECK_EQ_U64(ph, row);
        for (size_t i = 0; i < s->n; i++) {
            int id = s->id[i] < NKEYS ? model[row * NKEYS + s->id[i]] : -1;
            CHECK_EQ_U64(ans[i].present, id >= 0);
            if (id >= 0 && ans[i].present) {
                char v[64];
                size_t vl = val_of(s->id[i], id, v);
                CHECK_EQ_U64(ans[i].vlen, vl);
                CHECK(ans[i].vlen == vl && memcmp(ans[i].value, v, vl) == 0);
            }
            *npresent += (unsigned)(id >= 0);
            *nabsent += (unsigned)(id < 0);
        }
    }
    if (seed)
        write_seed(p, len, root, (char(*)[32])s->key, s->klen, s->n, hh);
    /* The proof is bound to the root, the height and the key list. */
    u8 bad[32];
    memcpy(bad, root, 32);
    bad[rnd() % 32] ^= (u8)(1u << (rnd() % 8));
    CHECK_RC(qmdb_proof_verify_many(p, len, bad, s->kp, s->klen, s->n, hh, NULL, ans, NULL),
             QMDB_BAD_PROOF);
    if (hh != UINT64_MAX)
        CHECK_RC(
            qmdb_proof_verify_many(p, len, root, s->kp, s->klen, s->n, hh + 1, NULL, ans, NULL),
            QMDB_BAD_PROOF);
    if (s->n > 1)
        CHECK_RC(
            qmdb_proof_verify_many(p, len, root, s->kp, s->klen, s->n - 1, hh, NULL, ans, NULL),
            QMDB_BAD_PROOF);
    free(p);
    return 0;
}

/* Checks that a key list with one key replaced by another is rejected (unless it answers the
 * same: the replaced key repeats elsewhere in the set). */
static void
check_swapped_key(qmdb_db *db, const u8 root[32], kset *s)
{
    u8 *p = NULL;
    size_t len = 0;
    CHECK_OK(qmdb_prove_many(db, s->kp, s->klen, s->n, UINT64_MAX, &p, &len));
    qmdb_proof_answer ans[256];
    for (size_t i = 0; i < s->n; i++) {
        char save[32];
        size_t sl = s->klen[i];
        memcpy(save, s->key[i], 32);
        s->klen[i] = key_of(s->id[i] + 1, s->key[i]); /* a neighbouring key */
        int rc =
            qmdb_proof_verify_many(p, len, root, s->kp, s->klen, s->n, UINT64_MAX, NULL, ans, NULL);
        /* It may verify only if the new key is absent under the same predecessor gap, which
         * then is the truth; a present key in place of another never verifies. */
        if (rc == 0)
            CHECK(!ans[i].present);
        else
            CHECK_RC(rc, QMDB_BAD_PROOF);
        memcpy(s->key[i], save, 32);
        s->klen[i] = sl;
    }
    free(p);
}

static void
test_history(u32 ratio, u32 div, u64 window, unsigned nblocks)
{
    char *dir = make_dir("hist");
    qmdb_options o;
    qmdb_options_init(&o);
    o.entry_segment_bytes = 1 << 20;
    o.twig_segment_bytes = 128 * 1024;
    o.compact_thres = 1;
    o.utilization_ratio = ratio;
    o.utilization_div = div;
    o.history_blocks = window;
    CHECK_OK(qmdb_create(dir, &o));
    qmdb_db *db;
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    int *model = malloc(((size_t)nblocks + 1) * NKEYS * sizeof(int));
    REQUIRE(model);
    for (unsigned k = 0; k < NKEYS; k++)
        model[k] = -1;
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    int next_id = 0;
    unsigned npres = 0, nabs = 0, nsets = 0, npruned = 0;
    u8 root[32];
    kset s;
    for (u64 h = 1; h <= nblocks; h++) {
        int *cur = model + h * NKEYS;
        memcpy(cur, model + (h - 1) * NKEYS, NKEYS * sizeof(int));
        qmdb_batch_reset(b);
        unsigned ntx = 1 + (unsigned)(rnd() % 3);
        for (unsigned t = 0; t < ntx; t++) {
            if (t)
                CHECK_OK(qmdb_batch_tx(b));
            unsigned nops = (unsigned)(rnd() % 40);
            for (unsigned j = 0; j < nops; j++) {
                unsigned k = (unsigned)(rnd() % NKEYS);
                char key[32], val[64];
                size_t klen = key_of(k, key);
                if (rnd() % 100 < 70) {
                    int id = next_id++;
                    size_t vlen = val_of(k, id, val);
                    CHECK_OK(qmdb_batch_put(b, key, klen, val, vlen));
                    cur[k] = id;
                } else {
                    CHECK_OK(qmdb_batch_del(b, key, klen));
                    cur[k] = -1;
                }
            }
        }
        CHECK_OK(qmdb_commit(db, h, b, root));
        if (h % 20 == 0) {
            kset_random(&s, 1 + rnd() % 40);
            CHECK_OK(check_set(db, root, model, h, &s, UINT64_MAX, &npres, &nabs, h == 40));
            nsets++;
            check_swapped_key(db, root, &s);
        }
        if (h == nblocks / 2) { /* reopen part-way: the history cache starts over */
            CHECK_OK(qmdb_close(db));
            REQUIRE(qmdb_open(dir, NULL, &db) == 0);
        }
    }
    qmdb_batch_free(b);
    /* Random sets at random heights; inside the window they always prove. */
    for (unsigned i = 0; i < 400; i++) {
        u64 hh = rnd() % (nblocks + 1);
        if (i % 4 == 0)
            hh = nblocks - rnd() % (QM_MIN(window, nblocks) + 1);
        kset_random(&s, 1 + rnd() % (i % 10 == 0 ? 200 : 30));
        int rc = check_set(db, root, model, nblocks, &s, hh, &npres, &nabs, i < 6);
        if (rc == QMDB_PRUNED && hh + window < nblocks) {
            npruned++;
            continue;
        }
        CHECK_OK(rc);
        nsets++;
    }
    fprintf(stderr,
            "multi-key history %u/%u window %" PRIu64 ": %u sets verified (%u present, %u absent "
            "answers), %u sets outside the window pruned\n",
            ratio, div, window, nsets, npres, nabs, npruned);
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    fprintf(stderr, "  %" PRIu64 " twigs pruned, %" PRIu64 " compactions since reopening\n",
            st.pruned_twigs, st.compactions);
    CHECK(st.compactions > 1000);
    if (window < nblocks) {
        CHECK(st.pruned_twigs > 0);
        CHECK(npruned > 0);
    }
    CHECK(nsets > 200);
    CHECK(npres > 1000);
    CHECK(nabs > 500);
    free(model);
    CHECK_OK(qmdb_close(db));
    remove_dir(dir);
}

/* ---- size and tamper -------------------------------------------------------------------- */

static void
load(qmdb_db *db, unsigned nkeys, u8 root[32])
{
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    u64 h = qmdb_height(db);
    for (unsigned k = 0; k < nkeys;) {
        qmdb_batch_reset(b);
        for (unsigned j = 0; j < 5000 && k < nkeys; j++, k++) {
            char key[32], val[64];
            size_t kl = key_of(k, key), vl = val_of(k, (int)k, val);
            CHECK_OK(qmdb_batch_put(b, key, kl, val, vl));
        }
        CHECK_OK(qmdb_commit(db, ++h, b, root));
    }
    qmdb_batch_free(b);
}

static void
test_size_tamper(void)
{
    char *dir = make_dir("size");
    qmdb_options o;
    qmdb_options_init(&o);
    CHECK_OK(qmdb_create(dir, &o));
    qmdb_db *db;
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    u8 root[32];
    load(db, 60000, root);
    /* Overwrite a few keys so a historical proof at height 1 goes through a deactivator. */
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    for (unsigned k = 0; k < 5; k++) {
        char key[32];
        size_t kl = key_of(k, key);
        CHECK_OK(qmdb_batch_put(b, key, kl, "new", 3));
    }
    u64 h = qmdb_height(db) + 1;
    CHECK_OK(qmdb_commit(db, h, b, root));
    qmdb_batch_free(b);

    /* Size: 200 keys, one multi-key proof against 200 single proofs. */
    kset s;
    s.n = 200;
    for (size_t i = 0; i < s.n; i++) {
        s.id[i] = (unsigned)(rnd() % 60000);
        s.klen[i] = key_of(s.id[i], s.key[i]);
        s.kp[i] = s.key[i];
    }
    u8 *p;
    size_t len, single = 0;
    CHECK_OK(qmdb_prove_many(db, s.kp, s.klen, s.n, UINT64_MAX, &p, &len));
    for (size_t i = 0; i < s.n; i++) {
        u8 *q;
        size_t ql;
        CHECK_OK(qmdb_prove(db, s.kp[i], s.klen[i], UINT64_MAX, &q, &ql));
        single += ql;
        qmdb_proof_free(q);
    }
    fprintf(stderr, "size: 200 keys at 60,000: multi-key %zu bytes (%.0f/key), single %.0f/key\n",
            len, (double)len / 200, (double)single / 200);
    CHECK(len * 10 < single * 7);
    qmdb_proof_answer ans[256];
    CHECK_OK(qmdb_proof_verify_many(p, len, root, s.kp, s.klen, s.n, UINT64_MAX, NULL, ans, NULL));
    qmdb_proof_free(p);

    /* Tamper: keys 0..2 (historical, through the deactivator), 7 (present), absent ones. */
    s.n = 6;
    const unsigned ids[6] = {0, 1, 2, 7, 60000 + 5, 60000 + 77};
    for (size_t i = 0; i < s.n; i++) {
        s.id[i] = ids[i];
        s.klen[i] = key_of(ids[i], s.key[i]);
        s.kp[i] = s.key[i];
    }
    u64 hh = 1;
    CHECK_OK(qmdb_prove_many(db, s.kp, s.klen, s.n, hh, &p, &len));
    CHECK_OK(qmdb_proof_verify_many(p, len, root, s.kp, s.klen, s.n, hh, NULL, ans, NULL));
    CHECK(ans[0].present && !ans[4].present && !ans[5].present);
    CHECK(ans[0].vlen > 3); /* the old value, not "new" */
    write_seed(p, len, root, (char(*)[32])s.key, s.klen, s.n, hh);
    CHECK_RC(qmdb_proof_verify_many(p, len, root, s.kp, s.klen, s.n, UINT64_MAX, NULL, ans, NULL),
             QMDB_BAD_PROOF); /* a historical proof needs its height */
    u8 *t = malloc(len + 64);
    REQUIRE(t);
    unsigned rejected = 0, tries = 0;
    for (size_t i = 0; i < len; i++)
        for (unsigned bit = 0; bit < 8; bit++) {
            memcpy(t, p, len);
            t[i] ^= (u8)(1u << bit);
            int rc = qmdb_proof_verify_many(t, len, root, s.kp, s.klen, s.n, hh, NULL, ans, NULL);
            tries++;
            rejected += rc == QMDB_BAD_PROOF;
            if (rc != QMDB_BAD_PROOF)
                fprintf(stderr, "  bit %u of byte %zu: accepted\n", bit, i);
        }
    for (size_t n = 0; n < len; n++) {
        memcpy(t, p, n);
        tries++;
        rejected += qmdb_proof_verify_many(t, n, root, s.kp, s.klen, s.n, hh, NULL, ans, NULL) ==
                    QMDB_BAD_PROOF;
    }
    for (size_t extra = 1; extra <= 64; extra++) {
        memcpy(t, p, len);
        memset(t + len, (int)extra, extra);
        tries++;
        rejected += qmdb_proof_verify_many(t, len + extra, root, s.kp, s.klen, s.n, hh, NULL, ans,
                                           NULL) == QMDB_BAD_PROOF;
    }
    fprintf(stderr, "tamper: %u of %u changed multi-key proofs (%zu bytes) rejected\n", rejected,
            tries, len);
    CHECK_EQ_U64(rejected, tries);
    /* Malformed arguments. */
    CHECK_RC(qmdb_proof_verify_many(p, len, root, s.kp, s.klen, 0, hh, NULL, ans, NULL),
             QMDB_INVALID);
    u8 *none = NULL;
    size_t nlen = 0;
    CHECK_RC(qmdb_prove_many(db, s.kp, s.klen, 0, hh, &none, &nlen), QMDB_INVALID);
    CHECK_RC(qmdb_prove_many(db, s.kp, s.klen, s.n, h + 1, &none, &nlen), QMDB_NOTFOUND);
    CHECK(none == NULL);
    free(t);
    qmdb_proof_free(p);
    CHECK_OK(qmdb_close(db));
    remove_dir(dir);
}

int
main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only || strcmp(only, "tamper") == 0)
        test_size_tamper();
    if (!only || strcmp(only, "history") == 0) {
        test_history(7, 10, 100000, 1500);
        test_history(1, 1, 30, 900);
    }
    fprintf(stderr, "%d checks, %d failures\n", test_checks, test_failures);
    return test_failures ? 1 : 0;
}
