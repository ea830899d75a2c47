/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ycsb.h -- `qmdb-bench ycsb`: YCSB core workloads A-F against the bench engines.
 *
 * Owns: the ycsb subcommand entry point (called from bench_main.c when argv[1] is "ycsb").
 * See ycsb.c for the run method and docs/BENCH.md ("YCSB") for flags and output.
 * Threads: the main thread of qmdb-bench.
 */
#ifndef BENCH_YCSB_H
#define BENCH_YCSB_H

/* argv[0] is "ycsb". Returns the process exit status (0 ok, 1 failure, 2 bad flags). */
int ycsb_main(int argc, char **argv);

#endif /* BENCH_YCSB_H */
