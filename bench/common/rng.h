/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rng.h -- the PRNG of qmdb-bench and qmdb-trace: xoshiro256** over a caller-owned state of
 * four words, its [0, 1) double, and the 64-bit finalizers used for seeding and hashing.
 * Owns: nothing (pure inline functions). Threads: any; a state belongs to one thread.
 */
#ifndef BENCH_RNG_H
#define BENCH_RNG_H

#include <stdint.h>

#define RNG_GOLDEN UINT64_C(0x9E3779B97F4A7C15)

/* 64-bit finalizer (splitmix64 / murmur3 fmix style), without the golden-ratio step. */
static inline uint64_t
rng_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x *= UINT64_C(0x94D049BB133111EB);
    x ^= x >> 31;
    return x;
}

/* splitmix64's output function: the golden-ratio increment, then rng_mix64. */
static inline uint64_t
rng_splitmix64(uint64_t x)
{
    return rng_mix64(x + RNG_GOLDEN);
}

static inline uint64_t
rng_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* Next output of xoshiro256** (s: four words, not all zero). */
static inline uint64_t
rng_next(uint64_t s[4])
{
    uint64_t r = rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rng_rotl(s[3], 45);
    return r;
}

/* Uniform in [0, 1) from the top 53 bits. */
static inline double
rng_unit(uint64_t s[4])
{
    return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

#endif /* BENCH_RNG_H */
