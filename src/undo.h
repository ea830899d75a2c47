/* SPDX-License-Identifier: Apache-2.0 */
/*
 * undo.h -- a block's pre-images, for reads of the durable state while the block is in
 * flight: for every key the block writes, its value before the block (or "absent"). The
 * update stage records the first write of each key (qm_shard_apply); readers asking for the
 * committed state consult the maps of the blocks that are submitted but not durable yet,
 * oldest first, before the indexer. Keys the block does not write keep their values, so they
 * need no record (entries moved by predecessor rewrites or compaction carry the same value).
 *
 * Thread: one shard's updater writes its map (writer lock held); readers read it under the
 * reader lock. A map is emptied by the update stage of the block two heights later, when its
 * own block is durable.
 */
#ifndef QM_UNDO_H
#define QM_UNDO_H

#include "qm_internal.h"

typedef struct qm_undo {
    u8 (*kh)[32]; /* slot key hashes (valid where used[i]) */
    u64 *val;     /* (arena offset << 24) | length; UINT64_MAX = absent before the block */
    bool *used;
    size_t cap, n; /* cap: power of two */
    u8 *arena;
    size_t alen, acap;
} qm_undo;

QM_HIDDEN void qm_undo_free(qm_undo *u);
QM_HIDDEN void qm_undo_clear(qm_undo *u);
/* DRAM held (table and arena). */
QM_HIDDEN u64 qm_undo_dram_bytes(const qm_undo *u);
/* Records kh's value before the block (val NULL: absent) unless kh has a record already. */
QM_HIDDEN int qm_undo_put(qm_undo *u, const u8 kh[32], const u8 *val, u32 vlen);
/* 1 with *val and *vlen set (value before the block), 0 with *val NULL (absent before the block),
 * -1 when the block does not write kh. */
QM_HIDDEN int qm_undo_get(const qm_undo *u, const u8 kh[32], const u8 **val, u32 *vlen);

#endif /* QM_UNDO_H */
