/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ycsb_selftest.c -- checks of the YCSB model in ycsb_wl.c (CTest bench_ycsb_selftest, label
 * bench-smoke; main thread only): key names against YCSB's own (item 0 is the well-known
 * "user6284781860667377211"), property parsing and overrides, the zipfian's rank-0 frequency
 * (1 / zeta(n)), the scrambled zipfian staying inside the acknowledged records, `latest`
 * favouring the newest record, and the operation mix following the proportions.
 * Owns: those checks (the ycsb_selftest executable).
 */
#include "ycsb_wl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fprintf(stderr, "\n");                               \
            failures++;                                          \
        }                                                        \
    } while (0)

static void
test_keys(void)
{
    ycsb_params p;
    memset(&p, 0, sizeof(p));
    p.hashed = 1;
    p.zeropadding = 1;
    char k[YCSB_KEY_MAX];
    size_t n = ycsb_key(&p, 0, k);
    CHECK(strcmp(k, "user6284781860667377211") == 0 && n == strlen(k), "key 0 = %s", k);
    p.hashed = 0;
    p.zeropadding = 5;
    ycsb_key(&p, 42, k);
    CHECK(strcmp(k, "user00042") == 0, "ordered padded key = %s", k);
}

static void
test_props(void)
{
    ycsb_props pr;
    ycsb_params p;
    char err[256];
    memset(&pr, 0, sizeof(pr));
    CHECK(ycsb_props_set(&pr, "readproportion=0.5", err, sizeof(err)) == 0, "%s", err);
    CHECK(ycsb_props_set(&pr, "updateproportion = 0.5", err, sizeof(err)) == 0, "%s", err);
    CHECK(ycsb_props_set(&pr, "requestdistribution=latest", err, sizeof(err)) == 0, "%s", err);
    CHECK(ycsb_props_set(&pr, "recordcount=777", err, sizeof(err)) == 0, "%s", err);
    CHECK(ycsb_props_set(&pr, "recordcount=778", err, sizeof(err)) == 0, "%s", err);
    CHECK(ycsb_params_from(&p, &pr, err, sizeof(err)) == 0, "%s", err);
    CHECK(p.recordcount == 778 && p.prop[YOP_READ] == 0.5 && p.prop[YOP_UPDATE] == 0.5 &&
              p.dist == YD_LATEST && p.fieldcount == 10 && p.fieldlength == 100 &&
              p.zipf_theta == 0.99 && p.hashed,
          "parsed params wrong");
    CHECK(ycsb_props_set(&pr, "requestdistribution=hotspot", err, sizeof(err)) == 0, "%s", err);
    CHECK(ycsb_params_from(&p, &pr, err, sizeof(err)) != 0, "hotspot accepted");
    CHECK(ycsb_props_set(&pr, "novalue", err, sizeof(err)) != 0, "bad -p accepted");
}

static void
test_zipf(void)
{
    ycsb_zipf z;
    wl_gen g;
    wl_init(&g, 7, 8, 8, 0);
    ycsb_zipf_init(&z, 1000, 0.99);
    unsigned long c0 = 0, n = 200000;
    for (unsigned long i = 0; i < n; i++) {
        uint64_t r = ycsb_zipf_next(&z, &g, 1000);
        CHECK(r < 1000, "rank %llu out of range", (unsigned long long)r);
        c0 += r == 0;
    }
    double want = 1.0 / z.zetan, got = (double)c0 / (double)n;
    CHECK(fabs(got - want) < 0.01, "rank 0 frequency %.4f, want %.4f", got, want);
    /* growing n extends zeta incrementally: same as computing it afresh */
    ycsb_zipf z2;
    ycsb_zipf_init(&z2, 5000, 0.99);
    ycsb_zipf_next(&z, &g, 5000);
    CHECK(fabs(z.zetan - z2.zetan) < 1e-9, "incremental zeta %.12f vs %.12f", z.zetan, z2.zetan);
}

static void
test_gen(ycsb_dist d)
{
    ycsb_params p;
    memset(&p, 0, sizeof(p));
    p.recordcount = 10000;
    p.operationcount = 10000;
    p.prop[YOP_READ] = 0.9;
    p.prop[YOP_INSERT] = 0.1;
    p.dist = d;
    p.zipf_theta = 0.99;
    p.fieldcount = 1;
    p.fieldlength = 16;
    p.maxscanlength = 10;
    ycsb_gen y;
    ycsb_gen_init(&y, &p, 3);
    unsigned long ops[YOP_N] = {0}, newest = 0, n = 100000;
    for (unsigned long i = 0; i < n; i++) {
        ops[ycsb_next_op(&y)]++;
        uint64_t k = ycsb_next_key(&y);
        CHECK(k < y.acked, "key %llu not acknowledged", (unsigned long long)k);
        newest += k >= y.acked - 100;
        uint64_t s = ycsb_scan_len(&y);
        CHECK(s >= 1 && s <= 10, "scan length %llu", (unsigned long long)s);
    }
    double fr = (double)ops[YOP_READ] / (double)n;
    CHECK(fabs(fr - 0.9) < 0.01 && ops[YOP_UPDATE] == 0, "read fraction %.3f", fr);
    if (d == YD_LATEST)
        CHECK(newest > n / 2, "latest: only %lu of %lu keys among the newest 100", newest, n);
    else
        CHECK(newest < n / 10, "dist %d: %lu of %lu keys among the newest 100", (int)d, newest, n);
    y.next_insert += 50; /* inserts acknowledged at a block commit become choosable */
    ycsb_ack(&y);
    CHECK(y.acked == 10050, "acked %llu", (unsigned long long)y.acked);
}

int
main(void)
{
    test_keys();
    test_props();
    test_zipf();
    test_gen(YD_UNIFORM);
    test_gen(YD_ZIPFIAN);
    test_gen(YD_LATEST);
    if (failures) {
        fprintf(stderr, "ycsb_selftest: %d failure(s)\n", failures);
        return 1;
    }
    printf("ycsb_selftest: ok\n");
    return 0;
}
