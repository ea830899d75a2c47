/* SPDX-License-Identifier: Apache-2.0 */
/*
 * db.c -- implements the qmdb_* API (qmdb.h): argument checks, the block commit sequence and
 * its durability order, open/recovery orchestration, and the handle state machine.
 *
 * States: (qmdb_open) -> RECOVERING -> READY -> (qmdb_close)
 *                                       READY -> FATAL   on any failure after a block started
 *                                                        to change state (apply, hash, sync,
 *                                                        metadata); FATAL answers QMDB_PANIC.
 *
 * Stages of a block H (crash at any point recovers height H-1 or H exactly):
 *  U  update (caller thread, writer lock held): (0) delete the segments that the durable
 *     metadata marks as pruned; prefetch the entries the block reads (prefetch.c); (1) apply
 *     the block to every shard (entry-log appends go to write buffers); write the buffers
 *     out (no fsync) and note which segments need one.
 *  H  hash (flusher thread, or inline): (2) shard roots, global root, metadata record.
 *  F  flush (flusher thread, or inline): (3) fsync every shard's entry log, twig file and
 *     twig-meta file; (4) append the state root to ROOTS and fsync it; (5) write and fsync
 *     the metadata slot (the commit point).
 * Pipeline: U of H+1 waits for H of H (the tree is shared) and for F of H-1 (at most two
 * blocks in flight), so H and F of block H overlap the caller reading and building block H+1
 * and the update of H+1. With QMDB_OPEN_NO_PIPELINE (or a test I/O layer, for deterministic
 * fault injection) all stages run inline in qmdb_submit.
 *
 * Thread: writer functions (create, submit, wait, commit, prune, stat, prove, check, close)
 * from one thread at a time; qmdb_get, qmdb_get_many, qmdb_height and qmdb_root from any
 * thread. Readers hold `rw` shared; the update stage holds it exclusive. `mu` guards the
 * pipeline counters, the job slot and meta.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "changeset.h"
#include "check.h"
#include "entry.h"
#include "hash.h"
#include "io.h"
#include "meta.h"
#include "pool.h"
#include "prefetch.h"
#include "proof.h"
#include "rio.h"
#include "shard.h"
#include "undo.h"

enum db_state { DB_READY, DB_FATAL };

struct qmdb_db {
    char *dir;
    qm_params par;
    qm_meta meta;      /* last committed (durable) metadata; guarded by mu */
    int meta_fd;
    int roots_fd;
    int lock_fd;
    enum db_state state;
    bool auto_prune;
    qm_err err;
    qm_shard shard[QM_SHARD_COUNT];
    qm_changeset cs;
    u64 pruned_twigs;
    struct qm_proof_cache *proof_cache; /* proofs: history cache (proof.c), lazily built */
    qm_pool *cpu_pool; /* apply + hash of independent shards (one worker per extra core) */
    qm_pool *io_pool;  /* concurrent fsyncs: many files, one device flush */
    u64 commit_height; /* block being applied (read by the shard jobs) */
    qm_rio *rio;       /* batched reads; NULL under a test I/O layer (synchronous reads) */
    qm_pf pf;          /* the update stage's prefetch scratch */
    pthread_rwlock_t rw;
    /* Pipeline. */
    bool pipeline;
    bool flusher_on, stop;
    pthread_t flusher;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    u64 submitted;     /* last block whose update stage finished (set under mu before the
                        * writer lock is released, so readers see it with its writes) */
    qm_undo undo[2][QM_SHARD_COUNT]; /* pre-images of the in-flight blocks, by height & 1 */
    u64 hashed;        /* last block whose hash stage finished */
    bool job_ready;    /* a block waits for its hash and flush stages */
    u64 job_height;    /* the block in the job slot */
    qm_hp_ticket tickets[2][QM_SHARD_COUNT][3]; /* by height & 1: U of H+1 overlaps F of H */
    qm_meta job_meta;  /* the hash stage's metadata record, for the flush stage */
    int bg_rc;         /* first failure of a background stage (guarded by mu) */
    u64 compressions;  /* SHA-256 compressions by commits (atomic) */
    u64 blocks;        /* blocks committed since open (guarded by mu) */
};

/*
 * Shards share nothing, so the commit runs them as parallel jobs. This is done only with
 * the POSIX I/O implementation: a test's fault-injecting I/O layer then sees its calls in a
 * deterministic order. QMDB_THREADS=0 in the environment forces sequential commits.
 */
static qm_pool *
db_pool(qmdb_db *db, bool io)
{
    if (qm_io_get() != qm_io_posix())
        return NULL;
    return io ? db->io_pool : db->cpu_pool;
}

static int
db_pools_new(qmdb_db *db)
{
    const char *env = getenv("QMDB_THREADS");
    if (env && atoi(env) == 0)
        return 0;
    unsigned cpu = env ? (unsigned)QM_MIN(atoi(env), 15) : qm_pool_default_threads();
    QM_RET(qm_pool_new(cpu, &db->cpu_pool));
    return qm_pool_new(8, &db->io_pool);
}

/* Writes shard i's buffers out and records what block h must fsync. */
static int
shard_tickets(qmdb_db *db, size_t i, u64 h)
{
    qm_shard *s = &db->shard[i];
    qm_hp_ticket *t = db->tickets[h & 1][i];
    QM_RET(qm_hpfile_sync_begin(&s->entries, &t[0]));
    QM_RET(qm_hpfile_sync_begin(&s->twigs, &t[1]));
    return qm_hpfile_sync_begin(&s->tmeta, &t[2]);
}

/* Update stage of one shard: apply, then write the buffers out and take the sync tickets. */
static int
job_shard_update(void *arg, size_t i)
{
    qmdb_db *db = arg;
    qm_shard *s = &db->shard[i];
    u64 c0 = qm_hash_compressions();
    qm_hpfile_close_cold(&s->entries);
    qm_hpfile_close_cold(&s->twigs);
    int rc = qm_shard_apply(s, db->commit_height, db->cs.ops[i], db->cs.n[i]);
    if (!rc)
        rc = qm_shard_hix_block_end(s, db->commit_height);
    pthread_mutex_lock(&s->warm_mu);
    qm_warm_clear(&s->warm);
    pthread_mutex_unlock(&s->warm_mu);
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

static int
job_shard_open(void *arg, size_t i)
{
    qmdb_db *db = arg;
    return qm_shard_open(&db->shard[i], (unsigned)i, db->dir, &db->par, &db->meta.shard[i],
                         &db->err);
}

static int
job_shard_checkpoint(void *arg, size_t i)
{
    qmdb_db *db = arg;
    return qm_shard_checkpoint(&db->shard[i], db->meta.height);
}

static int
job_shard_sync(void *arg, size_t i)
{
    qm_meta *m = ((void **)arg)[1];
    qmdb_db *db = ((void **)arg)[0];
    if (i < QM_SHARD_COUNT) {
        qm_shard *s = &db->shard[i];
        const qm_hp_ticket *t = db->tickets[m->height & 1][i];
        QM_RET(qm_hpfile_sync_finish(&s->entries, &t[0]));
        QM_RET(qm_hpfile_sync_finish(&s->twigs, &t[1]));
        return qm_hpfile_sync_finish(&s->tmeta, &t[2]);
    }
    /* The last job: the state root of this height goes to ROOTS, durably. */
    int rc = qm_io_pwrite_full(db->roots_fd, m->state_root, 32, 32 * m->height);
    if (!rc)
        rc = qm_io_get()->fsync(db->roots_fd);
    if (rc)
        return qm_err_set(&db->err, rc, "%s/ROOTS: write of height %" PRIu64 " failed: %s",
                          db->dir, m->height, qmdb_strerror(rc));
    return 0;
}

static bool
db_fatal(qmdb_db *db)
{
    return __atomic_load_n(&db->state, __ATOMIC_ACQUIRE) == DB_FATAL;
}

static void
db_set_fatal(qmdb_db *db)
{
    __atomic_store_n(&db->state, DB_FATAL, __ATOMIC_RELEASE);
}

static int db_pipeline_start(qmdb_db *db, const qmdb_options *opt);

static _Thread_local char open_error[512];

const char *
qmdb_open_error(void)
{
    return open_error;
}

void
qmdb_options_init(qmdb_options *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->compact_thres = 20000000;
    o->utilization_ratio = 7;
    o->utilization_div = 10;
    o->entry_segment_bytes = 1ull << 30;
    o->twig_segment_bytes = 128ull << 20;
    o->history_blocks = 100000;
    o->flags = 0;
    o->indexer = QMDB_INDEXER_MEMORY;
}

/* The indexer of this open: options->indexer, unless QMDB_INDEXER=memory|hybrid overrides
 * it (tests run the whole suite both ways); QMDB_HIX_MERGE sets the hybrid merge size. */
static int
indexer_params(const qmdb_options *o, qm_params *par, qm_err *err)
{
    const char *env = getenv("QMDB_INDEXER");
    u32 kind = o->indexer;
    if (env && *env)
        kind = strcmp(env, "hybrid") == 0 ? QMDB_INDEXER_HYBRID : QMDB_INDEXER_MEMORY;
    if (kind != QMDB_INDEXER_MEMORY && kind != QMDB_INDEXER_HYBRID)
        return qm_err_set(err, QMDB_INVALID, "indexer must be QMDB_INDEXER_MEMORY or "
                          "QMDB_INDEXER_HYBRID");
    par->hybrid = kind == QMDB_INDEXER_HYBRID;
    const char *m = getenv("QMDB_HIX_MERGE");
    par->hix_merge = m && *m ? strtoull(m, NULL, 10) : 0;
    return 0;
}

static int
opt_check(const qmdb_options *o, qm_err *err)
{
    if (o->struct_size < sizeof(qmdb_options))
        return qm_err_set(err, QMDB_INVALID, "options not initialised with qmdb_options_init");
    if (o->utilization_ratio == 0 || o->utilization_div == 0)
        return qm_err_set(err, QMDB_INVALID, "utilization ratio and divisor must be >= 1");
    if (o->compact_thres == 0)
        return qm_err_set(err, QMDB_INVALID, "compact_thres must be >= 1");
    if (o->entry_segment_bytes < 65536 || o->entry_segment_bytes % 4096)
        return qm_err_set(err, QMDB_INVALID,
                          "entry_segment_bytes must be a multiple of 4096 and >= 65536");
    if (o->twig_segment_bytes == 0 || o->twig_segment_bytes % (128 * 1024))
        return qm_err_set(err, QMDB_INVALID, "twig_segment_bytes must be a multiple of 128 KiB");
    return 0;
}

static void
global_root(qm_shard *shards, u8 out[32])
{
    u8 lvl[8][32];
    for (unsigned i = 0; i < 8; i++)
        qm_h2(64, shards[2 * i].tree.root, shards[2 * i + 1].tree.root, lvl[i]);
    for (unsigned i = 0; i < 4; i++)
        qm_h2(65, lvl[2 * i], lvl[2 * i + 1], lvl[i]);
    for (unsigned i = 0; i < 2; i++)
        qm_h2(66, lvl[2 * i], lvl[2 * i + 1], lvl[i]);
    qm_h2(67, lvl[0], lvl[1], out);
}

static int
db_lock(qmdb_db *db)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/LOCK", db->dir);
    db->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (db->lock_fd < 0)
        return qm_err_set(&db->err, -errno, "cannot open %s: %s", path, strerror(errno));
    if (flock(db->lock_fd, (db->par.rdonly ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0)
        return qm_err_set(&db->err, QMDB_BUSY, "%s is in use by another process", db->dir);
    return 0;
}

static void
db_free(qmdb_db *db)
{
    if (!db)
        return;
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        qm_shard_close(&db->shard[s]);
    const qm_io *io = qm_io_get();
    if (db->meta_fd >= 0)
        io->close(db->meta_fd);
    if (db->roots_fd >= 0)
        io->close(db->roots_fd);
    if (db->lock_fd >= 0)
        close(db->lock_fd);
    qm_changeset_free(&db->cs);
    qm_pf_free(&db->pf);
    for (unsigned k = 0; k < 2; k++)
        for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
            qm_undo_free(&db->undo[k][i]);
    qm_rio_free(db->rio);
    qm_proof_cache_free(db->proof_cache);
    qm_pool_free(db->cpu_pool);
    qm_pool_free(db->io_pool);
    pthread_rwlock_destroy(&db->rw);
    pthread_mutex_destroy(&db->mu);
    pthread_cond_destroy(&db->cv);
    free(db->dir);
    free(db);
}

static qmdb_db *
db_alloc(const char *dir)
{
    qmdb_db *db = calloc(1, sizeof(*db));
    if (!db)
        return NULL;
    db->dir = strdup(dir);
    db->meta_fd = db->roots_fd = db->lock_fd = -1;
    qm_changeset_init(&db->cs);
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    /* The update stage must not starve behind a stream of readers. */
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&db->rw, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_mutex_init(&db->mu, NULL);
    pthread_cond_init(&db->cv, NULL);
    if (!db->dir) {
        free(db);
        return NULL;
    }
    return db;
}

static int
roots_open(qmdb_db *db, bool create)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/ROOTS", db->dir);
    int flags = db->par.rdonly ? O_RDONLY : O_RDWR;
    if (create)
        flags |= O_CREAT | O_TRUNC;
    int fd = qm_io_get()->open(path, flags, 0644);
    if (fd < 0)
        return qm_err_set(&db->err, fd == -ENOENT ? QMDB_CORRUPT : fd, "cannot open %s: %s",
                          path, qmdb_strerror(fd));
    db->roots_fd = fd;
    return 0;
}

/* Stage F, steps (3)-(5): makes the block described by m durable (its tickets were taken by
 * the update stage). Runs on the flusher thread, or inline. */
static int
db_make_durable(qmdb_db *db, qm_meta *m, bool block)
{
    /* Steps (3) and (4) are independent of each other; both precede (5). */
    void *args[2] = {db, m};
    QM_RET(qm_pool_run(db_pool(db, true), QM_SHARD_COUNT + 1, job_shard_sync, args));
    QM_RET(qm_meta_store(db->dir, &db->meta_fd, m, &db->err));
    pthread_mutex_lock(&db->mu);
    db->meta = *m;
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
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++) {
        u64 before = db->shard[s].tree.first_twig;
        (void)qm_shard_after_commit(&db->shard[s], ft[s]);
        db->pruned_twigs += db->shard[s].tree.first_twig - before;
    }
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
qmdb_create(const char *dir, const qmdb_options *opt)
{
    qmdb_options defaults;
    qm_err err = {{0}};
    open_error[0] = '\0';
    if (!opt) {
        qmdb_options_init(&defaults);
        opt = &defaults;
    }
    if (!dir || !*dir)
        return QMDB_INVALID;
    int rc = opt_check(opt, &err);
    if (rc)
        goto fail_early;
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        rc = qm_err_set(&err, -errno, "cannot create directory %s: %s", dir, strerror(errno));
        goto fail_early;
    }
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        rc = qm_err_set(&err, QMDB_INVALID, "%s is not a directory", dir);
        goto fail_early;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/META", dir);
    if (access(path, F_OK) == 0) {
        rc = qm_err_set(&err, QMDB_EXISTS, "%s already holds a qmdb database", dir);
        goto fail_early;
    }
    qmdb_db *db = db_alloc(dir);
    if (!db)
        return -ENOMEM;
    db->par.compact_thres = opt->compact_thres;
    db->par.util_ratio = opt->utilization_ratio;
    db->par.util_div = opt->utilization_div;
    db->par.history_blocks = opt->history_blocks;
    db->par.entry_seg = opt->entry_segment_bytes;
    db->par.twig_seg = opt->twig_segment_bytes;
    QM_TRY(indexer_params(opt, &db->par, &db->err));
    QM_TRY(db_lock(db));
    QM_TRY(db_pools_new(db));
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        QM_TRY(qm_shard_create(&db->shard[s], s, dir, &db->par, &db->err));
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        QM_TRY(qm_shard_seal(&db->shard[s]));
    QM_TRY(roots_open(db, true));
    qm_meta m;
    db_fill_meta(db, &m, 0, 0);
    QM_TRY(db_take_tickets(db, 0));
    QM_TRY(db_make_durable(db, &m, false));
    QM_TRY(qm_io_fsync_dir(dir));
out:
    if (rc)
        snprintf(open_error, sizeof(open_error), "%s", db->err.msg[0] ? db->err.msg : qmdb_strerror(rc));
    db_free(db);
    return rc;
fail_early:
    snprintf(open_error, sizeof(open_error), "%s", err.msg);
    return rc;
}

int
qmdb_open(const char *dir, const qmdb_options *opt, qmdb_db **out)
{
    qmdb_options defaults;
    open_error[0] = '\0';
    *out = NULL;
    if (!opt) {
        qmdb_options_init(&defaults);
        opt = &defaults;
    }
    if (!dir || !*dir || opt->struct_size < sizeof(qmdb_options))
        return QMDB_INVALID;
    struct stat st;
    if (stat(dir, &st) < 0) {
        int e = errno;
        snprintf(open_error, sizeof(open_error), "%s: %s", dir, strerror(e));
        return e == ENOENT ? QMDB_NOTADB : -e;
    }
    qmdb_db *db = db_alloc(dir);
    if (!db)
        return -ENOMEM;
    int rc;
    db->par.rdonly = (opt->flags & QMDB_OPEN_RDONLY) != 0;
    db->par.verify = (opt->flags & QMDB_OPEN_FAST) == 0;
    db->auto_prune = !(opt->flags & QMDB_OPEN_NO_AUTO_PRUNE);
    QM_TRY(qm_meta_load(dir, &db->meta, &db->err));
    QM_TRY(db_lock(db));
    /* Reload under the lock: another process may have committed meanwhile. */
    QM_TRY(qm_meta_load(dir, &db->meta, &db->err));
    db->par.compact_thres = db->meta.compact_thres;
    db->par.util_ratio = db->meta.util_ratio;
    db->par.util_div = db->meta.util_div;
    db->par.history_blocks = (opt->flags & QMDB_OPEN_SET_HISTORY) ? opt->history_blocks
                                                                  : db->meta.history_blocks;
    db->par.entry_seg = db->meta.entry_seg;
    db->par.twig_seg = db->meta.twig_seg;
    db->par.height = db->meta.height;
    QM_TRY(indexer_params(opt, &db->par, &db->err));
    QM_TRY(db_pools_new(db));
    QM_TRY(qm_pool_run(db_pool(db, false), QM_SHARD_COUNT, job_shard_open, db));
    u8 root[32];
    global_root(db->shard, root);
    if (memcmp(root, db->meta.state_root, 32) != 0) {
        rc = QM_CORRUPT(&db->err, "%s/META: state root does not match the shard roots", dir);
        goto out;
    }
    QM_TRY(roots_open(db, false));
    u64 rsize;
    QM_TRY(qm_io_get()->fsize(db->roots_fd, &rsize));
    u64 want = 32 * (db->meta.height + 1);
    if (rsize < want) {
        rc = QM_CORRUPT(&db->err, "%s/ROOTS: %" PRIu64 " bytes, height %" PRIu64 " needs %" PRIu64,
                        dir, rsize, db->meta.height, want);
        goto out;
    }
    if (rsize > want && !db->par.rdonly)
        QM_TRY(qm_io_get()->ftruncate(db->roots_fd, want));
    QM_TRY(qm_io_pread_full(db->roots_fd, root, 32, want - 32));
    if (memcmp(root, db->meta.state_root, 32) != 0) {
        rc = QM_CORRUPT(&db->err, "%s/ROOTS: root of height %" PRIu64 " at offset %" PRIu64
                        " differs from the metadata", dir, db->meta.height, want - 32);
        goto out;
    }
    if (getenv("QMDB_TRACE")) {
        FILE *f = fopen(getenv("QMDB_TRACE"), "a");
        for (unsigned s = 0; s < QM_SHARD_COUNT && f; s++)
            db->shard[s].trace = s == 0 ? f : fdopen(dup(fileno(f)), "a");
    }
    db->submitted = db->hashed = db->meta.height;
    QM_TRY(db_pipeline_start(db, opt));
out:
    if (rc) {
        snprintf(open_error, sizeof(open_error), "%s",
                 db->err.msg[0] ? db->err.msg : qmdb_strerror(rc));
        db_free(db);
        return rc;
    }
    *out = db;
    return 0;
}

int
qmdb_close(qmdb_db *db)
{
    if (!db)
        return 0;
    if (db->flusher_on) {
        /* The flusher finishes the block in its slot before it stops. */
        pthread_mutex_lock(&db->mu);
        db->stop = true;
        pthread_cond_broadcast(&db->cv);
        pthread_mutex_unlock(&db->mu);
        pthread_join(db->flusher, NULL);
    }
    /* Hybrid indexer: a checkpoint of the committed state, so the next open skips the log
     * scan. Only when every applied block is durable; a failure costs the next open a
     * rebuild, never data. */
    int rc = 0;
    if (!db->par.rdonly && db->par.hybrid && !db_fatal(db) && db->submitted == db->meta.height)
        rc = qm_pool_run(db_pool(db, false), QM_SHARD_COUNT, job_shard_checkpoint, db);
    db_free(db);
    return rc;
}

const char *
qmdb_last_error(qmdb_db *db)
{
    return db ? db->err.msg : "";
}

uint64_t
qmdb_height(qmdb_db *db)
{
    pthread_mutex_lock(&db->mu);
    u64 h = db->meta.height;
    pthread_mutex_unlock(&db->mu);
    return h;
}

int
qmdb_root(qmdb_db *db, uint64_t height, uint8_t out[32])
{
    if (db_fatal(db))
        return QMDB_PANIC;
    pthread_mutex_lock(&db->mu);
    u64 top = db->meta.height;
    if (height == UINT64_MAX || height == top)
        memcpy(out, db->meta.state_root, 32);
    pthread_mutex_unlock(&db->mu);
    if (height == UINT64_MAX || height == top)
        return 0;
    if (height > top)
        return qm_err_set(&db->err, QMDB_NOTFOUND, "height %" PRIu64 " is above the latest (%" PRIu64 ")",
                          height, top);
    int rc = qm_io_pread_full(db->roots_fd, out, 32, 32 * height);
    if (rc)
        return qm_err_set(&db->err, rc, "%s/ROOTS: read at %" PRIu64 ": %s", db->dir,
                          32 * height, qmdb_strerror(rc));
    return 0;
}

int
qmdb_shard_root(qmdb_db *db, unsigned shard, uint8_t out[32])
{
    if (db_fatal(db))
        return QMDB_PANIC;
    if (shard >= QM_SHARD_COUNT)
        return QMDB_INVALID;
    pthread_mutex_lock(&db->mu);
    memcpy(out, db->meta.shard[shard].root, 32);
    pthread_mutex_unlock(&db->mu);
    return 0;
}

int
qmdb_get(qmdb_db *db, const void *key, size_t klen, void *buf, size_t cap, size_t *vlen)
{
    if (db_fatal(db))
        return QMDB_PANIC;
    if (!key || klen == 0 || klen > QMDB_MAX_KEY_LEN || (cap > 0 && !buf) || !vlen)
        return QMDB_INVALID;
    u8 kh[32];
    qm_sha256(key, klen, kh);
    qm_shard *s = &db->shard[qm_shard_of(kh)];
    qm_entry e;
    u64 pos;
    u8 stackbuf[512];
    qm_ebuf eb = {stackbuf, sizeof(stackbuf), NULL};
    pthread_rwlock_rdlock(&db->rw);
    int rc = qm_shard_get(s, kh, key, (u32)klen, &eb, &e, &pos);
    /* A read between blocks is usually the read of a read-modify-write: keep the entry so
     * that applying the write in the next block does not read it from the log again. */
    if (!rc && !db->par.rdonly)
        qm_shard_warm_put(s, pos, eb.p, e.stored_len, kh);
    pthread_rwlock_unlock(&db->rw);
    if (!rc) {
        *vlen = e.vlen;
        if (cap < e.vlen)
            rc = QMDB_BUFFER_TOO_SMALL;
        else
            memcpy(buf, e.value, e.vlen);
    }
    qm_ebuf_free(&eb);
    return rc;
}

/* Batched reads; committed: the durable state (pre-images of in-flight blocks first). */
static int
db_get_many(qmdb_db *db, qmdb_read *reads, size_t n, bool committed)
{
    if (db_fatal(db))
        return QMDB_PANIC;
    if (n > 0 && !reads)
        return QMDB_INVALID;
    pthread_rwlock_rdlock(&db->rw);
    qm_undo *pre[2][QM_SHARD_COUNT];
    unsigned npre = 0;
    if (committed) {
        /* Blocks durable+1 .. submitted are in flight (at most two); their maps stay intact
         * while the reader lock is held. */
        pthread_mutex_lock(&db->mu);
        for (u64 h = db->meta.height + 1; h <= db->submitted && npre < 2; h++, npre++)
            for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
                pre[npre][i] = &db->undo[h & 1][i];
        pthread_mutex_unlock(&db->mu);
    }
    /* Reads of the applied state in a writable database are the next block's reads. */
    int rc = qm_get_many(db->shard, db->rio, reads, n, pre, npre, !committed && !db->par.rdonly);
    pthread_rwlock_unlock(&db->rw);
    return rc;
}

int
qmdb_get_many(qmdb_db *db, qmdb_read *reads, size_t n)
{
    return db_get_many(db, reads, n, false);
}

int
qmdb_get_many_committed(qmdb_db *db, qmdb_read *reads, size_t n)
{
    return db_get_many(db, reads, n, true);
}

int
qmdb_get_committed(qmdb_db *db, const void *key, size_t klen, void *buf, size_t cap,
                   size_t *vlen)
{
    if (!vlen)
        return QMDB_INVALID;
    qmdb_read r = {key, klen, buf, cap, 0, 0};
    int rc = db_get_many(db, &r, 1, true);
    if (rc)
        return rc;
    *vlen = r.vlen;
    return r.rc;
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
        db->shard[i].undo = &db->undo[h & 1][i];
        /* Hybrid indexer: install a finished merge, start the next (writer lock held). */
        QM_TRY(qm_shard_hix_maintain(&db->shard[i], h));
    }
    if (db->rio)
        QM_TRY(qm_prefetch_block(db->shard, db->rio, &db->cs, &db->pf));
    QM_TRY(qm_pool_run(db_pool(db, false), QM_SHARD_COUNT, job_shard_update, db));
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
        if (db->shard[i].index.hyb)
            qm_hix_memo_reset(db->shard[i].index.hyb);
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

static int
db_pipeline_start(qmdb_db *db, const qmdb_options *opt)
{
    /* Batched reads need the real file descriptors; a test I/O layer gets synchronous ones. */
    if (qm_io_get() == qm_io_posix()) {
        unsigned qd = opt->read_queue_depth ? opt->read_queue_depth : 64;
        QM_RET(qm_rio_new(qd, (opt->flags & QMDB_OPEN_DIRECT_IO) != 0, &db->rio));
    }
    const char *env = getenv("QMDB_PIPELINE");
    db->pipeline = !db->par.rdonly && !(opt->flags & QMDB_OPEN_NO_PIPELINE) &&
                   !(env && atoi(env) == 0) && qm_io_get() == qm_io_posix();
    if (!db->pipeline)
        return 0;
    int e = pthread_create(&db->flusher, NULL, flusher_main, db);
    if (e)
        return qm_err_set(&db->err, -e, "cannot start the flusher thread: %s", strerror(e));
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
static int
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
                          "block height %" PRIu64 " is not the last submitted height + 1 (%" PRIu64 ")",
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
qmdb_wait(qmdb_db *db, uint64_t height, uint8_t root_out[32])
{
    if (height > db->submitted)
        return qm_err_set(&db->err, QMDB_BAD_HEIGHT,
                          "block %" PRIu64 " was not submitted (last: %" PRIu64 ")", height,
                          db->submitted);
    QM_RET(db_wait_durable(db, height));
    return root_out ? qmdb_root(db, height, root_out) : 0;
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
    qm_meta m;
    db_fill_meta(db, &m, db->meta.height, db->meta.seq + 1);
    /* Same height and root: only the heads move. ROOTS is rewritten with the same bytes. */
    int rc = db_take_tickets(db, m.height);
    if (!rc)
        rc = db_make_durable(db, &m, false);
    if (!rc) {
        pthread_rwlock_wrlock(&db->rw);
        db_apply_prunes(db);
        pthread_rwlock_unlock(&db->rw);
    }
    if (rc)
        db_set_fatal(db);
    return rc;
}

int
qmdb_stat(qmdb_db *db, qmdb_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (db_fatal(db))
        return QMDB_PANIC;
    QM_RET(db_drain(db));
    st->height = db->meta.height;
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++) {
        qm_shard *s = &db->shard[i];
        st->live_with_sentries += s->live;
        st->total_entries += s->tree.next_sn;
        st->unpruned_entries += s->tree.next_sn - (s->tree.first_twig << QM_TWIG_SHIFT);
        st->index_dram_bytes += qm_ix_dram_bytes(&s->index);
        if (s->index.hyb) {
            st->cache_dram_bytes += qm_hix_memo_bytes(s->index.hyb);
            st->index_ssd_bytes += qm_hix_ssd_bytes(s->index.hyb);
            st->index_merges += qm_hix_merges(s->index.hyb);
            st->index_page_reads += qm_hix_page_reads(s->index.hyb);
            st->indexer = QMDB_INDEXER_HYBRID;
        }
        st->index_resumed_shards += s->index_resumed;
        st->index_replayed_blocks += s->hix_replayed_blocks;
        st->index_replayed_changes += s->hix_replayed_changes;
        st->tree_dram_bytes += qm_tree_dram_bytes(&s->tree);
        st->entry_file_bytes += qm_hpfile_disk_bytes(&s->entries);
        st->twig_file_bytes += qm_hpfile_disk_bytes(&s->twigs) + qm_hpfile_disk_bytes(&s->tmeta);
        st->compactions += s->compactions;
        pthread_mutex_lock(&s->warm_mu);
        st->warm_hits += s->warm.hits;
        st->cache_dram_bytes += qm_warm_dram_bytes(&s->warm);
        pthread_mutex_unlock(&s->warm_mu);
        st->cache_dram_bytes += qm_undo_dram_bytes(&db->undo[0][i]) +
                                qm_undo_dram_bytes(&db->undo[1][i]);
    }
    st->batched_reads = db->rio ? qm_rio_reads(db->rio) : 0;
    st->sha256_compressions = __atomic_load_n(&db->compressions, __ATOMIC_RELAXED);
    st->blocks_committed = db->blocks;
    st->pipeline = db->pipeline;
    st->io_uring = db->rio && qm_rio_uring(db->rio);
    st->live_entries = st->live_with_sentries - QM_SHARD_COUNT * QM_SENTRIES_PER_SHARD;
    st->ssd_bytes = st->entry_file_bytes + st->twig_file_bytes + st->index_ssd_bytes +
                    32 * (db->meta.height + 1) + 2 * QM_META_SLOT;
    st->pruned_twigs = db->pruned_twigs;
    st->compact_thres = db->par.compact_thres;
    st->utilization_ratio = db->par.util_ratio;
    st->utilization_div = db->par.util_div;
    st->history_blocks = db->par.history_blocks;
    return 0;
}

/* ---- Proofs (issue 4): the prover's view of the handle (proof.h) ------------------------ */

int
qm_db_proof_ctx(qmdb_db *db, qm_proof_ctx *ctx)
{
    if (db_fatal(db))
        return QMDB_PANIC;
    QM_RET(db_drain(db));
    ctx->shards = db->shard;
    ctx->height = db->meta.height;
    ctx->err = &db->err;
    ctx->cache = &db->proof_cache;
    return 0;
}

/* ---- Offline check (issue 5): the checker's view of the handle (check.h) ---------------- */

void
qm_db_check_view(qmdb_db *db, qm_check_view *v)
{
    (void)db_drain(db);
    v->dir = db->dir;
    v->shards = db->shard;
    v->meta = &db->meta;
    v->roots_fd = db->roots_fd;
}
