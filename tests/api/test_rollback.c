/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rollback.c -- qmdb_rollback through the public API: the return codes (the latest
 * height, above it, a read-only handle, beyond the window, past pruning), blocks in flight
 * (submitted, not waited for) are made durable and rolled back, readers on another thread see
 * one state or the other (each block writes the same value under two keys; a batched read
 * must never see them differ; a root of an earlier height is there or not found, never an
 * error), and new blocks after a rollback, across a reopen. The
 * randomized comparison with the reference model is tests/model; crashes and I/O faults are
 * tests/crash and tests/fault.
 */
#include "../test.h"
#include "qmdb.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
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

/* A process that rolls back, commits three blocks and exits without closing (as after a
 * SIGKILL): with the hybrid indexer the next fast open resumes every shard from the
 * rollback's checkpoint plus the journal of the three blocks. */
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
        CHECK_EQ_U64(s.index_resumed_shards, 16);
        CHECK_EQ_U64(s.index_replayed_blocks, 16 * 3);
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
    CHECK_OK(qmdb_rollback(db, h - 4));
    check_at(db, h - 4);
    block(db, h - 3, 2000, true);
    CHECK_OK(qmdb_root(db, UINT64_MAX, r));
    CHECK_OK(qmdb_close(db));
    CHECK_OK(qmdb_check(dir, NULL, NULL, NULL));
}

int
main(void)
{
    REQUIRE(mkdtemp(base) != NULL);
    test_codes_and_in_flight();
    test_crash_after_rollback();
    test_checkpoint_after_rollback();
    test_window();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
    CHECK(system(cmd) == 0);
    return test_report("test_rollback");
}
