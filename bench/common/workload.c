/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workload.c -- deterministic key/value derivation, generator seeding and the scrambled
 * zipfian key pick of qmdb-bench. See workload.h for the model. Nothing here depends on any
 * engine. Threads: the thread that owns the wl_gen (the main thread).
 */
#include "workload.h"

#include <math.h>
#include <string.h>

#define GOLDEN RNG_GOLDEN

uint64_t
wl_fnv1a64(uint64_t x)
{
    uint64_t h = UINT64_C(0xCBF29CE484222325);
    for (int i = 0; i < 8; i++) {
        h ^= (x >> (8 * i)) & 0xFF;
        h *= UINT64_C(1099511628211);
    }
    return h;
}

void
wl_init(wl_gen *g, uint64_t master_seed, size_t key_size, size_t value_size, double theta)
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
        g->zipf.zeta2 = 1.0 / pow(1.0, theta) + 1.0 / pow(2.0, theta);
        g->zipf.alpha = 1.0 / (1.0 - theta);
        g->zipf.n = WL_ZIPF_ITEMS;
        g->zipf.zetan = zipf_zeta_large(WL_ZIPF_ITEMS, theta);
        zipf_set_eta(&g->zipf);
    }
}

static void
fill_words(uint64_t h0, uint8_t *out, size_t len)
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

void
wl_key(const wl_gen *g, uint64_t i, uint8_t *out)
{
    fill_words(wl_mix64(g->seed_key ^ wl_mix64(i)), out, g->key_size);
}

static uint64_t
value_tag(const wl_gen *g, uint64_t i)
{
    return wl_mix64(g->seed_val ^ wl_mix64(i ^ UINT64_C(0x7461672121212121)));
}

void
wl_value(const wl_gen *g, uint64_t i, uint64_t version, uint8_t *out)
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

int
wl_value_check(const wl_gen *g, uint64_t i, const uint8_t *val, size_t len)
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

uint64_t
wl_zipf_rank(wl_gen *g)
{
    double u = wl_unit(g);
    return zipf_rank(&g->zipf, u, g->zipf.n);
}

uint64_t
wl_pick(wl_gen *g, uint64_t base, uint64_t n)
{
    if (g->zipf.theta <= 0)
        return base + wl_below(g, n);
    /* ScrambledZipfianGenerator: a rank over WL_ZIPF_ITEMS items, hashed (FNV-1a) onto the
     * live range, so the popular keys are spread over the key space and every key can be
     * drawn whatever the size of the live range. */
    return base + wl_fnv1a64(wl_zipf_rank(g)) % n;
}
