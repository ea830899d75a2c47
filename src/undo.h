/* SPDX-License-Identifier: Apache-2.0 */
/*
 * undo.h -- a block's pre-images, for reads of the durable state while the block is in
 * flight: for every key the block writes, where its entry before the block lies in the
 * shard's entry log (or "absent"). The update stage records the first write of each key
 * (qm_shard_apply); readers asking for the committed state consult the maps of the blocks
 * that are submitted but not durable yet, oldest first, before the indexer, and read the
 * value from the log (qm_shard_read_pre). Keys the block does not write keep their values, so
 * they need no record (entries moved by predecessor rewrites or compaction carry the same
 * value). The entry at a recorded offset stays readable while the map is consulted: the log
 * is append-only, and pruning moves a log's head only to a first twig taken from durable
 * metadata, which cannot drop an entry deactivated by a block that is not yet durable; a
 * rollback first waits for every block to be durable and empties the maps. Up to commit
 * 09768a6, the maps held copies of the values: a 64 KiB copy per update, in arenas that kept
 * the largest block's size.
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
    u64 *pos;     /* entry-log offset of the key's entry before the block, or QM_UNDO_ABSENT */
    bool *used;
    size_t cap, n; /* cap: power of two */
} qm_undo;

#define QM_UNDO_ABSENT UINT64_MAX

QM_HIDDEN void qm_undo_free(qm_undo *u);
QM_HIDDEN void qm_undo_clear(qm_undo *u);
/* DRAM held (the table). */
QM_HIDDEN u64 qm_undo_dram_bytes(const qm_undo *u);
/* Records where kh's entry lay before the block (QM_UNDO_ABSENT: it had none) unless kh has a
 * record already. */
QM_HIDDEN int qm_undo_put(qm_undo *u, const u8 kh[32], u64 pos);
/* 1 with *pos the offset of kh's entry before the block, 0 when kh was absent before the
 * block, -1 when the block does not write kh. */
QM_HIDDEN int qm_undo_get(const qm_undo *u, const u8 kh[32], u64 *pos);

#endif /* QM_UNDO_H */
