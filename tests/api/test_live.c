/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_live.c -- read-only handles in other processes while a writer process runs: a writer
 * commits blocks (compaction every block, pruning with a short history and 64 KiB segments,
 * one close and reopen halfway), while
 *   - a polling reader opens read-only again and again and checks every answer (the height,
 *     its root and older roots, values one by one and batched, proofs verified against the
 *     root of that height, live counts) against a model of every height, and
 *   - a holding reader keeps one handle from an early height to the end and checks that it
 *     keeps answering for that height while the writer prunes the files under it.
 * The expected roots come from a reference database that applied the same blocks first.
 * Uses qmdb.h only (plus POSIX).
 */
#include "../test.h"
#include "qmdb.h"

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KEYS 3000u
#define BLOCKS 240u
#define OPS 300u

static char base[] = "/tmp/qmdb-test-liveXXXXXX";
static char dir_ref[300], dir_live[300], done_flag[300];
static uint8_t roots[BLOCKS + 1][32];

/* The model: the heights at which each key was written (put or deleted), in order. */
typedef struct kv_hist {
    uint32_t h[BLOCKS + 1];
    uint8_t del[BLOCKS + 1];
    unsigned n;
} kv_hist;
static kv_hist *hist;
static uint64_t live_at[BLOCKS + 1]; /* keys with a value after each height */

static void
key_of(unsigned k, char out[16])
{
    snprintf(out, 16, "key-%05u", k);
}

static size_t
value_of(uint64_t h, unsigned k, uint8_t out[32])
{
    uint64_t s = (h << 20 | k) * 0x9e3779b97f4a7c15ull | 1;
    size_t len = 8 + (size_t)((h * 31 + k) % 17);
    for (size_t i = 0; i < len; i++)
        out[i] = (uint8_t)test_xorshift(&s);
    return len;
}

/* Block h's operations: OPS distinct keys, a delete for about one in five present keys. */
static unsigned
block_ops(uint64_t h, const bool *present, unsigned keys[OPS], bool dels[OPS])
{
    static uint8_t seen[KEYS];
    memset(seen, 0, sizeof(seen));
    uint64_t s = h * 0x2545f4914f6cdd1dull | 1;
    unsigned n = 0;
    while (n < OPS) {
        unsigned k = (unsigned)(test_xorshift(&s) % KEYS);
        if (seen[k])
            continue;
        seen[k] = 1;
        keys[n] = k;
        dels[n] = present[k] && test_xorshift(&s) % 5 == 0;
        n++;
    }
    return n;
}

static void
build_model(void)
{
    hist = calloc(KEYS, sizeof(*hist));
    REQUIRE(hist != NULL);
    bool present[KEYS] = {0};
    uint64_t live = 0;
    for (uint64_t h = 1; h <= BLOCKS; h++) {
        unsigned keys[OPS];
        bool dels[OPS];
        unsigned n = block_ops(h, present, keys, dels);
        for (unsigned i = 0; i < n; i++) {
            kv_hist *kh = &hist[keys[i]];
            kh->h[kh->n] = (uint32_t)h;
            kh->del[kh->n] = dels[i];
            kh->n++;
            if (dels[i] && present[keys[i]])
                live--;
            else if (!dels[i] && !present[keys[i]])
                live++;
            present[keys[i]] = !dels[i];
        }
        live_at[h] = live;
    }
}

/* The model's value of key k at height h: its length, or 0 if absent. */
static size_t
model_get(unsigned k, uint64_t h, uint8_t out[32])
{
    const kv_hist *kh = &hist[k];
    for (unsigned i = kh->n; i-- > 0;)
        if (kh->h[i] <= h)
            return kh->del[i] ? 0 : value_of(kh->h[i], k, out);
    return 0;
}

static void
options(qmdb_options *o)
{
    qmdb_options_init(o);
    o->compact_thres = 1;
    o->utilization_ratio = 7;
    o->utilization_div = 10;
    o->entry_segment_bytes = 65536;
    o->twig_segment_bytes = 128 * 1024;
    o->history_blocks = 4;
}

static qmdb_db *
open_db(const char *dir, uint32_t flags)
{
    qmdb_options o;
    options(&o);
    o.flags = flags;
    qmdb_db *db = NULL;
    int rc = qmdb_open(dir, &o, &db);
    if (rc)
        fprintf(stderr, "open %s: %s: %s\n", dir, qmdb_strerror(rc), qmdb_open_error());
    REQUIRE(rc == 0);
    return db;
}

static void
commit_block(qmdb_db *db, uint64_t h, qmdb_batch *b, uint8_t root[32])
{
    bool present[KEYS];
    for (unsigned k = 0; k < KEYS; k++) {
        uint8_t v[32];
        present[k] = model_get(k, h - 1, v) != 0;
    }
    unsigned keys[OPS];
    bool dels[OPS];
    unsigned n = block_ops(h, present, keys, dels);
    qmdb_batch_reset(b);
    for (unsigned i = 0; i < n; i++) {
        char key[16];
        key_of(keys[i], key);
        if (dels[i]) {
            CHECK_OK(qmdb_batch_del(b, key, strlen(key)));
        } else {
            uint8_t v[32];
            size_t vl = value_of(h, keys[i], v);
            CHECK_OK(qmdb_batch_put(b, key, strlen(key), v, vl));
        }
    }
    int rc = qmdb_commit(db, h, b, root);
    if (rc)
        fprintf(stderr, "commit %" PRIu64 ": %s\n", h, qmdb_strerror(rc));
    REQUIRE(rc == 0);
}

/* Every answer of db (which is at height h) against the model; n random keys. */
static void
check_handle(qmdb_db *db, uint64_t h, uint64_t *rng, unsigned n, bool batched)
{
    uint8_t r[32];
    CHECK_OK(qmdb_root(db, UINT64_MAX, r));
    CHECK_MEM(r, roots[h], 32);
    uint64_t older = test_xorshift(rng) % (h + 1);
    CHECK_OK(qmdb_root(db, older, r));
    CHECK_MEM(r, roots[older], 32);
    qmdb_read reads[16];
    uint8_t bufs[16][32];
    char keys[16][16];
    unsigned ks[16];
    for (unsigned i = 0; i < n; i++) {
        unsigned k = (unsigned)(test_xorshift(rng) % KEYS);
        char key[16];
        key_of(k, key);
        uint8_t want[32], got[32];
        size_t wl = model_get(k, h, want), gl = 0;
        int rc = qmdb_get(db, key, strlen(key), got, sizeof(got), &gl);
        if (wl) {
            CHECK_OK(rc);
            CHECK(gl == wl && memcmp(got, want, wl) == 0);
        } else {
            CHECK_RC(rc, QMDB_NOTFOUND);
        }
        if (i < 16) {
            ks[i] = (unsigned)(test_xorshift(rng) % KEYS);
            key_of(ks[i], keys[i]);
            reads[i] = (qmdb_read){keys[i], strlen(keys[i]), bufs[i], 32, 0, 0};
        }
    }
    unsigned nb = !batched ? 0 : n < 16 ? n : 16;
    if (nb)
        CHECK_OK(qmdb_get_many(db, reads, nb));
    for (unsigned i = 0; i < nb; i++) {
        uint8_t want[32];
        size_t wl = model_get(ks[i], h, want);
        if (wl)
            CHECK(reads[i].rc == 0 && reads[i].vlen == wl && memcmp(bufs[i], want, wl) == 0);
        else
            CHECK_RC(reads[i].rc, QMDB_NOTFOUND);
    }
    for (unsigned i = 0; i < 2; i++) {
        unsigned k = (unsigned)(test_xorshift(rng) % KEYS);
        char key[16];
        key_of(k, key);
        uint8_t want[32];
        size_t wl = model_get(k, h, want);
        uint8_t *proof = NULL;
        size_t plen = 0;
        CHECK_OK(qmdb_prove(db, key, strlen(key), UINT64_MAX, &proof, &plen));
        const char *why = NULL;
        int rc = qmdb_proof_verify(proof, plen, roots[h], key, strlen(key), wl ? want : NULL, wl, h,
                                   NULL, &why);
        if (rc)
            fprintf(stderr, "proof of %s at %" PRIu64 ": %s\n", key, h, why ? why : "?");
        CHECK_OK(rc);
        qmdb_proof_free(proof);
    }
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    CHECK_EQ_U64(st.height, h);
    CHECK_EQ_U64(st.live_entries, live_at[h]);
}

static bool
writer_done(void)
{
    return access(done_flag, F_OK) == 0;
}

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int
run_writer(void)
{
    qmdb_db *db = open_db(dir_live, 0);
    qmdb_batch *b;
    CHECK_OK(qmdb_batch_new(&b));
    for (uint64_t h = 1; h <= BLOCKS; h++) {
        uint8_t r[32];
        commit_block(db, h, b, r);
        CHECK_MEM(r, roots[h], 32);
        if (h == BLOCKS / 2) { /* a writer restart (recovery) under the readers */
            CHECK_OK(qmdb_close(db));
            db = open_db(dir_live, 0);
        }
        sleep_ms(3);
    }
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    CHECK(st.pruned_twigs > 0);
    qmdb_batch_free(b);
    CHECK_OK(qmdb_close(db));
    FILE *f = fopen(done_flag, "w");
    REQUIRE(f != NULL);
    fclose(f);
    fprintf(stderr, "writer: %u blocks, %" PRIu64 " twigs pruned\n", BLOCKS, st.pruned_twigs);
    return test_failures ? 1 : 0;
}

/* Opens read-only again and again until the writer is done, then once more. */
static int
run_poller(unsigned seed)
{
    uint64_t rng = 0x51ed270b3ull * seed | 1, last = 0, opens = 0, heights = 0, busy = 0;
    for (;;) {
        bool was_done = writer_done(); /* then this open sees the last height */
        qmdb_options o;
        options(&o);
        o.flags = QMDB_OPEN_RDONLY | QMDB_OPEN_FAST;
        qmdb_db *db = NULL;
        int rc = qmdb_open(dir_live, &o, &db);
        if (rc == QMDB_BUSY) { /* the writer kept changing it during every attempt */
            busy++;
            continue;
        }
        if (rc)
            fprintf(stderr, "reader open: %s: %s\n", qmdb_strerror(rc), qmdb_open_error());
        REQUIRE(rc == 0);
        uint64_t h = qmdb_height(db);
        CHECK(h >= last && h <= BLOCKS);
        heights += h != last;
        last = h;
        opens++;
        check_handle(db, h, &rng, 24, true);
        CHECK_OK(qmdb_close(db));
        if (was_done) {
            CHECK_EQ_U64(h, BLOCKS);
            break;
        }
    }
    fprintf(stderr, "reader %u: %" PRIu64 " opens, %" PRIu64 " heights seen, %" PRIu64 " busy\n",
            seed, opens, heights, busy);
    CHECK(opens >= 3 && heights >= 2);
    return test_failures ? 1 : 0;
}

/* One handle from an early height to the end: the writer prunes the segments it reads. */
static int
run_holder(void)
{
    qmdb_db *db = NULL;
    uint64_t h = 0, rounds = 0, rng = 99;
    while (h < 4) {
        if (db)
            CHECK_OK(qmdb_close(db));
        sleep_ms(2);
        db = open_db(dir_live, QMDB_OPEN_RDONLY | QMDB_OPEN_FAST);
        h = qmdb_height(db);
    }
    REQUIRE(h < BLOCKS - 40); /* the writer prunes a lot after this */
    do {
        check_handle(db, h, &rng, 16, false);
        CHECK_EQ_U64(qmdb_height(db), h);
        rounds++;
        sleep_ms(5);
    } while (!writer_done());
    /* Batched reads open their own descriptors, for the first time now that the writer has
     * deleted the segments of this state. */
    for (unsigned i = 0; i < 20; i++)
        check_handle(db, h, &rng, 16, true);
    CHECK_OK(qmdb_close(db));
    fprintf(stderr, "holder: height %" PRIu64 ", %" PRIu64 " rounds\n", h, rounds);
    return test_failures ? 1 : 0;
}

static pid_t
spawn(int (*fn)(unsigned), unsigned arg)
{
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
        _exit(fn(arg));
    return pid;
}
static int
writer_fn(unsigned a)
{
    (void)a;
    return run_writer();
}
static int
holder_fn(unsigned a)
{
    (void)a;
    return run_holder();
}

int
main(void)
{
    REQUIRE(mkdtemp(base) != NULL);
    snprintf(dir_ref, sizeof(dir_ref), "%s/ref", base);
    snprintf(dir_live, sizeof(dir_live), "%s/live", base);
    snprintf(done_flag, sizeof(done_flag), "%s/DONE", base);
    build_model();
    qmdb_options o;
    options(&o);
    CHECK_OK(qmdb_create(dir_ref, &o));
    CHECK_OK(qmdb_create(dir_live, &o));
    qmdb_db *ref = open_db(dir_ref, 0);
    CHECK_OK(qmdb_root(ref, 0, roots[0]));
    qmdb_batch *b;
    CHECK_OK(qmdb_batch_new(&b));
    for (uint64_t h = 1; h <= BLOCKS; h++)
        commit_block(ref, h, b, roots[h]);
    qmdb_batch_free(b);
    CHECK_OK(qmdb_close(ref));

    pid_t w = spawn(writer_fn, 0), hold = spawn(holder_fn, 0);
    pid_t r1 = spawn(run_poller, 1), r2 = spawn(run_poller, 2);
    pid_t all[4] = {w, hold, r1, r2};
    const char *names[4] = {"writer", "holder", "reader 1", "reader 2"};
    for (unsigned i = 0; i < 4; i++) {
        int status = 0;
        REQUIRE(waitpid(all[i], &status, 0) == all[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "%s failed (status %d)\n", names[i], status);
            test_failures++;
        }
        test_checks++;
    }
    /* The first entry segment of shard 0 was pruned while the holder read it. */
    char seg[400];
    snprintf(seg, sizeof(seg), "%s/s00.entries.0000000000", dir_live);
    CHECK(access(seg, F_OK) != 0);
    if (!test_failures) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        CHECK(system(cmd) == 0);
    }
    return test_report("test_live");
}
