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
/* The history cache of one shard (pcache.c), brought up to the latest committed entries: SNs
 * [base, upto) with their entry-log positions, version heights and deactivating SNs, and all
 * of them in (first 8 key-hash bytes, SN) order through an iterator. Valid until the next
 * commit or cache call. Values may come from the file sXX.hist: when one fails a check, the
 * view turns bad (qm_hist_bad) and what it returns is meaningless; the caller then fails with
 * QMDB_CORRUPT, and after qm_hist_distrust a retry rebuilds the cache from the log. */
struct ph_shard;
typedef struct qm_hist_view {
    struct ph_shard *ph;
    u64 base, upto;
} qm_hist_view;
typedef struct qm_hist_iter {
    u64 i, j;
} qm_hist_iter;
QM_HIDDEN u64 qm_hist_pos(const qm_hist_view *v, u64 sn);
/* The SN that deactivated sn (UINT64_MAX: none). */
QM_HIDDEN u64 qm_hist_deact(const qm_hist_view *v, u64 sn);
/* Was the content of sn live after block h? (docs/PROOFS.md, "liveness at h") */
QM_HIDDEN bool qm_hist_live_at(const qm_hist_view *v, u64 sn, u64 h);
QM_HIDDEN bool qm_hist_bad(const qm_hist_view *v);
/* The error of an operation that found shard's sXX.hist damaged (QMDB_CORRUPT, named). */
QM_HIDDEN int qm_hist_damaged(qm_err *err, unsigned shard);
/* Positions it after the last key whose kh8 is <= kh8; qm_hist_prev then walks downward. */
QM_HIDDEN void qm_hist_seek(const qm_hist_view *v, u64 kh8, qm_hist_iter *it);
QM_HIDDEN bool qm_hist_prev(const qm_hist_view *v, qm_hist_iter *it, qm_hist_key *out);
/* After rc from an operation on shard's view: true when the cache came from sXX.hist and rc is
 * QMDB_CORRUPT; the file is then dropped for the handle's life and a retry scans the log. */
QM_HIDDEN bool qm_hist_distrust(const qm_proof_ctx *ctx, unsigned shard, int rc);
/* The global peers of shard k (the sibling shard root and the level 1..3 nodes), cached. */
QM_HIDDEN int qm_proof_global_peers(const qm_proof_ctx *ctx, unsigned k, u8 out[4][32]);
QM_HIDDEN qm_proof_cache *qm_proof_cache_get(const qm_proof_ctx *ctx);
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
