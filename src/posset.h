/* SPDX-License-Identifier: Apache-2.0 */
/*
 * posset.h -- a set of 64-bit log positions (open addressing, grown at 3/4 full): the hybrid
 * indexer's erased positions (hindex.c) and the reads a large qmdb_get_many already queued
 * (prefetch.c). Positions are multiples of 8 in the common use; any value but UINT64_MAX may
 * be stored. While every position in a set is a multiple of 8 below 32 GiB (a shard's log
 * offsets up to there) its slots are 4 bytes, position / 8 + 1; the first other position
 * widens the set to 8-byte slots, position + 1, in place (a slot's index depends only on the
 * position, so every slot keeps its index). Also a filter of positions (qm_posfilt) for walks
 * that ask the same sets about many positions, most of them absent: a merge of the hybrid
 * indexer's run (hixrun.c).
 *
 * Thread: none of its own; a set is guarded by its owner.
 */
#ifndef QM_POSSET_H
#define QM_POSSET_H

#include "qm_internal.h"

typedef struct qm_posset {
    void *slot; /* u32 slots (position / 8 + 1) or, when wide, u64 (position + 1); 0 = empty */
    u64 cap, n;
    bool wide;
} qm_posset;

/* Adds pos: 1 if it was not there, 0 if it was, or -ENOMEM. */
QM_HIDDEN int qm_posset_add(qm_posset *s, u64 pos);
QM_HIDDEN bool qm_posset_has(const qm_posset *s, u64 pos);
QM_HIDDEN void qm_posset_free(qm_posset *s);
/* Bytes of its slot array. */
QM_HIDDEN u64 qm_posset_bytes(const qm_posset *s);

/* The hash both use. Positions are usually multiples of 8: their low bits carry nothing. The
 * high bits are folded down so that a tag kept there (prefetch.c keeps the shard) reaches the
 * slot index. */
static inline u64
qm_posset_hash(u64 pos)
{
    u64 x = pos >> 3;
    return (x ^ x >> 31) * 0x9E3779B97F4A7C15ull;
}

/* The slot where pos's probe starts in a set of cap slots (a power of two). */
static inline u64
qm_posset_home(u64 pos, u64 cap)
{
    return qm_posset_hash(pos) >> 20 & (cap - 1);
}

/* A hint to the CPU: start loading the slot where a qm_posset_has(s, pos) would look first. */
static inline void
qm_posset_prefetch(const qm_posset *s, u64 pos)
{
    if (s->n)
        __builtin_prefetch((const u8 *)s->slot +
                           qm_posset_home(pos, s->cap) * (s->wide ? sizeof(u64) : sizeof(u32)));
}

/*
 * A bit per hashed position, a power of two of at least 16 bits per position of the sets it
 * was built from (2 to 4 bytes): "no" means in none of them, "maybe" (3-6% of absent
 * positions) that the sets must be asked. A fifth of the sets' size or less (their slots are 8
 * bytes, 3/8 to 3/4 used), so more of it stays in the CPU's caches. Valid while the sets do not
 * change. Without bits (no memory, or nothing in the sets) every answer is maybe.
 */
typedef struct qm_posfilt {
    u64 *bits;
    unsigned shift; /* a position's bit: its hash >> shift */
} qm_posfilt;

QM_HIDDEN void qm_posfilt_build(qm_posfilt *f, const qm_posset *const *sets, unsigned nsets);
QM_HIDDEN void qm_posfilt_free(qm_posfilt *f);

static inline bool
qm_posfilt_maybe(const qm_posfilt *f, u64 pos)
{
    if (!f->bits)
        return true;
    u64 b = qm_posset_hash(pos) >> f->shift;
    return (f->bits[b / 64] >> (b % 64)) & 1;
}

#endif /* QM_POSSET_H */
