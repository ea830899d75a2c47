/* SPDX-License-Identifier: Apache-2.0 */
/*
 * calibrate.h -- machine calibration for qmdb-bench (BENCHMARKS.md rule 8).
 *
 * Owns: the calibration measurements recorded with every run: 1 MiB sequential write
 * (O_DIRECT, fdatasync at the end), random 4 KiB read IOPS at QD1 (pread) and QD32
 * (io_uring) on a temp file of at least 256 MiB under the DB directory, and SHA-256 MB/s via
 * OpenSSL.
 * Threads: the main thread of qmdb-bench, before the engines run.
 */
#ifndef BENCH_CALIBRATE_H
#define BENCH_CALIBRATE_H

#include <stdint.h>

typedef struct calib {
    int done;
    int direct; /* O_DIRECT was used */
    uint64_t file_bytes;
    double seq_write_mbps; /* MiB/s, 1 MiB writes + fdatasync */
    double qd1_iops, qd1_p50_us, qd1_p99_us;
    double qd32_iops;
    int qd32_uring;     /* 1 = io_uring available and used */
    double sha256_mbps; /* MiB/s on 1 MiB buffers */
    char note[256];
} calib;

/* Runs the calibration in dir; secs is the time given to each read test. Returns 0 or -1
 * (note says why; partial results are kept). */
int calibrate_run(calib *c, const char *dir, uint64_t file_mib, double secs);

#endif /* BENCH_CALIBRATE_H */
