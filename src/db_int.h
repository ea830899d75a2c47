/* SPDX-License-Identifier: Apache-2.0 */
/*
 * db_int.h -- the handle (struct qmdb_db) shared by the three files of the top layer:
 *   db.c       the write path: the block pipeline (update, hash and flush stages), commit,
 *              prune, and the durability order;
 *   db_open.c  create, open (recovery orchestration), close, options, the directory lock;
 *   db_read.c  reads (get, batched and committed gets, roots), stats, and the facades that
 *              build the prover's and the checker's views (proofs, qmdb_check).
 * Nothing below the top layer includes this file.
 *
 * States: (qmdb_open) -> READY -> (qmdb_close)
 *                        READY -> FATAL   on any failure after a block started to change
 *                                         state (apply, hash, sync, metadata); FATAL answers
 *                                         QMDB_PANIC.
 *
 * Thread: writer functions (create, submit, wait, commit, prune, rollback, stat, prove, check,
 * close) from one thread at a time; qmdb_get, qmdb_get_many, qmdb_height and qmdb_root from any
 * thread. Readers hold `rw` shared; the update stage holds it exclusive. `mu` guards the
 * pipeline counters, the job slot and meta.
 */
#ifndef QM_DB_INT_H
#define QM_DB_INT_H

#include "changeset.h"
#include "meta.h"
#include "pool.h"
#include "prefetch.h"
#include "prover.h"
#include "rio.h"
#include "shard.h"
#include "states.h"
#include "undo.h"

#include <pthread.h>

enum db_state { DB_READY, DB_FATAL };

struct qmdb_db {
    char *dir;
    qm_params par;
    qm_meta meta; /* last committed (durable) metadata; guarded by mu */
    u64 durable;  /* meta.height, also readable without mu (atomic; set with meta) */
    int meta_fd;
    int roots_fd;
    int lock_fd;
    enum db_state state;
    bool auto_prune;
    qm_err err;
    qm_shard shard[QM_SHARD_COUNT];
    qm_changeset cs;
    struct qm_proof_cache *proof_cache; /* proofs: history cache (proof.c), lazily built */
    qm_pool *cpu_pool; /* apply + hash of independent shards (one worker per extra core) */
    qm_pool *io_pool;  /* concurrent fsyncs: many files, one device flush */
    u64 commit_height; /* block being applied (read by the shard jobs) */
    qm_rio *rio;       /* batched reads; unused under a sequential test I/O layer (io.h) */
    qm_pf pf;          /* the update stage's prefetch scratch */
    pthread_rwlock_t rw;
    /* Pipeline. */
    bool pipeline;
    bool flusher_on, stop;
    pthread_t flusher;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    u64 submitted; /* last block whose update stage finished (set under mu before the
                    * writer lock is released, so readers see it with its writes) */
    qm_undo undo[2][QM_SHARD_COUNT]; /* pre-images of the in-flight blocks, by height & 1 */
    u64 hashed;                      /* last block whose hash stage finished */
    bool job_ready;                  /* a block waits for its hash and flush stages */
    u64 job_height;                  /* the block in the job slot */
    qm_hp_ticket tickets[2][QM_SHARD_COUNT][3]; /* by height & 1: U of H+1 overlaps F of H */
    qm_meta job_meta; /* the hash stage's metadata record, for the flush stage */
    int bg_rc;        /* first failure of a background stage (guarded by mu) */
    u64 compressions; /* SHA-256 compressions by commits (atomic) */
    u64 blocks;       /* blocks committed since open (guarded by mu) */
    /* Per-height state records (STATES, states.h) for qmdb_rollback (rollback.c): opened at
     * the first durable write or rollback (states_on); prune_max as in a record. */
    qm_states states;
    bool states_on;
    u64 prune_max;
    u64 rollbacks; /* rollbacks done (guarded by mu): readers of ROOTS retry across one */
};

static inline bool
db_fatal(qmdb_db *db)
{
    return __atomic_load_n(&db->state, __ATOMIC_ACQUIRE) == DB_FATAL;
}

static inline void
db_set_fatal(qmdb_db *db)
{
    __atomic_store_n(&db->state, DB_FATAL, __ATOMIC_RELEASE);
}

/* db_read.c */
/* The prover's view of the handle (every submitted block durable: db_drain first). */
QM_HIDDEN void db_proof_ctx(qmdb_db *db, qm_proof_ctx *ctx);

/* db.c */
/* The worker pool for shard jobs (io: the fsync pool); NULL runs them inline. */
QM_HIDDEN qm_pool *db_pool(qmdb_db *db, bool io);
QM_HIDDEN int db_pools_new(qmdb_db *db, const qmdb_options *o);
/* The state root over the 16 shard roots (contract: levels 64..67). */
QM_HIDDEN void global_root(qm_shard *shards, u8 out[32]);
/* Writes the shards' buffers out and makes their current state durable as height, under
 * metadata sequence seq (create, prune, the salvage repair: no block applied). */
QM_HIDDEN int db_store_state(qmdb_db *db, u64 height, u64 seq);
/* Batched reads and, unless disabled, the flusher thread (at the end of an open). */
QM_HIDDEN int db_pipeline_start(qmdb_db *db, const qmdb_options *opt);
/* The root of height (UINT64_MAX: the latest durable one), from META or ROOTS. */
QM_HIDDEN int db_root(qmdb_db *db, u64 height, u8 out[32]);
/* Waits until everything submitted is durable (writer functions that read the trees). */
QM_HIDDEN int db_drain(qmdb_db *db);
/* Sets the thread's qmdb_open_error() text (db_open.c; also used by restore.c). */
QM_HIDDEN void qm_open_error_set(const char *msg);
/* STATES (states.h): opens the file if needed (creating it, with the record of the
 * committed height, for a database that has none) and loads prune_max. */
QM_HIDDEN int db_states_ready(qmdb_db *db);
/* The record of the state that m describes (prune_max: the handle's). */
QM_HIDDEN void db_states_rec(qmdb_db *db, const qm_meta *m, qm_states_rec *r);

#endif /* QM_DB_INT_H */
