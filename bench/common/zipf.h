/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zipf.h -- YCSB's ZipfianGenerator (Gray et al., "Quickly generating billion-record
 * synthetic databases"), shared by the main run's skewed keys (workload.c) and the YCSB
 * request distributions (ycsb/ycsb_wl.c).
 * Owns: the zipfian constants, zeta(n, theta) (exact sums and the Euler-Maclaurin tail for
 * 10^10 items), eta, and the rank draw. The caller supplies the uniform number, so the
 * PRNG stays the caller's. Threads: any; a zipf_gen belongs to one thread.
 */
#ifndef BENCH_ZIPF_H
#define BENCH_ZIPF_H

#include <stdint.h>

typedef struct zipf_gen {
    double theta; /* 0 = uniform (workload.c) */
    uint64_t n;   /* items zetan and eta were computed for */
    double zetan; /* zeta(n, theta) */
    double zeta2; /* zeta(2, theta) */
    double alpha; /* 1 / (1 - theta) */
    double eta;
} zipf_gen;

/* sum_{i=from+1..to} i^-theta, smallest terms first. */
double zipf_zeta_range(uint64_t from, uint64_t to, double theta);
/* zeta(n, theta): the first 10^6 terms summed, the tail by Euler-Maclaurin (accurate far
 * below double rounding for n up to 1e10). */
double zipf_zeta_large(uint64_t n, double theta);
/* Sets z->eta from z->n, z->theta, z->zeta2 and z->zetan. */
void zipf_set_eta(zipf_gen *z);
/* ZipfianGenerator.nextLong over n items for the uniform u in [0, 1): rank 0 is the most
 * popular. n > 0; z's constants must have been computed for n items. */
uint64_t zipf_rank(const zipf_gen *z, double u, uint64_t n);

#endif /* BENCH_ZIPF_H */
