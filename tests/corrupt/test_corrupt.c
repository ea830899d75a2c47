/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_corrupt.c -- corruption detection (docs/RELIABILITY.md). Single-threaded.
 *
 *   test_corrupt flips N SEED   builds a database (workload.h: compaction, pruning, several
 *                               segments), then N times flips one random byte of a random
 *                               file of one kind (entry log, twig file, twig-meta, META,
 *                               ROOTS, in turn), opens read-only with the default verifying
 *                               open, reads every key, and restores the byte. Each open must
 *                               fail with QMDB_CORRUPT and a message naming the file, or
 *                               succeed and serve exactly the latest committed state (a
 *                               META slot holds two copies of its record, so one damaged
 *                               byte never rolls back a block). Wrong values and crashes are
 *                               failures; qmdb_check runs on every 20th damaged database and
 *                               must fail whenever open did.
 *   test_corrupt check          qmdb_check: passes on a healthy database; fails naming the
 *                               file on each kind of damaged file, on a stale META slot, on a
 *                               zeroed ROOTS record, and (in memory) on an indexer that
 *                               disagrees with the ActiveBits and on a broken key-hash chain.
 */
#include "../crash/workload.h"
#include "../test.h"
#include "check.h"
#include "db.h"
#include "entry.h"
#include "hash.h"
#include "indexer.h"
#include "shard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define NKEYS 600

static char dir[480];
static uint64_t seed = 21, rng;
static wl_model model_h, model_prev; /* state at H and at H - 1 */
static unsigned char root_h[32], root_prev[32];
static uint64_t height;

static uint64_t
rnd(uint64_t n)
{
    rng = wl_mix(rng);
    return n ? rng % n : 0;
}

static void
build(uint64_t blocks)
{
    qmdb_options o;
    wl_options(&o);
    wl_rmdir(dir);
    REQUIRE(qmdb_create(dir, &o) == 0);
    qmdb_db *db = NULL;
    REQUIRE(qmdb_open(dir, &o, &db) == 0);
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    for (uint64_t h = 1; h <= blocks; h++) {
        wl_block(seed, NKEYS, h, b, NULL);
        REQUIRE(qmdb_commit(db, h, b, NULL) == 0);
    }
    height = blocks;
    REQUIRE(qmdb_root(db, height, root_h) == 0);
    REQUIRE(qmdb_root(db, height - 1, root_prev) == 0);
    qmdb_batch_free(b);
    qmdb_close(db);
    wl_model_init(&model_h, seed, NKEYS);
    wl_model_init(&model_prev, seed, NKEYS);
    wl_model_advance(&model_h, height);
    wl_model_advance(&model_prev, height - 1);
}

static const char *const KINDS[] = {".entries.", ".twig.", ".tmeta.", "META", "ROOTS"};
#define NKINDS 5

/* A random existing, non-empty file of a kind; false if there is none. */
static bool
pick_file(int kind, char *out, size_t cap, uint64_t *size)
{
    DIR *d = opendir(dir);
    REQUIRE(d);
    char names[512][64];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < 512) {
        const char *k = KINDS[kind];
        bool match = (kind >= 3) ? strcmp(de->d_name, k) == 0 : strstr(de->d_name, k) != NULL;
        size_t len = strlen(de->d_name);
        if (match && len < 64)
            memcpy(names[n++], de->d_name, len + 1);
    }
    closedir(d);
    for (int tries = 0; tries < 8 && n > 0; tries++) {
        snprintf(out, cap, "%s/%s", dir, names[rnd((uint64_t)n)]);
        struct stat st;
        if (stat(out, &st) == 0 && st.st_size > 0) {
            *size = (uint64_t)st.st_size;
            return true;
        }
    }
    return false;
}

static void
xor_byte(const char *path, uint64_t off, unsigned char mask)
{
    int fd = open(path, O_RDWR);
    REQUIRE(fd >= 0);
    unsigned char c;
    REQUIRE(pread(fd, &c, 1, (off_t)off) == 1);
    c ^= mask;
    REQUIRE(pwrite(fd, &c, 1, (off_t)off) == 1);
    close(fd);
}

static long detected[NKINDS], clean[NKINDS], rolled_back, wrong, unnamed, get_corrupt, check_runs,
    check_missed;

static bool
names_a_file(const char *msg)
{
    for (int k = 0; k < NKINDS; k++)
        if (strstr(msg, KINDS[k]))
            return true;
    return strstr(msg, ".entries") || strstr(msg, ".twig") || strstr(msg, ".tmeta");
}

static void
trial(long i)
{
    int kind = (int)(i % NKINDS);
    char path[600];
    uint64_t size;
    if (!pick_file(kind, path, sizeof(path), &size))
        return;
    uint64_t off = rnd(size);
    unsigned char mask = (unsigned char)(1 + rnd(255));
    xor_byte(path, off, mask);
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = QMDB_OPEN_RDONLY;
    qmdb_db *db = NULL;
    int rc = qmdb_open(dir, &o, &db);
    bool open_failed = rc != 0;
    if (rc == QMDB_CORRUPT) {
        detected[kind]++;
        if (!names_a_file(qmdb_open_error())) {
            unnamed++;
            fprintf(stderr, "flip %s@%llu: message names no file: %s\n", path,
                    (unsigned long long)off, qmdb_open_error());
        }
    } else if (rc) {
        fprintf(stderr, "flip %s@%llu: open returned %d (%s): %s\n", path, (unsigned long long)off,
                rc, qmdb_strerror(rc), qmdb_open_error());
        wrong++;
    } else {
        uint64_t h = qmdb_height(db);
        unsigned char root[32];
        CHECK_OK(qmdb_root(db, UINT64_MAX, root));
        const wl_model *m = NULL;
        if (h == height && memcmp(root, root_h, 32) == 0) {
            m = &model_h;
            clean[kind]++;
        } else if (h == height - 1 && kind == 3 && memcmp(root, root_prev, 32) == 0) {
            m = &model_prev; /* the newest META slot was hit: the previous one is used */
            rolled_back++;
        } else {
            fprintf(stderr, "flip %s@%llu: opened at height %llu with an unexpected root\n", path,
                    (unsigned long long)off, (unsigned long long)h);
            wrong++;
        }
        if (m) {
            unsigned char key[16];
            static unsigned char buf[4096];
            for (uint32_t k = 0; k < NKEYS; k++) {
                size_t kl = wl_key(k, key), vl = 0;
                int g = qmdb_get(db, key, kl, buf, sizeof(buf), &vl);
                if (g == QMDB_CORRUPT) {
                    get_corrupt++;
                    continue;
                }
                bool ok = m->val[k]
                              ? (g == 0 && vl == m->vlen[k] && memcmp(buf, m->val[k], vl) == 0)
                              : g == QMDB_NOTFOUND;
                if (!ok) {
                    fprintf(stderr, "flip %s@%llu: WRONG value for key %u (rc %d)\n", path,
                            (unsigned long long)off, k, g);
                    wrong++;
                }
            }
        }
        qmdb_close(db);
    }
    if (i % 20 == 0) {
        uint64_t problems = 0;
        int crc = qmdb_check(dir, NULL, NULL, &problems);
        check_runs++;
        if (open_failed && (crc != QMDB_CORRUPT || problems == 0)) {
            fprintf(stderr, "flip %s@%llu: open failed but qmdb_check returned %d\n", path,
                    (unsigned long long)off, crc);
            check_missed++;
        }
    }
    xor_byte(path, off, mask); /* restore */
}

static int
run_flips(long n)
{
    build(400);
    /* The healthy database passes every check. */
    uint64_t problems = 1;
    CHECK_RC(qmdb_check(dir, NULL, NULL, &problems), 0);
    CHECK_EQ_U64(problems, 0);
    for (long i = 0; i < n; i++)
        trial(i);
    long total_det = 0, total_clean = 0;
    printf("%ld byte flips:\n", n);
    for (int k = 0; k < NKINDS; k++) {
        printf("  %-10s detected (QMDB_CORRUPT at open) %5ld, harmless (clean open, right values) "
               "%5ld\n",
               KINDS[k], detected[k], clean[k]);
        total_det += detected[k];
        total_clean += clean[k];
    }
    printf("  rolled back to the previous height (must be 0: each META slot has two copies): %ld\n",
           rolled_back);
    printf("  gets answering QMDB_CORRUPT: %ld; wrong values or states: %ld; messages naming no "
           "file: %ld; qmdb_check runs %ld, missed %ld\n",
           get_corrupt, wrong, unnamed, check_runs, check_missed);
    CHECK_EQ_U64(total_det + total_clean + rolled_back + wrong, n);
    CHECK_EQ_U64(wrong, 0);
    CHECK_EQ_U64(unnamed, 0);
    CHECK_EQ_U64(check_missed, 0);
    CHECK_EQ_U64(rolled_back, 0); /* one damaged byte never costs a committed block */
    CHECK(total_det > n / 2);
    /* The database is intact again after all the restores. */
    CHECK_RC(qmdb_check(dir, NULL, NULL, &problems), 0);
    /* Both copies of the newest META slot damaged: a torn write always leaves one copy
     * valid, so this is damage that may have cost the newest block. A plain open refuses
     * (QMDB_CORRUPT naming META and the offset); a salvage open, read-write, recovers to
     * H-1, and block H again gives the same root. */
    char meta[600];
    snprintf(meta, sizeof(meta), "%s/META", dir);
    xor_byte(meta, (height & 1) * 4096 + 30, 0x40);
    xor_byte(meta, (height & 1) * 4096 + 2048 + 30, 0x40);
    qmdb_options o;
    wl_options(&o);
    qmdb_db *db = NULL;
    CHECK_RC(qmdb_open(dir, &o, &db), QMDB_CORRUPT);
    CHECK(strstr(qmdb_open_error(), "META") && strstr(qmdb_open_error(), "offset"));
    o.flags |= QMDB_OPEN_SALVAGE;
    REQUIRE(qmdb_open(dir, &o, &db) == 0);
    CHECK_EQ_U64(qmdb_height(db), height - 1);
    CHECK_EQ_U64(wl_model_diff(db, &model_prev, "META rollback"), 0);
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    wl_block(seed, NKEYS, height, b, NULL);
    unsigned char root[32];
    CHECK_OK(qmdb_commit(db, height, b, root));
    CHECK_MEM(root, root_h, 32);
    CHECK_EQ_U64(wl_model_diff(db, &model_h, "after re-commit"), 0);
    qmdb_batch_free(b);
    qmdb_close(db);
    return 0;
}

/* ---- qmdb check ------------------------------------------------------------------------ */

typedef struct collected {
    char text[8192];
    int n;
} collected;

static void
collect(void *arg, const char *problem)
{
    collected *c = arg;
    size_t len = strlen(c->text);
    snprintf(c->text + len, sizeof(c->text) - len, "%s\n", problem);
    c->n++;
}

/* Damages a file, expects qmdb_check to fail naming `want`, restores. */
static void
expect_check_fails(const char *file, uint64_t off, unsigned char mask, const char *want)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    xor_byte(path, off, mask);
    collected c = {{0}, 0};
    uint64_t problems = 0;
    CHECK_RC(qmdb_check(dir, collect, &c, &problems), QMDB_CORRUPT);
    CHECK(problems >= 1 && c.n == (int)problems);
    if (!strstr(c.text, want))
        fprintf(stderr, "check of damaged %s@%llu: no '%s' in:\n%s", file, (unsigned long long)off,
                want, c.text);
    CHECK(strstr(c.text, want) != NULL);
    printf("  %s @%llu -> %s", file, (unsigned long long)off, c.text);
    xor_byte(path, off, mask);
}

static int
run_check(void)
{
    build(400);
    collected c = {{0}, 0};
    uint64_t problems = 7;
    CHECK_RC(qmdb_check(dir, collect, &c, &problems), 0);
    CHECK_EQ_U64(problems, 0);
    CHECK(c.n == 0);
    printf("healthy database: qmdb_check ok\ndamaged files:\n");
    /* Entry bytes in the youngest twig of shard 3, in a full twig, and a twig-file node. */
    char name[64];
    struct stat st;
    snprintf(name, sizeof(name), "s03.entries.%010d", 0);
    uint64_t seg0 = 0;
    for (int k = 0; k < 100; k++) {
        char p[600];
        snprintf(name, sizeof(name), "s03.entries.%010d", k);
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        if (stat(p, &st) == 0) {
            seg0 = (uint64_t)k;
            break;
        }
    }
    snprintf(name, sizeof(name), "s03.entries.%010llu", (unsigned long long)seg0);
    expect_check_fails(name, 1000, 0x01, "s03.entries");
    char last[64] = "";
    for (int k = 0; k < 1000; k++) {
        char p[600], nm[64];
        snprintf(nm, sizeof(nm), "s05.entries.%010d", k);
        snprintf(p, sizeof(p), "%s/%s", dir, nm);
        if (stat(p, &st) == 0)
            snprintf(last, sizeof(last), "%s", nm);
    }
    REQUIRE(last[0]);
    expect_check_fails(last, 8, 0x80, "s05.entries");
    char tw[64] = "";
    for (int k = 0; k < 64 && !tw[0]; k++) {
        char p[600], nm[64];
        snprintf(nm, sizeof(nm), "s07.twig.%010d", k);
        snprintf(p, sizeof(p), "%s/%s", dir, nm);
        if (stat(p, &st) == 0)
            snprintf(tw, sizeof(tw), "%s", nm);
    }
    REQUIRE(tw[0]);
    expect_check_fails(tw, 64, 0x02, "s07.twig");
    expect_check_fails("s09.tmeta.0000000000", 5, 0x10, "s09.tmeta");
    /* The older META slot: open uses the newer one, check still reports the damage. */
    expect_check_fails("META", ((height - 1) & 1) * 4096 + 100, 0x04, "META");
    expect_check_fails("META", (height & 1) * 4096 + 100, 0x04, "META");
    expect_check_fails("ROOTS", 40 * height + 3, 0x08, "ROOTS");
    /* A historical ROOTS record (40 bytes each, FORMAT.md), zeroed or with one flipped bit in
     * its root or in its CRC: check names it, and qmdb_root of that height refuses it. */
    expect_check_fails("ROOTS", 40 * 5 + 7, 0x01, "height 5");
    expect_check_fails("ROOTS", 40 * 5 + 33, 0x10, "height 5");
    {
        char p[600];
        snprintf(p, sizeof(p), "%s/ROOTS", dir);
        int fd = open(p, O_RDWR);
        REQUIRE(fd >= 0);
        unsigned char save[32], zero[32] = {0};
        REQUIRE(pread(fd, save, 32, 40 * 5) == 32);
        REQUIRE(pwrite(fd, zero, 32, 40 * 5) == 32);
        c.text[0] = '\0';
        c.n = 0;
        CHECK_RC(qmdb_check(dir, collect, &c, &problems), QMDB_CORRUPT);
        CHECK(strstr(c.text, "ROOTS") && strstr(c.text, "height 5"));
        printf("  ROOTS record 5 zeroed -> %s", c.text);
        qmdb_options ro;
        qmdb_options_init(&ro);
        ro.flags = QMDB_OPEN_RDONLY;
        qmdb_db *h5 = NULL;
        REQUIRE(qmdb_open(dir, &ro, &h5) == 0);
        unsigned char r5[32];
        CHECK_RC(qmdb_root(h5, 5, r5), QMDB_CORRUPT);
        CHECK(strstr(qmdb_last_error(h5), "ROOTS") != NULL);
        CHECK_OK(qmdb_root(h5, 4, r5));
        qmdb_close(h5);
        REQUIRE(pwrite(fd, save, 32, 40 * 5) == 32);
        close(fd);
    }
    /* In memory: an index record removed (indexer vs ActiveBits, and the chain breaks). */
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = QMDB_OPEN_RDONLY;
    qmdb_db *db = NULL;
    REQUIRE(qmdb_open(dir, &o, &db) == 0);
    qm_check_view v;
    qm_db_check_view(db, &v);
    uint32_t ki = 0;
    while (!model_h.val[ki])
        ki++;
    unsigned char key[16], kh[32];
    size_t kl = wl_key(ki, key);
    qm_sha256(key, kl, kh);
    qm_shard *s = &v.shards[qm_shard_of(kh)];
    qm_entry e;
    u64 pos;
    qm_ebuf eb = {0};
    REQUIRE(qm_shard_get(s, kh, key, (u32)kl, &eb, &e, &pos) == 0);
    REQUIRE(qm_ix_erase(&s->index, kh, pos) == 0);
    c.text[0] = '\0';
    c.n = 0;
    problems = 0;
    CHECK_OK(qm_check_run(&v, collect, &c, &problems));
    CHECK(problems >= 2);
    CHECK(strstr(c.text, "active bits") != NULL);
    CHECK(strstr(c.text, "key-hash chain") != NULL);
    printf("in-memory damage:\n  index record removed ->\n%s", c.text);
    /* An index record pointing at a dead entry. */
    REQUIRE(qm_ix_insert(&s->index, kh, pos) == 0);
    qm_tree_twig(&s->tree, e.sn >> QM_TWIG_SHIFT)->active[(e.sn & QM_TWIG_MASK) >> 3] ^=
        (u8)(1u << (e.sn & 7));
    c.text[0] = '\0';
    c.n = 0;
    problems = 0;
    CHECK_OK(qm_check_run(&v, collect, &c, &problems));
    CHECK(strstr(c.text, "not active in the ActiveBits") != NULL);
    printf("  active bit cleared ->\n%s", c.text);
    qm_ebuf_free(&eb);
    qmdb_close(db);
    CHECK_RC(qmdb_check(dir, NULL, NULL, &problems), 0); /* the files were never changed */
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s flips N SEED | check\n", argv[0]);
        return 2;
    }
    char tag[64];
    snprintf(tag, sizeof(tag), "corrupt-%s", argv[1]);
    wl_tmpdir(dir, sizeof(dir), tag);
    if (strcmp(argv[1], "flips") == 0 && argc == 4) {
        seed = strtoull(argv[3], NULL, 10);
        rng = wl_mix(seed);
        run_flips(atol(argv[2]));
    } else if (strcmp(argv[1], "check") == 0) {
        run_check();
    } else {
        return 2;
    }
    wl_model_free(&model_h);
    wl_model_free(&model_prev);
    int rc = test_report("test_corrupt");
    if (rc == 0)
        wl_rmdir(dir);
    return rc;
}
