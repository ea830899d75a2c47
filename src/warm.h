/* SPDX-License-Identifier: Apache-2.0 */
/*
 * warm.h -- a shard's warm-entry cache: copies of entries that client reads fetched while the
 * next block was being built (the read of a read-modify-write). The updater looks here
 * before reading the log, so applying the write does not read the same entry again. Entries
 * never change at a given log position, so a cached copy is always valid; the cache is
 * emptied after each block and bounded in bytes.
 *
 * Thread: not synchronised itself; the shard guards it with warm_mu (client reads and the
 * prefetcher fill it, the shard's updater reads it and clears it after the block).
 */
#ifndef QM_WARM_H
#define QM_WARM_H

#include "qm_internal.h"

/* Per shard. 2 MiB holds a block of ~200,000 typical operations across the 16 shards; the
 * bound matters when memory is capped (readers that never commit fill it to here). Entries
 * that do not fit are read again by the update stage. */
#define QM_WARM_MAX_BYTES (2u << 20)
#define QM_WARM_MAX_KEYS (1u << 16) /* key-set entries kept (qm_warm_key_add) */

typedef struct qm_warm {
    u64 *keys;  /* position + 1; 0 = empty slot */
    u64 *offs;  /* (arena offset << 24) | stored length */
    size_t cap; /* slots, a power of two */
    size_t n;
    u8 *arena;
    size_t alen, acap;
    u64 hits;
    /* Keys (first 8 key-hash bytes, nonzero) whose candidates and, if absent, predecessor
     * candidates were read for this block: the prefetch stage skips their puts. */
    u64 *kset;
    size_t kcap, kn;
} qm_warm;

QM_HIDDEN void qm_warm_free(qm_warm *w);
/* Remembers the entry at pos (len bytes). Silently skips when full or out of memory. */
QM_HIDDEN void qm_warm_put(qm_warm *w, u64 pos, const u8 *bytes, u32 len);
/* Returns the cached bytes of the entry at pos (and its length), or NULL. */
QM_HIDDEN const u8 *qm_warm_get(qm_warm *w, u64 pos, u32 *len);
/* As qm_warm_get, without counting a hit. */
QM_HIDDEN const u8 *qm_warm_peek(const qm_warm *w, u64 pos, u32 *len);
QM_HIDDEN void qm_warm_clear(qm_warm *w);
/* DRAM held (tables, arena, key set). */
QM_HIDDEN u64 qm_warm_dram_bytes(const qm_warm *w);
/* The set of keys looked up for this block (silently skips when out of memory). */
QM_HIDDEN void qm_warm_key_add(qm_warm *w, const u8 kh[32]);

/* True when w holds no entry, asked without its lock (n is stored atomically): a reader that
 * finds it empty reads the log instead and takes no lock. A put by another thread that this
 * thread has not synchronised with may be missed; it costs a read of the log, never a wrong
 * answer (the log holds the same bytes). */
static inline bool
qm_warm_none(const qm_warm *w)
{
    return __atomic_load_n(&w->n, __ATOMIC_RELAXED) == 0;
}
QM_HIDDEN bool qm_warm_key_has(const qm_warm *w, const u8 kh[32]);

#endif /* QM_WARM_H */
