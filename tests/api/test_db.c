/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_db.c -- the public API end to end: create/open/close/reopen, bad input rejected with
 * nothing committed, large values, pruning never changing a root, recovery from torn tails,
 * detection of corrupt files, and the index checkpoint of a clean close (loaded by fast opens of
 * either indexer; stale, damaged and crashed-over checkpoints fall back to the log scan).
 * Uses qmdb.h only (plus POSIX to damage files).
 */
#include "../test.h"
#include "qmdb.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char base[] = "/tmp/qmdb-test-dbXXXXXX";

static void
path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", base, name);
}

static uint64_t rng = 777;
static uint64_t
next(void)
{
    return test_xorshift(&rng);
}

static qmdb_db *
reopen(const char *dir, qmdb_db *db, uint32_t flags)
{
    if (db)
        CHECK_OK(qmdb_close(db));
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = flags;
    qmdb_db *out = NULL;
    int rc = qmdb_open(dir, &o, &out);
    if (rc)
        fprintf(stderr, "open %s: %s: %s\n", dir, qmdb_strerror(rc), qmdb_open_error());
    REQUIRE(rc == 0 && out != NULL);
    return out;
}

static void
test_basic_and_bad_input(void)
{
    char dir[256];
    path(dir, sizeof(dir), "basic");
    CHECK_OK(qmdb_create(dir, NULL));
    CHECK_RC(qmdb_create(dir, NULL), QMDB_EXISTS);
    qmdb_db *db = reopen(dir, NULL, 0);
    uint8_t r0[32], r1[32], r2[32], tmp[32];
    CHECK_OK(qmdb_root(db, UINT64_MAX, r0));
    CHECK_EQ_U64(qmdb_height(db), 0);

    /* A second handle on the same directory is refused while this one is open. */
    qmdb_db *other = NULL;
    CHECK_RC(qmdb_open(dir, NULL, &other), QMDB_BUSY);
    CHECK(other == NULL);

    qmdb_batch *b;
    CHECK_OK(qmdb_batch_new(&b));
    static uint8_t big[256];
    memset(big, 1, sizeof(big));
    CHECK_RC(qmdb_batch_put(b, "", 0, "v", 1), QMDB_INVALID);
    CHECK_RC(qmdb_batch_put(b, big, 256, "v", 1), QMDB_INVALID);
    CHECK_RC(qmdb_batch_put(b, "k", 1, "", 0), QMDB_INVALID);
    CHECK_RC(qmdb_batch_put(b, "k", 1, big, (size_t)QMDB_MAX_VALUE_LEN + 1), QMDB_INVALID);
    CHECK_RC(qmdb_batch_del(b, "", 0), QMDB_INVALID);
    CHECK_EQ_U64(qmdb_batch_ops(b), 0);
    CHECK_OK(qmdb_batch_put(b, big, 255, "max key", 7));
    CHECK_OK(qmdb_batch_put(b, "alice", 5, "1", 1));
    /* Wrong heights change nothing. */
    CHECK_RC(qmdb_commit(db, 2, b, tmp), QMDB_BAD_HEIGHT);
    CHECK_RC(qmdb_commit(db, 0, b, tmp), QMDB_BAD_HEIGHT);
    CHECK_EQ_U64(qmdb_height(db), 0);
    CHECK_OK(qmdb_root(db, UINT64_MAX, tmp));
    CHECK_MEM(tmp, r0, 32);
    CHECK_OK(qmdb_commit(db, 1, b, r1));
    CHECK(memcmp(r1, r0, 32) != 0);

    char val[16];
    size_t vlen = 0;
    CHECK_OK(qmdb_get(db, "alice", 5, val, sizeof(val), &vlen));
    CHECK(vlen == 1 && val[0] == '1');
    CHECK_RC(qmdb_get(db, big, 255, val, 3, &vlen), QMDB_BUFFER_TOO_SMALL);
    CHECK_EQ_U64(vlen, 7);
    CHECK_RC(qmdb_get(db, "bob", 3, val, sizeof(val), &vlen), QMDB_NOTFOUND);

    /* Empty block: height moves, root does not. */
    qmdb_batch_reset(b);
    CHECK_OK(qmdb_commit(db, 2, b, r2));
    CHECK_MEM(r2, r1, 32);

    /* Several 1 MiB values in one block round-trip, also after reopen. */
    size_t mib = 1 << 20;
    uint8_t *v = malloc(3 * mib + 5), *out = malloc(3 * mib + 5);
    REQUIRE(v && out);
    for (size_t i = 0; i < 3 * mib + 5; i++)
        v[i] = (uint8_t)next();
    qmdb_batch_reset(b);
    CHECK_OK(qmdb_batch_put(b, "big1", 4, v, mib));
    CHECK_OK(qmdb_batch_put(b, "big2", 4, v + mib, mib + 1));
    CHECK_OK(qmdb_batch_tx(b));
    CHECK_OK(qmdb_batch_put(b, "big3", 4, v + 2 * mib, mib + 5));
    CHECK_OK(qmdb_commit(db, 3, b, r2));
    db = reopen(dir, db, 0);
    CHECK_OK(qmdb_get(db, "big2", 4, out, 3 * mib, &vlen));
    CHECK_EQ_U64(vlen, mib + 1);
    CHECK(memcmp(out, v + mib, mib + 1) == 0);
    CHECK_OK(qmdb_get(db, "big3", 4, out, 3 * mib, &vlen));
    CHECK(vlen == mib + 5 && memcmp(out, v + 2 * mib, mib + 5) == 0);
    CHECK_OK(qmdb_root(db, UINT64_MAX, tmp));
    CHECK_MEM(tmp, r2, 32);
    /* Every height's root is kept. */
    CHECK_OK(qmdb_root(db, 1, tmp));
    CHECK_MEM(tmp, r1, 32);
    CHECK_OK(qmdb_root(db, 0, tmp));
    CHECK_MEM(tmp, r0, 32);
    CHECK_RC(qmdb_root(db, 4, tmp), QMDB_NOTFOUND);
    /* Read-modify-write: the entry a get fetched is not read again by the next block's
     * update: it comes from the warm cache, or (a mapped log) from the page cache. */
    qmdb_stats st0 = QMDB_STATS_INIT, st1 = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st0));
    CHECK_OK(qmdb_get(db, "alice", 5, val, sizeof(val), &vlen));
    qmdb_batch_reset(b);
    CHECK_OK(qmdb_batch_put(b, "alice", 5, "2", 1));
    CHECK_OK(qmdb_commit(db, 4, b, r2));
    CHECK_OK(qmdb_stat(db, &st1));
    CHECK_EQ_U64(st1.batched_reads, st0.batched_reads);
    const char *nomap = getenv("QMDB_NO_MMAP");
    if (nomap && nomap[0] && strcmp(nomap, "0") != 0)
        CHECK(st1.warm_hits > st0.warm_hits); /* unmapped: the copy the get kept */
    CHECK_OK(qmdb_get(db, "alice", 5, val, sizeof(val), &vlen));
    CHECK(vlen == 1 && val[0] == '2');
    free(v);
    free(out);
    qmdb_batch_free(b);
    CHECK_OK(qmdb_close(db));

    /* Directories that are not databases. */
    CHECK_RC(qmdb_open(base, NULL, &db), QMDB_NOTADB);
    CHECK_RC(qmdb_open("/nonexistent/qmdb", NULL, &db), QMDB_NOTADB);
    CHECK(db == NULL);
    qmdb_options o;
    qmdb_options_init(&o);
    o.utilization_div = 0;
    path(dir, sizeof(dir), "badopts");
    CHECK_RC(qmdb_create(dir, &o), QMDB_INVALID);
}

/* Applies `blocks` random blocks to both handles and checks the roots agree every block. */
static void
random_blocks(qmdb_db *a, qmdb_db *b, int blocks, int ops, int keyspace)
{
    qmdb_batch *bt;
    CHECK_OK(qmdb_batch_new(&bt));
    for (int blk = 0; blk < blocks; blk++) {
        qmdb_batch_reset(bt);
        for (int i = 0; i < ops; i++) {
            char key[16], val[40];
            int k = (int)(next() % (uint64_t)keyspace);
            snprintf(key, sizeof(key), "key%d", k);
            if (next() % 5 == 0) {
                CHECK_OK(qmdb_batch_del(bt, key, strlen(key)));
            } else {
                int vl = snprintf(val, sizeof(val), "v%" PRIu64, next());
                CHECK_OK(qmdb_batch_put(bt, key, strlen(key), val, (size_t)vl));
            }
            if (next() % 7 == 0)
                CHECK_OK(qmdb_batch_tx(bt));
        }
        uint8_t ra[32], rb[32];
        uint64_t h = qmdb_height(a) + 1;
        CHECK_OK(qmdb_commit(a, h, bt, ra));
        CHECK_OK(qmdb_commit(b, h, bt, rb));
        CHECK_MEM(ra, rb, 32);
    }
    qmdb_batch_free(bt);
}

static uint64_t
dir_bytes(const char *dir)
{
    DIR *d = opendir(dir);
    uint64_t total = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char p[512];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
            total += (uint64_t)st.st_blocks * 512;
    }
    if (d)
        closedir(d);
    return total;
}

static void
test_prune_keeps_roots(void)
{
    char da[256], db_[256];
    path(da, sizeof(da), "prune-a");
    path(db_, sizeof(db_), "prune-b");
    qmdb_options o;
    qmdb_options_init(&o);
    o.compact_thres = 1;
    o.utilization_ratio = 1;
    o.utilization_div = 1;
    o.entry_segment_bytes = 65536;
    o.twig_segment_bytes = 128 * 1024;
    o.history_blocks = 2;
    CHECK_OK(qmdb_create(da, &o));
    CHECK_OK(qmdb_create(db_, &o));
    qmdb_db *a = reopen(da, NULL, 0);
    qmdb_db *b = reopen(db_, NULL, QMDB_OPEN_NO_AUTO_PRUNE);
    random_blocks(a, b, 60, 400, 300);
    qmdb_stats sa = QMDB_STATS_INIT, sb = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(a, &sa));
    CHECK_OK(qmdb_stat(b, &sb));
    CHECK(sa.pruned_twigs > 0);
    CHECK_EQ_U64(sb.pruned_twigs, 0);
    CHECK(sa.entry_file_bytes < sb.entry_file_bytes);
    CHECK_EQ_U64(sa.live_entries, sb.live_entries);
    CHECK(dir_bytes(da) < dir_bytes(db_));
    /* Explicit prune on b catches up, still with the same root. */
    uint8_t ra[32], rb[32];
    CHECK_OK(qmdb_prune(b));
    CHECK_OK(qmdb_stat(b, &sb));
    CHECK(sb.pruned_twigs > 0);
    CHECK_OK(qmdb_root(a, UINT64_MAX, ra));
    CHECK_OK(qmdb_root(b, UINT64_MAX, rb));
    CHECK_MEM(ra, rb, 32);
    /* Reopen the pruned database and keep going: roots still agree. The count of pruned
     * twigs comes from the durable metadata, so a reopen does not reset it. */
    a = reopen(da, a, 0);
    b = reopen(db_, b, 0);
    qmdb_stats sa2 = QMDB_STATS_INIT, sb2 = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(a, &sa2));
    CHECK_OK(qmdb_stat(b, &sb2));
    CHECK_EQ_U64(sa2.pruned_twigs, sa.pruned_twigs);
    CHECK_EQ_U64(sb2.pruned_twigs, sb.pruned_twigs);
    CHECK_EQ_U64(sa2.total_entries - sa2.unpruned_entries, sa2.pruned_twigs << 11);
    CHECK_OK(qmdb_root(a, UINT64_MAX, ra));
    CHECK_MEM(ra, rb, 32);
    random_blocks(a, b, 20, 300, 300);
    CHECK_OK(qmdb_close(a));
    CHECK_OK(qmdb_close(b));
}

static void
append_junk(const char *file)
{
    int fd = open(file, O_WRONLY | O_APPEND);
    REQUIRE(fd >= 0);
    char junk[777];
    memset(junk, 0x3c, sizeof(junk));
    CHECK(write(fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk));
    close(fd);
}

static void
flip_byte(const char *file, off_t off)
{
    int fd = open(file, O_RDWR);
    REQUIRE(fd >= 0);
    unsigned char c;
    CHECK(pread(fd, &c, 1, off) == 1);
    c ^= 0x20;
    CHECK(pwrite(fd, &c, 1, off) == 1);
    close(fd);
}

static void
test_recovery_and_corruption(void)
{
    char dir[256], f[512];
    path(dir, sizeof(dir), "recover");
    CHECK_OK(qmdb_create(dir, NULL));
    qmdb_db *a = reopen(dir, NULL, 0);
    char dref[256];
    path(dref, sizeof(dref), "recover-ref");
    CHECK_OK(qmdb_create(dref, NULL));
    qmdb_db *ref = reopen(dref, NULL, 0);
    random_blocks(a, ref, 10, 500, 2000);
    uint8_t root[32], tmp[32];
    CHECK_OK(qmdb_root(a, UINT64_MAX, root));
    uint64_t h = qmdb_height(a);
    CHECK_OK(qmdb_close(a));
    /* Torn tails (uncommitted appends) everywhere are cut back at open. */
    for (int s = 0; s < 16; s++) {
        snprintf(f, sizeof(f), "%s/s%02x.entries.0000000000", dir, s);
        append_junk(f);
        snprintf(f, sizeof(f), "%s/s%02x.tmeta.0000000000", dir, s);
        append_junk(f);
    }
    snprintf(f, sizeof(f), "%s/ROOTS", dir);
    append_junk(f);
    a = reopen(dir, NULL, 0);
    CHECK_EQ_U64(qmdb_height(a), h);
    CHECK_OK(qmdb_root(a, UINT64_MAX, tmp));
    CHECK_MEM(tmp, root, 32);
    random_blocks(a, ref, 3, 200, 2000); /* and it keeps working, in step with ref */
    CHECK_OK(qmdb_root(a, UINT64_MAX, root));
    CHECK_OK(qmdb_close(a));

    /* A flipped byte in the committed entry log is reported, never trusted. */
    snprintf(f, sizeof(f), "%s/s05.entries.0000000000", dir);
    struct stat st;
    REQUIRE(stat(f, &st) == 0);
    flip_byte(f, st.st_size - 20); /* inside the youngest twig's entries */
    qmdb_db *bad = NULL;
    int rc = qmdb_open(dir, NULL, &bad);
    CHECK(rc == QMDB_CORRUPT);
    CHECK(bad == NULL);
    CHECK(strstr(qmdb_open_error(), "shard 5") != NULL);
    flip_byte(f, st.st_size - 20);
    a = reopen(dir, NULL, 0);
    CHECK_OK(qmdb_root(a, UINT64_MAX, tmp));
    CHECK_MEM(tmp, root, 32);
    CHECK_OK(qmdb_close(a));
    /* An old full twig's entry: found by the default (verifying) open; a fast open skips it. */
    flip_byte(f, 1000);
    CHECK_RC(qmdb_open(dir, NULL, &bad), QMDB_CORRUPT);
    CHECK(strstr(qmdb_open_error(), "s05.entries") != NULL);
    CHECK(strstr(qmdb_open_error(), "offset") != NULL);
    flip_byte(f, 1000);
    /* The metadata: a bad newest slot falls back to the previous height, whose files were
     * cut back... but here both slots are damaged, so open must refuse. */
    snprintf(f, sizeof(f), "%s/META", dir);
    /* Each slot holds two copies of its record (at +0 and +2048, meta.h): one damaged copy
     * per slot is survived, all four damaged is refused. */
    flip_byte(f, 30);
    flip_byte(f, 4096 + 30);
    a = reopen(dir, NULL, QMDB_OPEN_RDONLY);
    CHECK_OK(qmdb_root(a, UINT64_MAX, tmp));
    CHECK_MEM(tmp, root, 32);
    CHECK_OK(qmdb_close(a));
    flip_byte(f, 2048 + 30);
    flip_byte(f, 4096 + 2048 + 30);
    CHECK_RC(qmdb_open(dir, NULL, &bad), QMDB_CORRUPT);
    flip_byte(f, 30);
    flip_byte(f, 4096 + 30);
    flip_byte(f, 2048 + 30);
    flip_byte(f, 4096 + 2048 + 30);
    /* ROOTS damaged at the latest height: detected at open. (40-byte records, FORMAT.md.) */
    snprintf(f, sizeof(f), "%s/ROOTS", dir);
    flip_byte(f, 40 * (off_t)qmdb_height(ref) + 3);
    CHECK_RC(qmdb_open(dir, NULL, &bad), QMDB_CORRUPT);
    flip_byte(f, 40 * (off_t)qmdb_height(ref) + 3);
    /* An older height's record damaged (root bytes or its CRC): qmdb_root of that height
     * and qmdb_check report it, other heights still answer. */
    for (off_t at = 5; at < 40; at += 30) {
        flip_byte(f, 40 * 2 + at);
        a = reopen(dir, NULL, QMDB_OPEN_RDONLY);
        CHECK_RC(qmdb_root(a, 2, tmp), QMDB_CORRUPT);
        CHECK(strstr(qmdb_last_error(a), "ROOTS") && strstr(qmdb_last_error(a), "offset 80"));
        CHECK_OK(qmdb_root(a, 1, tmp));
        CHECK_OK(qmdb_close(a));
        uint64_t problems = 0;
        CHECK_RC(qmdb_check(dir, NULL, NULL, &problems), QMDB_CORRUPT);
        CHECK_EQ_U64(problems, 1);
        flip_byte(f, 40 * 2 + at);
    }
    a = reopen(dir, NULL, 0);
    CHECK_OK(qmdb_close(a));
    CHECK_OK(qmdb_close(ref));
}

/* Writes len zero bytes at off (len 0: truncates the file to off). */
static void
zero_range(const char *file, off_t off, size_t len)
{
    int fd = open(file, O_RDWR);
    REQUIRE(fd >= 0);
    static const unsigned char z[4096];
    if (len == 0)
        CHECK(ftruncate(fd, off) == 0);
    else
        CHECK(pwrite(fd, z, len, off) == (ssize_t)len);
    close(fd);
}

/* The newest META slot wiped or truncated away: open refuses (it used to open the previous
 * height and then accept a different block there: a fork); check reports it; a salvage open
 * is explicit, opens the older height, and a writable one repairs the slot. */
static void
test_meta_damage(void)
{
    char dir[256], dref[256], f[512];
    path(dir, sizeof(dir), "metadmg");
    path(dref, sizeof(dref), "metadmg-ref");
    CHECK_OK(qmdb_create(dir, NULL));
    CHECK_OK(qmdb_create(dref, NULL));
    qmdb_db *a = reopen(dir, NULL, 0), *ref = reopen(dref, NULL, 0), *bad = NULL;
    random_blocks(a, ref, 6, 300, 1000);
    uint64_t h = qmdb_height(a);
    uint8_t prev[32], tmp[32];
    CHECK_OK(qmdb_root(a, h - 1, prev));
    CHECK_OK(qmdb_close(a));
    snprintf(f, sizeof(f), "%s/META", dir);
    /* Wiping either slot is refused: the newest one holds height h, and the other one's
     * loss cannot be told from the loss of a newer record. */
    unsigned char save[8192];
    int fd = open(f, O_RDONLY);
    REQUIRE(fd >= 0);
    CHECK(pread(fd, save, sizeof(save), 0) == (ssize_t)sizeof(save));
    close(fd);
    for (int slot = 0; slot < 2; slot++) {
        zero_range(f, slot * 4096, 4096);
        CHECK_RC(qmdb_open(dir, NULL, &bad), QMDB_CORRUPT);
        CHECK(strstr(qmdb_open_error(), "META") && strstr(qmdb_open_error(), "blank"));
        uint64_t problems = 0;
        CHECK_RC(qmdb_check(dir, NULL, NULL, &problems), QMDB_CORRUPT);
        CHECK(problems >= 1);
        fd = open(f, O_WRONLY);
        CHECK(pwrite(fd, save, sizeof(save), 0) == (ssize_t)sizeof(save));
        close(fd);
    }
    /* Truncated away. */
    zero_range(f, 4096, 0);
    CHECK_RC(qmdb_open(dir, NULL, &bad), QMDB_CORRUPT);
    CHECK(strstr(qmdb_open_error(), "missing") != NULL);
    fd = open(f, O_WRONLY);
    CHECK(pwrite(fd, save, sizeof(save), 0) == (ssize_t)sizeof(save));
    close(fd);
    a = reopen(dir, NULL, QMDB_OPEN_RDONLY);
    CHECK_EQ_U64(qmdb_height(a), h);
    CHECK_OK(qmdb_close(a));
    /* Wipe the slot that holds the newest record: salvage opens height h - 1 only when asked,
     * and a writable salvage open repairs META so that a plain open works again. */
    int newest = -1;
    for (int slot = 0; slot < 2 && newest < 0; slot++) {
        zero_range(f, slot * 4096, 4096);
        a = reopen(dir, NULL, QMDB_OPEN_RDONLY | QMDB_OPEN_SALVAGE);
        if (qmdb_height(a) == h - 1)
            newest = slot;
        CHECK_OK(qmdb_close(a));
        if (newest < 0) {
            fd = open(f, O_WRONLY);
            CHECK(pwrite(fd, save, sizeof(save), 0) == (ssize_t)sizeof(save));
            close(fd);
        }
    }
    REQUIRE(newest >= 0);
    a = reopen(dir, NULL, QMDB_OPEN_SALVAGE);
    CHECK_EQ_U64(qmdb_height(a), h - 1);
    CHECK_OK(qmdb_root(a, UINT64_MAX, tmp));
    CHECK_MEM(tmp, prev, 32);
    CHECK_OK(qmdb_close(a));
    a = reopen(dir, NULL, 0);
    CHECK_EQ_U64(qmdb_height(a), h - 1);
    uint64_t problems = 9;
    CHECK_OK(qmdb_close(a));
    CHECK_RC(qmdb_check(dir, NULL, NULL, &problems), 0);
    CHECK_EQ_U64(problems, 0);
    CHECK_OK(qmdb_close(ref));
}

/* The writer's exclusion holds even if files in the directory are deleted or replaced
 * (a LOCK file could be deleted under a running writer, letting a second writer in). */
static void
test_lock(void)
{
    char dir[256], f[512];
    path(dir, sizeof(dir), "lock");
    CHECK_OK(qmdb_create(dir, NULL));
    qmdb_db *a = reopen(dir, NULL, 0), *b = NULL;
    snprintf(f, sizeof(f), "%s/LOCK", dir);
    unlink(f);
    int fd = open(f, O_RDWR | O_CREAT, 0644);
    if (fd >= 0)
        close(fd);
    unlink(f);
    CHECK_RC(qmdb_open(dir, NULL, &b), QMDB_BUSY);
    CHECK(b == NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        qmdb_db *c = NULL;
        _exit(qmdb_open(dir, NULL, &c) == QMDB_BUSY ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* Readers take no lock: a read-only handle opens while the writer holds the database
     * and reads its durable state; it keeps that state while the writer commits on. */
    uint8_t r1[32], r2[32], tmp[32];
    qmdb_batch *bt;
    CHECK_OK(qmdb_batch_new(&bt));
    CHECK_OK(qmdb_batch_put(bt, "k", 1, "v1", 2));
    CHECK_OK(qmdb_commit(a, 1, bt, r1));
    b = reopen(dir, NULL, QMDB_OPEN_RDONLY);
    CHECK_EQ_U64(qmdb_height(b), 1);
    qmdb_batch_reset(bt);
    CHECK_OK(qmdb_batch_put(bt, "k", 1, "v2", 2));
    CHECK_OK(qmdb_commit(a, 2, bt, r2));
    uint8_t val[8];
    size_t vlen = 0;
    CHECK_EQ_U64(qmdb_height(b), 1);
    CHECK_OK(qmdb_get(b, "k", 1, val, sizeof(val), &vlen));
    CHECK(vlen == 2 && memcmp(val, "v1", 2) == 0);
    CHECK_OK(qmdb_root(b, UINT64_MAX, tmp));
    CHECK_MEM(tmp, r1, 32);
    CHECK_RC(qmdb_root(b, 2, tmp), QMDB_NOTFOUND);
    qmdb_db *c = reopen(dir, NULL, QMDB_OPEN_RDONLY);
    CHECK_EQ_U64(qmdb_height(c), 2);
    CHECK_OK(qmdb_get(c, "k", 1, val, sizeof(val), &vlen));
    CHECK(vlen == 2 && memcmp(val, "v2", 2) == 0);
    /* A writer opens (and recovers) while read-only handles are open. */
    CHECK_OK(qmdb_close(a));
    a = reopen(dir, NULL, 0);
    CHECK_EQ_U64(qmdb_height(a), 2);
    CHECK_OK(qmdb_get(b, "k", 1, val, sizeof(val), &vlen));
    CHECK(vlen == 2 && memcmp(val, "v1", 2) == 0);
    qmdb_batch_free(bt);
    CHECK_OK(qmdb_close(b));
    CHECK_OK(qmdb_close(c));
    CHECK_OK(qmdb_close(a));
}

/* ---- the index checkpoint (run files sXX.hix) across indexers ---------------------------- */

#define CK_KEYS 1000

/* Opens dir with the given indexer and flags; *resumed: shards whose index came from the
 * checkpoint (no log scan). */
static qmdb_db *
ck_open(const char *dir, uint32_t indexer, uint32_t flags, uint32_t *resumed)
{
    qmdb_options o;
    qmdb_options_init(&o);
    o.indexer = indexer;
    o.flags = flags;
    qmdb_db *db = NULL;
    int rc = qmdb_open(dir, &o, &db);
    if (rc)
        fprintf(stderr, "open %s: %s: %s\n", dir, qmdb_strerror(rc), qmdb_open_error());
    REQUIRE(rc == 0);
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    *resumed = st.index_resumed_shards;
    return db;
}

/* n deterministic blocks (of seed) on db: a forked child and the parent's reference apply
 * the same ones. */
static void
ck_blocks_ops(qmdb_db *db, int n, int ops, uint64_t seed)
{
    qmdb_batch *bt;
    CHECK_OK(qmdb_batch_new(&bt));
    uint64_t r = seed | 1;
    for (int blk = 0; blk < n; blk++) {
        qmdb_batch_reset(bt);
        for (int i = 0; i < ops; i++) {
            char key[16], val[40];
            snprintf(key, sizeof(key), "key%d", (int)(test_xorshift(&r) % CK_KEYS));
            if (test_xorshift(&r) % 5 == 0) {
                CHECK_OK(qmdb_batch_del(bt, key, strlen(key)));
            } else {
                int vl = snprintf(val, sizeof(val), "w%" PRIu64, test_xorshift(&r));
                CHECK_OK(qmdb_batch_put(bt, key, strlen(key), val, (size_t)vl));
            }
        }
        CHECK_OK(qmdb_commit(db, qmdb_height(db) + 1, bt, NULL));
    }
    qmdb_batch_free(bt);
}

static void
ck_blocks(qmdb_db *db, int n, uint64_t seed)
{
    ck_blocks_ops(db, n, 300, seed);
}

/* A forked child opens dir writable (FAST) with the indexer, commits ck_blocks(n, seed) and
 * is killed: no close, no checkpoint. The reference handle *ref (of dref) is closed around
 * the fork, so that the parent forks with one thread (ThreadSanitizer refuses threads in a
 * child of a multi-threaded process), then reopened. */
static void
ck_crash(const char *dir, uint32_t indexer, int n, uint64_t seed, qmdb_db **ref, const char *dref)
{
    CHECK_OK(qmdb_close(*ref));
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        uint32_t res;
        qmdb_db *db = ck_open(dir, indexer, QMDB_OPEN_FAST, &res);
        ck_blocks(db, n, seed);
        raise(SIGKILL);
        _exit(4);
    }
    int st = 0;
    REQUIRE(waitpid(pid, &st, 0) == pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    uint32_t res;
    *ref = ck_open(dref, QMDB_INDEXER_MEMORY, QMDB_OPEN_FAST, &res);
}

/* a and b answer alike: heights, roots, every key of the key space, proofs of some keys
 * (latest and historical) and the live counts; the unpruned counts if both were just opened
 * (a handle that committed applies the last block's prunes at its next commit). */
static void
ck_same(qmdb_db *a, qmdb_db *b, bool fresh)
{
    uint8_t ra[32], rb[32];
    uint64_t h = qmdb_height(a);
    CHECK_EQ_U64(h, qmdb_height(b));
    CHECK_OK(qmdb_root(a, UINT64_MAX, ra));
    CHECK_OK(qmdb_root(b, UINT64_MAX, rb));
    CHECK_MEM(ra, rb, 32);
    for (unsigned s = 0; s < 16; s++) {
        CHECK_OK(qmdb_shard_root(a, s, ra));
        CHECK_OK(qmdb_shard_root(b, s, rb));
        CHECK_MEM(ra, rb, 32);
    }
    int found = 0;
    for (int k = 0; k < CK_KEYS + 20; k++) {
        char key[16], va[64], vb[64];
        size_t la = 0, lb = 0;
        snprintf(key, sizeof(key), "key%d", k);
        int rca = qmdb_get(a, key, strlen(key), va, sizeof(va), &la);
        int rcb = qmdb_get(b, key, strlen(key), vb, sizeof(vb), &lb);
        CHECK_RC(rca, rcb);
        if (rca == 0 && rcb == 0) {
            found++;
            CHECK_EQ_U64(la, lb);
            CHECK(la == lb && memcmp(va, vb, la) == 0);
        }
        if (k % 23 != 0)
            continue;
        const uint64_t heights[] = {UINT64_MAX, h - 1, h - 3};
        for (unsigned i = 0; i < 3; i++) {
            uint64_t ph = heights[i];
            uint8_t *pa = NULL, *pb = NULL;
            size_t pla = 0, plb = 0;
            int rpa = qmdb_prove(a, key, strlen(key), ph, &pa, &pla);
            int rpb = qmdb_prove(b, key, strlen(key), ph, &pb, &plb);
            CHECK_RC(rpa, rpb);
            CHECK(pla == plb && (pla == 0 || memcmp(pa, pb, pla) == 0));
            qmdb_proof_free(pa);
            qmdb_proof_free(pb);
        }
    }
    CHECK(found > CK_KEYS / 4);
    qmdb_stats sa = QMDB_STATS_INIT, sb = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(a, &sa));
    CHECK_OK(qmdb_stat(b, &sb));
    CHECK_EQ_U64(sa.live_with_sentries, sb.live_with_sentries);
    if (fresh)
        CHECK_EQ_U64(sa.unpruned_entries, sb.unpruned_entries);
}

/* A fast read-only open with the indexer: `want` shards from the checkpoint (-1: any), and
 * the same answers as ref and as a verifying open (the log scan). */
static void
ck_expect(const char *dir, uint32_t indexer, int want, qmdb_db *ref, const char *what)
{
    uint32_t res = 0, res2 = 0;
    qmdb_db *a = ck_open(dir, indexer, QMDB_OPEN_RDONLY | QMDB_OPEN_FAST, &res);
    qmdb_db *b = ck_open(dir, QMDB_INDEXER_MEMORY, QMDB_OPEN_RDONLY, &res2);
    if (want >= 0 && res != (uint32_t)want)
        fprintf(stderr, "%s: %u shards from the checkpoint, wanted %d\n", what, res, want);
    if (want >= 0)
        CHECK_EQ_U64(res, want);
    CHECK_EQ_U64(res2, 0);
    ck_same(a, b, true);
    ck_same(a, ref, false);
    CHECK_OK(qmdb_close(a));
    CHECK_OK(qmdb_close(b));
}

static char *
ck_slurp(const char *dir, unsigned s, const char *ext, size_t *len)
{
    char f[512];
    snprintf(f, sizeof(f), "%s/s%02x.%s", dir, s, ext);
    struct stat st;
    if (stat(f, &st) != 0)
        return NULL;
    *len = (size_t)st.st_size;
    return test_slurp(f);
}

static void
ck_put(const char *dir, unsigned s, const char *data, size_t len)
{
    char f[512];
    snprintf(f, sizeof(f), "%s/s%02x.hix", dir, s);
    int fd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    CHECK(write(fd, data, len) == (ssize_t)len);
    close(fd);
}

static int
ck_runs(const char *dir)
{
    int n = 0;
    for (unsigned s = 0; s < 16; s++) {
        char f[512];
        snprintf(f, sizeof(f), "%s/s%02x.hix", dir, s);
        n += access(f, F_OK) == 0;
    }
    return n;
}

static void
test_checkpoint(void)
{
    const uint32_t MEM = QMDB_INDEXER_MEMORY, HYB = QMDB_INDEXER_HYBRID;
    char dir[256], dref[256];
    path(dir, sizeof(dir), "ckpt");
    path(dref, sizeof(dref), "ckpt-ref");
    qmdb_options co;
    qmdb_options_init(&co);
    co.compact_thres = 1; /* compaction and pruning: twigs below first_twig, a moving head */
    co.utilization_ratio = 1;
    co.utilization_div = 1;
    co.entry_segment_bytes = 65536;
    co.twig_segment_bytes = 128 * 1024;
    co.history_blocks = 4;
    CHECK_OK(qmdb_create(dir, &co));
    CHECK_OK(qmdb_create(dref, &co));
    uint32_t res = 0;
    qmdb_db *ref = ck_open(dref, MEM, 0, &res);
    qmdb_db *a = ck_open(dir, MEM, 0, &res);
    CHECK_EQ_U64(ck_runs(dir), 0);
    ck_blocks_ops(a, 50, 1500, 1);
    ck_blocks_ops(ref, 50, 1500, 1);
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(a, &st));
    CHECK(st.pruned_twigs > 0);
    /* 1. A clean close of the in-memory indexer writes the checkpoint; a fast open loads it
     * in every shard and answers as the log scan does. */
    CHECK_OK(qmdb_close(a));
    CHECK_EQ_U64(ck_runs(dir), 16);
    ck_expect(dir, MEM, 16, ref, "after a clean close");
    /* A verifying open scans (and, writable, deletes the runs; the close writes them). */
    a = ck_open(dir, MEM, 0, &res);
    CHECK_EQ_U64(res, 0);
    CHECK_EQ_U64(ck_runs(dir), 0);
    CHECK_OK(qmdb_close(a));
    CHECK_EQ_U64(ck_runs(dir), 16);

    /* 2. A writable fast open loads it and keeps the runs; blocks, a close, a new one. */
    a = ck_open(dir, MEM, QMDB_OPEN_FAST, &res);
    CHECK_EQ_U64(res, 16);
    CHECK_EQ_U64(ck_runs(dir), 16);
    ck_blocks(a, 5, 2);
    ck_blocks(ref, 5, 2);
    ck_same(a, ref, false);
    CHECK_OK(qmdb_close(a));
    ck_expect(dir, MEM, 16, ref, "after blocks and a close");
    /* An open and a close with no block between keep the run as it is. */
    char *r5 = NULL, *r5b = NULL;
    size_t l5 = 0, l5b = 0;
    r5 = ck_slurp(dir, 5, "hix", &l5);
    a = ck_open(dir, MEM, QMDB_OPEN_FAST, &res);
    CHECK_OK(qmdb_close(a));
    r5b = ck_slurp(dir, 5, "hix", &l5b);
    CHECK(r5 && r5b && l5 == l5b && memcmp(r5, r5b, l5) == 0);
    free(r5b);

    /* 3. Stale runs (the state of an older height: as after a crash of a writer that
     * committed blocks after loading them) are never loaded; a read-only open changes no
     * file; a writable one deletes them and its close writes new ones. */
    char *old[16];
    size_t olen[16];
    for (unsigned s = 0; s < 16; s++)
        REQUIRE((old[s] = ck_slurp(dir, s, "hix", &olen[s])) != NULL);
    a = ck_open(dir, MEM, QMDB_OPEN_FAST, &res);
    ck_blocks(a, 3, 3);
    ck_blocks(ref, 3, 3);
    CHECK_OK(qmdb_close(a));
    ck_put(dir, 3, old[3], olen[3]);
    ck_expect(dir, MEM, 15, ref, "one stale run");
    ck_expect(dir, HYB, 15, ref, "one stale run, hybrid");
    for (unsigned s = 0; s < 16; s++)
        ck_put(dir, s, old[s], olen[s]);
    ck_expect(dir, MEM, 0, ref, "stale runs");
    ck_expect(dir, HYB, 0, ref, "stale runs, hybrid");
    for (unsigned s = 0; s < 16; s++) {
        size_t l = 0;
        char *now = ck_slurp(dir, s, "hix", &l);
        CHECK(now && l == olen[s] && memcmp(now, old[s], l) == 0);
        free(now);
    }
    a = ck_open(dir, MEM, QMDB_OPEN_FAST, &res);
    CHECK_EQ_U64(res, 0);
    CHECK_EQ_U64(ck_runs(dir), 0);
    CHECK_OK(qmdb_close(a));
    ck_expect(dir, MEM, 16, ref, "rewritten after stale runs");

    /* 4. A crash after blocks committed on a loaded checkpoint: the runs are stale. */
    ck_crash(dir, MEM, 4, 4, &ref, dref);
    ck_blocks(ref, 4, 4);
    ck_expect(dir, MEM, 0, ref, "crash after blocks (memory)");
    ck_expect(dir, HYB, 0, ref, "crash after blocks (memory), hybrid");
    /* A crash with nothing committed after the load: the runs still fit. */
    a = ck_open(dir, MEM, QMDB_OPEN_FAST, &res);
    CHECK_OK(qmdb_close(a));
    ck_crash(dir, MEM, 0, 5, &ref, dref);
    ck_expect(dir, MEM, 16, ref, "crash with no block committed");

    /* 5. Damaged runs: a record page, the header, the blob, truncations. */
    size_t l7 = 0;
    char *r7 = ck_slurp(dir, 7, "hix", &l7);
    REQUIRE(r7 && l7 > 8192);
    const size_t at[] = {4096 + 100, 70, 150, l7 - 1};
    for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        r7[at[i]] ^= 0x10;
        ck_put(dir, 7, r7, l7);
        ck_expect(dir, MEM, 15, ref, "damaged run");
        r7[at[i]] ^= 0x10;
    }
    const size_t cut[] = {l7 - 1, 8192, 4096, 100, 0};
    for (unsigned i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
        ck_put(dir, 7, r7, cut[i]);
        ck_expect(dir, MEM, 15, ref, "truncated run");
    }
    ck_put(dir, 7, r7, l7);
    ck_expect(dir, MEM, 16, ref, "run restored");
    /* Another shard's run in its place. */
    ck_put(dir, 7, r5, l5);
    ck_expect(dir, MEM, 15, ref, "another shard's run");
    ck_put(dir, 7, r7, l7);

    /* 6. Switching indexers: the hybrid indexer resumes from the in-memory checkpoint (no
     * journal), and the in-memory indexer loads the hybrid's; crashes of either in between. */
    a = ck_open(dir, HYB, QMDB_OPEN_FAST, &res);
    CHECK_EQ_U64(res, 16);
    ck_blocks(a, 3, 6);
    ck_blocks(ref, 3, 6);
    CHECK_OK(qmdb_close(a));
    ck_expect(dir, MEM, 16, ref, "memory after a hybrid close");
    ck_expect(dir, HYB, 16, ref, "hybrid after a hybrid close");
    ck_crash(dir, HYB, 3, 7, &ref, dref); /* the run of that close plus a journal */
    ck_blocks(ref, 3, 7);
    ck_expect(dir, MEM, 0, ref, "memory after a hybrid crash");
    ck_expect(dir, HYB, 16, ref, "hybrid after a hybrid crash");
    ck_crash(dir, MEM, 2, 8, &ref, dref); /* deletes the journals: its blocks would be missing */
    ck_blocks(ref, 2, 8);
    ck_expect(dir, HYB, 0, ref, "hybrid after a memory crash");
    ck_expect(dir, MEM, 0, ref, "memory after a memory crash");
    a = ck_open(dir, MEM, QMDB_OPEN_FAST, &res);
    CHECK_EQ_U64(res, 0);
    ck_blocks(a, 2, 9);
    ck_blocks(ref, 2, 9);
    CHECK_OK(qmdb_close(a));
    ck_expect(dir, HYB, 16, ref, "hybrid after a memory close");
    a = ck_open(dir, HYB, QMDB_OPEN_FAST, &res);
    CHECK_EQ_U64(res, 16);
    CHECK_OK(qmdb_close(a));
    ck_expect(dir, MEM, 16, ref, "memory after hybrid, memory, hybrid");
    uint64_t problems = 1;
    CHECK_OK(qmdb_check(dir, NULL, NULL, &problems));
    CHECK_EQ_U64(problems, 0);

    for (unsigned s = 0; s < 16; s++)
        free(old[s]);
    free(r5);
    free(r7);
    CHECK_OK(qmdb_close(ref));
}

int
main(void)
{
    REQUIRE(mkdtemp(base) != NULL);
    test_basic_and_bad_input();
    test_prune_keeps_roots();
    test_recovery_and_corruption();
    test_meta_damage();
    test_lock();
    test_checkpoint();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
    CHECK(system(cmd) == 0);
    return test_report("test_db");
}
