/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot.h -- snapshot export (snapshot.c): cuts the committed state of a view of the
 * shards into chunks (format: snap_fmt.h, docs/SYNC.md) and hands each to a sink. The top
 * layer (snap_io.c) builds the view, writes the chunk files and the manifest.
 *
 * Thread: the handle's one caller, with every submitted block durable; the shards are cut
 * concurrently on the pool it is given (the sink must then be thread-safe).
 */
#ifndef QM_SNAPSHOT_H
#define QM_SNAPSHOT_H

#include "qm_internal.h"

struct qm_shard;
struct qm_pool;

/* Receives one chunk of shard `shard`, twigs [t0, t1) (the bytes are valid during the call).
 * Each shard's chunks come in twig order, but with a pool two shards' sinks may run at once. */
typedef int (*qm_snap_sink)(void *arg, unsigned shard, u64 t0, u64 t1, const u8 *chunk, size_t len);

/* A shard's state at the exported height (from STATES: rollback.c's records). */
typedef struct qm_snap_at {
    u64 next_sn, sn_start, entry_size;
} qm_snap_at;

typedef struct qm_snap_ctx {
    struct qm_shard *shards; /* QM_SHARD_COUNT of them, committed state of the latest height */
    u64 height;              /* the height exported: the latest, or an earlier one */
    const qm_snap_at *at;    /* QM_SHARD_COUNT states of `height`; NULL: the latest */
    const u8 *root;          /* the state root of `height` (checked against the rebuilt one) */
    qm_err *err;
    u64 *entries;         /* out (may be NULL): += the entries carried in their stored form */
    struct qm_pool *pool; /* runs the shards concurrently (NULL: one after another) */
} qm_snap_ctx;

/* Exports every shard: the dead prefix as one chunk of left roots (when there is one), then
 * chunks of up to twigs_per_chunk (>= 1) full twigs. For an earlier height, each shard's
 * ActiveBits, youngest twig and upper tree of that height are rebuilt first: the bits of the
 * latest state below that height's next_sn, plus every SN that an entry appended after it
 * deactivated (the log tail is read once); the recomputed state root must equal ctx->root.
 * QMDB_PRUNED if an entry live at that height lies in a pruned twig. */
QM_HIDDEN int qm_snap_export(const qm_snap_ctx *ctx, u64 twigs_per_chunk, qm_snap_sink sink,
                             void *arg);

#endif /* QM_SNAPSHOT_H */
