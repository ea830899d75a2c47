/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proof_bench.c -- qmdb-proof-bench: proof generation and verification rates and proof
 * sizes (issue 4). Public API only.
 *
 *   qmdb-proof-bench [--entries N] [--proofs M] [--dir DIR] [--block-ops B] [--keep]
 *
 * Loads N keys (16-byte pseudo-random keys, 32-byte values) in blocks of B operations, then
 * runs 4 update blocks of min(N/10, B) updates each (so historical proofs have something to
 * follow), and measures, single-threaded:
 *   inclusion  M proofs of random live keys at the latest height: generate, then verify;
 *   exclusion  M/4 proofs of random absent keys;
 *   historical M/4 proofs at random heights among the last 5 (value from before the updates);
 *              the first one on each shard pays for the history cache (reported apart).
 * Prints one line per kind and a JSON summary on the last line. Uses DIR (default
 * ./proof-bench-db), which must not exist; removed at the end unless --keep.
 *
 * Thread: single.
 */
#include "qmdb.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t
mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void
make_key(uint64_t i, uint8_t k[16])
{
    uint64_t a = mix(i), b = mix(i ^ 0xabcdefull);
    memcpy(k, &a, 8);
    memcpy(k + 8, &b, 8);
}

static void
make_val(uint64_t i, uint64_t ver, uint8_t v[32])
{
    for (int j = 0; j < 4; j++) {
        uint64_t x = mix(i * 31 + ver * 7 + (uint64_t)j);
        memcpy(v + 8 * j, &x, 8);
    }
}

static void
die(const char *what, int rc)
{
    fprintf(stderr, "qmdb-proof-bench: %s: %s\n", what, qmdb_strerror(rc));
    exit(1);
}

typedef struct kind_stats {
    const char *name;
    uint64_t n;
    double gen_s, ver_s, bytes;
} kind_stats;

static void
report(const kind_stats *k)
{
    printf("%-11s %8" PRIu64 " proofs  gen %9.0f /s  verify %9.0f /s  %7.1f bytes/proof\n", k->name,
           k->n, k->n / k->gen_s, k->n / k->ver_s, k->bytes / (double)k->n);
}

int
main(int argc, char **argv)
{
    uint64_t n = 1000000, m = 100000, block_ops = 100000;
    const char *dir = "./proof-bench-db";
    int keep = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--entries") == 0 && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--proofs") == 0 && i + 1 < argc)
            m = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--block-ops") == 0 && i + 1 < argc)
            block_ops = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--keep") == 0)
            keep = 1;
        else {
            fprintf(stderr, "usage: qmdb-proof-bench [--entries N] [--proofs M] [--dir DIR] "
                            "[--block-ops B] [--keep]\n");
            return 2;
        }
    }
    if (n == 0 || m == 0 || block_ops == 0)
        return 2;
    int rc = qmdb_create(dir, NULL);
    if (rc)
        die(qmdb_open_error(), rc);
    qmdb_db *db;
    if ((rc = qmdb_open(dir, NULL, &db)) != 0)
        die("open", rc);
    qmdb_batch *b;
    if ((rc = qmdb_batch_new(&b)) != 0)
        die("batch", rc);
    uint8_t key[16], val[32], root[32];
    uint64_t h = 0;
    double t0 = now_s();
    for (uint64_t i = 0; i < n; i++) {
        make_key(i, key);
        make_val(i, 0, val);
        if ((rc = qmdb_batch_put(b, key, 16, val, 32)) != 0)
            die("put", rc);
        if ((i + 1) % block_ops == 0 || i + 1 == n) {
            if ((rc = qmdb_commit(db, ++h, b, root)) != 0)
                die("commit", rc);
            qmdb_batch_reset(b);
        }
    }
    double load_s = now_s() - t0;
    /* 4 update blocks over the first keys: key i < nupd has value version u at height hl+u. */
    uint64_t hl = h, nupd = n / 10 < block_ops ? n / 10 : block_ops;
    if (nupd == 0)
        nupd = 1;
    for (uint64_t u = 1; u <= 4; u++) {
        for (uint64_t i = 0; i < nupd; i++) {
            make_key(i, key);
            make_val(i, u, val);
            if ((rc = qmdb_batch_put(b, key, 16, val, 32)) != 0)
                die("put", rc);
        }
        if ((rc = qmdb_commit(db, ++h, b, root)) != 0)
            die("commit", rc);
        qmdb_batch_reset(b);
    }
    qmdb_batch_free(b);
    fprintf(stderr, "loaded %" PRIu64 " keys in %.1f s (%.0f keys/s), height %" PRIu64 "\n", n,
            load_s, n / load_s, h);

    kind_stats ks[3] = {
        {"inclusion", 0, 0, 0, 0}, {"exclusion", 0, 0, 0, 0}, {"historical", 0, 0, 0, 0}};
    uint8_t **proofs = calloc(m, sizeof(uint8_t *));
    size_t *lens = calloc(m, sizeof(size_t));
    uint64_t *ids = calloc(m, sizeof(uint64_t));
    uint64_t *hts = calloc(m, sizeof(uint64_t));
    if (!proofs || !lens || !ids || !hts)
        die("alloc", -12);
    double hist_first_s = 0;
    for (int kind = 0; kind < 3; kind++) {
        kind_stats *k = &ks[kind];
        k->n = kind == 0 ? m : (m / 4 ? m / 4 : 1);
        /* Pick the claims. */
        for (uint64_t j = 0; j < k->n; j++) {
            uint64_t r = mix(j * 3 + (uint64_t)kind + 1000000007ull);
            if (kind == 0) {
                ids[j] = r % n;
                hts[j] = UINT64_MAX;
            } else if (kind == 1) {
                ids[j] = n + r % (n * 10); /* never loaded */
                hts[j] = UINT64_MAX;
            } else {
                ids[j] = r % nupd;
                hts[j] = hl + (r >> 32) % 4; /* value version hts - hl */
            }
        }
        if (kind == 2) { /* warm the history cache once, timed apart */
            double t = now_s();
            for (uint64_t j = 0; j < 200 && j < k->n; j++) {
                uint8_t *p;
                size_t len;
                make_key(ids[j], key);
                if ((rc = qmdb_prove(db, key, 16, hts[j], &p, &len)) != 0)
                    die("prove (history warm-up)", rc);
                qmdb_proof_free(p);
            }
            hist_first_s = now_s() - t;
        }
        double t = now_s();
        for (uint64_t j = 0; j < k->n; j++) {
            make_key(ids[j], key);
            if ((rc = qmdb_prove(db, key, 16, hts[j], &proofs[j], &lens[j])) != 0)
                die("prove", rc);
            k->bytes += (double)lens[j];
        }
        k->gen_s = now_s() - t;
        t = now_s();
        for (uint64_t j = 0; j < k->n; j++) {
            make_key(ids[j], key);
            const uint8_t *v = NULL;
            if (kind == 0) {
                make_val(ids[j], ids[j] < nupd ? 4 : 0, val);
                v = val;
            } else if (kind == 2) {
                make_val(ids[j], hts[j] - hl, val);
                v = val;
            }
            const char *why = NULL;
            rc = qmdb_proof_verify(proofs[j], lens[j], root, key, 16, v, v ? 32 : 0,
                                   kind == 2 ? hts[j] : UINT64_MAX, NULL, &why);
            if (rc) {
                fprintf(stderr, "%s proof %" PRIu64 " does not verify: %s\n", k->name, j, why);
                return 1;
            }
        }
        k->ver_s = now_s() - t;
        for (uint64_t j = 0; j < k->n; j++) {
            qmdb_proof_free(proofs[j]);
            proofs[j] = NULL;
        }
        report(k);
    }
    printf("history cache warm-up (200 historical proofs, building every shard's cache): %.2f s\n",
           hist_first_s);
    printf("{\"entries\": %" PRIu64, n);
    for (int kind = 0; kind < 3; kind++)
        printf(", \"%s\": {\"proofs\": %" PRIu64 ", \"gen_per_s\": %.0f, \"verify_per_s\": %.0f, "
               "\"bytes_per_proof\": %.1f}",
               ks[kind].name, ks[kind].n, ks[kind].n / ks[kind].gen_s, ks[kind].n / ks[kind].ver_s,
               ks[kind].bytes / (double)ks[kind].n);
    printf(", \"history_warmup_s\": %.2f, \"load_s\": %.1f}\n", hist_first_s, load_s);
    free(proofs);
    free(lens);
    free(ids);
    free(hts);
    qmdb_close(db);
    if (!keep) {
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
    return 0;
}
