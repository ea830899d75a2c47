/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpt.h -- the MPT-on-RocksDB baseline of qmdb-bench: an Ethereum-style Merkle Patricia
 * trie whose nodes live in RocksDB, one state root per block. Written here as a baseline
 * ("the authenticated status quo"); it is not go-ethereum's code and differs from it:
 *  - paths are SHA-256(key) (Ethereum's secure trie uses keccak-256), 64 nibbles;
 *  - nodes use the compact binary encoding below, not RLP; node hash = SHA-256(encoding);
 *  - no inlining of small nodes: every node is its own RocksDB entry;
 *  - nodes are keyed by their nibble path (like geth's path-based state scheme): a commit
 *    overwrites the nodes whose paths changed and deletes the ones whose paths vanished, so
 *    only the latest trie is stored (no archive, no garbage collection);
 *  - a flat key -> value table serves reads with one RocksDB get (like geth's snapshot).
 *
 * Node encoding (nibble paths are packed two per byte, high nibble first, an odd path padded
 * with a zero low nibble; lengths are in nibbles):
 *   leaf:      0x00, plen (0..64), packed path, varint(vlen) (LEB128), value
 *   extension: 0x01, plen (1..63), packed path, child hash (32)
 *   branch:    0x02, bitmap (2 bytes little endian, bit i = child i present),
 *              the present children's hashes in nibble order (32 each), varint(vlen), value.
 *              The branch value slot is always empty (vlen 0): every path has 64 nibbles,
 *              so no key ends at a branch (as in Ethereum's secure trie).
 * The root of the empty trie is SHA-256 of the empty string. Node hash = SHA-256(encoding);
 * parents hold their children's hashes, so the root is the same function of the key/value
 * set as with hash-keyed storage.
 *
 * RocksDB keys (one column family):
 *   'n', nibble count (0..64), packed nibbles of the node's path from the root -> encoding
 *        (the root node is under "n\0");
 *   'f', SHA-256(key) (32 bytes) -> value: the flat table of live keys;
 *   "\0mpt/meta" (9 bytes) -> root set flag (1), root (32), height (8 LE), leaf count (8 LE).
 * All of a block's changes (nodes, node deletions, flat entries, metadata) go in one
 * WriteBatch.
 *
 * Threading: an mpt handle is used by one thread at a time (the bench driver's thread);
 * RocksDB's own background threads flush and compact.
 * Owns: the mpt handle API (open, put/del/get, commit, scan) and the on-disk format above.
 */
#ifndef BENCH_MPT_H
#define BENCH_MPT_H

#include <stddef.h>
#include <stdint.h>

#define MPT_LEAF 0
#define MPT_EXT 1
#define MPT_BRANCH 2

typedef struct mpt mpt;

typedef struct mpt_opts {
    int durable;              /* 1 = sync=1 on every commit's WriteBatch (D1), 0 = D0 */
    size_t node_cache_bytes;  /* clean-node LRU cache budget (0 = keep only one node) */
    size_t block_cache_bytes; /* RocksDB block cache */
    size_t memtable_bytes;    /* bound on RocksDB's memtables (0 = RocksDB's defaults) */
} mpt_opts;

typedef struct mpt_stats {
    uint64_t count;            /* live leaves (keys) */
    uint64_t height;           /* last committed height */
    uint64_t node_cache_bytes; /* charged bytes in the clean-node cache */
    uint64_t node_cache_entries;
    uint64_t cache_hits, db_reads;         /* node loads served by the cache / by RocksDB */
    uint64_t gets;                         /* mpt_get / mpt_get_path calls */
    uint64_t flat_reads;                   /* RocksDB gets in the flat table (gets, dels) */
    uint64_t nodes_written, bytes_written; /* node puts into WriteBatches, and their bytes */
    uint64_t nodes_deleted;                /* node deletes (vanished paths) */
    uint64_t dirty_nodes;                  /* in-memory nodes not yet committed */
} mpt_stats;

/* Opens (creating if missing) the trie in RocksDB directory dir. On error returns -1 with a
 * message in err and *out = NULL. */
int mpt_open(mpt **out, const char *dir, const mpt_opts *o, char *err, size_t errlen);
void mpt_close(mpt *t); /* drops uncommitted changes */
const char *mpt_error(const mpt *t);

/* The path of a key: SHA-256(key). */
void mpt_key_path(const void *k, size_t kl, uint8_t path[32]);

/* Key-level calls hash the key; the _path calls take the 32-byte path directly. */
int mpt_put(mpt *t, const void *k, size_t kl, const void *v, size_t vl);
int mpt_del(mpt *t, const void *k, size_t kl); /* 0, 1 = absent */
int mpt_get(mpt *t, const void *k, size_t kl, void *buf, size_t cap, size_t *vlen); /* 0/1 */
int mpt_put_path(mpt *t, const uint8_t path[32], const void *v, size_t vl);
int mpt_del_path(mpt *t, const uint8_t path[32]);
/* Reads the current state (committed state plus this block's uncommitted changes) from the
 * flat table: this block's overlay, else one RocksDB get; no trie walk. Copies up to cap
 * bytes into buf and sets *vlen to the full length. */
int mpt_get_path(mpt *t, const uint8_t path[32], void *buf, size_t cap, size_t *vlen);

/* Hashes the dirty nodes bottom-up, writes them under their paths, deletes the nodes whose
 * paths vanished, applies the block's flat-table changes and writes the metadata, all in
 * one WriteBatch, and returns the new root. */
int mpt_commit(mpt *t, uint64_t height, uint8_t root[32]);
void mpt_root(const mpt *t, uint8_t root[32]); /* root of the last commit */
void mpt_get_stats(const mpt *t, mpt_stats *s);
/* RocksDB integer property (e.g. "rocksdb.cur-size-all-mem-tables"), 0 if unknown. */
uint64_t mpt_db_property(mpt *t, const char *name);
uint64_t mpt_block_cache_usage(const mpt *t);
/* Test hook: calls cb for every stored RocksDB entry whose key starts with the byte prefix
 * ('n' nodes, 'f' flat table), in key order, with the key minus its prefix byte. Stops at
 * the first non-zero return of cb and returns it; 0 when done, -1 on a RocksDB error. */
int mpt_scan(mpt *t, char prefix,
             int (*cb)(void *ctx, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl),
             void *ctx);

#endif /* BENCH_MPT_H */
