/* SPDX-License-Identifier: Apache-2.0 */
/*
 * registry.h -- the engine registry and the process-wide state of qmdb-bench.
 *
 * Owns: engine_lookup (engine name -> adapter vtable), the engine-list parser shared by the
 * main run, `ycsb` and `replay`, and the three globals every runner reads: the stop flag set
 * by the signal handlers, the diskstats name of the --db-dir device and the memory cap.
 * The driver (driver/), `ycsb` (ycsb/) and `replay` (trace/) depend on this registry; it
 * depends only on the engine adapters (engines/), never on them.
 * Threads: the main thread of qmdb-bench; bench_stop is also written by signal handlers.
 */
#ifndef BENCH_REGISTRY_H
#define BENCH_REGISTRY_H

#include "engine.h"
#include "memcap.h"

#include <signal.h>

#define BENCH_MAX_ENGINES 8

/* Fills e for the named engine. Returns 0, -1 if the name is unknown, -2 if the engine is
 * known but not available in this build (message in e->err). */
int engine_lookup(const char *name, bench_engine *e);

/* Parses "a,b,c" into engine names: each name must be known, appear once, and fit
 * BENCH_MAX_ENGINES. who prefixes errors. 0, or -1 with a message on stderr. */
int bench_parse_engine_list(const char *list, char (*names)[32], int *n, const char *who);

/* Whether the engine is a qmdb variant (qmdb, qmdb-seq, qmdb-hybrid): they are not each other's
 * rivals. */
int bench_is_qmdb(const char *name);

/* The scoring rule of every comparison (docs/BENCH.md): the fastest rival of engine s in one
 * cell is the other engine with the highest rate there, not counting qmdb variants when any
 * ran. rates[i] <= 0: engine i has no figure in the cell. Returns its index, or -1. */
int bench_fastest_rival(const char *const *names, const double *rates, int n, int s);

extern volatile sig_atomic_t bench_stop;
extern char bench_disk[64]; /* diskstats name of the device holding --db-dir */
extern memcap bench_memcap;

#endif /* BENCH_REGISTRY_H */
