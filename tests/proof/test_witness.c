/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_witness.c -- block witnesses end to end through the public API (qmdb_witness /
 * qmdb_witness_verify):
 *   blocks   randomized workloads with compaction on (compact_thres = 1, ratios 1/1 and 7/10)
 *            and pruning on (a short history window): updates, creates, deletes of present
 *            and absent keys, repeated keys in a transaction, empty transactions. Every
 *            block's witness, built right after its commit and again for older blocks still
 *            in the window, verifies to exactly the engine's root of that block; a witness
 *            built without the operations does too unless the block deletes an absent key,
 *            when it is rejected;
 *   tamper   every single-bit flip, truncation and extension of a witness, a wrong pre-root,
 *            a witness that overstates next_sn (null leaves passed off as filled),
 *            other compaction parameters, a changed, dropped, added or moved operation, and
 *            a witness with an entry record removed are rejected (a flip inside sn_start,
 *            which the state root does not commit to, may only yield the true root).
 * With QMDB_WITNESS_CORPUS=DIR set it writes fuzz seeds (fuzz_witness_verify.c input format).
 *
 * Thread: single.
 */
#include "hash.h"
#include "qm_internal.h"
#include "qmdb.h"
#include "test.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static u64 rng_state = 0x853c49e6748fea9bull;
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
    snprintf(d, 256, "/tmp/qmdb-test-witness-%s-%d", tag, (int)getpid());
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

/* One recorded block: its operations (keys and values owned). */
#define MAXOPS 160
typedef struct rblock {
    size_t n;
    qmdb_block_op op[MAXOPS];
    char key[MAXOPS][16];
    char val[MAXOPS][48];
    u8 root[32];
    bool absent_del; /* deletes a key that is absent */
} rblock;

static int seed_count;

static void
write_seed(const u8 *w, size_t len, const u8 pre[32], u64 h, const rblock *b)
{
    const char *dir = getenv("QMDB_WITNESS_CORPUS");
    if (!dir)
        return;
    char path[512];
    snprintf(path, sizeof(path), "%s/seed-%02d", dir, seed_count++);
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    u8 x[8];
    fwrite(pre, 1, 32, f);
    for (int i = 0; i < 8; i++)
        x[i] = (u8)(h >> (8 * i));
    fwrite(x, 1, 8, f);
    x[0] = (u8)b->n;
    fwrite(x, 1, 1, f);
    for (size_t i = 0; i < b->n; i++) {
        x[0] = (u8)b->op[i].tx;
        x[1] = (u8)b->op[i].klen;
        x[2] = b->op[i].value ? (u8)b->op[i].vlen : 0;
        fwrite(x, 1, 3, f);
        fwrite(b->op[i].key, 1, b->op[i].klen, f);
        if (b->op[i].value)
            fwrite(b->op[i].value, 1, b->op[i].vlen, f);
    }
    fwrite(w, 1, len, f);
    fclose(f);
}

/* Builds block h's witness (with or without the ops) and checks it against the roots. */
static void
check_block(qmdb_db *db, u64 h, const rblock *b, const u8 pre[32], bool with_ops,
            const qmdb_compaction_params *par, size_t *bytes, unsigned *nops_verified)
{
    u8 *w = NULL;
    size_t len = 0;
    int rc = qmdb_witness(db, h, with_ops ? b->op : NULL, with_ops ? b->n : 0, &w, &len);
    CHECK_OK(rc);
    if (rc) {
        fprintf(stderr, "  witness of block %" PRIu64 ": %s\n", h, qmdb_last_error(db));
        return;
    }
    u8 post[32];
    const char *why = NULL;
    rc = qmdb_witness_verify(w, len, pre, h, b->op, b->n, par, post, &why);
    if (!with_ops && b->absent_del) {
        /* Without the operations a delete of an absent key has no covering entry, unless
         * another operation of its shard brought one (then it verifies, and truly). */
        if (rc == 0)
            CHECK_MEM(post, b->root, 32);
        else
            CHECK_RC(rc, QMDB_BAD_PROOF);
    } else {
        CHECK_OK(rc);
        if (rc)
            fprintf(stderr, "  block %" PRIu64 " (%zu ops): %s\n", h, b->n, why);
        else if (memcmp(post, b->root, 32) != 0)
            fprintf(stderr, "  block %" PRIu64 " (%zu ops, %s): wrong post-root\n", h, b->n,
                    with_ops ? "with ops" : "log only");
        if (rc == 0)
            CHECK_MEM(post, b->root, 32);
        *bytes += len;
        *nops_verified += (unsigned)b->n;
    }
    if (with_ops && h % 37 == 5 && b->n <= 30 && seed_count < 10)
        write_seed(w, len, pre, h, b);
    qmdb_proof_free(w);
}

#define NKEYS 300u

/* Key k's name: "w<i>" for the k-th i whose key lands in shard 3 (one_shard), else "w<k>". */
static unsigned key_id[NKEYS];

static void
pick_keys(bool one_shard)
{
    for (unsigned k = 0, i = 0; k < NKEYS; i++) {
        char key[16];
        u8 kh[32];
        size_t kl = (size_t)snprintf(key, 16, "w%u", i);
        qm_sha256(key, kl, kh);
        if (!one_shard || (kh[0] >> 4) == 3)
            key_id[k++] = i;
    }
}

static void
test_blocks(u32 ratio, u32 div, u64 window, unsigned nblocks, bool one_shard)
{
    pick_keys(one_shard);
    char *dir = make_dir("blocks");
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
    qmdb_compaction_params par = {1, ratio, div};
    rblock *blk = calloc(nblocks + 1, sizeof(rblock));
    REQUIRE(blk);
    bool live[NKEYS] = {false};
    CHECK_OK(qmdb_root(db, 0, blk[0].root));
    qmdb_batch *bt;
    REQUIRE(qmdb_batch_new(&bt) == 0);
    size_t bytes = 0;
    unsigned nver = 0, nblk = 0, nabs = 0;
    for (u64 h = 1; h <= nblocks; h++) {
        rblock *b = &blk[h];
        qmdb_batch_reset(bt);
        unsigned ntx = 1 + (unsigned)(rnd() % 3), tx = 0;
        size_t nops = (size_t)(rnd() % (h % 10 == 0 ? MAXOPS : 80));
        bool tx_live[NKEYS];
        memcpy(tx_live, live, sizeof(live));
        for (size_t i = 0; i < nops; i++) {
            if (i > 0 && tx + 1 < ntx && rnd() % 16 == 0) {
                tx++;
                CHECK_OK(qmdb_batch_tx(bt));
                if (rnd() % 4 == 0) { /* an empty transaction still counts */
                    tx++;
                    CHECK_OK(qmdb_batch_tx(bt));
                }
                memcpy(tx_live, live, sizeof(live));
            }
            unsigned k = (unsigned)(rnd() % NKEYS);
            qmdb_block_op *op = &b->op[b->n];
            op->tx = tx;
            op->klen = (size_t)snprintf(b->key[b->n], 16, "w%u", key_id[k]);
            op->key = b->key[b->n];
            if (rnd() % 100 < 65) {
                op->vlen = (size_t)snprintf(b->val[b->n], 48, "v%" PRIu64 ".%zu%.*s", h, i,
                                            (int)(rnd() % 20), "xxxxxxxxxxxxxxxxxxxx");
                op->value = b->val[b->n];
                CHECK_OK(qmdb_batch_put(bt, op->key, op->klen, op->value, op->vlen));
                live[k] = true;
            } else {
                op->value = NULL;
                op->vlen = 0;
                CHECK_OK(qmdb_batch_del(bt, op->key, op->klen));
                if (!tx_live[k])
                    b->absent_del = true;
                live[k] = false;
            }
            b->n++;
        }
        CHECK_OK(qmdb_commit(db, h, bt, b->root));
        check_block(db, h, b, blk[h - 1].root, true, &par, &bytes, &nver);
        nblk++;
        if (h % 3 == 0)
            check_block(db, h, b, blk[h - 1].root, false, &par, &bytes, &nver);
        nabs += b->absent_del;
        if (h > 5 && h % 7 == 0) { /* an older block still in the window */
            u64 hh = h - 1 - rnd() % QM_MIN(window, h - 1);
            check_block(db, hh, &blk[hh], blk[hh - 1].root, true, &par, &bytes, &nver);
            nblk++;
        }
        if (h == nblocks / 2) {
            CHECK_OK(qmdb_close(db));
            REQUIRE(qmdb_open(dir, NULL, &db) == 0);
        }
    }
    qmdb_batch_free(bt);
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    fprintf(stderr,
            "witness %u/%u window %" PRIu64 "%s: %u witnesses, %u ops verified, %.0f bytes/op; "
            "%" PRIu64 " compactions since reopening, %" PRIu64 " twigs pruned, %u blocks "
            "delete an absent key\n",
            ratio, div, window, one_shard ? " (one shard)" : "", nblk, nver,
            nver ? (double)bytes / nver : 0.0, st.compactions, st.pruned_twigs, nabs);
    if (one_shard) {
        CHECK(st.compactions > 500);
        if (window < nblocks)
            CHECK(st.pruned_twigs > 0);
    }
    /* Outside the window: the witness is refused, never wrong. */
    if (window + 5 < nblocks) {
        u8 *w = NULL;
        size_t len = 0;
        int rc = qmdb_witness(db, 2, blk[2].op, blk[2].n, &w, &len);
        if (rc == 0) {
            u8 post[32];
            CHECK_OK(
                qmdb_witness_verify(w, len, blk[1].root, 2, blk[2].op, blk[2].n, &par, post, NULL));
            CHECK_MEM(post, blk[2].root, 32);
            qmdb_proof_free(w);
        } else {
            CHECK_RC(rc, QMDB_PRUNED);
        }
    }
    CHECK_RC(qmdb_witness(db, nblocks + 1, NULL, 0, &(u8 *){NULL}, &(size_t){0}), QMDB_NOTFOUND);
    CHECK_RC(qmdb_witness(db, 0, NULL, 0, &(u8 *){NULL}, &(size_t){0}), QMDB_NOTFOUND);
    free(blk);
    CHECK_OK(qmdb_close(db));
    remove_dir(dir);
}

/* ---- tamper ----------------------------------------------------------------------------- */

/* Offsets of the last shard section's fields (format: docs/PROOFS.md §10). */
typedef struct sect {
    size_t sn_start[16]; /* every section's sn_start field */
    unsigned nsect;
    size_t entries, ecount; /* the last section's first entry record and entry count */
    u32 m;
} sect;

static bool
in_sn_start(const sect *s, size_t i)
{
    for (unsigned k = 0; k < s->nsect; k++)
        if (i >= s->sn_start[k] && i < s->sn_start[k] + 8)
            return true;
    return false;
}

static u64
le64(const u8 *p)
{
    u64 v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void
last_section(const u8 *w, size_t len, sect *s)
{
    unsigned mask = w[573] | ((unsigned)w[574] << 8);
    size_t o = 575;
    for (unsigned k = 0; k < 16; k++) {
        if (!((mask >> k) & 1))
            continue;
        u64 ns = le64(w + o), F = le64(w + o + 16), y = ns >> 11;
        s->sn_start[s->nsect++] = o + 8;
        o += 24;
        unsigned U = 1;
        while (y >> U)
            U++;
        for (unsigned i = 0; i < U; i++)
            o += ((F >> i) & 1) ? 32 : 0;
        o += 288 * (y - F);
        o += 32 * (size_t)__builtin_popcount((unsigned)(ns & 2047)) + 256;
        u32 ln = (u32)w[o] | ((u32)w[o + 1] << 8) | ((u32)w[o + 2] << 16) | ((u32)w[o + 3] << 24);
        o += 4 + ln + 352; /* the entry before next_sn */
        s->ecount = o;
        s->m = (u32)w[o] | ((u32)w[o + 1] << 8) | ((u32)w[o + 2] << 16) | ((u32)w[o + 3] << 24);
        o += 4;
        s->entries = o;
        for (u32 i = 0; i < s->m; i++) {
            u32 n =
                (u32)w[o] | ((u32)w[o + 1] << 8) | ((u32)w[o + 2] << 16) | ((u32)w[o + 3] << 24);
            o += 4 + n + 352;
        }
    }
    REQUIRE(o == len);
}

static void
test_tamper(void)
{
    char *dir = make_dir("tamper");
    qmdb_options o;
    qmdb_options_init(&o);
    o.compact_thres = 1;
    o.utilization_ratio = 1;
    o.utilization_div = 1;
    CHECK_OK(qmdb_create(dir, &o));
    qmdb_db *db;
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    qmdb_compaction_params par = {1, 1, 1};
    qmdb_batch *bt;
    REQUIRE(qmdb_batch_new(&bt) == 0);
    u8 pre[32], root[32];
    /* Height 1: 40 keys. */
    for (unsigned k = 0; k < 40; k++) {
        char key[16];
        size_t kl = (size_t)snprintf(key, 16, "t%u", k);
        CHECK_OK(qmdb_batch_put(bt, key, kl, "base", 4));
    }
    CHECK_OK(qmdb_commit(db, 1, bt, pre));
    /* Height 2: one shard's worth of ops: update, create, delete, absent delete. Pick keys of
     * the shard of "t0". */
    rblock b;
    memset(&b, 0, sizeof(b));
    const char *keys[] = {"t0", "t1", "t2", "new1", "new2", "gone"};
    const int kind[] = {0, 0, 2, 1, 1, 2}; /* 0 update, 1 create, 2 delete */
    qmdb_batch_reset(bt);
    for (size_t i = 0; i < 6; i++) {
        qmdb_block_op *op = &b.op[b.n++];
        op->tx = i < 3 ? 0 : 1;
        if (i == 3)
            CHECK_OK(qmdb_batch_tx(bt));
        op->key = keys[i];
        op->klen = strlen(keys[i]);
        op->value = kind[i] == 2 ? NULL : "val";
        op->vlen = kind[i] == 2 ? 0 : 3;
        if (op->value)
            CHECK_OK(qmdb_batch_put(bt, op->key, op->klen, op->value, op->vlen));
        else
            CHECK_OK(qmdb_batch_del(bt, op->key, op->klen));
    }
    CHECK_OK(qmdb_commit(db, 2, bt, root));
    qmdb_batch_free(bt);
    u8 *w;
    size_t len;
    CHECK_OK(qmdb_witness(db, 2, b.op, b.n, &w, &len));
    u8 post[32];
    CHECK_OK(qmdb_witness_verify(w, len, pre, 2, b.op, b.n, &par, post, NULL));
    CHECK_MEM(post, root, 32);
    write_seed(w, len, pre, 2, &b);
    sect s;
    memset(&s, 0, sizeof(s));
    last_section(w, len, &s);
    u8 *t = malloc(len + 64);
    REQUIRE(t);
    memset(t, 0, len + 64);
    REQUIRE(t);
    unsigned tries = 0, rejected = 0, same_root = 0;
    for (size_t i = 0; i < len; i++)
        for (unsigned bit = 0; bit < 8; bit++) {
            memcpy(t, w, len);
            t[i] ^= (u8)(1u << bit);
            int rc = qmdb_witness_verify(t, len, pre, 2, b.op, b.n, &par, post, NULL);
            tries++;
            if (rc == QMDB_BAD_PROOF) {
                rejected++;
            } else if (rc == 0 && in_sn_start(&s, i) && memcmp(post, root, 32) == 0) {
                same_root++; /* sn_start: not committed by the root; the result is still true */
            } else {
                fprintf(stderr, "  bit %u of byte %zu: rc %d\n", bit, i, rc);
            }
        }
    for (size_t n = 0; n < len; n++) {
        tries++;
        rejected +=
            qmdb_witness_verify(w, n, pre, 2, b.op, b.n, &par, post, NULL) == QMDB_BAD_PROOF;
    }
    for (size_t extra = 1; extra <= 64; extra++) {
        memcpy(t, w, len);
        memset(t + len, (int)extra, extra);
        tries++;
        rejected += qmdb_witness_verify(t, len + extra, pre, 2, b.op, b.n, &par, post, NULL) ==
                    QMDB_BAD_PROOF;
    }
    fprintf(stderr,
            "tamper: %u of %u changed witnesses (%zu bytes) rejected, %u flips of sn_start gave "
            "the true root\n",
            rejected, tries, len, same_root);
    CHECK_EQ_U64(rejected + same_root, tries);
    /* A wrong pre-root, other parameters. */
    u8 bad[32];
    memcpy(bad, pre, 32);
    bad[7] ^= 1;
    CHECK_RC(qmdb_witness_verify(w, len, bad, 2, b.op, b.n, &par, post, NULL), QMDB_BAD_PROOF);
    qmdb_compaction_params other = {2, 1, 1};
    CHECK_RC(qmdb_witness_verify(w, len, pre, 2, b.op, b.n, &other, post, NULL), QMDB_BAD_PROOF);
    CHECK_RC(qmdb_witness_verify(w, len, pre, 3, b.op, b.n, &par, post, NULL), QMDB_BAD_PROOF);
    /* Another block: a changed value, a dropped, an added or a moved operation. Each is
     * rejected (the witness binds the block's digest). */
    rblock c;
    unsigned nblock = 0, caught = 0;
    for (size_t v = 0; v < 4 * b.n + 1; v++) {
        c = b;
        size_t i = v % b.n;
        switch (v / b.n) {
        case 0: /* changed value (or a put for a delete) */
            c.op[i].value = "other";
            c.op[i].vlen = 5;
            break;
        case 1: /* dropped */
            memmove(&c.op[i], &c.op[i + 1], (c.n - i - 1) * sizeof(qmdb_block_op));
            c.n--;
            break;
        case 2: /* moved to another transaction */
            if (c.op[i].tx == 0 && i + 1 < c.n && c.op[i + 1].tx == 1)
                c.op[i].tx = 1;
            else if (c.op[i].tx == 1 && i > 0 && c.op[i - 1].tx == 0)
                c.op[i].tx = 0;
            else
                continue;
            break;
        case 3: /* deleted instead */
            c.op[i].value = c.op[i].value ? NULL : "val";
            c.op[i].vlen = c.op[i].value ? 3 : 0;
            break;
        default: /* an added operation */
            c.op[c.n] = c.op[c.n - 1];
            c.op[c.n].key = "t5";
            c.op[c.n].klen = 2;
            c.n++;
            break;
        }
        nblock++;
        int rc = qmdb_witness_verify(w, len, pre, 2, c.op, c.n, &par, post, NULL);
        if (rc == QMDB_BAD_PROOF)
            caught++;
        else
            fprintf(stderr, "  block change %zu: not caught (rc %d)\n", v, rc);
    }
    CHECK_EQ_U64(caught, nblock);
    /* Overstated next_sn: in a section whose youngest twig holds an even number c of
     * entries, claim c + 1 with the null leaf as the frontier's level-0 node. The root still
     * matches; the entry record before next_sn must catch it. */
    {
        unsigned mask = w[573] | ((unsigned)w[574] << 8), done = 0;
        size_t so = 575;
        for (unsigned k = 0; k < 16 && !done; k++) {
            if (!((mask >> k) & 1))
                continue;
            u64 ns = le64(w + so), F = le64(w + so + 16), y = ns >> 11;
            size_t at = so + 24;
            unsigned U = 1;
            while (y >> U)
                U++;
            for (unsigned i = 0; i < U; i++)
                at += ((F >> i) & 1) ? 32 : 0;
            at += 288 * (y - F) + 32 * (size_t)__builtin_popcount((unsigned)(ns & 2047));
            if ((ns & 1) == 0) {
                u8 nul[53], nh[32];
                memset(nul, 0, sizeof(nul));
                for (int i = 0; i < 8; i++) {
                    nul[37 + i] = (u8)((u64)(i64)-2 >> (8 * i));
                    nul[45 + i] = 0xff;
                }
                qm_sha256(nul, sizeof(nul), nh);
                memcpy(t, w, at);
                memcpy(t + at, nh, 32);
                memcpy(t + at + 32, w + at, len - at);
                for (int i = 0; i < 8; i++)
                    t[so + (size_t)i] = (u8)((ns + 1) >> (8 * i));
                const char *why = NULL;
                CHECK_RC(qmdb_witness_verify(t, len + 32, pre, 2, b.op, b.n, &par, post, &why),
                         QMDB_BAD_PROOF);
                fprintf(stderr, "overstated next_sn in shard %u: %s\n", k, why);
                done = 1;
            }
            /* Skip to the next section: the last entry and the entry records. */
            at = so + 24;
            for (unsigned i = 0; i < U; i++)
                at += ((F >> i) & 1) ? 32 : 0;
            at += 288 * (y - F) + 32 * (size_t)__builtin_popcount((unsigned)(ns & 2047)) + 256;
            u32 ln = (u32)w[at] | ((u32)w[at + 1] << 8) | ((u32)w[at + 2] << 16) |
                     ((u32)w[at + 3] << 24);
            at += 4 + ln + 352;
            u32 m = (u32)w[at] | ((u32)w[at + 1] << 8) | ((u32)w[at + 2] << 16) |
                    ((u32)w[at + 3] << 24);
            at += 4;
            for (u32 i = 0; i < m; i++) {
                u32 n = (u32)w[at] | ((u32)w[at + 1] << 8) | ((u32)w[at + 2] << 16) |
                        ((u32)w[at + 3] << 24);
                at += 4 + n + 352;
            }
            so = at;
        }
        CHECK(done);
    }
    /* An entry record removed (count and bytes). */
    if (s.m > 0) {
        size_t eo = s.entries;
        u32 n0 =
            (u32)w[eo] | ((u32)w[eo + 1] << 8) | ((u32)w[eo + 2] << 16) | ((u32)w[eo + 3] << 24);
        size_t rl = 4 + n0 + 352;
        memcpy(t, w, eo);
        memcpy(t + eo, w + eo + rl, len - eo - rl);
        u32 m = s.m - 1;
        for (int i = 0; i < 4; i++)
            t[s.ecount + (size_t)i] = (u8)(m >> (8 * i));
        CHECK_RC(qmdb_witness_verify(t, len - rl, pre, 2, b.op, b.n, &par, post, NULL),
                 QMDB_BAD_PROOF);
    }
    free(t);
    qmdb_proof_free(w);
    CHECK_OK(qmdb_close(db));
    remove_dir(dir);
}

int
main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only || strcmp(only, "tamper") == 0)
        test_tamper();
    if (only && strcmp(only, "quick") == 0)
        test_blocks(7, 10, 100000, 60, false);
    if (!only || strcmp(only, "blocks") == 0) {
        test_blocks(1, 1, 20, 200, true);
        test_blocks(7, 10, 100000, 150, true);
        test_blocks(1, 1, 20, 80, false);
    }
    fprintf(stderr, "%d checks, %d failures\n", test_checks, test_failures);
    return test_failures ? 1 : 0;
}
