/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ycsb_wl.h -- YCSB CoreWorkload model for `qmdb-bench ycsb` (single-threaded driver).
 *
 * Owns: the YCSB property file reader (`key=value` lines, `#`/`!` comments, -p overrides),
 * the validated workload parameters, key names (`user<N>`, N = FNV-1a-64 of the item number
 * under insertorder=hashed, as YCSB's CoreWorkload.buildKeyName), and the request
 * distributions: uniform, scrambled zipfian (YCSB ScrambledZipfianGenerator over 10^10
 * items, hashed onto [0, recordcount + expected inserts], redrawn while past the last
 * acknowledged insert) and latest (YCSB SkewedLatestGenerator: a zipfian (θ 0.99) offset
 * back from the newest acknowledged record, with ζ extended incrementally as records are
 * inserted). Operation choice is YCSB's DiscreteGenerator over the five proportions.
 * Threads: a ycsb_gen belongs to the thread running the workload (the main thread).
 */
#ifndef BENCH_YCSB_WL_H
#define BENCH_YCSB_WL_H

#include "workload.h"

#include <stddef.h>
#include <stdint.h>

#define YCSB_MAX_PROPS 64
#define YCSB_KEY_MAX 32

typedef enum { YOP_READ, YOP_UPDATE, YOP_INSERT, YOP_SCAN, YOP_RMW, YOP_N } ycsb_op;

typedef enum { YD_UNIFORM, YD_ZIPFIAN, YD_LATEST } ycsb_dist;

typedef struct ycsb_props {
    int n;
    char key[YCSB_MAX_PROPS][64];
    char val[YCSB_MAX_PROPS][256];
} ycsb_props;

typedef struct ycsb_params {
    char workload_name[128]; /* basename of -P FILE */
    uint64_t recordcount, operationcount;
    double prop[YOP_N]; /* readproportion, updateproportion, ... */
    ycsb_dist dist;
    double zipf_theta; /* zipfianconstant */
    uint64_t fieldcount, fieldlength;
    uint64_t maxscanlength;
    int hashed; /* insertorder=hashed */
    unsigned zeropadding;
} ycsb_params;

/* Zipfian over [0, n) with n able to grow (YCSB ZipfianGenerator, incremental zeta). */
typedef zipf_gen ycsb_zipf;

typedef struct ycsb_gen {
    const ycsb_params *p;
    wl_gen g;             /* PRNG, values (value_size = fieldcount * fieldlength) */
    uint64_t acked;       /* records committed: keys 0 .. acked-1 exist */
    uint64_t next_insert; /* next item number an insert takes */
    uint64_t zipf_items;  /* scrambled zipfian: recordcount + expected inserts + 1 */
    ycsb_zipf latest;     /* latest distribution */
} ycsb_gen;

extern const char *const ycsb_op_names[YOP_N];

/* Reads a property file into pr (appending/overriding). Returns 0, or -1 with a message. */
int ycsb_props_load(ycsb_props *pr, const char *path, char *err, size_t errn);
/* Sets one `key=value` override. Returns 0 or -1. */
int ycsb_props_set(ycsb_props *pr, const char *kv, char *err, size_t errn);
/* Value of key or NULL. */
const char *ycsb_props_get(const ycsb_props *pr, const char *key);
/* Validates and converts the properties. Returns 0 or -1 with a message. */
int ycsb_params_from(ycsb_params *p, const ycsb_props *pr, char *err, size_t errn);

/* Key name of item number i ("user" + decimal). Returns its length. */
size_t ycsb_key(const ycsb_params *p, uint64_t i, char *out);

/* Starts a generator for a run over a freshly loaded database of p->recordcount records. */
void ycsb_gen_init(ycsb_gen *y, const ycsb_params *p, uint64_t seed);
/* Next operation type. */
ycsb_op ycsb_next_op(ycsb_gen *y);
/* Item number of an existing (acknowledged) record, per the request distribution. */
uint64_t ycsb_next_key(ycsb_gen *y);
/* Scan length in [1, maxscanlength]. */
uint64_t ycsb_scan_len(ycsb_gen *y);
/* Records that inserts up to next_insert are now committed (block commit). */
void ycsb_ack(ycsb_gen *y);

/* Zipfian helpers (exposed for tests of the generator). */
void ycsb_zipf_init(ycsb_zipf *z, uint64_t n, double theta);
uint64_t ycsb_zipf_next(ycsb_zipf *z, wl_gen *g, uint64_t n);

#endif /* BENCH_YCSB_WL_H */
