/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline.c -- the block pipeline and batched reads, through qmdb.h only.
 *
 *  equivalence  two databases get the same randomized blocks: A pipelined (qmdb_submit, then
 *               qmdb_wait one block behind) with read-modify-writes through qmdb_get_many,
 *               B sequential (QMDB_OPEN_NO_PIPELINE, QMDB_NO_URING=1, qmdb_commit, qmdb_get).
 *               Every read result and every root must be identical; rounds with the default
 *               and a tiny compaction threshold, with buffered and O_DIRECT reads, and with A's
 *               log mapped (entries in the page cache are not read again) or not
 *               (QMDB_NO_MMAP=1: every read a batched read into the warm caches).
 *  readers      a reader thread calls qmdb_get_many on a group of keys that every block
 *               rewrites with its height while the writer submits blocks: one batch must see
 *               one block (all values equal), never older than the durable height before the
 *               read nor newer than the last block submitted after it.
 *  edges        get_many's per-read codes, heights refused by submit and wait, statistics.
 *
 * Thread: main; one reader thread in the readers case.
 */
#include "../test.h"
#include "prefetch.h"
#include "qmdb.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

static char base[] = "/tmp/qmdb-test-pipeXXXXXX";
static uint64_t rng = 4242;

static uint64_t
next(void)
{
    return test_xorshift(&rng);
}

static qmdb_db *
mkdb(const char *name, uint64_t thres, uint32_t flags, bool no_uring, bool no_mmap)
{
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/%s", base, name);
    qmdb_options o;
    qmdb_options_init(&o);
    o.compact_thres = thres;
    o.utilization_ratio = thres == 1 ? 1 : 7;
    o.utilization_div = thres == 1 ? 1 : 10;
    o.entry_segment_bytes = 1 << 20;
    o.twig_segment_bytes = 1 << 20;
    o.history_blocks = 5;
    o.flags = flags;
    REQUIRE(qmdb_create(dir, &o) == 0);
    if (no_uring)
        setenv("QMDB_NO_URING", "1", 1);
    if (no_mmap)
        setenv("QMDB_NO_MMAP", "1", 1);
    qmdb_db *db = NULL;
    int rc = qmdb_open(dir, &o, &db);
    unsetenv("QMDB_NO_URING");
    unsetenv("QMDB_NO_MMAP");
    if (rc)
        fprintf(stderr, "open %s: %s\n", dir, qmdb_open_error());
    REQUIRE(rc == 0);
    return db;
}

#define NKEYS 3000
#define MAXV 600

static size_t
key_of(unsigned i, char *k)
{
    return (size_t)sprintf(k, "key-%u", i);
}

static void
equivalence_round(uint64_t thres, uint32_t aflags, unsigned blocks, bool a_mapped)
{
    qmdb_db *a = mkdb(thres == 1 ? "a1" : a_mapped ? "a" : "a2", thres, aflags, false, !a_mapped);
    qmdb_db *b = mkdb(thres == 1 ? "b1"
                      : a_mapped ? "b"
                                 : "b2",
                      thres, QMDB_OPEN_NO_PIPELINE, true, false);
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(a, &st));
    CHECK(st.pipeline == 1);
    CHECK_OK(qmdb_stat(b, &st));
    CHECK(st.pipeline == 0 && st.io_uring == 0);

    qmdb_batch *ba, *bb;
    REQUIRE(qmdb_batch_new(&ba) == 0 && qmdb_batch_new(&bb) == 0);
    static char keys[400][16];
    static unsigned char vals[400][MAXV], got[400][MAXV], want[MAXV];
    qmdb_read rd[400];
    long mismatches = 0, found = 0;
    for (uint64_t h = 1; h <= blocks; h++) {
        unsigned nops = (unsigned)(next() % 400);
        qmdb_batch_reset(ba);
        qmdb_batch_reset(bb);
        /* Read-modify-write: A reads every key of the block in one batch first. */
        for (unsigned i = 0; i < nops; i++) {
            size_t kl = key_of((unsigned)(next() % NKEYS), keys[i]);
            rd[i] = (qmdb_read){keys[i], kl, got[i], MAXV, 0, 0};
        }
        CHECK_OK(qmdb_get_many(a, rd, nops));
        for (unsigned i = 0; i < nops; i++) {
            size_t wl = 0;
            int rc = qmdb_get(b, rd[i].key, rd[i].klen, want, MAXV, &wl);
            if (rc != rd[i].rc || (rc == 0 && (wl != rd[i].vlen || memcmp(want, got[i], wl))))
                mismatches++;
            found += rc == 0;
            if (i % 7 == 0 && h > 1)
                CHECK(qmdb_batch_tx(ba) == 0 && qmdb_batch_tx(bb) == 0);
            if (next() % 5 == 0) {
                CHECK_OK(qmdb_batch_del(ba, rd[i].key, rd[i].klen));
                CHECK_OK(qmdb_batch_del(bb, rd[i].key, rd[i].klen));
            } else {
                size_t vl = 1 + next() % (next() % 8 == 0 ? MAXV : 40);
                for (size_t j = 0; j < vl; j++)
                    vals[i][j] = (unsigned char)next();
                CHECK_OK(qmdb_batch_put(ba, rd[i].key, rd[i].klen, vals[i], vl));
                CHECK_OK(qmdb_batch_put(bb, rd[i].key, rd[i].klen, vals[i], vl));
            }
        }
        unsigned char ra[32], rb[32];
        CHECK_OK(qmdb_submit(a, h, ba));
        CHECK_OK(qmdb_commit(b, h, bb, rb));
        if (h > 1) { /* A is one block behind in durability */
            unsigned char rb_prev[32];
            CHECK_OK(qmdb_wait(a, h - 1, ra));
            CHECK_OK(qmdb_root(b, h - 1, rb_prev));
            CHECK_MEM(ra, rb_prev, 32);
            CHECK(qmdb_height(a) >= h - 1);
        }
        if (h % 50 == 0) { /* a drain, then the latest roots */
            CHECK_OK(qmdb_wait(a, h, ra));
            CHECK_MEM(ra, rb, 32);
        }
    }
    CHECK_OK(qmdb_wait(a, blocks, NULL));
    CHECK_EQ_U64(mismatches, 0);
    CHECK(found > (long)blocks * 20); /* the reads do hit existing keys */
    unsigned char ra[32], rb[32];
    CHECK_OK(qmdb_root(a, UINT64_MAX, ra));
    CHECK_OK(qmdb_root(b, UINT64_MAX, rb));
    CHECK_MEM(ra, rb, 32);
    CHECK_OK(qmdb_stat(a, &st));
    CHECK_EQ_U64(st.height, blocks);
    if (a_mapped) {
        /* The entries were in the page cache: read from the mapping, not read again. */
        CHECK(st.batched_reads * 10 < (uint64_t)found);
    } else {
        /* Batched reads into the warm caches, used by the update stage. */
        CHECK(st.batched_reads > 0);
        CHECK(st.warm_hits > 0);
        CHECK(st.cache_dram_bytes > 0);
    }
    CHECK(st.cache_dram_bytes < (1u << 30));
    CHECK(st.sha256_compressions > 0);
    CHECK_EQ_U64(st.blocks_committed, blocks);
    if (thres == 1)
        CHECK(st.compactions > 100);
    qmdb_batch_free(ba);
    qmdb_batch_free(bb);
    CHECK_OK(qmdb_close(a));
    CHECK_OK(qmdb_close(b));
}

/* ---- readers concurrent with the writer ---- */

#define GROUP 64
static atomic_ullong submitted_h;
static atomic_int stop_readers;
static long reader_batches, reader_bad, committed_batches, behind;

static void *
reader_main(void *arg)
{
    qmdb_db *db = arg;
    static char k[GROUP][16];
    static uint64_t v[GROUP];
    qmdb_read rd[GROUP];
    for (unsigned i = 0; i < GROUP; i++)
        rd[i] = (qmdb_read){k[i], key_of(i, k[i]), &v[i], 8, 0, 0};
    while (!atomic_load(&stop_readers)) {
        uint64_t lo = qmdb_height(db);
        int rc = qmdb_get_many(db, rd, GROUP);
        uint64_t hi = atomic_load(&submitted_h);
        reader_batches++;
        if (rc) {
            reader_bad++;
            continue;
        }
        for (unsigned i = 0; i < GROUP; i++) {
            if (rd[i].rc != 0 || rd[i].vlen != 8 || v[i] != v[0] || v[i] < lo || v[i] > hi) {
                reader_bad++;
                break;
            }
        }
        /* a single get too */
        uint64_t one = 0;
        size_t vl = 0;
        if (qmdb_get(db, k[3], rd[3].klen, &one, 8, &vl) != 0 || one < lo ||
            one > atomic_load(&submitted_h))
            reader_bad++;
        /* The durable state: one block, never newer than the durable height after the read. */
        lo = qmdb_height(db);
        rc = qmdb_get_many_committed(db, rd, GROUP);
        uint64_t dhi = qmdb_height(db);
        committed_batches++;
        if (rc) {
            reader_bad++;
            continue;
        }
        for (unsigned i = 0; i < GROUP; i++) {
            if (rd[i].rc != 0 || rd[i].vlen != 8 || v[i] != v[0] || v[i] < lo || v[i] > dhi) {
                fprintf(stderr, "committed read: key %u value %llu, durable %llu..%llu\n", i,
                        (unsigned long long)v[i], (unsigned long long)lo, (unsigned long long)dhi);
                reader_bad++;
                break;
            }
        }
        behind += v[0] < atomic_load(&submitted_h);
        if (qmdb_get_committed(db, k[5], rd[5].klen, &one, 8, &vl) != 0 || one < lo ||
            one > qmdb_height(db))
            reader_bad++;
    }
    return NULL;
}

static void
readers_case(void)
{
    qmdb_db *db = mkdb("r", 1, 0, false, false);
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    char k[16];
    for (unsigned i = 0; i < GROUP; i++) {
        uint64_t v = 1;
        CHECK_OK(qmdb_batch_put(b, k, key_of(i, k), &v, 8));
    }
    CHECK_OK(qmdb_commit(db, 1, b, NULL));
    atomic_store(&submitted_h, 1);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, reader_main, db) == 0);
    for (uint64_t h = 2; h <= 300; h++) {
        qmdb_batch_reset(b);
        for (unsigned i = 0; i < GROUP; i++)
            CHECK_OK(qmdb_batch_put(b, k, key_of(i, k), &h, 8));
        for (unsigned i = 0; i < 50; i++) { /* churn elsewhere: creates, deletes, compaction */
            uint64_t v = next();
            size_t kl = key_of(GROUP + (unsigned)(next() % 500), k);
            if (v % 3 == 0)
                CHECK_OK(qmdb_batch_del(b, k, kl));
            else
                CHECK_OK(qmdb_batch_put(b, k, kl, &v, 8));
        }
        atomic_store(&submitted_h, h); /* before submit: the upper bound readers may see */
        CHECK_OK(qmdb_submit(db, h, b));
        if (h % 3 == 0)
            CHECK_OK(qmdb_wait(db, h - 1, NULL));
    }
    CHECK_OK(qmdb_wait(db, 300, NULL));
    atomic_store(&stop_readers, 1);
    pthread_join(t, NULL);
    CHECK_EQ_U64(reader_bad, 0);
    CHECK(reader_batches > 10);
    CHECK(committed_batches > 10);
    printf("readers: %ld batches (%ld of the durable state, %ld of them behind the submitted "
           "block) during 299 blocks\n",
           reader_batches, committed_batches, behind);
    /* Absent keys and the churn keys through the committed view, once everything is durable:
     * the same answers as qmdb_get. */
    for (unsigned i = GROUP; i < GROUP + 500; i++) {
        char kk[16];
        size_t kl = key_of(i, kk), v1 = 0, v2 = 0;
        uint64_t a = 0, c = 0;
        int r1 = qmdb_get(db, kk, kl, &a, 8, &v1), r2 = qmdb_get_committed(db, kk, kl, &c, 8, &v2);
        CHECK(r1 == r2 && (r1 != 0 || (v1 == v2 && a == c)));
    }
    qmdb_batch_free(b);
    CHECK_OK(qmdb_close(db));
}

static void
edges_case(void)
{
    qmdb_db *db = mkdb("e", 20000000, 0, false, false);
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    CHECK_OK(qmdb_batch_put(b, "alpha", 5, "0123456789", 10));
    CHECK_RC(qmdb_submit(db, 2, b), QMDB_BAD_HEIGHT);
    CHECK_OK(qmdb_submit(db, 1, b));
    CHECK_RC(qmdb_wait(db, 2, NULL), QMDB_BAD_HEIGHT);
    CHECK_OK(qmdb_wait(db, 1, NULL));
    char small[4], big[32];
    qmdb_read rd[4] = {
        {"alpha", 5, big, sizeof(big), 0, -1},
        {"alpha", 5, small, sizeof(small), 0, -1},
        {"beta", 4, big, sizeof(big), 0, -1},
        {"", 0, big, sizeof(big), 0, -1},
    };
    CHECK_OK(qmdb_get_many(db, rd, 4));
    CHECK(rd[0].rc == 0 && rd[0].vlen == 10 && memcmp(big, "0123456789", 10) == 0);
    CHECK(rd[1].rc == QMDB_BUFFER_TOO_SMALL && rd[1].vlen == 10);
    CHECK_RC(rd[2].rc, QMDB_NOTFOUND);
    CHECK_RC(rd[3].rc, QMDB_INVALID);
    CHECK_OK(qmdb_get_many(db, NULL, 0));
    CHECK_RC(qmdb_get_many(db, NULL, 3), QMDB_INVALID);

    /* The committed view while block 2 is in flight: the old value (or absence) exactly
     * while block 2 is not durable. */
    for (uint64_t h = 2; h < 40; h++) {
        char nv[8], ov[8], got[8];
        snprintf(ov, sizeof(ov), "v%06llu", (unsigned long long)(h - 1));
        snprintf(nv, sizeof(nv), "v%06llu", (unsigned long long)h);
        qmdb_batch_reset(b);
        CHECK_OK(qmdb_batch_put(b, "gamma", 5, nv, 7));
        if (h % 2)
            CHECK_OK(qmdb_batch_del(b, "delta", 5));
        else
            CHECK_OK(qmdb_batch_put(b, "delta", 5, "here", 4));
        CHECK_OK(qmdb_submit(db, h, b));
        uint64_t hb = qmdb_height(db);
        size_t vl = 0;
        int rc = qmdb_get_committed(db, "gamma", 5, got, sizeof(got), &vl);
        uint64_t ha = qmdb_height(db);
        bool is_new = rc == 0 && vl == 7 && memcmp(got, nv, 7) == 0;
        bool is_old =
            h == 2 ? rc == QMDB_NOTFOUND : (rc == 0 && vl == 7 && memcmp(got, ov, 7) == 0);
        CHECK(is_new || is_old);
        CHECK(!is_new || ha >= h);
        CHECK(!is_old || hb < h);
        /* delta: present after even heights; the answer tells which height was read. */
        hb = qmdb_height(db);
        rc = qmdb_get_committed(db, "delta", 5, got, sizeof(got), &vl);
        ha = qmdb_height(db);
        bool d_now = h % 2 == 0;
        CHECK(rc == 0 || rc == QMDB_NOTFOUND);
        if ((rc == 0) == d_now)
            CHECK(ha >= h); /* block h's state: it was durable */
        else
            CHECK(hb < h); /* block h-1's state: h was not durable yet */
        CHECK(qmdb_get(db, "gamma", 5, got, sizeof(got), &vl) == 0 && memcmp(got, nv, 7) == 0);
        CHECK_OK(qmdb_wait(db, h, NULL));
        CHECK(qmdb_get_committed(db, "gamma", 5, got, sizeof(got), &vl) == 0 &&
              memcmp(got, nv, 7) == 0);
    }
    qmdb_batch_free(b);
    CHECK_OK(qmdb_close(db));
}

/* Large batches: a qmdb_get_many of more keys than one chunk of entry reads (prefetch.c reads
 * a chunk on a helper thread while it looks up the next keys), with repeated and absent keys,
 * every read batched (QMDB_NO_MMAP=1) or the logs mapped, through io_uring or the pread pool;
 * every answer against a model, across blocks that update and delete what was read. While
 * the logs fit in memory each call is cut in two parts on two threads; when they do not
 * (run with QMDB_MEM_LIMIT=1 and mapped logs: test_pipeline_nofit) none is. */
#define LB_KEYS 16000u
#define LB_READS 9000u

static void
lb_value(unsigned i, unsigned ver, unsigned char *v, size_t *vl)
{
    *vl = 1 + (i * 7u + ver) % 60u;
    for (size_t j = 0; j < *vl; j++)
        v[j] = (unsigned char)(i * 31u + ver * 7u + j);
}

static void
large_batch_case(const char *name, bool no_uring, bool no_mmap)
{
    qmdb_db *db = mkdb(name, 20000000, 0, no_uring, no_mmap);
    bool fit = no_mmap || !getenv("QMDB_MEM_LIMIT"); /* no mapping: nothing counted */
    uint64_t splits = qm_get_many_splits();
    static unsigned ver[LB_KEYS]; /* 0: absent, else the version of the value */
    static char keys[LB_READS][16];
    static unsigned char got[LB_READS][64];
    static unsigned idx[LB_READS], wrote[LB_KEYS];
    static qmdb_read rd[LB_READS];
    memset(ver, 0, sizeof(ver));
    memset(wrote, 0, sizeof(wrote));
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    unsigned char v[64], want[64];
    size_t vl, wl;
    uint64_t h = 0;
    for (unsigned blk = 0; blk < 3; blk++) { /* keys [0, 12000): present */
        qmdb_batch_reset(b);
        for (unsigned i = blk * 4000; i < (blk + 1) * 4000; i++) {
            char k[16];
            size_t kl = (size_t)sprintf(k, "lb-%u", i);
            ver[i] = 1;
            lb_value(i, 1, v, &vl);
            CHECK_OK(qmdb_batch_put(b, k, kl, v, vl));
        }
        CHECK_OK(qmdb_commit(db, ++h, b, NULL));
    }
    long wrong = 0;
    for (unsigned round = 0; round < 4; round++) {
        for (unsigned r = 0; r < LB_READS; r++) {
            idx[r] = (unsigned)(next() % (r % 5 == 0 && r ? r : LB_KEYS)); /* some repeats */
            if (r % 5 == 0 && r)
                idx[r] = idx[idx[r]];
            size_t kl = (size_t)sprintf(keys[r], "lb-%u", idx[r]);
            rd[r] = (qmdb_read){keys[r], kl, got[r], sizeof(got[r]), 0, -1};
        }
        CHECK_OK(qmdb_get_many(db, rd, LB_READS));
        qmdb_batch_reset(b);
        for (unsigned r = 0; r < LB_READS; r++) {
            unsigned i = idx[r];
            if (!ver[i]) {
                wrong += rd[r].rc != QMDB_NOTFOUND;
            } else {
                lb_value(i, ver[i], want, &wl);
                wrong += rd[r].rc != 0 || rd[r].vlen != wl || memcmp(got[r], want, wl) != 0;
            }
        }
        for (unsigned r = 0; r < LB_READS; r++) { /* then the block's writes */
            unsigned i = idx[r];
            if (r % 3 == 0 && wrote[i] != round + 1) { /* a new version or a delete, once */
                wrote[i] = round + 1;
                unsigned nv = next() % 4 == 0 ? 0 : ver[i] + 1 + round;
                if (nv == ver[i])
                    continue;
                ver[i] = nv;
                if (nv) {
                    lb_value(i, nv, v, &vl);
                    CHECK_OK(qmdb_batch_put(b, rd[r].key, rd[r].klen, v, vl));
                } else {
                    CHECK_OK(qmdb_batch_del(b, rd[r].key, rd[r].klen));
                }
            }
        }
        CHECK_OK(qmdb_commit(db, ++h, b, NULL));
    }
    CHECK_EQ_U64(wrong, 0);
    CHECK_EQ_U64(qm_get_many_splits() - splits, fit ? 4 : 0);
    qmdb_batch_free(b);
    CHECK_OK(qmdb_close(db));
}

int
main(int argc, char **argv)
{
    REQUIRE(mkdtemp(base) != NULL);
    bool large_only = argc > 1 && strcmp(argv[1], "large") == 0; /* test_pipeline_nofit */
    if (!large_only) {
        edges_case();
        equivalence_round(20000000, 0, 250, true);
        equivalence_round(1, QMDB_OPEN_DIRECT_IO, 250, false);
        equivalence_round(20000000, 0, 100, false);
        readers_case();
        large_batch_case("lb", false, true);
        large_batch_case("lb-pread", true, true);
    }
    large_batch_case("lb-map", false, false);
    if (large_only)
        large_batch_case("lb-map-pread", true, false);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
    CHECK(system(cmd) == 0);
    return test_report("test_pipeline");
}
