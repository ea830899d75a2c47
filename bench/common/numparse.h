/* SPDX-License-Identifier: Apache-2.0 */
/*
 * numparse.h -- the command-line number parser of qmdb-bench (main run and `ycsb`).
 * Owns: decimal unsigned numbers with binary size suffixes. Threads: any (pure function).
 */
#ifndef BENCH_NUMPARSE_H
#define BENCH_NUMPARSE_H

#include <stdint.h>

/* Parses a decimal unsigned number with an optional K, M, G (and, if allow_tera, T) binary
 * suffix, optionally followed by i and/or B ("64M", "1GiB"). No sign, no trailing text, no
 * overflow. Returns 0, or -1 leaving *out unchanged. */
int bench_parse_u64(const char *s, uint64_t *out, int allow_tera);

#endif /* BENCH_NUMPARSE_H */
