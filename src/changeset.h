/* SPDX-License-Identifier: Apache-2.0 */
/*
 * changeset.h -- turns a block's batch into per-shard operation lists in application order:
 * for each shard, by transaction, then key hash; only the last operation on a key within a
 * transaction survives (FORMAT.md §6). The qmdb_batch object (public) is defined here too.
 *
 * Thread: the committing thread (later: the pipeline's front stage).
 */
#ifndef QM_CHANGESET_H
#define QM_CHANGESET_H

#include "qm_internal.h"
#include "shard.h"

typedef struct qm_bop {
    u64 koff, voff; /* offsets into the batch arena */
    u32 klen, vlen; /* vlen == 0: delete */
    u32 tx;
} qm_bop;

struct qmdb_batch {
    u8 *arena;
    size_t alen, acap;
    qm_bop *ops;
    size_t nops, ocap;
    u32 tx;         /* current transaction index */
    bool tx0_named; /* a `tx` already named transaction 0 */
};

typedef struct qm_changeset {
    qm_op *ops[QM_SHARD_COUNT];
    size_t n[QM_SHARD_COUNT], cap[QM_SHARD_COUNT];
} qm_changeset;

QM_HIDDEN void qm_changeset_init(qm_changeset *cs);
QM_HIDDEN void qm_changeset_free(qm_changeset *cs);
/* Builds the per-shard lists from b. The ops point into b's arena (b must outlive use). */
QM_HIDDEN int qm_changeset_build(qm_changeset *cs, const qmdb_batch *b);

#endif /* QM_CHANGESET_H */
