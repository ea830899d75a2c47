/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay.h -- `qmdb-bench replay`: replays a qmdb-trace file against the bench engines.
 * Owns: the replay subcommand entry point (called from driver/bench_main.c when argv[1] is
 * "replay"). See replay.c and docs/TRACE.md. Threads: the main thread of qmdb-bench (plus
 * the trace reader thread of trace_read.c).
 */
#ifndef BENCH_REPLAY_H
#define BENCH_REPLAY_H

/* argv[0] is "replay". Returns the process exit status. */
int replay_main(int argc, char **argv);

#endif /* BENCH_REPLAY_H */
