/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workload.c -- deterministic key/value derivation, PRNG and YCSB scrambled zipfian for
 * qmdb-bench. See workload.h for the model. Nothing here depends on any engine.
 */
#include "workload.h"

#include <math.h>
#include <string.h>

#define GOLDEN UINT64_C(0x9E3779B97F4A7C15)

uint64_t wl_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x *= UINT64_C(0x94D049BB133111EB);
    x ^= x >> 31;
    return x;
}

uint64_t wl_fnv1a64(uint64_t x)
{
    uint64_t h = UINT64_C(0xCBF29CE484222325);
    for (int i = 0; i < 8; i++) {
        h ^= (x >> (8 * i)) & 0xFF;
        h *= UINT64_C(1099511628211);
    }
    return h;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t wl_next(wl_gen *g)
{
    uint64_t *s = g->s;
    uint64_t r = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

uint64_t wl_below(wl_gen *g, uint64_t n)
{
    /* Lemire's multiply-shift; the bias is < n / 2^64 and the same for every engine. */
    return (uint64_t)(((unsigned __int128)wl_next(g) * n) >> 64);
}

double wl_unit(wl_gen *g) { return (double)(wl_next(g) >> 11) * 0x1.0p-53; }

static double zeta_term(uint64_t i, double theta) { return 1.0 / pow((double)i, theta); }

/* zeta(n, theta) = sum_{i=1..n} i^-theta: the first ZETA_EXACT terms summed, the tail by
 * Euler-Maclaurin (integral + endpoint + first derivative terms), which is accurate to far
 * below double rounding for n up to 1e10. */
#define ZETA_EXACT 1000000u
static double zeta(uint64_t n, double theta)
{
    uint64_t m = n < ZETA_EXACT ? n : ZETA_EXACT;
    double z = 0;
    for (uint64_t i = m; i >= 1; i--) /* smallest terms first */
        z += zeta_term(i, theta);
    if (n > m) {
        double a = (double)m, b = (double)n;
        double integral = fabs(theta - 1.0) < 1e-12 ? log(b / a)
                          : (pow(b, 1.0 - theta) - pow(a, 1.0 - theta)) / (1.0 - theta);
        double ends = (pow(b, -theta) - pow(a, -theta)) / 2.0;
        double d1 = -theta * (pow(b, -theta - 1.0) - pow(a, -theta - 1.0)) / 12.0;
        z += integral + ends + d1;
    }
    return z;
}

void wl_init(wl_gen *g, uint64_t master_seed, size_t key_size, size_t value_size, double theta)
{
    memset(g, 0, sizeof(*g));
    g->seed_key = wl_mix64(master_seed ^ UINT64_C(0x6B65797365656421));
    g->seed_val = wl_mix64(master_seed ^ UINT64_C(0x76616C7365656421));
    uint64_t x = wl_mix64(master_seed ^ UINT64_C(0x6F70737365656421));
    for (int i = 0; i < 4; i++) {
        x += GOLDEN;
        g->s[i] = wl_mix64(x);
    }
    g->key_size = key_size;
    g->value_size = value_size;
    /* Gray's formula divides by (1 - theta): nudge theta = 1 off the pole. */
    if (theta > 0 && fabs(theta - 1.0) < 1e-6)
        theta = 1.0 - 1e-6;
    g->zipf.theta = theta;
    if (theta > 0) {
        g->zipf.zeta2 = zeta_term(1, theta) + zeta_term(2, theta);
        g->zipf.alpha = 1.0 / (1.0 - theta);
        g->zipf.n = WL_ZIPF_ITEMS;
        g->zipf.zetan = zeta(WL_ZIPF_ITEMS, theta);
        g->zipf.eta = (1.0 - pow(2.0 / (double)WL_ZIPF_ITEMS, 1.0 - theta)) /
                      (1.0 - g->zipf.zeta2 / g->zipf.zetan);
    }
}

static void fill_words(uint64_t h0, uint8_t *out, size_t len)
{
    size_t off = 0;
    uint64_t w = 0;
    while (off < len) {
        uint64_t v = wl_mix64(h0 + GOLDEN * ++w);
        size_t n = len - off < 8 ? len - off : 8;
        for (size_t b = 0; b < n; b++)
            out[off + b] = (uint8_t)(v >> (8 * b));
        off += n;
    }
}

void wl_key(const wl_gen *g, uint64_t i, uint8_t *out)
{
    fill_words(wl_mix64(g->seed_key ^ wl_mix64(i)), out, g->key_size);
}

static uint64_t value_tag(const wl_gen *g, uint64_t i)
{
    return wl_mix64(g->seed_val ^ wl_mix64(i ^ UINT64_C(0x7461672121212121)));
}

void wl_value(const wl_gen *g, uint64_t i, uint64_t version, uint8_t *out)
{
    uint64_t h0 = wl_mix64(g->seed_val ^ wl_mix64(i) ^ wl_mix64(version * GOLDEN + 1));
    if (g->value_size >= 16) {
        uint64_t t = value_tag(g, i);
        for (int b = 0; b < 8; b++)
            out[b] = (uint8_t)(t >> (8 * b));
        fill_words(h0, out + 8, g->value_size - 8);
    } else {
        fill_words(h0, out, g->value_size);
    }
}

int wl_value_check(const wl_gen *g, uint64_t i, const uint8_t *val, size_t len)
{
    if (len != g->value_size)
        return 0;
    if (len < 16)
        return 1;
    uint64_t t = value_tag(g, i), got = 0;
    for (int b = 0; b < 8; b++)
        got |= (uint64_t)val[b] << (8 * b);
    return got == t;
}

/* YCSB ZipfianGenerator.nextLong over z->n items: rank 0 is the most popular. */
static uint64_t zipf_rank(wl_gen *g)
{
    wl_zipf *z = &g->zipf;
    double u = wl_unit(g);
    double uz = u * z->zetan;
    if (uz < 1.0)
        return 0;
    if (uz < 1.0 + pow(0.5, z->theta))
        return 1;
    double r = (double)z->n * pow(z->eta * u - z->eta + 1.0, z->alpha);
    if (!(r >= 0))
        r = 0;
    return r >= (double)z->n ? z->n - 1 : (uint64_t)r;
}

uint64_t wl_pick(wl_gen *g, uint64_t base, uint64_t n)
{
    if (g->zipf.theta <= 0)
        return base + wl_below(g, n);
    /* ScrambledZipfianGenerator: a rank over WL_ZIPF_ITEMS items, hashed (FNV-1a) onto the
     * live range, so the popular keys are spread over the key space and every key can be
     * drawn whatever the size of the live range. */
    return base + wl_fnv1a64(zipf_rank(g)) % n;
}
