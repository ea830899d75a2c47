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
#include "histfile.h"
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
    const char *dir;        /* the database directory (sXX.hist); NULL: no file */
    /* The committed state root of a height (ROOTS), for checking sXX.hist; NULL: no file. */
    int (*root_at)(void *arg, u64 height, u8 out[32]);
    void *root_arg;
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
/* The history cache of one shard (proof.c), brought up to the latest committed entries: per
 * SN in [base, upto) its entry-log position and the SN that deactivated it (UINT64_MAX:
 * none); keys[0 .. upto - base) all those SNs sorted by (first 8 key-hash bytes, SN). Valid
 * until the next commit or cache call. */
typedef struct qm_hist_view {
    u64 base, upto;
    const u64 *pos, *deact;
    const qm_hist_key *keys;
} qm_hist_view;
QM_HIDDEN int qm_proof_hist(const qm_proof_ctx *ctx, unsigned shard, qm_hist_view *v);

/* Builds the witness of block `height` (witness.c; qmdb.h: qmdb_witness). pre/post: the
 * STATES records of height - 1 and height; par: the compaction parameters; prune_max: the
 * handle's (every pruned twig was dead from that height on); pre_root: the recorded root of
 * height - 1, which the rebuilt pre-state must hash to. */
struct qm_states_rec;
QM_HIDDEN int qm_witness_build(const qm_proof_ctx *ctx, u64 height, const struct qm_states_rec *pre,
                               const struct qm_states_rec *post, const qm_params *par,
                               u64 prune_max, const u8 pre_root[32], const qmdb_block_op *ops,
                               size_t nops, u8 **out, size_t *outlen);
/* Writes sXX.hist (histfile.h) for every shard whose history cache is built, after bringing
 * it up to the latest committed entries; skips a shard whose file already holds exactly its
 * cache. Every applied block must be durable. 0 or the first error (the other shards are
 * still written). */
QM_HIDDEN int qm_proof_cache_save(const qm_proof_ctx *ctx);
/* Since the cache was made: shards loaded from sXX.hist, files ignored, entries scanned. */
QM_HIDDEN void qm_proof_cache_counts(const qm_proof_cache *c, u64 *loaded, u64 *ignored,
                                     u64 *scanned);
/* Frees the history cache (NULL allowed). */
QM_HIDDEN void qm_proof_cache_free(qm_proof_cache *c);

#endif /* QM_PROVER_H */
