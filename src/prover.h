/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prover.h -- proof construction (proof.c) over a view of the shards that the top layer
 * builds (db_read.c: qmdb_prove). The byte format is in proof_fmt.h.
 *
 * Thread: the handle's writer (one at a time), after every submitted block is durable.
 */
#ifndef QM_PROVER_H
#define QM_PROVER_H

#include "entry.h"
#include "proof_fmt.h"
#include "qm_internal.h"
#include "shard.h"

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
/* What answers key K at a height: the main entry E (K's entry, or the predecessor whose gap
 * covers K) and, when E is no longer active, the entry D that deactivated it (docs/PROOFS.md
 * §2). e and d point into eb and db, which the caller frees (qm_ebuf_free). */
typedef struct qm_proof_pick {
    int kind; /* QM_PROOF_PRESENT / QM_PROOF_ABSENT */
    int live; /* QM_PROOF_ACTIVE / QM_PROOF_DEACTIVATED */
    qm_entry e, d;
    qm_ebuf eb, db;
} qm_proof_pick;

/* Finds the entries answering key (hash kh) at height (<= ctx->height, not UINT64_MAX) into a
 * zeroed *f. QMDB_PRUNED when they lie in pruned twigs. */
QM_HIDDEN int qm_prove_find(const qm_proof_ctx *ctx, const u8 kh[32], const void *key, size_t klen,
                            u64 height, qm_proof_pick *f);
/* Builds the multi-key proof of keys[0..nkeys) at height (UINT64_MAX: the latest) into a
 * malloc'd *out (qmdb.h: qmdb_prove_many; mproof.c; the caller has checked the arguments). */
QM_HIDDEN int qm_prove_many(const qm_proof_ctx *ctx, const void *const *keys, const size_t *klens,
                            size_t nkeys, u64 height, u8 **out, size_t *outlen);
/* Frees the history cache (NULL allowed). */
QM_HIDDEN void qm_proof_cache_free(qm_proof_cache *c);

#endif /* QM_PROVER_H */
