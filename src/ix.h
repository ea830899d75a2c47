/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ix.h -- a shard's indexer, whichever kind the database was opened with: the in-memory
 * indexer (indexer.h) or the hybrid indexer (hindex.h). Both are the same multimap from key
 * hash to log positions, so roots never depend on the choice. Thin dispatch only.
 *
 * Thread: as the indexer in use (the shard's writer; readers under the reader lock).
 */
#ifndef QM_IX_H
#define QM_IX_H

#include "hindex.h"
#include "indexer.h"

#define QM_IX_PAGE QM_HIX_PAGE /* bytes of one index page read (qm_ix_page_of) */

typedef struct qm_ix {
    qm_index mem;   /* in use when hyb is NULL */
    qm_hindex *hyb; /* the hybrid indexer, or NULL */
} qm_ix;

/* Positions of the records sharing kh's 6-byte prefix (*n total, up to cap written). */
static inline int
qm_ix_find(qm_ix *x, const u8 kh[32], u64 *out, size_t cap, size_t *n)
{
    if (x->hyb)
        return qm_hix_find(x->hyb, kh, out, cap, n);
    *n = qm_index_find(&x->mem, kh, out, cap);
    return 0;
}

/* As qm_ix_find, for a client's point read (the hybrid's memo is for the block's reads; hint:
 * qm_hix_find_point's). */
static inline int
qm_ix_find_point(qm_ix *x, const u8 kh[32], u64 *out, size_t cap, size_t *n, qm_hix_hint_fn hint,
                 void *hint_arg)
{
    return x->hyb ? qm_hix_find_point(x->hyb, kh, out, cap, n, hint, hint_arg)
                  : qm_ix_find(x, kh, out, cap, n);
}

/* Predecessor candidates of kh (see qm_index_pred_candidates). */
static inline int
qm_ix_pred(qm_ix *x, const u8 kh[32], u64 *out, size_t cap, size_t *n)
{
    if (x->hyb)
        return qm_hix_pred(x->hyb, kh, out, cap, n);
    *n = qm_index_pred_candidates(&x->mem, kh, out, cap);
    return 0;
}

static inline int
qm_ix_insert(qm_ix *x, const u8 kh[32], u64 pos)
{
    return x->hyb ? qm_hix_insert(x->hyb, kh, pos) : qm_index_insert(&x->mem, kh, pos);
}

static inline int
qm_ix_erase(qm_ix *x, const u8 kh[32], u64 pos)
{
    return x->hyb ? qm_hix_erase(x->hyb, kh, pos) : qm_index_erase(&x->mem, kh, pos);
}

static inline int
qm_ix_replace(qm_ix *x, const u8 kh[32], u64 old_pos, u64 new_pos)
{
    return x->hyb ? qm_hix_replace(x->hyb, kh, old_pos, new_pos)
                  : qm_index_replace(&x->mem, kh, old_pos, new_pos);
}

static inline int
qm_ix_bulk_add(qm_ix *x, const u8 kh[32], u64 pos)
{
    return x->hyb ? qm_hix_bulk_add(x->hyb, kh, pos) : qm_index_bulk_add(&x->mem, kh, pos);
}

/* Every live record in key order: fn(arg, key-hash bytes [0..6), position). */
static inline int
qm_ix_foreach(qm_ix *x, unsigned shard, qm_index_fn fn, void *arg)
{
    return x->hyb ? qm_hix_foreach(x->hyb, fn, arg) : qm_index_foreach(&x->mem, shard, fn, arg);
}

static inline u64
qm_ix_count(const qm_ix *x)
{
    return x->hyb ? qm_hix_count(x->hyb) : x->mem.count;
}

static inline u64
qm_ix_dram_bytes(const qm_ix *x)
{
    return x->hyb ? qm_hix_dram_bytes(x->hyb) : qm_index_dram_bytes(&x->mem);
}

/* Lookup memo of one block's keys (hybrid: the prefetch stage's answers, reused by the update
 * stage): room for n keys, and reset once the update stage is done. */
static inline int
qm_ix_memo_reserve(qm_ix *x, size_t n)
{
    return x->hyb ? qm_hix_memo_reserve(x->hyb, n) : 0;
}

static inline void
qm_ix_memo_reset(qm_ix *x)
{
    if (x->hyb)
        qm_hix_memo_reset(x->hyb);
}

/* False when looking kh up would wait for the device (a hybrid run page not in DRAM); the
 * page is then *fd at *off (QM_HIX_PAGE bytes), to be read in a batch first. */
static inline bool
qm_ix_cached(qm_ix *x, const u8 kh[32])
{
    return !x->hyb || qm_hix_cached(x->hyb, kh);
}

/* A hint to the CPU, a few keys ahead of a batched lookup of kh (indexer.h): the in-memory
 * indexer starts loading the index record its search begins at; the hybrid indexer only its
 * memo slot (qm_hix_prefetch): the same hint on its overlays and run page did not shorten its
 * lookups (docs/BENCH.md, "Lookups that start loading a few keys ahead", and "The hybrid
 * memo's slot loaded a few keys ahead"). A hybrid point read starts those loads itself, at its
 * own start (hix_hint, hindex.c). */
static inline void
qm_ix_prefetch(qm_ix *x, const u8 kh[32])
{
    if (!x->hyb)
        qm_index_prefetch(&x->mem, kh);
    else
        qm_hix_prefetch(x->hyb, kh);
}

static inline bool
qm_ix_page_of(qm_ix *x, const u8 kh[32], int *fd, u64 *off)
{
    return x->hyb && qm_hix_page_of(x->hyb, kh, fd, off);
}

/* Adds the indexer's figures to st (DRAM of the index and memo, SSD, merges, page reads). */
static inline void
qm_ix_add_stats(const qm_ix *x, qmdb_stats *st)
{
    st->index_dram_bytes += qm_ix_dram_bytes(x);
    if (x->hyb) {
        st->cache_dram_bytes += qm_hix_memo_bytes(x->hyb);
        st->cache_dram_bytes += qm_hixj_dram_bytes(qm_hix_journal(x->hyb));
        st->index_ssd_bytes += qm_hix_ssd_bytes(x->hyb);
        st->index_merges += qm_hix_merges(x->hyb);
        st->index_page_reads += qm_hix_page_reads(x->hyb);
        st->indexer = QMDB_INDEXER_HYBRID;
    }
}

static inline void
qm_ix_free(qm_ix *x)
{
    qm_hix_free(x->hyb);
    x->hyb = NULL;
    qm_index_free(&x->mem);
}

#endif /* QM_IX_H */
