/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hix_crash.c -- qmdb-hix-crash: open timings of a hybrid-indexer database after a clean
 * close and after a SIGKILL of its writer (docs/BENCH.md, "Hybrid indexer: open after a
 * crash").
 *
 *   qmdb-hix-crash open DIR
 *       times qmdb_open(QMDB_OPEN_FAST, hybrid indexer) and prints the seconds and how the
 *       index came back (shards resumed from their runs, journal blocks and changes
 *       replayed); then exits without closing, so the files stay as they were found (no
 *       checkpoint is written) and the open can be repeated.
 *   qmdb-hix-crash close DIR
 *       opens the same way and closes (the close writes the checkpoint); prints both times.
 *   qmdb-hix-crash write DIR MIN_MERGES EXTRA OPS SEED
 *       opens the same way and commits blocks of OPS puts of new random keys (52-byte keys,
 *       32-byte values, as qmdb-bench) until MIN_MERGES merges were installed, then EXTRA
 *       more blocks; submits one more and SIGKILLs itself while it is in flight.
 */
#include "qmdb.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t
mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static qmdb_db *
open_fast(const char *dir, double *secs)
{
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = QMDB_OPEN_FAST;
    o.indexer = QMDB_INDEXER_HYBRID;
    qmdb_db *db = NULL;
    double t0 = now();
    int rc = qmdb_open(dir, &o, &db);
    *secs = now() - t0;
    if (rc) {
        fprintf(stderr, "open %s: %s: %s\n", dir, qmdb_strerror(rc), qmdb_open_error());
        exit(1);
    }
    return db;
}

static void
print_stats(qmdb_db *db, const char *what, double secs)
{
    qmdb_stats st = QMDB_STATS_INIT;
    if (qmdb_stat(db, &st) != 0)
        exit(1);
    printf("%s: %.3f s; height %llu, %llu live entries; %u shards resumed, %llu blocks / %llu "
           "changes replayed; %llu merges\n",
           what, secs, (unsigned long long)st.height, (unsigned long long)st.live_with_sentries,
           st.index_resumed_shards, (unsigned long long)st.index_replayed_blocks,
           (unsigned long long)st.index_replayed_changes, (unsigned long long)st.index_merges);
    fflush(stdout);
}

static void
fill(qmdb_batch *b, uint32_t ops, uint64_t *rng)
{
    unsigned char k[52], v[32];
    qmdb_batch_reset(b);
    for (uint32_t i = 0; i < ops; i++) {
        for (size_t j = 0; j < sizeof(k); j += 8) {
            uint64_t x = mix(rng);
            memcpy(k + j, &x, sizeof(k) - j < 8 ? sizeof(k) - j : 8);
        }
        for (size_t j = 0; j < sizeof(v); j += 8) {
            uint64_t x = mix(rng);
            memcpy(v + j, &x, 8);
        }
        if (qmdb_batch_put(b, k, sizeof(k), v, sizeof(v)) != 0)
            exit(1);
    }
}

int
main(int argc, char **argv)
{
    double secs;
    if (argc == 3 && strcmp(argv[1], "open") == 0) {
        qmdb_db *db = open_fast(argv[2], &secs);
        print_stats(db, "open", secs);
        _exit(0); /* no close: no checkpoint, the files stay as found */
    }
    if (argc == 3 && strcmp(argv[1], "close") == 0) {
        qmdb_db *db = open_fast(argv[2], &secs);
        print_stats(db, "open", secs);
        double t0 = now();
        int rc = qmdb_close(db);
        printf("close: %.3f s (%s)\n", now() - t0, rc ? qmdb_strerror(rc) : "ok");
        return rc != 0;
    }
    if (argc != 7 || strcmp(argv[1], "write") != 0) {
        fprintf(stderr, "usage: %s open DIR | close DIR | write DIR MIN_MERGES EXTRA OPS SEED\n",
                argv[0]);
        return 2;
    }
    uint64_t min_merges = strtoull(argv[3], NULL, 10), extra = strtoull(argv[4], NULL, 10);
    uint32_t ops = (uint32_t)strtoul(argv[5], NULL, 10);
    uint64_t rng = strtoull(argv[6], NULL, 10);
    qmdb_db *db = open_fast(argv[2], &secs);
    print_stats(db, "open", secs);
    qmdb_batch *b;
    if (qmdb_batch_new(&b) != 0)
        return 1;
    uint64_t h = qmdb_height(db), after = 0;
    unsigned char root[32];
    for (;;) {
        fill(b, ops, &rng);
        h++;
        int rc = qmdb_commit(db, h, b, root);
        if (rc) {
            fprintf(stderr, "commit %llu: %s: %s\n", (unsigned long long)h, qmdb_strerror(rc),
                    qmdb_last_error(db));
            return 1;
        }
        qmdb_stats st = QMDB_STATS_INIT;
        if (qmdb_stat(db, &st) != 0)
            return 1;
        if (st.index_merges >= min_merges && after++ >= extra)
            break;
    }
    print_stats(db, "before the kill", 0);
    fill(b, ops, &rng);
    if (qmdb_submit(db, h + 1, b) != 0)
        return 1;
    raise(SIGKILL);
    return 1;
}
