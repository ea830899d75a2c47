/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rollback.c -- qmdb_rollback through the public API: the return codes (the latest
 * height, above it, a read-only handle, beyond the window, past pruning), blocks in flight
 * (submitted, not waited for) are made durable and rolled back, readers on another thread see
 * one state or the other (each block writes the same value under two keys; a batched read
 * must never see them differ; a root of an earlier height is there or not found, never an
 * error), and new blocks after a rollback, across a reopen; that a rollback reads only the
 * entries the discarded blocks deactivated when their sXX.dpos records are there (also after a
 * reopen), and walks twigs, still exactly, when the records are missing (a database from
 * before them) or damaged (which qmdb_check reports). The
 * randomized comparison with the reference model is tests/model; crashes and I/O faults are
 * tests/crash and tests/fault.
 */
#include "../test.h"
#include "qmdb.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char base[] = "/tmp/qmdb-rollback-XXXXXX";
static unsigned char roots[400][32];

/* Block h: keys "a" and "b" get the value "h<h>" (and, with extra, n more keys). */
static void
block(qmdb_db *db, uint64_t h, unsigned extra, bool wait)
{
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    char v[32];
    int vl = snprintf(v, sizeof(v), "h%llu", (unsigned long long)h);
    CHECK_OK(qmdb_batch_put(b, "a", 1, v, (size_t)vl));
    CHECK_OK(qmdb_batch_put(b, "b", 1, v, (size_t)vl));
    for (unsigned i = 0; i < extra; i++) {
        char k[16];
        int kl = snprintf(k, sizeof(k), "k%u", i);
        CHECK_OK(qmdb_batch_put(b, k, (size_t)kl, v, (size_t)vl));
    }
    if (wait)
        CHECK_OK(qmdb_commit(db, h, b, roots[h]));
    else
        CHECK_OK(qmdb_submit(db, h, b));
    qmdb_batch_free(b);
}

static void
check_at(qmdb_db *db, uint64_t h)
{
    unsigned char r[32], v[32];
    size_t vl = 0;
    CHECK_EQ_U64(qmdb_height(db), h);
    CHECK_OK(qmdb_root(db, UINT64_MAX, r));
    CHECK(memcmp(r, roots[h], 32) == 0);
    CHECK_RC(qmdb_root(db, h + 1, r), QMDB_NOTFOUND);
    char want[32];
    int wl = snprintf(want, sizeof(want), "h%llu", (unsigned long long)h);
    CHECK_OK(qmdb_get(db, "a", 1, v, sizeof(v), &vl));
    CHECK(vl == (size_t)wl && memcmp(v, want, vl) == 0);
}

static volatile bool stop;
static long reads, torn, root_errors;

static void *
reader(void *arg)
{
    qmdb_db *db = arg;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        unsigned char va[32], vb[32];
        qmdb_read rd[2] = {{"a", 1, va, sizeof(va), 0, 0}, {"b", 1, vb, sizeof(vb), 0, 0}};
        if (qmdb_get_many(db, rd, 2) != 0 || rd[0].rc || rd[1].rc)
            continue;
        reads++;
        if (rd[0].vlen != rd[1].vlen || memcmp(va, vb, rd[0].vlen) != 0)
            torn++;
        /* A root of an earlier height: there, or gone (a rollback cut it), never an error. */
        unsigned char r[32];
        uint64_t t = qmdb_height(db);
        int rc = qmdb_root(db, t > 0 ? t - 1 : 0, r);
        root_errors += rc != 0 && rc != QMDB_NOTFOUND;
    }
    return NULL;
}

static void
test_codes_and_in_flight(void)
{
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/a", base);
    REQUIRE(qmdb_create(dir, NULL) == 0);
    qmdb_db *db;
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    CHECK_OK(qmdb_root(db, 0, roots[0]));
    for (uint64_t h = 1; h <= 8; h++)
        block(db, h, 20, true);
    CHECK_RC(qmdb_rollback(db, 9), QMDB_BAD_HEIGHT);
    CHECK_OK(qmdb_rollback(db, 8)); /* the latest: nothing to do */
    check_at(db, 8);
    /* Blocks in flight: made durable, then rolled back. */
    block(db, 9, 5, false);
    block(db, 10, 5, false);
    CHECK_OK(qmdb_rollback(db, 7));
    check_at(db, 7);
    CHECK_RC(qmdb_wait(db, 9, NULL), QMDB_BAD_HEIGHT);
    /* Other blocks 8.. (different content: 3 extra keys), readers running meanwhile. */
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, reader, db) == 0);
    for (int round = 0; round < 20; round++) {
        uint64_t h = qmdb_height(db);
        for (unsigned k = 0; k < 3; k++)
            block(db, ++h, (unsigned)round, round % 2 == 0);
        for (uint64_t x = h - 2; x <= h; x++) /* the roots of the submitted blocks */
            CHECK_OK(qmdb_wait(db, x, roots[x]));
        uint64_t to = h - 1 - (uint64_t)(round % 3);
        CHECK_OK(qmdb_rollback(db, to));
        check_at(db, to);
    }
    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    printf("  readers: %ld batched reads during rollbacks, %ld saw two states, %ld root errors\n",
           reads, torn, root_errors);
    CHECK(torn == 0);
    CHECK(root_errors == 0);
    uint64_t h = qmdb_height(db);
    CHECK_OK(qmdb_close(db));
    /* Durable across a reopen (verifying), and read-only handles may not roll back. */
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = QMDB_OPEN_RDONLY;
    REQUIRE(qmdb_open(dir, &o, &db) == 0);
    check_at(db, h);
    CHECK_RC(qmdb_rollback(db, h - 1), QMDB_INVALID);
    CHECK_OK(qmdb_close(db));
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    CHECK_OK(qmdb_rollback(db, h - 2));
    check_at(db, h - 2);
    block(db, h - 1, 1, true);
    CHECK_OK(qmdb_close(db));
    CHECK_OK(qmdb_check(dir, NULL, NULL, NULL));
}

/* The inode of each shard's index run file sXX.hix (0 when missing). */
static void
run_inodes(const char *dir, ino_t ino[16])
{
    for (unsigned i = 0; i < 16; i++) {
        char path[300];
        struct stat st;
        snprintf(path, sizeof(path), "%s/s%02x.hix", dir, i);
        ino[i] = stat(path, &st) == 0 ? st.st_ino : 0;
    }
}

/* A process that rolls back, commits three blocks and exits without closing (as after a
 * SIGKILL): with the hybrid indexer the next fast open resumes every shard from the run of
 * the last close (height 6, ahead of the rollback's target) plus the journal: the rollback's
 * undo record down to 3 and the three blocks. */
static void
test_crash_after_rollback(void)
{
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/c", base);
    REQUIRE(qmdb_create(dir, NULL) == 0);
    qmdb_db *db;
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    for (uint64_t h = 1; h <= 6; h++)
        block(db, h, 50, true);
    CHECK_OK(qmdb_close(db));
    ino_t ino[16];
    run_inodes(dir, ino);
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        qmdb_options o;
        qmdb_options_init(&o);
        o.flags = QMDB_OPEN_FAST;
        if (qmdb_open(dir, &o, &db) || qmdb_rollback(db, 3))
            _exit(3);
        for (uint64_t h = 4; h <= 6; h++)
            block(db, h, 7, true);
        _exit(test_failures ? 4 : 0); /* no qmdb_close: no checkpoint */
    }
    int st;
    REQUIRE(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = QMDB_OPEN_RDONLY | QMDB_OPEN_FAST;
    REQUIRE(qmdb_open(dir, &o, &db) == 0);
    CHECK_EQ_U64(qmdb_height(db), 6);
    qmdb_stats s = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &s));
    const char *ix = getenv("QMDB_INDEXER");
    if (ix && strcmp(ix, "hybrid") == 0) {
        /* The rollback rewrote no index run (a checkpoint would have renamed new ones in). */
        ino_t now[16];
        run_inodes(dir, now);
        CHECK(memcmp(ino, now, sizeof(ino)) == 0);
        CHECK_EQ_U64(s.index_resumed_shards, 16);
        /* The run is the close's checkpoint at 6, or a merge's since: per shard at most the
         * rollback's undo record down to 3 and the 3 blocks. */
        CHECK(s.index_replayed_blocks > 0 && s.index_replayed_blocks <= 16 * 4);
    }
    unsigned char v[32];
    size_t vl = 0;
    CHECK_OK(qmdb_get(db, "k6", 2, v, sizeof(v), &vl));
    CHECK(vl == 2 && memcmp(v, "h6", 2) == 0);
    CHECK_RC(qmdb_get(db, "k40", 3, v, sizeof(v), &vl), QMDB_OK); /* from block 3 */
    CHECK(vl == 2 && memcmp(v, "h3", 2) == 0);
    CHECK_OK(qmdb_close(db));
    CHECK_OK(qmdb_check(dir, NULL, NULL, NULL));
    printf("  crash after a rollback: %u shards resumed, %llu blocks replayed\n",
           s.index_resumed_shards, (unsigned long long)s.index_replayed_blocks);
}

/* In-memory indexer: a handle that loaded the index checkpoint, rolled back and committed a
 * different block at the same height writes a new checkpoint at close (the one it loaded is
 * of the discarded block), so the next fast open loads it again. */
static void
test_checkpoint_after_rollback(void)
{
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/k", base);
    qmdb_options o;
    qmdb_options_init(&o);
    o.indexer = QMDB_INDEXER_MEMORY;
    REQUIRE(qmdb_create(dir, &o) == 0);
    qmdb_db *db;
    REQUIRE(qmdb_open(dir, &o, &db) == 0);
    for (uint64_t h = 1; h <= 4; h++)
        block(db, h, 20, true);
    CHECK_OK(qmdb_close(db));
    o.flags = QMDB_OPEN_FAST;
    REQUIRE(qmdb_open(dir, &o, &db) == 0);
    qmdb_stats s = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &s));
    CHECK_EQ_U64(s.index_resumed_shards, 16);
    CHECK_OK(qmdb_rollback(db, 3));
    block(db, 4, 9, true); /* another block 4 */
    CHECK_OK(qmdb_close(db));
    o.flags = QMDB_OPEN_RDONLY | QMDB_OPEN_FAST;
    REQUIRE(qmdb_open(dir, &o, &db) == 0);
    CHECK_OK(qmdb_stat(db, &s));
    CHECK_EQ_U64(s.index_resumed_shards, 16);
    check_at(db, 4);
    CHECK_OK(qmdb_close(db));
    CHECK_OK(qmdb_check(dir, NULL, NULL, NULL));
}

/* A small history: rollbacks deeper than it, or past twigs pruned since, are refused with
 * nothing changed; within it they work even right after pruning. */
static void
test_window(void)
{
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/w", base);
    qmdb_options o;
    qmdb_options_init(&o);
    o.history_blocks = 4;
    o.compact_thres = 1;
    o.utilization_ratio = 1;
    o.utilization_div = 1;
    REQUIRE(qmdb_create(dir, &o) == 0);
    qmdb_db *db;
    REQUIRE(qmdb_open(dir, &o, &db) == 0);
    CHECK_OK(qmdb_root(db, 0, roots[0]));
    /* Every update re-appends the oldest live entry (1/1 compaction), so twigs of sentries
     * die and are pruned 4 blocks later. */
    qmdb_stats st = QMDB_STATS_INIT;
    uint64_t h = 0;
    while (h < 300) {
        block(db, ++h, 2000, true);
        CHECK_OK(qmdb_stat(db, &st));
        if (st.pruned_twigs > 0 && h > 12)
            break;
    }
    printf("  window: height %llu, %llu twigs pruned\n", (unsigned long long)h,
           (unsigned long long)st.pruned_twigs);
    CHECK(st.pruned_twigs > 0);
    unsigned char r[32];
    CHECK_RC(qmdb_rollback(db, h - 5), QMDB_PRUNED); /* beyond the history */
    CHECK(strstr(qmdb_last_error(db), "window") != NULL);
    CHECK_RC(qmdb_rollback(db, 0), QMDB_PRUNED);
    check_at(db, h);
    CHECK_OK(qmdb_stat(db, &st));
    uint64_t walked0 = st.rollback_walked;
    CHECK_OK(qmdb_rollback(db, h - 4));
    check_at(db, h - 4);
    CHECK_OK(qmdb_stat(db, &st)); /* the window's records outlive the files' rotation */
    CHECK(st.rollback_reactivated > 0);
    CHECK_EQ_U64(st.rollback_walked, walked0);
    block(db, h - 3, 2000, true);
    CHECK_OK(qmdb_root(db, UINT64_MAX, r));
    CHECK_OK(qmdb_close(db));
    CHECK_OK(qmdb_check(dir, NULL, NULL, NULL));
}

/* Block h of the cost tests: keys "c<i>" for i = first, first + step, ... (count of them) get
 * the value "t<tag>". */
static void
cost_block(qmdb_db *db, uint64_t h, unsigned first, unsigned step, unsigned count, unsigned tag)
{
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    char v[32];
    int vl = snprintf(v, sizeof(v), "t%u", tag);
    for (unsigned i = 0; i < count; i++) {
        char k[16];
        int kl = snprintf(k, sizeof(k), "c%u", first + i * step);
        CHECK_OK(qmdb_batch_put(b, k, (size_t)kl, v, (size_t)vl));
    }
    CHECK_OK(qmdb_commit(db, h, b, roots[h]));
    qmdb_batch_free(b);
}

/* The rollback counters of db minus those in *before (which is then updated). */
static void
rb_delta(qmdb_db *db, qmdb_stats *before, uint64_t *react, uint64_t *read, uint64_t *walked)
{
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    *react = st.rollback_reactivated - before->rollback_reactivated;
    *read = st.rollback_entries_read - before->rollback_entries_read;
    *walked = st.rollback_walked - before->rollback_walked;
    *before = st;
}

static void
at_root(qmdb_db *db, uint64_t h)
{
    unsigned char r[32], v[32];
    size_t vl = 0;
    CHECK_EQ_U64(qmdb_height(db), h);
    CHECK_OK(qmdb_root(db, UINT64_MAX, r));
    CHECK(memcmp(r, roots[h], 32) == 0);
    CHECK_OK(qmdb_get(db, "c0", 2, v, sizeof(v), &vl)); /* written by blocks 1 and 11+ only */
    CHECK(vl == 2 && memcmp(v, "t1", 2) == 0);
}

/* Damages the record of `height` in shard's sXX.dpos0/1 (walking a file back from its end by
 * the length fields, FORMAT.md); false if no file holds it. */
static bool
damage_dpos(const char *dir, unsigned shard, uint64_t height)
{
    for (unsigned k = 0; k < 2; k++) {
        char path[300];
        snprintf(path, sizeof(path), "%s/s%02x.dpos%u", dir, shard, k);
        FILE *f = fopen(path, "r+b");
        if (!f)
            continue;
        REQUIRE(fseek(f, 0, SEEK_END) == 0);
        long end = ftell(f);
        while (end > 64) {
            unsigned char tr[8], hb[8];
            REQUIRE(fseek(f, end - 8, SEEK_SET) == 0);
            REQUIRE(fread(tr, 1, 8, f) == 8);
            long len = (long)(tr[0] | tr[1] << 8 | tr[2] << 16 | (uint32_t)tr[3] << 24);
            REQUIRE(len >= 24 && len <= end - 64);
            REQUIRE(fseek(f, end - len, SEEK_SET) == 0);
            REQUIRE(fread(hb, 1, 8, f) == 8);
            uint64_t rh = 0;
            for (int i = 7; i >= 0; i--)
                rh = rh << 8 | hb[i];
            if (rh == height) {
                hb[0] ^= 0x5a; /* the height byte: the CRC no longer matches */
                REQUIRE(fseek(f, end - len, SEEK_SET) == 0);
                REQUIRE(fwrite(hb, 1, 1, f) == 1);
                fclose(f);
                return true;
            }
            end -= len;
        }
        fclose(f);
    }
    return false;
}

static void
drop_dpos(const char *dir)
{
    for (unsigned s = 0; s < 16; s++)
        for (unsigned k = 0; k < 2; k++) {
            char path[300];
            snprintf(path, sizeof(path), "%s/s%02x.dpos%u", dir, s, k);
            CHECK(unlink(path) == 0 || k == 1);
        }
}

static void
count_problem(void *arg, const char *msg)
{
    if (strstr(msg, "dpos"))
        ++*(int *)arg;
}

/* The cost of a rollback: 20,000 keys (about 3 twigs per shard), then blocks that update
 * every 100th key (entries spread over every twig). Undoing one reads the 200 entries it
 * deactivated and no other entry below its tail; with the records gone or damaged the twig
 * walk finds them, and the state is exactly the same. */
static void
test_cost(void)
{
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/cost", base);
    REQUIRE(qmdb_create(dir, NULL) == 0);
    qmdb_db *db;
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    for (uint64_t h = 1; h <= 10; h++)
        cost_block(db, h, (unsigned)(h - 1) * 2000, 1, 2000, 1);
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    uint64_t react, read, walked;

    /* One block, same handle. */
    cost_block(db, 11, 0, 100, 200, 2);
    CHECK_OK(qmdb_rollback(db, 10));
    at_root(db, 10);
    rb_delta(db, &st, &react, &read, &walked);
    printf("  cost: 1 block: %llu entries live again, %llu read, %llu by a twig walk\n",
           (unsigned long long)react, (unsigned long long)read, (unsigned long long)walked);
    CHECK(react >= 200 && react <= 400); /* the updates' and the compactions' */
    CHECK_EQ_U64(read, react);
    CHECK_EQ_U64(walked, 0);

    /* A block updating 4,000 keys created together (block 1): many re-activated entries per
     * twig, read through the scanner at their recorded offsets; the same counts. */
    cost_block(db, 11, 0, 1, 4000, 2);
    CHECK_OK(qmdb_rollback(db, 10));
    at_root(db, 10);
    rb_delta(db, &st, &react, &read, &walked);
    CHECK(react >= 4000 && react <= 8000);
    CHECK_EQ_U64(read, react);
    CHECK_EQ_U64(walked, 0);

    /* Two blocks, one of them committed before a reopen. */
    cost_block(db, 11, 10, 100, 200, 3);
    CHECK_OK(qmdb_close(db));
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    cost_block(db, 12, 50, 100, 200, 4);
    CHECK_OK(qmdb_stat(db, &st));
    CHECK_OK(qmdb_rollback(db, 10));
    at_root(db, 10);
    rb_delta(db, &st, &react, &read, &walked);
    CHECK(react >= 400 && react <= 800);
    CHECK_EQ_U64(read, react);
    CHECK_EQ_U64(walked, 0);

    /* No records (a database from before them): the twig walk, reading far more. */
    cost_block(db, 11, 20, 100, 200, 5);
    cost_block(db, 12, 60, 100, 200, 6);
    CHECK_OK(qmdb_close(db));
    drop_dpos(dir);
    CHECK_OK(qmdb_check(dir, NULL, NULL, NULL));
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    CHECK_OK(qmdb_stat(db, &st));
    CHECK_OK(qmdb_rollback(db, 10));
    at_root(db, 10);
    rb_delta(db, &st, &react, &read, &walked);
    printf("  cost: 2 blocks without records: %llu live again, %llu read, %llu walked\n",
           (unsigned long long)react, (unsigned long long)read, (unsigned long long)walked);
    CHECK(react >= 400);
    CHECK_EQ_U64(walked, react);
    CHECK(read > 4 * react);
    /* Blocks committed since have records again. */
    cost_block(db, 11, 30, 100, 200, 7);
    CHECK_OK(qmdb_rollback(db, 10));
    at_root(db, 10);
    rb_delta(db, &st, &react, &read, &walked);
    CHECK(react >= 200);
    CHECK_EQ_U64(walked, 0);

    /* A damaged record (block 11 of shard 0, block 12 intact): qmdb_check reports it, the
     * rollback walks shard 0's twigs for block 11 only and is exact. */
    cost_block(db, 11, 40, 100, 200, 8);
    cost_block(db, 12, 70, 100, 200, 9);
    CHECK_OK(qmdb_close(db));
    CHECK(damage_dpos(dir, 0, 11));
    int dpos_problems = 0;
    uint64_t problems = 0;
    CHECK_RC(qmdb_check(dir, count_problem, &dpos_problems, &problems), QMDB_CORRUPT);
    CHECK(dpos_problems == 1 && problems == 1);
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    CHECK_OK(qmdb_stat(db, &st));
    CHECK_OK(qmdb_rollback(db, 10));
    at_root(db, 10);
    rb_delta(db, &st, &react, &read, &walked);
    printf("  cost: a damaged record: %llu live again, %llu read, %llu walked\n",
           (unsigned long long)react, (unsigned long long)read, (unsigned long long)walked);
    CHECK(walked > 0 && walked < react / 4); /* shard 0's block 11: about 1/32 of them */
    CHECK(read > react);
    CHECK_OK(qmdb_close(db));
    CHECK_OK(qmdb_check(dir, NULL, NULL, NULL)); /* the rollback cut the damaged record away */
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    at_root(db, 10);
    CHECK_OK(qmdb_close(db));
}

int
main(void)
{
    REQUIRE(mkdtemp(base) != NULL);
    test_codes_and_in_flight();
    test_crash_after_rollback();
    test_checkpoint_after_rollback();
    test_window();
    test_cost();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
    CHECK(system(cmd) == 0);
    return test_report("test_rollback");
}
