/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prover.h -- proof construction (proof.c) over a view of the shards that the top layer
 * builds (db_read.c: qmdb_prove). The byte format is in proof_fmt.h.
 *
 * Thread: the handle's writer (one at a time), after every submitted block is durable.
 */
#ifndef QM_PROVER_H
#define QM_PROVER_H

#include "proof_fmt.h"
#include "qm_internal.h"

struct qm_shard;
typedef struct qm_proof_cache qm_proof_cache;

typedef struct qm_proof_ctx {
    struct qm_shard *shards; /* QM_SHARD_COUNT of them */
    u64 height;              /* latest committed height */
    qm_err *err;
    qm_proof_cache **cache; /* lazily built history cache owned by the handle */
} qm_proof_ctx;

/* Builds the proof of key at height (UINT64_MAX: the latest) into a malloc'd *out (qmdb.h:
 * qmdb_prove; the caller has checked the arguments). */
QM_HIDDEN int qm_prove(const qm_proof_ctx *ctx, const void *key, size_t klen, u64 height, u8 **out,
                       size_t *outlen);
/* Frees the history cache (NULL allowed). */
QM_HIDDEN void qm_proof_cache_free(qm_proof_cache *c);

#endif /* QM_PROVER_H */
