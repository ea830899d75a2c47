/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prefetch.h -- the prefetch stage of a block and batched client reads (prefetch.c).
 * Thread: see prefetch.c.
 */
#ifndef QM_PREFETCH_H
#define QM_PREFETCH_H

#include "changeset.h"
#include "qm_internal.h"
#include "rio.h"
#include "shard.h"
#include "undo.h"

/* A growable list of read requests (reused across blocks: no per-operation allocation). */
typedef struct qm_reqs {
    qm_rreq *r;
    size_t n, cap;
    /* Entries already in the page cache are not read (prefetch.c, pf_queue) until the batch
     * meets one that is not: then memory is short (what is resident now may be evicted
     * before it is used), and the rest of the batch is read into DRAM, from the device or,
     * with O_DIRECT reads, from the page cache where the entry is still there (pf_cached). */
    bool no_probe;
} qm_reqs;

QM_HIDDEN int qm_reqs_reserve(qm_reqs *q, size_t n);
QM_HIDDEN void qm_reqs_free(qm_reqs *q);

/* One operation (prefetch stage) or key (batched reads) in the order they are looked up in
 * (prefetch.c). */
typedef struct qm_pf_op {
    u64 key;   /* the key hash's first 6 bytes, big-endian (the run pages' order) */
    u32 idx;   /* the operation's index in its shard's changeset, or the key's in the call */
    u32 shard; /* the operation's shard (prefetch stage) */
} qm_pf_op;

/* Hybrid indexer: the bytes of one batch of run pages, handed to the lookups that follow
 * (qm_hix_pages_use). */
typedef struct qm_pf_pages {
    u8 *data;      /* QM_IX_PAGE bytes per page */
    qm_hix_pg *pg; /* per page its key, or UINT64_MAX until it has arrived whole */
    size_t cap;
} qm_pf_pages;

/* The prefetch stage's scratch, reused across blocks: entry reads, index page reads and
 * their bytes, the operations in visiting order, and a mark per operation (its lookup waits
 * for the page batch). */
typedef struct qm_pf {
    qm_reqs ent, pg;
    qm_pf_pages pages;
    qm_pf_op *seq;
    void *tmp; /* scratch of the lookup order's sort (prefetch.c, mcap keys) */
    u8 *mark;
    size_t mcap;
} qm_pf;

QM_HIDDEN void qm_pf_free(qm_pf *pf);

/*
 * Sorts v[0, n) by key (48 bits; ties keep their order) for the hybrid indexer's lookup order:
 * a least-significant-digit radix sort in four passes of 12 bits; under 64 keys an insertion
 * sort. It replaced qsort, whose calls through a comparison function were 4.8% of the hybrid
 * indexer's update-phase samples (docs/BENCH.md, "The lookup order by radix sort").
 * scratch: QM_PF_SORT_SCRATCH(n) bytes (the counts live there, not on the caller's stack).
 */
#define QM_PF_SORT_BITS 12u
#define QM_PF_SORT_DIG (1u << QM_PF_SORT_BITS)
#define QM_PF_SORT_PASSES (48u / QM_PF_SORT_BITS)
#define QM_PF_SORT_SCRATCH(n) \
    ((n) * sizeof(qm_pf_op) + QM_PF_SORT_PASSES * QM_PF_SORT_DIG * sizeof(u32))
QM_HIDDEN void qm_pf_sort(qm_pf_op *v, size_t n, void *scratch);

/* Reads into the warm caches every entry the block's operations will read that is neither
 * cached nor in a write buffer. Positions come from the indexers before the block (with the
 * hybrid indexer, after one batch of the index pages not in DRAM). */
QM_HIDDEN int qm_prefetch_block(qm_shard *shards, qm_rio *rio, const qm_changeset *cs, qm_pf *pf);

/* qmdb_get_many over the shards (rio may be NULL: synchronous reads). With npre > 0, the
 * pre-image maps pre[0..npre) (per shard, oldest in-flight block first) answer for the keys
 * they hold: the durable state. for_block: the reads are those of the next block's
 * read-modify-writes, so absent keys also fetch their predecessor (the create needs it) and
 * the keys are marked for the prefetch stage. Returns 0 when every read has its own rc, or
 * an I/O or corruption error. */
QM_HIDDEN int qm_get_many(qm_shard *shards, qm_rio *rio, qmdb_read *rd, size_t n,
                          qm_undo *const pre[][QM_SHARD_COUNT], unsigned npre, bool for_block);
/* How many qm_get_many calls in this process were cut in two parts (tests). */
QM_HIDDEN u64 qm_get_many_splits(void);

#endif /* QM_PREFETCH_H */
