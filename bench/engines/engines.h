/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engines.h -- constructors of the engine adapters of qmdb-bench (the bench_engine vtable
 * of common/engine.h): qmdb (eng_qmdb.c), RocksDB tuned, default or with blob files
 * (eng_rocksdb.c), LMDB (eng_lmdb.c) and the MPT-on-RocksDB baseline (eng_mpt.c, over mpt/). Owns:
 * nothing but the declarations; common/registry.c picks one by name. Threads: an adapter is driven
 * by the main thread of qmdb-bench.
 */
#ifndef BENCH_ENGINES_H
#define BENCH_ENGINES_H

#include "engine.h"

void engine_qmdb_init(bench_engine *e);
/* mode: 0 = rocksdb-default, 1 = rocksdb (tuned), 2 = rocksdb-blob (tuned + blob files) */
void engine_rocksdb_init(bench_engine *e, int mode);
void engine_lmdb_init(bench_engine *e);
void engine_mpt_init(bench_engine *e);
int engine_qmdb_available(void);

#endif /* BENCH_ENGINES_H */
