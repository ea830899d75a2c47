/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ycsb_wl.c -- YCSB property files, parameters, key names and request distributions for
 * `qmdb-bench ycsb`. See ycsb_wl.h. Follows YCSB's CoreWorkload, ZipfianGenerator,
 * ScrambledZipfianGenerator, SkewedLatestGenerator and DiscreteGenerator; no engine code.
 * Owns: the implementations declared in ycsb_wl.h; the zipfian rank itself is
 * common/zipf.c. Threads: the ycsb driver's thread (the main thread).
 */
#include "ycsb_wl.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ycsb_op_names[YOP_N] = {"read", "update", "insert", "scan", "read-modify-write"};

static const char *const PROP_NAMES[YOP_N] = {"readproportion", "updateproportion",
                                              "insertproportion", "scanproportion",
                                              "readmodifywriteproportion"};

/* ---- properties --------------------------------------------------------------------------- */

static char *
trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

static int
props_put(ycsb_props *pr, const char *k, const char *v, char *err, size_t errn)
{
    if (strlen(k) >= sizeof(pr->key[0]) || strlen(v) >= sizeof(pr->val[0])) {
        snprintf(err, errn, "property '%s' too long", k);
        return -1;
    }
    for (int i = 0; i < pr->n; i++)
        if (strcmp(pr->key[i], k) == 0) {
            snprintf(pr->val[i], sizeof(pr->val[i]), "%s", v);
            return 0;
        }
    if (pr->n == YCSB_MAX_PROPS) {
        snprintf(err, errn, "too many properties");
        return -1;
    }
    snprintf(pr->key[pr->n], sizeof(pr->key[0]), "%s", k);
    snprintf(pr->val[pr->n], sizeof(pr->val[0]), "%s", v);
    pr->n++;
    return 0;
}

/* One "key=value" (or "key:value") line; blank lines and comments are skipped. */
static int
props_line(ycsb_props *pr, char *line, char *err, size_t errn)
{
    char *s = trim(line);
    if (!*s || *s == '#' || *s == '!')
        return 0;
    size_t k = strcspn(s, "=:");
    if (!s[k]) {
        snprintf(err, errn, "expected key=value, got '%s'", s);
        return -1;
    }
    s[k] = 0;
    return props_put(pr, trim(s), trim(s + k + 1), err, errn);
}

int
ycsb_props_load(ycsb_props *pr, const char *path, char *err, size_t errn)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errn, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char line[512];
    int ln = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        ln++;
        char sub[400];
        rc = props_line(pr, line, sub, sizeof(sub));
        if (rc)
            snprintf(err, errn, "%s:%d: %s", path, ln, sub);
    }
    fclose(f);
    return rc;
}

int
ycsb_props_set(ycsb_props *pr, const char *kv, char *err, size_t errn)
{
    char buf[400];
    snprintf(buf, sizeof(buf), "%s", kv);
    if (!strchr(buf, '=')) {
        snprintf(err, errn, "-p expects key=value, got '%s'", kv);
        return -1;
    }
    return props_line(pr, buf, err, errn);
}

const char *
ycsb_props_get(const ycsb_props *pr, const char *key)
{
    for (int i = 0; i < pr->n; i++)
        if (strcmp(pr->key[i], key) == 0)
            return pr->val[i];
    return NULL;
}

static int
get_u64(const ycsb_props *pr, const char *key, uint64_t def, uint64_t *out, char *err, size_t errn)
{
    const char *v = ycsb_props_get(pr, key);
    *out = def;
    if (!v)
        return 0;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || *v == '-') {
        snprintf(err, errn, "property %s: '%s' is not a non-negative integer", key, v);
        return -1;
    }
    *out = x;
    return 0;
}

static int
get_dbl(const ycsb_props *pr, const char *key, double def, double *out, char *err, size_t errn)
{
    const char *v = ycsb_props_get(pr, key);
    *out = def;
    if (!v)
        return 0;
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= 0) || x > 1e6) {
        snprintf(err, errn, "property %s: '%s' is not a non-negative number", key, v);
        return -1;
    }
    *out = x;
    return 0;
}

int
ycsb_params_from(ycsb_params *p, const ycsb_props *pr, char *err, size_t errn)
{
    uint64_t zp;
    memset(p, 0, sizeof(*p));
    /* YCSB CoreWorkload defaults, except operationcount (YCSB requires it; 100000 here). */
    static const double defs[YOP_N] = {0.95, 0.05, 0, 0, 0};
    if (get_u64(pr, "recordcount", 100000, &p->recordcount, err, errn) ||
        get_u64(pr, "operationcount", 100000, &p->operationcount, err, errn) ||
        get_u64(pr, "fieldcount", 10, &p->fieldcount, err, errn) ||
        get_u64(pr, "fieldlength", 100, &p->fieldlength, err, errn) ||
        get_u64(pr, "maxscanlength", 1000, &p->maxscanlength, err, errn) ||
        get_u64(pr, "zeropadding", 1, &zp, err, errn) ||
        get_dbl(pr, "zipfianconstant", 0.99, &p->zipf_theta, err, errn))
        return -1;
    for (int i = 0; i < YOP_N; i++)
        if (get_dbl(pr, PROP_NAMES[i], defs[i], &p->prop[i], err, errn))
            return -1;
    double sum = 0;
    for (int i = 0; i < YOP_N; i++)
        sum += p->prop[i];
    if (!(sum > 0)) {
        snprintf(err, errn, "all operation proportions are 0");
        return -1;
    }
    if (p->recordcount == 0) {
        snprintf(err, errn, "recordcount must be >= 1");
        return -1;
    }
    uint64_t vs = p->fieldcount * p->fieldlength;
    if (p->fieldcount == 0 || p->fieldlength == 0 || p->fieldcount > 1000000 || vs > 16777215) {
        snprintf(err, errn, "fieldcount x fieldlength must be 1..16777215 bytes");
        return -1;
    }
    if (p->maxscanlength == 0)
        p->maxscanlength = 1;
    p->zeropadding = zp > 20 ? 20 : (unsigned)zp;
    const char *d = ycsb_props_get(pr, "requestdistribution");
    if (!d || strcmp(d, "uniform") == 0)
        p->dist = YD_UNIFORM;
    else if (strcmp(d, "zipfian") == 0)
        p->dist = YD_ZIPFIAN;
    else if (strcmp(d, "latest") == 0)
        p->dist = YD_LATEST;
    else {
        snprintf(err, errn, "requestdistribution '%s' not supported (uniform, zipfian, latest)", d);
        return -1;
    }
    const char *io = ycsb_props_get(pr, "insertorder");
    p->hashed = !io || strcmp(io, "ordered") != 0;
    const char *sd = ycsb_props_get(pr, "scanlengthdistribution");
    if (sd && strcmp(sd, "uniform") != 0) {
        snprintf(err, errn, "scanlengthdistribution '%s' not supported (uniform)", sd);
        return -1;
    }
    if (p->dist == YD_ZIPFIAN && !(p->zipf_theta > 0)) {
        snprintf(err, errn, "zipfianconstant must be > 0 (use requestdistribution=uniform)");
        return -1;
    }
    return 0;
}

/* ---- keys ----------------------------------------------------------------------------------- */

/* YCSB Utils.fnvhash64: FNV-1a over the 8 low-first bytes, then Math.abs. */
static uint64_t
ycsb_hash(uint64_t x)
{
    uint64_t h = wl_fnv1a64(x);
    if ((int64_t)h < 0)
        h = (uint64_t)0 - h;
    return h;
}

size_t
ycsb_key(const ycsb_params *p, uint64_t i, char *out)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%" PRIu64, p->hashed ? ycsb_hash(i) : i);
    size_t off = 0;
    memcpy(out, "user", 4);
    off = 4;
    for (int f = n; f < (int)p->zeropadding; f++)
        out[off++] = '0';
    memcpy(out + off, num, (size_t)n);
    off += (size_t)n;
    out[off] = 0;
    return off;
}

/* ---- zipfian -------------------------------------------------------------------------------- */

void
ycsb_zipf_init(ycsb_zipf *z, uint64_t n, double theta)
{
    memset(z, 0, sizeof(*z));
    if (fabs(theta - 1.0) < 1e-6) /* Gray's formula divides by 1 - theta */
        theta = 1.0 - 1e-6;
    z->theta = theta;
    z->alpha = 1.0 / (1.0 - theta);
    z->zeta2 = 1.0 + pow(0.5, theta);
    z->n = n ? n : 1;
    z->zetan = zipf_zeta_range(0, z->n, theta);
    zipf_set_eta(z);
}

uint64_t
ycsb_zipf_next(ycsb_zipf *z, wl_gen *g, uint64_t n)
{
    if (n == 0)
        return 0;
    if (n > z->n) { /* ZipfianGenerator.nextLong: extend zeta incrementally */
        z->zetan += zipf_zeta_range(z->n, n, z->theta);
        z->n = n;
        zipf_set_eta(z);
    }
    double u = wl_unit(g);
    return zipf_rank(z, u, n);
}

/* ---- generator -------------------------------------------------------------------------- */

void
ycsb_gen_init(ycsb_gen *y, const ycsb_params *p, uint64_t seed)
{
    memset(y, 0, sizeof(*y));
    y->p = p;
    wl_init(&y->g, seed, 8, (size_t)(p->fieldcount * p->fieldlength),
            p->dist == YD_ZIPFIAN ? p->zipf_theta : 0);
    y->acked = y->next_insert = p->recordcount;
    /* CoreWorkload: expectednewkeys = operationcount * insertproportion * 2 (fudge). */
    uint64_t expected_new = (uint64_t)((double)p->operationcount * p->prop[YOP_INSERT] * 2.0);
    y->zipf_items = p->recordcount + expected_new + 1;
    if (p->dist == YD_LATEST)
        ycsb_zipf_init(&y->latest, p->recordcount, 0.99); /* YCSB: ZIPFIAN_CONSTANT */
}

ycsb_op
ycsb_next_op(ycsb_gen *y)
{
    const double *w = y->p->prop;
    double sum = 0;
    for (int i = 0; i < YOP_N; i++)
        sum += w[i];
    double v = wl_unit(&y->g);
    for (int i = 0; i < YOP_N; i++) {
        double pw = w[i] / sum;
        if (v < pw)
            return (ycsb_op)i;
        v -= pw;
    }
    for (int i = YOP_N - 1; i > 0; i--) /* rounding: the last type with weight */
        if (w[i] > 0)
            return (ycsb_op)i;
    return YOP_READ;
}

uint64_t
ycsb_next_key(ycsb_gen *y)
{
    uint64_t k;
    switch (y->p->dist) {
    case YD_LATEST:
        /* SkewedLatestGenerator: newest acknowledged record minus a zipfian offset. */
        return (y->acked - 1) - ycsb_zipf_next(&y->latest, &y->g, y->acked);
    case YD_ZIPFIAN:
        /* ScrambledZipfianGenerator(0, recordcount + expected inserts): hash of the rank,
         * redrawn while it names a record not inserted (acknowledged) yet. */
        do {
            k = ycsb_hash(wl_zipf_rank(&y->g)) % y->zipf_items; /* 10^10 items */
        } while (k >= y->acked);
        return k;
    case YD_UNIFORM:
    default:
        /* UniformLongGenerator over the loaded records (YCSB never picks new inserts). */
        return wl_below(&y->g, y->p->recordcount);
    }
}

uint64_t
ycsb_scan_len(ycsb_gen *y)
{
    return 1 + wl_below(&y->g, y->p->maxscanlength);
}

void
ycsb_ack(ycsb_gen *y)
{
    y->acked = y->next_insert;
}
