/* SPDX-License-Identifier: Apache-2.0 */
/*
 * db.c -- the write path of the handle (db_int.h): the block commit sequence and its
 * durability order, the pipeline, qmdb_submit / qmdb_wait / qmdb_commit and qmdb_prune.
 *
 * Stages of a block H (crash at any point recovers height H-1 or H exactly):
 *  U  update (caller thread, writer lock held): (0) delete the segments that the durable
 *     metadata marks as pruned; prefetch the entries the block reads (prefetch.c); (1) apply
 *     the block to every shard (entry-log appends go to write buffers); write the buffers
 *     out (no fsync) and note which segments need one.
 *  H  hash (flusher thread, or inline): (2) shard roots, global root, metadata record.
 *  F  flush (flusher thread, or inline): (3) fsync every shard's entry log, twig file and
 *     twig-meta file; (4) append the state root to ROOTS and the state record to STATES
 *     (rollback.c), fsync both; (5) write and fsync the metadata slot (the commit point).
 * Pipeline: U of H+1 waits for H of H (the tree is shared) and for F of H-1 (at most two
 * blocks in flight), so H and F of block H overlap the caller reading and building block H+1
 * and the update of H+1. With QMDB_OPEN_NO_PIPELINE (or a sequential test I/O layer, for
 * deterministic fault injection: io.h) all stages run inline in qmdb_submit.
 *
 * Thread: the writer (one thread at a time) and the flusher thread; see db_int.h.
 */
#include "db_int.h"
#include "hash.h"
#include "io.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * Shards share nothing, so the commit runs them as parallel jobs. This is done only with
 * the POSIX I/O implementation: a test's fault-injecting I/O layer then sees its calls in a
 * deterministic order. QMDB_THREADS=0 in the environment forces sequential commits.
 */
qm_pool *
db_pool(qmdb_db *db, bool io)
{
    return !qm_io_concurrent() ? NULL : io ? db->io_pool : db->cpu_pool;
}

int
db_pools_new(qmdb_db *db, const qmdb_options *o)
{
    int n = o->worker_threads;
    const char *env = getenv("QMDB_THREADS");
    if (n == QMDB_AUTO && env && *env)
        n = QM_MAX(atoi(env), 0);
    if (n == 0)
        return 0;
    unsigned cpu = n > 0 ? (unsigned)QM_MIN(n, 15) : qm_pool_default_threads();
    QM_RET(qm_pool_new(cpu, &db->cpu_pool));
    return qm_pool_new(8, &db->io_pool);
}

/* Writes shard i's buffers out and records what block h must fsync. */
static int
shard_tickets(qmdb_db *db, size_t i, u64 h)
{
    return qm_shard_sync_begin(&db->shard[i], db->tickets[h & 1][i]);
}

/* Update stage of one shard: apply, then write the buffers out and take the sync tickets. */
static int
job_shard_update(void *arg, size_t i)
{
    qmdb_db *db = arg;
    u64 c0 = qm_hash_compressions();
    u64 h = db->commit_height;
    int rc = qm_shard_update(&db->shard[i], h, db->cs.ops[i], db->cs.n[i]);
    if (!rc) /* where the entries this block deactivated live (dpos.h; no fsync) */
        qm_dpos_block(&db->shard[i].dpos, h);
    if (!rc) /* hybrid indexer: the block's journal record (written, not fsynced: hixj.h) */
        rc = qm_shard_hix_block_end(&db->shard[i], h);
    if (!rc)
        rc = shard_tickets(db, i, db->commit_height);
    __atomic_fetch_add(&db->compressions, qm_hash_compressions() - c0, __ATOMIC_RELAXED);
    return rc;
}

/* Hash stage of one shard. */
static int
job_shard_hash(void *arg, size_t i)
{
    qmdb_db *db = arg;
    qm_shard *s = &db->shard[i];
    u64 c0 = qm_hash_compressions();
    int rc = qm_shard_seal(s);
    if (!rc && db->auto_prune)
        qm_shard_plan_prune(s, db->job_height);
    __atomic_fetch_add(&db->compressions, qm_hash_compressions() - c0, __ATOMIC_RELAXED);
    return rc;
}

int
db_states_ready(qmdb_db *db)
{
    if (db->states_on)
        return 0;
    bool created;
    u64 h = db->meta.height;
    QM_RET(qm_states_open(db->dir, 2 * qm_states_window(db->par.history_blocks) + 2, h, &db->states,
                          &created, &db->err));
    qm_states_rec r;
    int rc = created ? QMDB_NOTFOUND : qm_states_read(&db->states, db->dir, h, &r, &db->err);
    if (rc == 0) { /* prune_max only grows: a rollback's prune slot may hold a later one */
        db->prune_max = QM_MAX(r.prune_max, db->states.prune_max);
    } else if (rc == QMDB_NOTFOUND || rc == QMDB_CORRUPT) {
        /* No (intact) record of the committed height: a database from before STATES
         * existed. What was pruned is unknown, so a rollback may not go below this height. */
        db->err.msg[0] = '\0';
        db->prune_max = db->states.prune_max;
        for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
            if (db->meta.shard[s].first_twig > 0)
                db->prune_max = h;
        db_states_rec(db, &db->meta, &r);
        rc = qm_states_store(&db->states, db->dir, &r, &db->err);
    }
    if (rc) { /* tried again at the next durable write or rollback */
        qm_states_close(&db->states);
        return rc;
    }
    db->states_on = true;
    return 0;
}

void
db_states_rec(qmdb_db *db, const qm_meta *m, qm_states_rec *r)
{
    memset(r, 0, sizeof(*r));
    r->height = m->height;
    r->prune_max = db->prune_max;
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++) {
        const qm_shard_meta *sm = &m->shard[s];
        r->sh[s] = (qm_states_shard){sm->next_sn, sm->sn_start, sm->sn_start_pos, sm->live,
                                     sm->entry_size};
    }
}

/* The record of m's height in STATES (rollback.c), durably, with the twigs pruned so far. */
static int
db_states_put(qmdb_db *db, const qm_meta *m)
{
    QM_RET(db_states_ready(db));
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        db->prune_max = QM_MAX(db->prune_max, db->shard[s].pruned_deact);
    qm_states_rec r;
    db_states_rec(db, m, &r);
    return qm_states_store(&db->states, db->dir, &r, &db->err);
}

static int
job_shard_sync(void *arg, size_t i)
{
    qm_meta *m = ((void **)arg)[1];
    qmdb_db *db = ((void **)arg)[0];
    if (i < QM_SHARD_COUNT)
        return qm_shard_sync_finish(&db->shard[i], db->tickets[m->height & 1][i]);
    /* The state record of this height goes to STATES, durably (for qmdb_rollback). */
    if (i == QM_SHARD_COUNT + 1)
        return db_states_put(db, m);
    /* The state root of this height goes to ROOTS, durably. */
    return qm_roots_store(db->roots_fd, db->dir, m->height, m->state_root, &db->err);
}

void
global_root(qm_shard *shards, u8 out[32])
{
    u8 r[QM_SHARD_COUNT][32];
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
        memcpy(r[i], shards[i].tree.root, 32);
    qm_gtree g;
    qm_global_tree((const u8(*)[32])r, &g);
    memcpy(out, g.root, 32);
}

/* Stage F, steps (3)-(5): makes the block described by m durable (its tickets were taken by
 * the update stage). Runs on the flusher thread, or inline. */
static int
db_make_durable(qmdb_db *db, qm_meta *m, bool block)
{
    /* Steps (3) and (4) (with the STATES record) are independent of each other; all
     * precede (5). */
    void *args[2] = {db, m};
    QM_RET(qm_pool_run(db_pool(db, true), QM_SHARD_COUNT + 2, job_shard_sync, args));
    QM_RET(qm_meta_store(db->dir, &db->meta_fd, m, &db->err));
    pthread_mutex_lock(&db->mu);
    db->meta = *m;
    __atomic_store_n(&db->durable, m->height, __ATOMIC_RELEASE);
    db->blocks += block; /* with meta: a waiter that sees the height sees the count */
    pthread_cond_broadcast(&db->cv);
    pthread_mutex_unlock(&db->mu);
    return 0;
}

/* Step (0) of an update stage (writer lock held, or no readers): the block is committed now
 * that its metadata is durable. Failing to delete a pruned segment does not undo that and
 * must not fail the commit: the segment lies below the durable head, nothing reads it, and
 * the next open deletes it (hpfile.c). The message stays in db->err. */
static void
db_apply_prunes(qmdb_db *db)
{
    u64 ft[QM_SHARD_COUNT];
    pthread_mutex_lock(&db->mu);
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        ft[s] = db->meta.shard[s].first_twig;
    pthread_mutex_unlock(&db->mu);
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        (void)qm_shard_after_commit(&db->shard[s], ft[s]);
}

/* Writes every shard's buffers out and takes the tickets of block h (create, prune). */
static int
db_take_tickets(qmdb_db *db, u64 h)
{
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        QM_RET(shard_tickets(db, s, h));
    return 0;
}

static void
db_fill_meta(qmdb_db *db, qm_meta *m, u64 height, u64 seq)
{
    memset(m, 0, sizeof(*m));
    m->seq = seq;
    m->height = height;
    m->compact_thres = db->par.compact_thres;
    m->util_ratio = db->par.util_ratio;
    m->util_div = db->par.util_div;
    m->history_blocks = db->par.history_blocks;
    m->entry_seg = db->par.entry_seg;
    m->twig_seg = db->par.twig_seg;
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        qm_shard_meta_fill(&db->shard[s], &m->shard[s]);
    global_root(db->shard, m->state_root);
}

int
db_store_state(qmdb_db *db, u64 height, u64 seq)
{
    qm_meta m;
    db_fill_meta(db, &m, height, seq);
    QM_RET(db_take_tickets(db, height));
    return db_make_durable(db, &m, false);
}

/* Stage U of block h (caller thread): prunes, prefetch, apply, buffers out. */
static int
db_update(qmdb_db *db, u64 h)
{
    int rc = 0;
    pthread_rwlock_wrlock(&db->rw);
    db_apply_prunes(db);
    db->commit_height = h;
    /* Block h-2, whose pre-images this map held, is durable (U of h follows F of h-2). */
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++) {
        qm_undo_clear(&db->undo[h & 1][i]);
        qm_shard_begin_block(&db->shard[i], &db->undo[h & 1][i]);
        QM_TRY(qm_shard_hix_maintain(&db->shard[i], h)); /* hybrid: install/start merges */
    }
    if (db->rio && qm_io_concurrent()) {
        /* The prefetch only reads the state (and fills the warm caches and the hybrid memo,
         * which readers fill too, under their own locks): readers go on meanwhile. Only this
         * thread changes the state, so nothing does between the two writer sections. */
        pthread_rwlock_unlock(&db->rw);
        pthread_rwlock_rdlock(&db->rw);
        rc = qm_prefetch_block(db->shard, db->rio, &db->cs, &db->pf);
        pthread_rwlock_unlock(&db->rw);
        pthread_rwlock_wrlock(&db->rw);
        QM_TRY(rc);
    }
    QM_TRY(qm_pool_run(db_pool(db, false), QM_SHARD_COUNT, job_shard_update, db));
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
        qm_shard_end_update(&db->shard[i]);
    pthread_mutex_lock(&db->mu);
    db->submitted = h;
    pthread_mutex_unlock(&db->mu);
out:
    pthread_rwlock_unlock(&db->rw);
    return rc;
}

/* Stages H and F of the block in the job slot (flusher thread, or inline). */
static int
db_hash_flush(qmdb_db *db)
{
    u64 h = db->job_height;
    int rc = qm_pool_run(db_pool(db, false), QM_SHARD_COUNT, job_shard_hash, db);
    if (!rc)
        db_fill_meta(db, &db->job_meta, h, db->meta.seq + 1);
    pthread_mutex_lock(&db->mu);
    if (!rc)
        db->hashed = h;
    pthread_cond_broadcast(&db->cv);
    pthread_mutex_unlock(&db->mu);
    if (!rc)
        rc = db_make_durable(db, &db->job_meta, true);
    pthread_mutex_lock(&db->mu);
    if (rc && !db->bg_rc)
        db->bg_rc = rc;
    db->job_ready = false;
    pthread_cond_broadcast(&db->cv);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

static void *
flusher_main(void *arg)
{
    qmdb_db *db = arg;
    pthread_mutex_lock(&db->mu);
    for (;;) {
        while (!db->job_ready && !db->stop)
            pthread_cond_wait(&db->cv, &db->mu);
        if (!db->job_ready)
            break;
        pthread_mutex_unlock(&db->mu);
        (void)db_hash_flush(db);
        pthread_mutex_lock(&db->mu);
    }
    pthread_mutex_unlock(&db->mu);
    return NULL;
}

int
db_pipeline_start(qmdb_db *db, const qmdb_options *opt)
{
    /* Batched reads need the real file descriptors; a sequential test I/O layer (io.h) gets
     * synchronous ones, and no pipeline. */
    if (qm_io_concurrent()) {
        unsigned qd = opt->read_queue_depth ? opt->read_queue_depth : 64;
        QM_RET(qm_rio_new(qd, (opt->flags & QMDB_OPEN_DIRECT_IO) != 0, opt->io_uring, &db->rio));
        for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
            db->shard[i].point_direct = (opt->flags & QMDB_OPEN_DIRECT_IO) != 0;
    }
    const char *env = getenv("QMDB_PIPELINE");
    bool on = opt->pipeline == QMDB_AUTO ? !(env && *env && atoi(env) == 0) : opt->pipeline == 1;
    db->pipeline =
        !db->par.rdonly && !(opt->flags & QMDB_OPEN_NO_PIPELINE) && on && qm_io_concurrent();
    if (!db->pipeline)
        return 0;
    int e = pthread_create(&db->flusher, NULL, flusher_main, db);
    if (e)
        return qm_err_set(&db->err, -e, "cannot start the flusher thread: %s", strerror(e));
    pthread_setname_np(db->flusher, "qmdb-flush");
    db->flusher_on = true;
    return 0;
}

/* Waits until block h is durable (or a background stage failed). */
static int
db_wait_durable(qmdb_db *db, u64 h)
{
    pthread_mutex_lock(&db->mu);
    while (db->meta.height < h && !db->bg_rc)
        pthread_cond_wait(&db->cv, &db->mu);
    int rc = db->meta.height >= h ? 0 : db->bg_rc;
    pthread_mutex_unlock(&db->mu);
    if (rc)
        db_set_fatal(db);
    return rc;
}

/* Waits until everything submitted is durable (writer functions that read the tree). */
int
db_drain(qmdb_db *db)
{
    return db_wait_durable(db, db->submitted);
}

int
qmdb_submit(qmdb_db *db, uint64_t height, const qmdb_batch *b)
{
    if (db_fatal(db))
        return QMDB_PANIC;
    if (db->par.rdonly)
        return qm_err_set(&db->err, QMDB_INVALID, "database was opened read-only");
    if (height != db->submitted + 1)
        return qm_err_set(&db->err, QMDB_BAD_HEIGHT,
                          "block height %" PRIu64 " is not the last submitted height + 1 (%" PRIu64
                          ")",
                          height, db->submitted + 1);
    if (!b)
        return QMDB_INVALID;
    /* Nothing has changed yet: a failure here leaves the handle usable. */
    int rc = qm_changeset_build(&db->cs, b);
    if (rc)
        return rc;
    /* The previous block's hash stage shares the trees with this update stage. */
    pthread_mutex_lock(&db->mu);
    while (db->hashed < db->submitted && !db->bg_rc)
        pthread_cond_wait(&db->cv, &db->mu);
    rc = db->bg_rc;
    pthread_mutex_unlock(&db->mu);
    QM_TRY(rc);
    QM_TRY(db_update(db, height)); /* sets submitted */
    /* Hand over once the flush stage of the block before is done (two blocks in flight). */
    pthread_mutex_lock(&db->mu);
    while (db->job_ready && !db->bg_rc)
        pthread_cond_wait(&db->cv, &db->mu);
    rc = db->bg_rc;
    if (!rc) {
        db->job_height = height;
        db->job_ready = true;
        pthread_cond_broadcast(&db->cv);
    }
    pthread_mutex_unlock(&db->mu);
    QM_TRY(rc);
    if (!db->pipeline)
        QM_TRY(db_hash_flush(db));
out:
    if (rc)
        db_set_fatal(db);
    return rc;
}

int
db_root(qmdb_db *db, u64 height, u8 out[32])
{
    for (;;) {
        pthread_mutex_lock(&db->mu);
        u64 top = db->meta.height, rb = db->rollbacks;
        if (height == UINT64_MAX || height == top)
            memcpy(out, db->meta.state_root, 32);
        pthread_mutex_unlock(&db->mu);
        if (height == UINT64_MAX || height == top)
            return 0;
        if (height > top)
            return qm_err_set(&db->err, QMDB_NOTFOUND,
                              "height %" PRIu64 " is above the latest (%" PRIu64 ")", height, top);
        int rc = qm_roots_read(db->roots_fd, db->dir, height, out, &db->err);
        /* A rollback on the writer's thread meanwhile may have cut this record: ask again. */
        pthread_mutex_lock(&db->mu);
        bool again = rb != db->rollbacks;
        pthread_mutex_unlock(&db->mu);
        if (!again)
            return rc;
    }
}

int
qmdb_wait(qmdb_db *db, uint64_t height, uint8_t root_out[32])
{
    if (height > db->submitted)
        return qm_err_set(&db->err, QMDB_BAD_HEIGHT,
                          "block %" PRIu64 " was not submitted (last: %" PRIu64 ")", height,
                          db->submitted);
    QM_RET(db_wait_durable(db, height));
    return root_out ? db_root(db, height, root_out) : 0;
}

int
qmdb_commit(qmdb_db *db, uint64_t height, const qmdb_batch *b, uint8_t root_out[32])
{
    QM_RET(qmdb_submit(db, height, b));
    return qmdb_wait(db, height, root_out);
}

int
qmdb_prune(qmdb_db *db)
{
    if (db_fatal(db))
        return QMDB_PANIC;
    if (db->par.rdonly)
        return QMDB_INVALID;
    QM_RET(db_drain(db));
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        qm_shard_plan_prune(&db->shard[s], db->meta.height);
    /* Same height and root: only the heads move. ROOTS is rewritten with the same bytes. */
    int rc = db_store_state(db, db->meta.height, db->meta.seq + 1);
    if (!rc) {
        pthread_rwlock_wrlock(&db->rw);
        db_apply_prunes(db);
        pthread_rwlock_unlock(&db->rw);
    }
    if (rc)
        db_set_fatal(db);
    return rc;
}
