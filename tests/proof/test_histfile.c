/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_histfile.c -- the history cache file sXX.hist (src/histfile.c, used by src/proof.c):
 *   reopen     after a clean close, historical proofs at many heights come from the files (no
 *              scan) and are byte-identical to those of a cache rebuilt by the scan (files
 *              removed); after more blocks the files are extended by the new tail only;
 *              qmdb_check passes with the files present;
 *   damage     a flipped byte (header or body), a truncated, an extended, a foreign (other
 *              database, other shard) file: ignored (counted), proofs identical to the scan's;
 *              an older file of the same database is still used (its tail is scanned);
 *   rollback   files of heights above a rollback target are ignored, also once blocks are
 *              committed again past their height; proofs identical to the scan's;
 *   pruning    a file written before twigs were pruned is cut at the front;
 *   crash      a child commits, proves and closes in a loop and is killed (SIGKILL) at random
 *              points; every reopen proves as the scan does.
 * Comparison: every claim's return code, and the proof bytes when it succeeded.
 *
 * Thread: single (the crash part forks).
 */
#include "db_int.h"
#include "prover.h"
#include "qmdb.h"
#include "test.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NKEYS 1500u
#define NCLAIM 160u

static u64 rng_state = 0x2545f4914f6cdd1dull;
static u64
rnd(void)
{
    u64 z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static char *
make_dir(const char *tag)
{
    return test_make_dir("hist", tag);
}

static void
hist_path(char *out, const char *dir, unsigned s)
{
    snprintf(out, 512, "%s/s%02x.hist", dir, s);
}

static unsigned
count_files(const char *dir)
{
    unsigned n = 0;
    char p[512];
    for (unsigned s = 0; s < 16; s++) {
        hist_path(p, dir, s);
        n += access(p, F_OK) == 0;
    }
    return n;
}

static void
remove_files(const char *dir)
{
    char p[512];
    for (unsigned s = 0; s < 16; s++) {
        hist_path(p, dir, s);
        unlink(p);
    }
}

static void
copy_file(const char *from, const char *to)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
    REQUIRE(system(cmd) == 0);
}

static qmdb_db *
open_db(const char *dir, unsigned flags)
{
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = flags;
    qmdb_db *db = NULL;
    int rc = qmdb_open(dir, &o, &db);
    if (rc)
        fprintf(stderr, "open %s: %s\n", dir, qmdb_open_error());
    REQUIRE(rc == 0);
    return db;
}

/* Blocks from..to: random puts (2/3) and deletes of keys < NKEYS. */
static void
commit_blocks(qmdb_db *db, u64 from, u64 to, unsigned ops)
{
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    for (u64 h = from; h <= to; h++) {
        qmdb_batch_reset(b);
        for (unsigned i = 0; i < ops; i++) {
            char k[32], v[64];
            unsigned id = (unsigned)(rnd() % NKEYS);
            int kl = snprintf(k, sizeof(k), "key-%u", id);
            int vl = snprintf(v, sizeof(v), "v-%u-%" PRIu64 "-%u", id, h, (unsigned)(rnd() % 97));
            if (h > 3 && rnd() % 3 == 0)
                REQUIRE(qmdb_batch_del(b, k, (size_t)kl) == 0);
            else
                REQUIRE(qmdb_batch_put(b, k, (size_t)kl, v, (size_t)vl) == 0);
        }
        int rc = qmdb_commit(db, h, b, NULL);
        if (rc)
            fprintf(stderr, "commit %" PRIu64 ": %s\n", h, qmdb_strerror(rc));
        REQUIRE(rc == 0);
    }
    qmdb_batch_free(b);
}

/* A proof result: return code and bytes. */
typedef struct res {
    int rc;
    u8 *p;
    size_t len;
} res;

/* Proves NCLAIM claims (keys and heights from seed, heights in [lo, hi]) into r. */
static void
collect(qmdb_db *db, u64 seed, u64 lo, u64 hi, res *r)
{
    u64 st = seed;
    for (unsigned j = 0; j < NCLAIM; j++) {
        char k[32];
        u64 x = test_xorshift(&st);
        int kl = snprintf(k, sizeof(k), "key-%u", (unsigned)(x % (NKEYS + 50)));
        u64 h = lo + (x >> 32) % (hi - lo + 1);
        r[j].p = NULL;
        r[j].len = 0;
        r[j].rc = qmdb_prove(db, k, (size_t)kl, h, &r[j].p, &r[j].len);
    }
}

static void
free_res(res *r)
{
    for (unsigned j = 0; j < NCLAIM; j++) {
        qmdb_proof_free(r[j].p);
        r[j].p = NULL;
    }
}

/* Every result of a equals b's; returns how many proofs succeeded. */
static unsigned
same_res(const res *a, const res *b)
{
    unsigned ok = 0, diff = 0;
    for (unsigned j = 0; j < NCLAIM; j++) {
        if (a[j].rc != b[j].rc || a[j].len != b[j].len ||
            (a[j].len && memcmp(a[j].p, b[j].p, a[j].len) != 0))
            diff++;
        ok += a[j].rc == 0;
    }
    CHECK_EQ_U64(diff, 0);
    return ok;
}

static void
counts(qmdb_db *db, u64 *loaded, u64 *ignored, u64 *scanned)
{
    qm_proof_cache_counts(db->proof_cache, loaded, ignored, scanned);
}

/* The scan's answers: the same claims on the database with its files moved away (and put
 * back after). */
static void
reference(const char *dir, u64 seed, u64 lo, u64 hi, res *r)
{
    char p[512], q[600];
    for (unsigned s = 0; s < 16; s++) {
        hist_path(p, dir, s);
        snprintf(q, sizeof(q), "%s.keep", p);
        (void)rename(p, q);
    }
    qmdb_db *db = open_db(dir, QMDB_OPEN_RDONLY | QMDB_OPEN_FAST);
    collect(db, seed, lo, hi, r);
    u64 l, ig, sc;
    counts(db, &l, &ig, &sc);
    CHECK_EQ_U64(l, 0);
    CHECK(sc > 0);
    CHECK_OK(qmdb_close(db));
    for (unsigned s = 0; s < 16; s++) {
        hist_path(p, dir, s);
        snprintf(q, sizeof(q), "%s.keep", p);
        (void)rename(q, p);
    }
}

/* A database of `blocks` blocks whose history caches were built and written by a close. */
static char *
make_db(const char *tag, u64 blocks, qmdb_options *opt)
{
    char *dir = make_dir(tag);
    qmdb_options o;
    if (opt)
        o = *opt;
    else
        qmdb_options_init(&o);
    o.entry_segment_bytes = 1 << 20;
    o.twig_segment_bytes = 128 * 1024;
    CHECK_OK(qmdb_create(dir, &o));
    qmdb_db *db = open_db(dir, 0);
    commit_blocks(db, 1, blocks, 200);
    static res r[NCLAIM];
    collect(db, 7, 1, blocks, r); /* builds every shard's cache */
    free_res(r);
    CHECK_EQ_U64(count_files(dir), 0);
    CHECK_OK(qmdb_close(db));
    CHECK_EQ_U64(count_files(dir), 16);
    return dir;
}

static void
test_reopen(void)
{
    char *dir = make_db("reopen", 30, NULL);
    static res a[NCLAIM], b[NCLAIM];
    /* The files are not part of the state: the deep check passes with them present. */
    u64 problems = 1;
    CHECK_OK(qmdb_check(dir, NULL, NULL, &problems));
    CHECK_EQ_U64(problems, 0);
    for (unsigned fast = 0; fast < 2; fast++) {
        qmdb_db *db = open_db(dir, fast ? QMDB_OPEN_FAST : 0);
        collect(db, 11 + fast, 1, 30, a);
        u64 l, ig, sc;
        counts(db, &l, &ig, &sc);
        CHECK_EQ_U64(l, 16);
        CHECK_EQ_U64(ig, 0);
        CHECK_EQ_U64(sc, 0);
        CHECK_OK(qmdb_close(db));
        reference(dir, 11 + fast, 1, 30, b);
        CHECK(same_res(a, b) > NCLAIM / 2);
        free_res(a);
        free_res(b);
    }
    /* More blocks: the files stay the base, only the new tail is scanned; the close then
     * writes files of the new height. */
    qmdb_db *db = open_db(dir, QMDB_OPEN_FAST);
    commit_blocks(db, 31, 40, 200);
    collect(db, 13, 1, 40, a);
    u64 l, ig, sc;
    counts(db, &l, &ig, &sc);
    CHECK_EQ_U64(l, 16);
    CHECK(sc > 0 && sc <= 10 * 200 + 16 * 20 * 10); /* the tail, not the whole log */
    CHECK_OK(qmdb_close(db));
    reference(dir, 13, 1, 40, b);
    same_res(a, b);
    free_res(a);
    db = open_db(dir, QMDB_OPEN_FAST);
    collect(db, 13, 1, 40, a);
    counts(db, &l, &ig, &sc);
    CHECK_EQ_U64(l, 16);
    CHECK_EQ_U64(sc, 0);
    same_res(a, b);
    CHECK_OK(qmdb_close(db));
    free_res(a);
    free_res(b);
    test_remove_dir(dir);
}

/* Damages file s of dir: 0 a header byte, 1 a byte of the last SN's position (read when the
 * file is opened), 2 a byte of the middle key (the first probe of every key search), 3 any
 * body byte, 4 a byte of the chunk table, 5 cut, 6 extended. */
static void
damage(const char *dir, unsigned s, int how)
{
    char p[512];
    hist_path(p, dir, s);
    int fd = open(p, O_RDWR);
    REQUIRE(fd >= 0);
    off_t size = lseek(fd, 0, SEEK_END);
    u8 b[16];
    REQUIRE(pread(fd, b, 16, 64) == 16);
    u64 base = 0, upto = 0;
    for (int i = 7; i >= 0; i--) {
        base = (base << 8) | b[i];
        upto = (upto << 8) | b[8 + i];
    }
    u64 n = upto - base, blen = 40 * n;
    off_t at = -1;
    if (how == 0)
        at = (off_t)(rnd() % 128);
    else if (how == 1)
        at = 128 + (off_t)(8 * (n - 1) + rnd() % 8);
    else if (how == 2)
        at = 128 + (off_t)(24 * n + 16 * (n / 2) + rnd() % 16);
    else if (how == 3)
        at = 128 + (off_t)(rnd() % blen);
    else if (how == 4)
        at = 128 + (off_t)blen + (off_t)(rnd() % (u64)(size - 128 - (off_t)blen));
    if (at >= 0) {
        REQUIRE(pread(fd, b, 1, at) == 1);
        b[0] ^= (u8)(1u << (rnd() % 8));
        REQUIRE(pwrite(fd, b, 1, at) == 1);
    } else if (how == 5) {
        REQUIRE(ftruncate(fd, size - 1 - (off_t)(rnd() % 64)) == 0);
    } else {
        b[0] = 0;
        REQUIRE(pwrite(fd, b, 1, size) == 1);
    }
    close(fd);
}

/* Opens dir, proves (every shard's cache first), and compares with the scan. want_loaded:
 * files used; want_ignored: files ignored (at open or when a damaged chunk was read);
 * UINT64_MAX: at most one (and 15 or 16 files used). */
static void
check_ignored(const char *dir, u64 want_loaded, u64 want_ignored, u64 seed, u64 top)
{
    static res a[NCLAIM], b[NCLAIM];
    qmdb_db *db = open_db(dir, QMDB_OPEN_FAST);
    collect(db, seed, 1, top, a);
    free_res(a);
    collect(db, seed + 1, 1, top, a);
    u64 l, ig, sc;
    counts(db, &l, &ig, &sc);
    if (want_loaded == UINT64_MAX) /* found at open, or when read, or never read */
        CHECK(l >= 15 && l + ig >= 16);
    else
        CHECK_EQ_U64(l, want_loaded);
    if (want_ignored == UINT64_MAX)
        CHECK(ig <= 1);
    else
        CHECK_EQ_U64(ig, want_ignored);
    CHECK_OK(qmdb_close(db));
    reference(dir, seed + 1, 1, top, b);
    same_res(a, b);
    free_res(a);
    free_res(b);
}

static void
test_damage(void)
{
    char *dir = make_db("damage", 20, NULL);
    char p[512], q[600];
    /* Keep a good copy of every file; each case damages one shard's file. */
    for (unsigned s = 0; s < 16; s++) {
        hist_path(p, dir, s);
        snprintf(q, sizeof(q), "%s.good", p);
        copy_file(p, q);
    }
    static const u64 want[7][2] = {{15, 1}, {15, 1}, {16, 1}, {UINT64_MAX, UINT64_MAX},
                                   {15, 1}, {15, 1}, {15, 1}};
    for (int how = 0; how < 7; how++) {
        for (unsigned rep = 0; rep < 3; rep++) {
            unsigned s = (unsigned)(rnd() % 16);
            damage(dir, s, how);
            check_ignored(dir, want[how][0], want[how][1], 100 + (u64)how * 10 + rep, 20);
            hist_path(p, dir, s);
            if (want[how][1] == 1) /* a detected damage: the close wrote a fresh file */
                CHECK(access(p, F_OK) == 0);
            snprintf(q, sizeof(q), "%s.good", p);
            copy_file(q, p);
        }
    }
    /* Other shard's file under this shard's name. */
    char r[512];
    hist_path(p, dir, 3);
    hist_path(r, dir, 5);
    copy_file(p, r);
    check_ignored(dir, 15, 1, 200, 20);
    /* A file of another database (same shape, other content). */
    char *other = make_db("other", 20, NULL);
    hist_path(p, other, 7);
    hist_path(r, dir, 7);
    copy_file(p, r);
    check_ignored(dir, 15, 1, 210, 20);
    test_remove_dir(other);
    /* An older file of this database: still used (its tail is scanned). */
    for (unsigned s = 0; s < 16; s++) {
        hist_path(p, dir, s);
        snprintf(q, sizeof(q), "%s.good", p);
        copy_file(q, p);
    }
    qmdb_db *db = open_db(dir, QMDB_OPEN_FAST);
    commit_blocks(db, 21, 25, 200);
    CHECK_OK(qmdb_close(db)); /* no proof: the files stay those of height 20 */
    check_ignored(dir, 16, 0, 220, 25);
    test_remove_dir(dir);
}

static void
test_rollback(void)
{
    char *dir = make_db("rollback", 30, NULL);
    static res a[NCLAIM], b[NCLAIM];
    qmdb_db *db = open_db(dir, 0);
    CHECK_OK(qmdb_rollback(db, 22));
    collect(db, 300, 1, 22, a);
    u64 l, ig, sc;
    counts(db, &l, &ig, &sc);
    CHECK_EQ_U64(l, 0);
    CHECK_EQ_U64(ig, 16);
    CHECK_OK(qmdb_close(db));
    /* the close wrote files of height 22 (the scan's cache); recheck, then compare */
    reference(dir, 300, 1, 22, b);
    same_res(a, b);
    free_res(a);
    free_res(b);
    /* Files of height 30 again, then a rollback and new blocks past 30: still ignored. */
    remove_files(dir);
    db = open_db(dir, 0);
    commit_blocks(db, 23, 30, 200);
    collect(db, 301, 1, 30, a);
    free_res(a);
    CHECK_OK(qmdb_close(db));
    CHECK_EQ_U64(count_files(dir), 16);
    db = open_db(dir, 0);
    CHECK_OK(qmdb_rollback(db, 26));
    commit_blocks(db, 27, 33, 150);
    collect(db, 302, 1, 33, a);
    counts(db, &l, &ig, &sc);
    CHECK_EQ_U64(l, 0);
    CHECK_EQ_U64(ig, 16);
    CHECK_OK(qmdb_close(db));
    reference(dir, 302, 1, 33, b);
    same_res(a, b);
    free_res(a);
    free_res(b);
    test_remove_dir(dir);
}

/* Blocks from..to rewriting keys 0..39 sixty times each (one transaction per write): with
 * compact_thres = 1 old twigs die fast and get pruned. */
static void
churn_blocks(qmdb_db *db, u64 from, u64 to)
{
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    for (u64 h = from; h <= to; h++) {
        qmdb_batch_reset(b);
        for (unsigned k = 0; k < 40; k++)
            for (unsigned r = 0; r < 60; r++) {
                char key[32], v[64];
                int kl = snprintf(key, sizeof(key), "key-%u", k);
                int vl = snprintf(v, sizeof(v), "c-%u-%" PRIu64 "-%u", k, h, r);
                REQUIRE(qmdb_batch_put(b, key, (size_t)kl, v, (size_t)vl) == 0);
                REQUIRE(qmdb_batch_tx(b) == 0);
            }
        REQUIRE(qmdb_commit(db, h, b, NULL) == 0);
    }
    qmdb_batch_free(b);
}

static void
test_pruning(void)
{
    char *dir = make_dir("prune");
    qmdb_options o;
    qmdb_options_init(&o);
    o.entry_segment_bytes = 1 << 20;
    o.twig_segment_bytes = 128 * 1024;
    o.compact_thres = 1;
    o.history_blocks = 3;
    CHECK_OK(qmdb_create(dir, &o));
    qmdb_db *db = open_db(dir, 0);
    churn_blocks(db, 1, 24);
    static res a[NCLAIM], b[NCLAIM];
    collect(db, 400, 18, 24, a);
    free_res(a);
    CHECK_OK(qmdb_close(db));
    CHECK_EQ_U64(count_files(dir), 16);
    qmdb_stats st0 = QMDB_STATS_INIT, st1 = QMDB_STATS_INIT;
    db = open_db(dir, QMDB_OPEN_FAST);
    CHECK_OK(qmdb_stat(db, &st0));
    churn_blocks(db, 25, 36);
    CHECK_OK(qmdb_stat(db, &st1));
    CHECK(st1.pruned_twigs > st0.pruned_twigs);
    collect(db, 401, 30, 36, a);
    u64 l, ig, sc;
    counts(db, &l, &ig, &sc);
    CHECK(l > 0); /* cut at the front, not rebuilt */
    CHECK_EQ_U64(l + ig, 16);
    CHECK_OK(qmdb_close(db));
    reference(dir, 401, 30, 36, b);
    CHECK(same_res(a, b) > 0);
    free_res(a);
    free_res(b);
    test_remove_dir(dir);
}

/* The child: rounds of blocks, proofs (building caches) and closes until killed. */
static void
crash_child(const char *dir, u64 top)
{
    for (;;) {
        qmdb_db *db = open_db(dir, QMDB_OPEN_FAST);
        commit_blocks(db, top + 1, top + 3, 150);
        top += 3;
        static res r[NCLAIM];
        collect(db, top, 1, top, r);
        free_res(r);
        if (qmdb_close(db))
            _exit(3);
    }
}

static void
test_crash(void)
{
    char *dir = make_db("crash", 10, NULL);
    static res a[NCLAIM], b[NCLAIM];
    unsigned used = 0;
    for (unsigned round = 0; round < 6; round++) {
        qmdb_db *db = open_db(dir, QMDB_OPEN_FAST);
        u64 top = qmdb_height(db);
        CHECK_OK(qmdb_close(db));
        fflush(NULL);
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            rng_state ^= round * 7919u;
            crash_child(dir, top);
        }
        usleep((useconds_t)(50000 + rnd() % 400000));
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        CHECK(WIFSIGNALED(status));
        db = open_db(dir, QMDB_OPEN_FAST);
        top = qmdb_height(db);
        collect(db, 500 + round, 1, top, a);
        u64 l, ig, sc;
        counts(db, &l, &ig, &sc);
        used += (unsigned)l;
        CHECK_EQ_U64(ig, 0); /* a crash never leaves a bad file behind, only older ones */
        CHECK_OK(qmdb_close(db));
        reference(dir, 500 + round, 1, top, b);
        same_res(a, b);
        free_res(a);
        free_res(b);
    }
    CHECK(used > 0);
    test_remove_dir(dir);
}

int
main(void)
{
    test_reopen();
    test_damage();
    test_rollback();
    test_pruning();
    test_crash();
    printf("test_histfile: %d checks, %d failures\n", test_checks, test_failures);
    return test_failures ? 1 : 0;
}
