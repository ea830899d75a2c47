/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rocksdb_tune.h -- the tuned RocksDB options (BENCHMARKS.md rule 5), shared by the tuned
 * rocksdb engine (eng_rocksdb.c) and the MPT baseline (mpt.c), and the split of a memory
 * cap between their block cache and memtables.
 * Thread: whichever thread opens the engine.
 * Owns: the declarations of the tuned options, the blob-file options and the cache split.
 */
#ifndef BENCH_ROCKSDB_TUNE_H
#define BENCH_ROCKSDB_TUNE_H

#include <rocksdb/c.h>
#include <stddef.h>
#include <stdint.h>

/* How a tuned engine spends --mem-cap C (0 = uncapped): its caches (RocksDB's block cache,
 * plus MPT's node cache) get 3C/8 (1 GiB uncapped) and its memtables at most C/8 (0 =
 * RocksDB's defaults, uncapped); the rest is left to malloc overhead, pinned L0 index and
 * filter blocks and compaction buffers, so that the process stays inside the cap. */
size_t bench_rocksdb_cache_budget(uint64_t mem_cap);
size_t bench_rocksdb_memtable_budget(uint64_t mem_cap);

/* Applies the tuned options to opt: full bloom filter 10 bits/key, index and filter blocks in
 * `cache` (L0 ones pinned), 4 KiB blocks, no compression, direct reads and direct I/O for
 * flush and compaction, max_background_jobs = 2, dynamic level bytes; with memtable_bytes >
 * 0, two memtables of memtable_bytes / 2 and db_write_buffer_size = memtable_bytes. Returns
 * the table options, which the caller destroys after rocksdb_close. */
rocksdb_block_based_table_options_t *
bench_rocksdb_tune(rocksdb_options_t *opt, rocksdb_cache_t *cache, size_t memtable_bytes);

/* Integrated blob files (key-value separation) as RocksDB's BlobDB documentation describes
 * for large values, on top of the tuned options: enable_blob_files, values of at least
 * BENCH_ROCKSDB_MIN_BLOB bytes go to blob files (smaller ones stay in the LSM tree), 256 MiB
 * blob files, no blob compression (random data), blob garbage collection on with age cutoff
 * 0.25 and force threshold 1.0, blob files from level 0 on (written by flushes), and blobs
 * cached in `cache` (the tuned block cache: the same memory budget). */
#define BENCH_ROCKSDB_MIN_BLOB 1024
void bench_rocksdb_blob(rocksdb_options_t *opt, rocksdb_cache_t *cache);

#endif
