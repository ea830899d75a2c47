/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workload.h -- the deterministic workload generator shared by every engine in qmdb-bench.
 *
 * Owns: key and value derivation (key i -> key bytes from a hash of (seed, i); value from
 * (seed, i, version)), the operation-choice PRNG state (xoshiro256**, rng.h), the YCSB
 * scrambled zipfian distribution (zipf.h ranks, FNV-1a scrambling) and the live-key model.
 * Threads: a wl_gen belongs to the thread running the engine (the main thread).
 *
 * Live-key model: key indices [lo, hi) are live. Creates append at hi, deletes remove the
 * oldest at lo. So the live set is always a contiguous index range, any member can be drawn
 * in O(1), and the keys themselves still look random because key bytes are a hash of i.
 * Every engine is fed from a fresh generator with the same seed, so they all see the same
 * keys, values and operations in the same order.
 */
#ifndef BENCH_WORKLOAD_H
#define BENCH_WORKLOAD_H

#include "rng.h"
#include "zipf.h"

#include <stddef.h>
#include <stdint.h>

/* Key indices of keys that are never created (read-miss phase) have this bit set. */
#define WL_ABSENT_BIT (UINT64_C(1) << 63)

/* YCSB's ScrambledZipfianGenerator draws ranks over this many items, then hashes them. */
#define WL_ZIPF_ITEMS UINT64_C(10000000000)

/* theta 0 = uniform; else n = WL_ZIPF_ITEMS. */
typedef zipf_gen wl_zipf;

typedef struct wl_gen {
    uint64_t seed_key; /* derived from --seed and the randsrc file */
    uint64_t seed_val;
    uint64_t s[4]; /* xoshiro256** state for operation choice */
    size_t key_size;
    size_t value_size;
    uint64_t lo, hi;  /* live key indices are [lo, hi) */
    uint64_t version; /* bumps once per written value; feeds value derivation */
    wl_zipf zipf;
} wl_gen;

/* 64-bit finalizer (splitmix64 / murmur3 fmix style; rng.h). */
static inline uint64_t
wl_mix64(uint64_t x)
{
    return rng_mix64(x);
}
/* FNV-1a over the 8 little-endian bytes of x (YCSB's fnvhash64). */
uint64_t wl_fnv1a64(uint64_t x);

/* Initialise a generator. master_seed combines --seed and the randsrc digest. */
void wl_init(wl_gen *g, uint64_t master_seed, size_t key_size, size_t value_size, double theta);

/* Next raw 64-bit random number (xoshiro256**). */
static inline uint64_t
wl_next(wl_gen *g)
{
    return rng_next(g->s);
}
/* Uniform in [0, n), n > 0 (Lemire's multiply-shift; the bias is < n / 2^64 and the same
 * for every engine). */
static inline uint64_t
wl_below(wl_gen *g, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)wl_next(g) * n) >> 64);
}
/* Uniform in [0, 1). */
static inline double
wl_unit(wl_gen *g)
{
    return rng_unit(g->s);
}

/* Writes the key bytes of key index i into out (key_size bytes). */
void wl_key(const wl_gen *g, uint64_t i, uint8_t *out);
/* Writes the value of key index i at `version` into out (value_size bytes). For values of at
 * least 16 bytes the first 8 bytes are a check tag of i (see wl_value_check). */
void wl_value(const wl_gen *g, uint64_t i, uint64_t version, uint8_t *out);
/* Returns 1 if val (len bytes) is a plausible value for key index i, 0 otherwise. */
int wl_value_check(const wl_gen *g, uint64_t i, const uint8_t *val, size_t len);

/* A zipfian rank over g->zipf.n (WL_ZIPF_ITEMS) items from g's PRNG; theta > 0. */
uint64_t wl_zipf_rank(wl_gen *g);

/* Picks a key index in [base, base + n) with the configured distribution (uniform, or
 * YCSB scrambled zipfian when theta > 0). n > 0. */
uint64_t wl_pick(wl_gen *g, uint64_t base, uint64_t n);

/* Number of live keys. */
static inline uint64_t
wl_live(const wl_gen *g)
{
    return g->hi - g->lo;
}

#endif /* BENCH_WORKLOAD_H */
