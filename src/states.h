/* SPDX-License-Identifier: Apache-2.0 */
/*
 * states.h -- the per-height state records (file `STATES`): for each committed height, the
 * per-shard sizes and cursors a rollback to that height restores (qmdb_rollback,
 * rollback.c). Never part of a root.
 *
 * File layout (little-endian; FORMAT.md "STATES"):
 *   header, 64 bytes:
 *     0   8  magic "QMDBSTAT"
 *     8   4  version (1)
 *     12  4  record length (664)
 *     16  8  capacity C: number of record slots
 *     24  8  first height: the lowest height ever recorded in this file
 *     32  4  CRC-32C of bytes [0, 32)
 *     36  28 zero
 *   two prune slots of 32 bytes at 64 and 96, written by rollbacks (slot seq mod 2):
 *     0   8  prune_max (below)
 *     8   8  seq (1, 2, ...)
 *     16  4  CRC-32C of bytes [0, 16)
 *     20  12 zero
 *   the record of height h at offset 128 + 664 * (h mod C) (a ring: the record of h + C
 *   replaces it):
 *     0   8  height h
 *     8   8  prune_max: the latest deactivation height of any twig pruned so far, as of h
 *            (0: none). Every entry of a pruned twig was dead at every height >= prune_max.
 *     16  16 x 40  per shard: next_sn, sn_start, sn_start_pos, live, entry_size (the META
 *            fields of h)
 *     656 4  CRC-32C of bytes [0, 656)
 *     660 4  zero
 * A record is written and fsynced before the META slot that commits its height (commit
 * step 4, with ROOTS), so the record of every committed height in the ring is durable. A
 * rollback never rewrites a record: the prune_max it keeps (pruning is not undone) goes to a
 * prune slot, fsynced before its META; at open the handle takes the larger of the committed
 * height's record and the valid prune slots (prune_max only grows). With C = 2w + 2 slots
 * (w = the window), the record of h survives as long as no height h + C was recorded since:
 * h >= M - 2w, M the highest height ever recorded (blocks rolled back included).
 *
 * Thread: the committing thread (the flush stage), or the writer after a drain.
 */
#ifndef QM_STATES_H
#define QM_STATES_H

#include "qm_internal.h"

#define QM_STATES_HDR 64u
#define QM_STATES_RECS 128u /* offset of the first record slot */
#define QM_STATES_REC 664u
#define QM_STATES_MAX_WINDOW (1ull << 20)

typedef struct qm_states_shard {
    u64 next_sn, sn_start, sn_start_pos, live, entry_size;
} qm_states_shard;

typedef struct qm_states_rec {
    u64 height, prune_max;
    qm_states_shard sh[QM_SHARD_COUNT];
} qm_states_rec;

typedef struct qm_states {
    int fd; /* -1: not open */
    u64 cap, first;
    u64 prune_max, prune_seq; /* of the newest valid prune slot (0, 0: none) */
} qm_states;

/* The window for history_blocks of history: min(history_blocks, QM_STATES_MAX_WINDOW); a new
 * file gets 2 * window + 2 record slots. */
QM_HIDDEN u64 qm_states_window(u64 history_blocks);
/* Opens dir/STATES (and reads its prune slots), or creates it (capacity cap, first height
 * `first`) when it is missing or its header is damaged (*created set: it holds no record). */
QM_HIDDEN int qm_states_open(const char *dir, u64 cap, u64 first, qm_states *st, bool *created,
                             qm_err *err);
/* Writes prune_max into the next prune slot and fsyncs (a rollback, before its META). */
QM_HIDDEN int qm_states_store_prune(qm_states *st, const char *dir, u64 prune_max, qm_err *err);
/* Opens dir/STATES for reading only (a read-only handle: snapshots of earlier heights);
 * QMDB_NOTFOUND if it is missing or its header is damaged. Writes nothing. */
QM_HIDDEN int qm_states_open_rdonly(const char *dir, qm_states *st, qm_err *err);
QM_HIDDEN void qm_states_close(qm_states *st);
/* Writes the record of r->height and fsyncs. */
QM_HIDDEN int qm_states_store(qm_states *st, const char *dir, const qm_states_rec *r, qm_err *err);
/* Reads the record of height h: QMDB_NOTFOUND when the file does not hold it (h below the
 * first height, its slot past the end of the file or reused by another height),
 * QMDB_CORRUPT (naming the file and offset) when its CRC fails. */
QM_HIDDEN int qm_states_read(qm_states *st, const char *dir, u64 h, qm_states_rec *r, qm_err *err);

#endif /* QM_STATES_H */
