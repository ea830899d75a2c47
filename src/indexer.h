/* SPDX-License-Identifier: Apache-2.0 */
/*
 * indexer.h -- the in-memory indexer of one shard: key hash -> entry-file positions of the
 * live entries, as a multimap.
 *
 * Layout: the shard's 4096 units are selected by the first two key-hash bytes (the shard is
 * the top four bits of the first). Each unit is a sorted array of 10-byte records:
 *   OFFSET SIZE FIELD
 *   0      4    key-hash bytes [2..6) (in hash order, so memcmp sorts like the hash)
 *   4      6    entry-file position / 8 (big-endian; 2^51 bytes per shard)
 * Keys whose hashes share the first 6 bytes share a record key; callers read the entries
 * and compare full keys (or full key hashes, for predecessor lookups). Because every unit
 * holds its sentry (key hash = unit || 0...0), the predecessor of any key hash lies in its own
 * unit. DRAM: 10 bytes per live entry plus growth slack (at most 1/16) and a 16-byte unit
 * header.
 *
 * Thread: owned by the shard's writer; readers between blocks (single-threaded for now).
 */
#ifndef QM_INDEXER_H
#define QM_INDEXER_H

#include "qm_internal.h"

#define QM_INDEX_REC 10u
#define QM_INDEX_KEY 4u
#define QM_UNITS_PER_SHARD 4096u

typedef struct qm_index_unit {
    u8 *recs;
    u32 n, cap;
} qm_index_unit;

typedef struct qm_index {
    qm_index_unit units[QM_UNITS_PER_SHARD];
    u64 count;
    u64 bytes; /* allocated record bytes */
} qm_index;

QM_HIDDEN void qm_index_init(qm_index *x);
QM_HIDDEN void qm_index_free(qm_index *x);

/* Positions of every record whose first 6 key-hash bytes equal kh's. Writes up to cap of them
 * into out and returns the total count. */
QM_HIDDEN size_t qm_index_find(const qm_index *x, const u8 kh[32], u64 *out, size_t cap);

/* Candidates for the predecessor of kh (the largest indexed key hash below it): every record
 * with the largest 6-byte prefix below kh's, plus every record with kh's own prefix. Returns
 * the total count; writes up to cap positions. */
QM_HIDDEN size_t qm_index_pred_candidates(const qm_index *x, const u8 kh[32], u64 *out, size_t cap);

/* Asks the CPU to start loading the record where a lookup of kh will begin (a hint: no
 * effect on any answer), so that a caller looking up many keys can overlap their cache
 * misses: called a few keys ahead of the lookup. */
QM_HIDDEN void qm_index_prefetch(const qm_index *x, const u8 kh[32]);

QM_HIDDEN int qm_index_insert(qm_index *x, const u8 kh[32], u64 pos);
/* Removes the record (kh, pos). Returns QMDB_NOTFOUND if absent. */
QM_HIDDEN int qm_index_erase(qm_index *x, const u8 kh[32], u64 pos);
/* Changes the position of record (kh, old_pos) to new_pos (new_pos > old_pos). */
QM_HIDDEN int qm_index_replace(qm_index *x, const u8 kh[32], u64 old_pos, u64 new_pos);

/* Bulk load (recovery): add records in any order, then qm_index_bulk_finish sorts. */
QM_HIDDEN int qm_index_bulk_add(qm_index *x, const u8 kh[32], u64 pos);
QM_HIDDEN void qm_index_bulk_finish(qm_index *x);
/* Loading a checkpoint: the empty unit u (0..4095) gets the n records at recs, already in
 * record layout and sorted; one allocation of exactly n records. */
QM_HIDDEN int qm_index_load_unit(qm_index *x, unsigned u, const u8 *recs, u32 n);

/* The largest record key below kh's 6-byte prefix in kh's unit whose position dead() (may
 * be NULL) does not reject, as key-hash bytes [0..6). False if there is none. */
typedef bool (*qm_index_dead_fn)(const void *arg, u64 pos);
QM_HIDDEN bool qm_index_below(const qm_index *x, const u8 kh[32], qm_index_dead_fn dead,
                              const void *arg, u8 key6[6]);

/* Every record in key order (units in order; within a key, any order): fn(arg, key-hash
 * bytes [0..6), position); a nonzero return stops the walk and is returned. */
typedef int (*qm_index_fn)(void *arg, const u8 key6[6], u64 pos);
QM_HIDDEN int qm_index_foreach(const qm_index *x, unsigned shard, qm_index_fn fn, void *arg);

/* DRAM bytes held (records + unit headers). */
QM_HIDDEN u64 qm_index_dram_bytes(const qm_index *x);

#endif /* QM_INDEXER_H */
