/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot.h -- snapshot export (snapshot.c): cuts the committed state of a view of the
 * shards into chunks (format: snap_fmt.h, docs/SYNC.md) and hands each to a sink. The top
 * layer (snap_io.c) builds the view, writes the chunk files and the manifest.
 *
 * Thread: the handle's one caller, with every submitted block durable.
 */
#ifndef QM_SNAPSHOT_H
#define QM_SNAPSHOT_H

#include "qm_internal.h"

struct qm_shard;

/* Receives one chunk of shard `shard`, twigs [t0, t1) (the bytes are valid during the call). */
typedef int (*qm_snap_sink)(void *arg, unsigned shard, u64 t0, u64 t1, const u8 *chunk, size_t len);

typedef struct qm_snap_ctx {
    struct qm_shard *shards; /* QM_SHARD_COUNT of them, committed state of `height` */
    u64 height;
    qm_err *err;
} qm_snap_ctx;

/* Exports every shard: the dead prefix as one chunk of left roots (when there is one), then
 * chunks of up to twigs_per_chunk (>= 1) full twigs. */
QM_HIDDEN int qm_snap_export(const qm_snap_ctx *ctx, u64 twigs_per_chunk, qm_snap_sink sink,
                             void *arg);

#endif /* QM_SNAPSHOT_H */
