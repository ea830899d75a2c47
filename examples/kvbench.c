/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kvbench.c -- the bindings benchmark, C reference: N puts in blocks of 10,000 (each block
 * one qmdb_commit), then N single gets, then N gets through qmdb_get_many in batches of
 * 10,000. Keys (16 bytes) and values (32 bytes) are made before the clock starts; the Rust,
 * Go and Python versions (bindings/<lang>) do exactly the same.
 *
 *   kvbench DIR [N]      (N defaults to 100000; DIR must not hold a database)
 *
 * Prints one line: lang=c n=N put_commit_ops_s=... get_ops_s=... get_many_ops_s=...
 */
#include <qmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK 10000

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
check(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "kvbench: %s: %s\n", what, qmdb_strerror(rc));
        exit(1);
    }
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: kvbench DIR [N]\n");
        return 2;
    }
    size_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000;
    char(*keys)[16] = malloc(n * 16);
    unsigned char val[32];
    if (!keys)
        return 1;
    for (size_t i = 0; i < n; i++) {
        char tmp[24];
        snprintf(tmp, sizeof(tmp), "key%013zu", i);
        memcpy(keys[i], tmp, 16);
    }
    memset(val, 0xab, sizeof(val));
    check(qmdb_create(argv[1], NULL), "create");
    qmdb_db *db;
    check(qmdb_open(argv[1], NULL, &db), "open");
    qmdb_batch *b;
    check(qmdb_batch_new(&b), "batch");

    double t0 = now();
    uint64_t h = 0;
    for (size_t i = 0; i < n; i += BLOCK) {
        qmdb_batch_reset(b);
        for (size_t j = i; j < n && j < i + BLOCK; j++)
            check(qmdb_batch_put(b, keys[j], 16, val, sizeof(val)), "put");
        check(qmdb_commit(db, ++h, b, NULL), "commit");
    }
    double t_put = now() - t0;

    unsigned char out[64];
    size_t vlen;
    t0 = now();
    for (size_t i = 0; i < n; i++)
        check(qmdb_get(db, keys[i], 16, out, sizeof(out), &vlen), "get");
    double t_get = now() - t0;

    qmdb_read *reads = calloc(BLOCK, sizeof(*reads));
    unsigned char(*vals)[64] = malloc((size_t)BLOCK * 64);
    t0 = now();
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK;
        for (size_t j = 0; j < m; j++)
            reads[j] = (qmdb_read){.key = keys[i + j], .klen = 16, .buf = vals[j], .cap = 64};
        check(qmdb_get_many(db, reads, m), "get_many");
        for (size_t j = 0; j < m; j++)
            check(reads[j].rc, "get_many read");
    }
    double t_many = now() - t0;

    printf("lang=c n=%zu put_commit_ops_s=%.0f get_ops_s=%.0f get_many_ops_s=%.0f\n", n,
           (double)n / t_put, (double)n / t_get, (double)n / t_many);
    qmdb_batch_free(b);
    free(reads);
    free(vals);
    free(keys);
    return qmdb_close(db) ? 1 : 0;
}
