/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.h -- the small adapter interface every engine in qmdb-bench implements.
 *
 * Owns: the bench_engine vtable (engines/ implements it; common/registry.c maps names to
 * engines). Threads: an engine handle is driven by one thread (the main thread), except
 * reader_open/reader_get/reader_close, which reader threads call concurrently
 * (--reader-threads). One block of
 * writes is begin_block, then any number of tx/put/del, then commit_block (which must be durable at
 * tier D1). get reads the latest committed state (inside a block an engine may also see
 * the block's own uncommitted writes; the driver never reads a key the current block
 * writes). Return values: 0 on success, 1 from get when the key is absent, negative on
 * error with a message in the engine's err buffer.
 */
#ifndef BENCH_ENGINE_H
#define BENCH_ENGINE_H

#include <stddef.h>
#include <stdint.h>

typedef struct bench_engine_cfg {
    int durable;          /* 1 = D1 (fsync per block), 0 = D0 */
    uint64_t mem_cap;     /* bytes, 0 = uncapped */
    uint64_t entry_count; /* to size LMDB's map */
    size_t key_size, value_size;
    int tuned; /* rocksdb: 1 = tuned per BENCHMARKS.md rule 5, 0 = defaults */
    int blob;  /* rocksdb: 1 = tuned + integrated blob files (engine rocksdb-blob) */
    /* qmdb create-time options for ablations; 0 = qmdb's default. */
    uint64_t qmdb_compact_thres;
    uint32_t qmdb_util_ratio, qmdb_util_div;
    uint64_t qmdb_history_blocks;
    uint64_t qmdb_segment_bytes; /* entry_segment_bytes */
    int qmdb_pipeline;           /* 1 = qmdb_submit, block N durable during block N+1 */
    int qmdb_direct_io;          /* 1 = QMDB_OPEN_DIRECT_IO (batched reads bypass the cache) */
    int qmdb_hybrid;             /* 1 = the hybrid indexer (engine qmdb-hybrid) */
    int fast_open;               /* qmdb: QMDB_OPEN_FAST (the --reopen measurement) */
} bench_engine_cfg;

typedef struct bench_engine_stats {
    int has_dram; /* dram figures below are valid */
    uint64_t index_dram_bytes;
    uint64_t tree_dram_bytes; /* qmdb: twigs etc.; rocksdb: memtables; lmdb: 0 */
    uint64_t cache_bytes;     /* rocksdb block cache usage */
    uint64_t live_entries;    /* engine's own count, 0 if unknown */
    uint64_t compactions;
    uint64_t hash_compressions; /* qmdb: SHA-256 compressions by commits since open */
    uint64_t batched_reads;     /* qmdb: entry reads by the prefetcher and get_many */
    uint64_t index_page_reads;  /* qmdb-hybrid: run pages read by index lookups */
    /* background work, cumulative since open (the driver reports per-phase deltas) */
    uint64_t pruned_twigs;     /* qmdb: twigs pruned */
    uint64_t index_merges;     /* qmdb-hybrid: overlay merges installed */
    uint64_t compaction_bytes; /* rocksdb: bytes written by flushes and compactions */
    char note[320];            /* engine-specific extra text for the MEM line */
} bench_engine_stats;

typedef struct bench_engine bench_engine;

struct bench_engine {
    const char *name;
    void *h; /* engine private state */
    char err[512];
    int (*open)(bench_engine *e, const char *dir, const bench_engine_cfg *cfg);
    int (*begin_block)(bench_engine *e, uint64_t height);
    int (*tx)(bench_engine *e); /* start next transaction (qmdb only; others no-op) */
    int (*put)(bench_engine *e, const void *k, size_t kl, const void *v, size_t vl);
    int (*del)(bench_engine *e, const void *k, size_t kl);
    int (*commit_block)(bench_engine *e);
    int (*get)(bench_engine *e, const void *k, size_t kl, void *buf, size_t cap, size_t *vlen);
    int (*stats)(bench_engine *e, bench_engine_stats *st);
    /* Writes a one-line summary for the record (qmdb: height and state root). */
    void (*describe)(bench_engine *e, char *buf, size_t n);
    int (*close)(bench_engine *e);
    /* Optional (NULL = the engine cannot scan in key order, e.g. qmdb is hash-ordered):
     * visits up to `count` records in key order starting at the first key >= k, touching
     * each value, and sets *got to the number visited. Reads the committed state (LMDB:
     * the open write txn inside a block). 0 on success, negative on error. */
    int (*scan)(bench_engine *e, const void *k, size_t kl, size_t count, size_t *got);
    /* Optional (NULL = the driver calls get n times): the engine's batch read. Key i is at
     * keys + i*kl; its value goes to vals + i*vcap with its length in vlens[i]; rcs[i] is 0
     * (found) or 1 (absent). Reads the same state get would. 0 or negative on error. */
    int (*get_many)(bench_engine *e, size_t n, const uint8_t *keys, size_t kl, uint8_t *vals,
                    size_t vcap, size_t *vlens, int *rcs);
    /* Optional: waits until every committed block is durable (engines whose commit_block
     * returns before the block's fsync, i.e. qmdb's pipeline). */
    int (*sync)(bench_engine *e);
    /* Optional (NULL = no readers beside the writer, --reader-threads skips the engine): a
     * get that other threads may call while the driver's thread writes and commits blocks.
     * It reads a committed state (qmdb: the latest durable block; RocksDB: the latest
     * write; LMDB: a read txn renewed every few gets). reader_open makes one reader
     * thread's state (*rd, may stay NULL) and reader_close frees it; each is called on the
     * reader's own thread. Return values as get. */
    int (*reader_open)(bench_engine *e, void **rd);
    int (*reader_get)(bench_engine *e, void *rd, const void *k, size_t kl, void *buf, size_t cap,
                      size_t *vlen);
    void (*reader_close)(bench_engine *e, void *rd);
};

#endif /* BENCH_ENGINE_H */
