/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rollback_bench.c -- qmdb-rollback-bench: the time of qmdb_rollback next to the time of
 * applying the blocks it undoes (docs/BENCH.md, "Rollback"). Uses qmdb.h only.
 *
 *   qmdb-rollback-bench DIR [ENTRIES [UPDATES [INDEXERS]]]
 *
 * Fills a new database in DIR with ENTRIES keys (default 10,000,000; 8-byte keys, 32-byte
 * values, blocks of 200,000 creates), then per indexer (INDEXERS: "memory,hybrid" by
 * default): applies 100 blocks of UPDATES random updates (default 100,000), timing each
 * commit; rolls back 1 block, re-applies it, rolls back 10, re-applies them, rolls back 100,
 * re-applies them; every rollback is timed and its root checked against the root the height
 * had. Prints one line per measurement. The database is deleted at the end.
 */
#include "qmdb.h"

#include <ftw.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
die(const char *what, int rc, qmdb_db *db)
{
    fprintf(stderr, "%s: %s: %s\n", what, qmdb_strerror(rc),
            db ? qmdb_last_error(db) : qmdb_open_error());
    exit(1);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t
rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint8_t (*roots)[32];

/* Block h of the update phase: UPDATES random keys get values derived from h (a block's
 * content depends only on its height, so a re-applied block is the same block). */
static void
update_block(qmdb_batch *b, uint64_t h, uint64_t entries, uint64_t updates)
{
    qmdb_batch_reset(b);
    uint64_t save = rng;
    rng = h * 0x100000001b3ull;
    for (uint64_t i = 0; i < updates; i++) {
        uint64_t k = rnd() % entries, v[4] = {h, i, rnd(), k};
        qmdb_batch_put(b, &k, 8, v, 32);
    }
    rng = save;
}

static double
apply(qmdb_db *db, qmdb_batch *b, uint64_t from, uint64_t to, uint64_t entries, uint64_t updates,
      double *per)
{
    double total = 0;
    for (uint64_t h = from; h <= to; h++) {
        update_block(b, h, entries, updates);
        double t0 = now_s();
        int rc = qmdb_commit(db, h, b, roots[h]);
        double t = now_s() - t0;
        if (rc)
            die("commit", rc, db);
        if (per)
            per[h - from] = t;
        total += t;
    }
    return total;
}

static double
rollback(qmdb_db *db, uint64_t to)
{
    double t0 = now_s();
    int rc = qmdb_rollback(db, to);
    double t = now_s() - t0;
    if (rc)
        die("rollback", rc, db);
    uint8_t r[32];
    if (qmdb_root(db, UINT64_MAX, r) || memcmp(r, roots[to], 32) != 0) {
        fprintf(stderr, "rollback to %" PRIu64 ": wrong root\n", to);
        exit(1);
    }
    return t;
}

static int
rm_cb(const char *p, const struct stat *sb, int f, struct FTW *ftw)
{
    (void)sb, (void)f, (void)ftw;
    return remove(p);
}

int
main(int argc, char **argv)
{
    if (argc < 2 || argc > 5 || argv[1][0] == '-') {
        bool help = argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
        fprintf(help ? stdout : stderr,
                "usage: %s DIR [ENTRIES [UPDATES [INDEXERS]]]\n"
                "  fills a new database DIR with ENTRIES keys (default 10000000), applies blocks\n"
                "  of UPDATES random updates (default 100000) and times rolling back 1, 10 and\n"
                "  100 of them against applying them, for each indexer in INDEXERS (default\n"
                "  memory,hybrid); DIR is deleted at the end\n",
                argv[0]);
        return help ? 0 : 2;
    }
    const char *dir = argv[1];
    char *end = NULL;
    uint64_t entries = argc > 2 ? strtoull(argv[2], &end, 10) : 10000000;
    if (argc > 2 && (*end || entries == 0 || argv[2][0] == '-')) {
        fprintf(stderr, "qmdb-rollback-bench: ENTRIES must be a positive number, not '%s'\n",
                argv[2]);
        return 2;
    }
    uint64_t updates = argc > 3 ? strtoull(argv[3], &end, 10) : 100000;
    if (argc > 3 && (*end || updates == 0 || argv[3][0] == '-')) {
        fprintf(stderr, "qmdb-rollback-bench: UPDATES must be a positive number, not '%s'\n",
                argv[3]);
        return 2;
    }
    const char *ixs = argc > 4 ? argv[4] : "memory,hybrid";
    int rc = qmdb_create(dir, NULL);
    if (rc)
        die("create", rc, NULL);
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = QMDB_OPEN_FAST;
    o.indexer = QMDB_INDEXER_MEMORY;
    qmdb_db *db;
    if ((rc = qmdb_open(dir, &o, &db)))
        die("open", rc, NULL);
    qmdb_batch *b;
    qmdb_batch_new(&b);
    uint64_t fill_blocks = (entries + 199999) / 200000, h = 0;
    roots = calloc(fill_blocks + 1000, 32);
    double t0 = now_s();
    for (uint64_t k = 0; k < entries;) {
        qmdb_batch_reset(b);
        for (uint64_t i = 0; i < 200000 && k < entries; i++, k++) {
            uint64_t v[4] = {k, k, k, k};
            qmdb_batch_put(b, &k, 8, v, 32);
        }
        h++;
        if ((rc = qmdb_commit(db, h, b, roots[h])))
            die("fill", rc, db);
    }
    printf("fill: %" PRIu64 " entries in %" PRIu64 " blocks, %.1f s\n", entries, h, now_s() - t0);
    fflush(stdout);
    uint64_t F = h;
    for (const char *ix = ixs; *ix;) {
        bool hybrid = strncmp(ix, "hybrid", 6) == 0;
        ix += strcspn(ix, ",");
        ix += *ix == ',';
        qmdb_close(db);
        o.indexer = hybrid ? QMDB_INDEXER_HYBRID : QMDB_INDEXER_MEMORY;
        t0 = now_s();
        if ((rc = qmdb_open(dir, &o, &db)))
            die("open", rc, NULL);
        const char *name = hybrid ? "hybrid" : "memory";
        printf("[%s] open %.1f s at height %" PRIu64 "\n", name, now_s() - t0, qmdb_height(db));
        h = qmdb_height(db);
        if (h > F && (rc = qmdb_rollback(db, F)))
            die("rollback to the fill", rc, db);
        double per[100];
        double all = apply(db, b, F + 1, F + 100, entries, updates, per);
        double last10 = 0;
        for (int i = 90; i < 100; i++)
            last10 += per[i];
        printf("[%s] apply 100 blocks of %" PRIu64 " updates: %.3f s (last block %.3f s, last 10 "
               "%.3f s)\n",
               name, updates, all, per[99], last10);
        double r1 = rollback(db, F + 99);
        double a1 = apply(db, b, F + 100, F + 100, entries, updates, NULL);
        double r10 = rollback(db, F + 90);
        double a10 = apply(db, b, F + 91, F + 100, entries, updates, NULL);
        double r100 = rollback(db, F);
        double a100 = apply(db, b, F + 1, F + 100, entries, updates, NULL);
        printf("[%s] rollback 1 block: %.3f s (apply %.3f s)\n", name, r1, a1);
        printf("[%s] rollback 10 blocks: %.3f s (apply %.3f s)\n", name, r10, a10);
        printf("[%s] rollback 100 blocks: %.3f s (apply %.3f s)\n", name, r100, a100);
        fflush(stdout);
    }
    qmdb_batch_free(b);
    qmdb_close(db);
    free(roots);
    nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
