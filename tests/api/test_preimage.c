/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_preimage.c -- reads of the durable state while blocks are in flight (undo.h): the
 * pre-image maps record where a key's entry lay before the block, and qmdb_get_committed /
 * qmdb_get_many_committed read that entry from the log.
 *
 *  map      qm_undo alone: the first write of a block wins, "absent" is distinct from "not
 *           written", the table grows past its first size and is emptied by a clear.
 *  gated    a database whose fsyncs wait at a gate the test closes, so that a submitted
 *           block stays in flight for as long as the test wants (the durable height is
 *           checked to be the one before it). A tiny compaction threshold (entries move
 *           within a block before their key's first write there), history_blocks 0 (pruning
 *           as early as it may happen: the test checks that twigs were pruned), 1 MiB
 *           segments, and values from 8 bytes to 20 KB (entries longer than a page, read
 *           with pread). While the gate is closed, every
 *           key read through both committed calls must give its value at the durable height
 *           exactly, and qmdb_get its value in the submitted block; with the gate open and
 *           the block waited for, the committed view is that block.
 *
 * Thread: main; the engine's flusher waits at the gate.
 */
#include "../test.h"
#include "io.h"
#include "qmdb.h"
#include "undo.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

static char base[] = "/tmp/qmdb-test-preimageXXXXXX";
static uint64_t rng = 777;

static void
map_case(void)
{
    qm_undo u = {0};
    u8 kh[600][32];
    for (unsigned i = 0; i < 600; i++) {
        for (unsigned j = 0; j < 32; j++)
            kh[i][j] = (u8)test_xorshift(&rng);
    }
    u64 pos = 1;
    CHECK(qm_undo_get(&u, kh[0], &pos) == -1 && pos == QM_UNDO_ABSENT);
    /* 600 keys: past the first table size (256), so the table grows twice. */
    for (unsigned i = 0; i < 600; i++)
        CHECK_OK(qm_undo_put(&u, kh[i], i % 3 == 0 ? QM_UNDO_ABSENT : 1000u + i));
    /* A second write of a key in the same block keeps the first record. */
    for (unsigned i = 0; i < 600; i += 2)
        CHECK_OK(qm_undo_put(&u, kh[i], 5u));
    unsigned bad = 0;
    for (unsigned i = 0; i < 600; i++) {
        int got = qm_undo_get(&u, kh[i], &pos);
        bad += i % 3 == 0 ? got != 0 || pos != QM_UNDO_ABSENT : got != 1 || pos != 1000u + i;
    }
    CHECK(bad == 0);
    CHECK(u.n == 600);
    CHECK(qm_undo_dram_bytes(&u) >= 1024u * 32);
    u8 other[32] = {1, 2, 3};
    CHECK(qm_undo_get(&u, other, &pos) == -1);
    qm_undo_clear(&u);
    CHECK(qm_undo_get(&u, kh[1], &pos) == -1);
    CHECK_OK(qm_undo_put(&u, kh[1], 7u));
    CHECK(qm_undo_get(&u, kh[1], &pos) == 1 && pos == 7u);
    qm_undo_free(&u);
}

/* The gate: fsync waits while it is closed (at most 20 s, counted as a failure). */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_closed;
static unsigned gate_timeouts;
static qm_io gated_io;

static int
gated_fsync(int fd)
{
    pthread_mutex_lock(&gate_mu);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    while (gate_closed)
        if (pthread_cond_timedwait(&gate_cv, &gate_mu, &until) != 0) {
            gate_timeouts++;
            break;
        }
    pthread_mutex_unlock(&gate_mu);
    return qm_io_posix()->fsync(fd);
}

static void
gate_set(bool closed)
{
    pthread_mutex_lock(&gate_mu);
    gate_closed = closed;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

#define NKEYS 3000u
#define ROUNDS 40u
#define VMAX 20000u

/* Key i's value of version ver (0: absent), filled from both: keys below LONGKEYS hold 3,000
 * to 20,000 bytes (entries longer than a page), the others 8 to 100 (many entries, so that
 * twigs fill up and are pruned, in little space). */
#define LONGKEYS 16u
static size_t
val(unsigned i, unsigned ver, unsigned char *v)
{
    static const size_t lens[] = {3000, 6000, 20000, 8, 40, 100};
    size_t n = lens[(i * 7u + ver) % 3u + (i < LONGKEYS ? 0 : 3)];
    for (size_t j = 0; j < n; j++)
        v[j] = (unsigned char)(i * 13u + ver * 101u + j);
    return n;
}

static unsigned cur[NKEYS], dur[NKEYS];

/* Every key through qmdb_get_committed and qmdb_get_many_committed against want, and
 * through qmdb_get against cur. Returns the number of wrong answers. */
static unsigned
check_all(qmdb_db *db, const unsigned *want)
{
    static char keys[NKEYS][16];
    static unsigned char longout[LONGKEYS][VMAX], shortout[NKEYS][128], v[VMAX], buf[VMAX];
    static qmdb_read rd[NKEYS];
    unsigned bad = 0;
    for (unsigned i = 0; i < NKEYS; i++) {
        snprintf(keys[i], sizeof(keys[i]), "pre-%04u", i);
        rd[i] = (qmdb_read){.key = keys[i],
                            .klen = strlen(keys[i]),
                            .buf = i < LONGKEYS ? longout[i] : shortout[i],
                            .cap = i < LONGKEYS ? VMAX : 128};
    }
    if (qmdb_get_many_committed(db, rd, NKEYS) != 0)
        return NKEYS;
    for (unsigned i = 0; i < NKEYS; i++) {
        size_t n = want[i] ? val(i, want[i], v) : 0, got = 0;
        int crc = qmdb_get_committed(db, keys[i], strlen(keys[i]), buf, VMAX, &got);
        bool one = want[i] ? crc == 0 && got == n && memcmp(buf, v, n) == 0 : crc == QMDB_NOTFOUND;
        bool many = want[i] ? rd[i].rc == 0 && rd[i].vlen == n && memcmp(rd[i].buf, v, n) == 0
                            : rd[i].rc == QMDB_NOTFOUND;
        n = cur[i] ? val(i, cur[i], v) : 0;
        int rc = qmdb_get(db, keys[i], strlen(keys[i]), buf, VMAX, &got);
        bool now = cur[i] ? rc == 0 && got == n && memcmp(buf, v, n) == 0 : rc == QMDB_NOTFOUND;
        if (!one || !many || !now)
            fprintf(stderr, "key %u: committed %d/%d (want version %u), current %d (want %u)\n", i,
                    crc, rd[i].rc, want[i], rc, cur[i]);
        bad += !one + !many + !now;
    }
    return bad;
}

/* One block of random writes to the model cur and to b: updates, deletes and creates. */
static void
random_block(qmdb_batch *b, unsigned ver)
{
    static unsigned char v[VMAX];
    char key[16];
    qmdb_batch_reset(b);
    for (unsigned k = 0; k < 2000; k++) {
        unsigned i = (unsigned)(test_xorshift(&rng) % NKEYS);
        snprintf(key, sizeof(key), "pre-%04u", i);
        if (cur[i] && test_xorshift(&rng) % 4 == 0) {
            CHECK_OK(qmdb_batch_del(b, key, strlen(key)));
            cur[i] = 0;
        } else {
            size_t n = val(i, ver, v);
            CHECK_OK(qmdb_batch_put(b, key, strlen(key), v, n));
            cur[i] = ver;
        }
    }
}

static void
gated_case(void)
{
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/db", base);
    qmdb_options o;
    qmdb_options_init(&o);
    o.compact_thres = 1;
    o.utilization_ratio = 1;
    o.utilization_div = 1;
    o.entry_segment_bytes = 1 << 20;
    o.twig_segment_bytes = 1 << 20;
    o.history_blocks = 0;
    REQUIRE(qmdb_create(dir, &o) == 0);
    gated_io = *qm_io_posix();
    gated_io.fsync = gated_fsync;
    gated_io.concurrent = true;
    qm_io_set(&gated_io);
    qmdb_db *db = NULL;
    REQUIRE(qmdb_open(dir, &o, &db) == 0);
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    static unsigned char v[VMAX];
    char key[16];
    uint64_t h = 1;
    for (unsigned i = 0; i < NKEYS; i++) { /* block 1: every key */
        snprintf(key, sizeof(key), "pre-%04u", i);
        CHECK_OK(qmdb_batch_put(b, key, strlen(key), v, val(i, 1, v)));
        cur[i] = 1;
    }
    CHECK_OK(qmdb_commit(db, h, b, NULL));
    unsigned bad = 0, inflight = 0;
    for (unsigned round = 0; round < ROUNDS; round++) {
        memcpy(dur, cur, sizeof(dur));
        gate_set(true);
        /* qmdb_submit returns once the block before is durable, with this one in flight:
         * its flush waits at the gate. */
        random_block(b, (unsigned)(h + 1));
        CHECK_OK(qmdb_submit(db, ++h, b));
        inflight += qmdb_height(db) == h - 1;
        bad += check_all(db, dur);
        gate_set(false);
        CHECK_OK(qmdb_wait(db, h, NULL));
        CHECK(qmdb_height(db) == h);
        bad += check_all(db, cur);
    }
    CHECK(bad == 0);
    CHECK(gate_timeouts == 0);
    /* Every round held its block in flight while the committed view was read: the
     * pre-image path was taken, not just the index. */
    CHECK(inflight == ROUNDS);
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    CHECK(st.compactions > 0);
    CHECK(st.pruned_twigs > 0);
    printf("test_preimage: %u rounds with a block in flight, %llu compactions, %llu pruned "
           "twigs\n",
           ROUNDS, (unsigned long long)st.compactions, (unsigned long long)st.pruned_twigs);
    qmdb_batch_free(b);
    CHECK_OK(qmdb_close(db));
    qm_io_set(NULL);
}

int
main(void)
{
    REQUIRE(mkdtemp(base) != NULL);
    map_case();
    gated_case();
    char cmd[600];
    snprintf(cmd, sizeof(cmd), getenv("KEEPDB") ? "true %s" : "rm -rf %s", base);
    CHECK(system(cmd) == 0);
    return test_report("test_preimage");
}
