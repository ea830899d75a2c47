/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rocksdb_tune.c -- the tuned RocksDB options and the memory-cap split (see rocksdb_tune.h).
 * A block cache of C/2 with the default two 64 MiB memtables was OOM-killed in a 512 MiB
 * cgroup at 38.4M of 50M entries (anonymous RSS 511 MiB): hence 3C/8 + C/8.
 * Thread: whichever thread opens the engine.
 * Owns: the option values, bench_rocksdb_cache_budget and the blob-file options.
 */
#include "rocksdb_tune.h"

size_t
bench_rocksdb_cache_budget(uint64_t mem_cap)
{
    return mem_cap ? (size_t)(mem_cap / 8 * 3) : ((size_t)1 << 30);
}

size_t
bench_rocksdb_memtable_budget(uint64_t mem_cap)
{
    return (size_t)(mem_cap / 8);
}

rocksdb_block_based_table_options_t *
bench_rocksdb_tune(rocksdb_options_t *opt, rocksdb_cache_t *cache, size_t memtable_bytes)
{
    rocksdb_block_based_table_options_t *bbt = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_size(bbt, 4096);
    rocksdb_block_based_options_set_filter_policy(bbt, rocksdb_filterpolicy_create_bloom_full(10));
    rocksdb_block_based_options_set_cache_index_and_filter_blocks(bbt, 1);
    rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(bbt, 1);
    rocksdb_block_based_options_set_block_cache(bbt, cache);
    rocksdb_options_set_block_based_table_factory(opt, bbt);
    rocksdb_options_set_compression(opt, rocksdb_no_compression);
    rocksdb_options_set_use_direct_reads(opt, 1);
    rocksdb_options_set_use_direct_io_for_flush_and_compaction(opt, 1);
    rocksdb_options_set_max_background_jobs(opt, 2);
    rocksdb_options_set_level_compaction_dynamic_level_bytes(opt, 1);
    if (memtable_bytes) {
        rocksdb_options_set_write_buffer_size(opt, memtable_bytes / 2);
        rocksdb_options_set_max_write_buffer_number(opt, 2);
        rocksdb_options_set_db_write_buffer_size(opt, memtable_bytes);
    }
    return bbt;
}

void
bench_rocksdb_blob(rocksdb_options_t *opt, rocksdb_cache_t *cache)
{
    rocksdb_options_set_enable_blob_files(opt, 1);
    rocksdb_options_set_min_blob_size(opt, BENCH_ROCKSDB_MIN_BLOB);
    rocksdb_options_set_blob_file_size(opt, (uint64_t)256 << 20);
    rocksdb_options_set_blob_compression_type(opt, rocksdb_no_compression);
    rocksdb_options_set_enable_blob_gc(opt, 1);
    rocksdb_options_set_blob_gc_age_cutoff(opt, 0.25);
    rocksdb_options_set_blob_gc_force_threshold(opt, 1.0);
    rocksdb_options_set_blob_file_starting_level(opt, 0);
    if (cache)
        rocksdb_options_set_blob_cache(opt, cache);
}
