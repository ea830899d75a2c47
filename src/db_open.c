/* SPDX-License-Identifier: Apache-2.0 */
/*
 * db_open.c -- the life of a handle (db_int.h): options, qmdb_create, qmdb_open (the lock,
 * META under the damage rule, recovery of every shard on the pool, ROOTS, the salvage
 * repair), qmdb_close (the index checkpoint), and qmdb_check (META slots, then a
 * read-only handle for the checker).
 *
 * Thread: the caller's (create, open, close and check are writer functions).
 */
#include "check.h"
#include "db.h"
#include "db_int.h"
#include "io.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char open_error[512];

void
qm_open_error_set(const char *msg)
{
    snprintf(open_error, sizeof(open_error), "%s", msg);
}

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
    o->indexer = QMDB_INDEXER_AUTO;
    o->worker_threads = QMDB_AUTO;
    o->pipeline = QMDB_AUTO;
    o->io_uring = QMDB_AUTO;
    o->hybrid_merge_changes = 0;
}

/* The indexer of this open: options->indexer; when it is QMDB_INDEXER_AUTO,
 * QMDB_INDEXER=memory|hybrid chooses (tests run the whole suite both ways). The hybrid
 * merge size: options->hybrid_merge_changes, else QMDB_HIX_MERGE. */
static int
indexer_params(const qmdb_options *o, qm_params *par, qm_err *err)
{
    const char *env = getenv("QMDB_INDEXER");
    u32 kind = o->indexer;
    if (kind == QMDB_INDEXER_AUTO)
        kind = env && strcmp(env, "hybrid") == 0 ? QMDB_INDEXER_HYBRID : QMDB_INDEXER_MEMORY;
    if (kind != QMDB_INDEXER_MEMORY && kind != QMDB_INDEXER_HYBRID)
        return qm_err_set(err, QMDB_INVALID,
                          "indexer must be QMDB_INDEXER_MEMORY or "
                          "QMDB_INDEXER_HYBRID");
    par->hybrid = kind == QMDB_INDEXER_HYBRID;
    const char *m = getenv("QMDB_HIX_MERGE");
    par->hix_merge = o->hybrid_merge_changes ? o->hybrid_merge_changes
                     : m && *m               ? strtoull(m, NULL, 10)
                                             : 0;
    return 0;
}

/* The checks of the fields chosen at every open (create checks them too). */
static int
opt_check_open(const qmdb_options *o, qm_err *err)
{
    if (o->worker_threads < QMDB_AUTO || o->worker_threads > 15)
        return qm_err_set(err, QMDB_INVALID, "worker_threads must be QMDB_AUTO or 0..15");
    if (o->pipeline < QMDB_AUTO || o->pipeline > 1 || o->io_uring < QMDB_AUTO || o->io_uring > 1)
        return qm_err_set(err, QMDB_INVALID, "pipeline and io_uring must be QMDB_AUTO, 0 or 1");
    if (o->pipeline == 1 && (o->flags & QMDB_OPEN_NO_PIPELINE))
        return qm_err_set(err, QMDB_INVALID, "pipeline = 1 contradicts QMDB_OPEN_NO_PIPELINE");
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
    return opt_check_open(o, err);
}

/* Inter-process exclusion of writers: an exclusive flock on the database directory itself.
 * Unlike a lock file, the directory cannot be deleted or swapped while it holds the
 * database. The inode is checked against the path after locking, in case the directory was
 * renamed and replaced meanwhile. Read-only handles take no lock (see db_open_reader): they
 * read a durable state that a writer never changes, so they neither wait for a writer nor
 * keep one out. */
static int
db_lock(qmdb_db *db)
{
    if (db->par.rdonly)
        return 0;
    const qm_io *io = qm_io_get();
    int fd = io->open(db->dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return qm_err_set(&db->err, fd, "cannot open directory %s: %s", db->dir, qmdb_strerror(fd));
    db->lock_fd = fd;
    int rc = io->lock(fd, true);
    if (rc == -EWOULDBLOCK)
        return qm_err_set(&db->err, QMDB_BUSY, "%s is in use by another writer", db->dir);
    if (rc)
        return qm_err_set(&db->err, rc, "cannot lock %s: %s", db->dir, qmdb_strerror(rc));
    struct stat a, b;
    if (fstat(db->lock_fd, &a) < 0 || stat(db->dir, &b) < 0 || a.st_dev != b.st_dev ||
        a.st_ino != b.st_ino)
        return qm_err_set(&db->err, QMDB_BUSY, "%s was replaced while it was being opened",
                          db->dir);
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
        io->close(db->lock_fd);
    if (db->states_on)
        qm_states_close(&db->states);
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
        return qm_err_set(&db->err, fd == -ENOENT ? QMDB_CORRUPT : fd, "cannot open %s: %s", path,
                          qmdb_strerror(fd));
    db->roots_fd = fd;
    return 0;
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
    return qm_shard_checkpoint(&db->shard[i], db->dir, db->meta.height);
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
    QM_TRY(db_pools_new(db, opt));
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        QM_TRY(qm_shard_create(&db->shard[s], s, dir, &db->par, &db->err));
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        QM_TRY(qm_shard_seal(&db->shard[s]));
    QM_TRY(roots_open(db, true));
    QM_TRY(db_store_state(db, 0, 0));
    QM_TRY(qm_io_fsync_dir(dir));
out:
    if (rc)
        snprintf(open_error, sizeof(open_error), "%s",
                 db->err.msg[0] ? db->err.msg : qmdb_strerror(rc));
    db_free(db);
    return rc;
fail_early:
    snprintf(open_error, sizeof(open_error), "%s", err.msg);
    return rc;
}

/* One attempt at opening (qmdb_open retries a read-only one). *seq is the META sequence the
 * attempt read (*have_seq false if it read none). */
static int
db_open_once(const char *dir, const qmdb_options *opt, qmdb_db **out, u64 *seq, bool *have_seq)
{
    qmdb_db *db = db_alloc(dir);
    if (!db)
        return -ENOMEM;
    int rc;
    db->par.rdonly = (opt->flags & QMDB_OPEN_RDONLY) != 0;
    db->par.verify = (opt->flags & QMDB_OPEN_FAST) == 0;
    db->auto_prune = !(opt->flags & QMDB_OPEN_NO_AUTO_PRUNE);
    bool salvage = (opt->flags & QMDB_OPEN_SALVAGE) != 0;
    *have_seq = false;
    QM_TRY(qm_meta_load(dir, salvage, &db->meta, &db->err));
    if (!db->par.rdonly) {
        QM_TRY(db_lock(db));
        /* Reload under the lock: another process may have committed meanwhile. */
        QM_TRY(qm_meta_load(dir, salvage, &db->meta, &db->err));
    }
    *seq = db->meta.seq;
    *have_seq = true;
    db->par.compact_thres = db->meta.compact_thres;
    db->par.util_ratio = db->meta.util_ratio;
    db->par.util_div = db->meta.util_div;
    db->par.history_blocks =
        (opt->flags & QMDB_OPEN_SET_HISTORY) ? opt->history_blocks : db->meta.history_blocks;
    db->par.entry_seg = db->meta.entry_seg;
    db->par.twig_seg = db->meta.twig_seg;
    db->par.height = db->meta.height;
    QM_TRY(indexer_params(opt, &db->par, &db->err));
    QM_TRY(db_pools_new(db, opt));
    if (!db->par.hybrid && !db->par.verify) /* the index checkpoint is read whole */
        for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
            qm_ckpt_prefetch(dir, s);
    QM_TRY(qm_pool_run(db_pool(db, false), QM_SHARD_COUNT, job_shard_open, db));
    /* Every shard opened: a message left by a checkpoint that did not fit (the shard scanned
     * the log instead) describes no failure. Cleared here, not by the shards' jobs, which
     * share db->err. */
    db->err.msg[0] = '\0';
    u8 root[32];
    global_root(db->shard, root);
    if (memcmp(root, db->meta.state_root, 32) != 0) {
        rc = QM_CORRUPT(&db->err, "%s/META: state root does not match the shard roots", dir);
        goto out;
    }
    QM_TRY(roots_open(db, false));
    u64 rsize;
    QM_TRY(qm_io_get()->fsize(db->roots_fd, &rsize));
    u64 want = QM_ROOTS_REC * (db->meta.height + 1);
    if (rsize < want) {
        rc = QM_CORRUPT(&db->err, "%s/ROOTS: %" PRIu64 " bytes, height %" PRIu64 " needs %" PRIu64,
                        dir, rsize, db->meta.height, want);
        goto out;
    }
    if (rsize > want && !db->par.rdonly)
        QM_TRY(qm_io_get()->ftruncate(db->roots_fd, want));
    QM_TRY(qm_roots_read(db->roots_fd, dir, db->meta.height, root, &db->err));
    if (memcmp(root, db->meta.state_root, 32) != 0) {
        rc = QM_CORRUPT(&db->err,
                        "%s/ROOTS: root of height %" PRIu64 " at offset %" PRIu64
                        " differs from the metadata",
                        dir, db->meta.height, want - QM_ROOTS_REC);
        goto out;
    }
    if (getenv("QMDB_TRACE")) {
        FILE *f = fopen(getenv("QMDB_TRACE"), "a");
        for (unsigned s = 0; s < QM_SHARD_COUNT && f; s++)
            db->shard[s].trace = s == 0 ? f : fdopen(dup(fileno(f)), "a");
    }
    db->submitted = db->hashed = db->durable = db->meta.height;
    if (salvage && !db->par.rdonly) {
        /* Repair META: the next sequence (same height and state) overwrites the damaged slot,
         * so later opens need no flag. */
        QM_TRY(db_store_state(db, db->meta.height, db->meta.seq + 1));
    }
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

/* Whether a failed read-only open should try again: a writer in another process moved the
 * database on while the attempt ran (a new META sequence, so the attempt may have met files
 * the writer pruned meanwhile), or META could not be read at all, which a read racing the
 * writer's rewrite of a slot can cause (tried a few times: a damaged META stays damaged). */
static bool
db_reader_retry(const char *dir, bool salvage, bool have_seq, u64 seq, unsigned *meta_fails)
{
    qm_meta m;
    qm_err err = {{0}};
    if (qm_meta_load(dir, salvage, &m, &err) != 0)
        return ++*meta_fails <= 3;
    return !have_seq || m.seq != seq;
}

#define DB_READER_ATTEMPTS 50

/*
 * A read-only open takes no lock, so a writer process may commit, compact, prune and reopen
 * while it runs. The attempt reads one META (a durable state) and never reads past the sizes
 * it records; the files of that state hold their bytes until a writer prunes their segments,
 * and an attempt that fails because it met such a change (META has moved on) is retried
 * against the newer state. Once open, the handle keeps every segment of its state open, so a
 * later prune by the writer does not take data away from it.
 */
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
    {
        qm_err oerr = {{0}};
        int orc = opt_check_open(opt, &oerr);
        if (orc) {
            snprintf(open_error, sizeof(open_error), "%s", oerr.msg);
            return orc;
        }
    }
    struct stat st;
    if (stat(dir, &st) < 0) {
        int e = errno;
        snprintf(open_error, sizeof(open_error), "%s: %s", dir, strerror(e));
        return e == ENOENT ? QMDB_NOTADB : -e;
    }
    bool rdonly = (opt->flags & QMDB_OPEN_RDONLY) != 0;
    bool salvage = (opt->flags & QMDB_OPEN_SALVAGE) != 0;
    unsigned meta_fails = 0;
    for (unsigned attempt = 1;; attempt++) {
        u64 seq = 0;
        bool have_seq = false;
        int rc = db_open_once(dir, opt, out, &seq, &have_seq);
        if (rc == 0 || !rdonly || rc == QMDB_NOTADB || rc == QMDB_INVALID ||
            rc == QMDB_VERSION_MISMATCH || rc == -ENOMEM || rc == -EACCES || rc == -EPERM ||
            !db_reader_retry(dir, salvage, have_seq, seq, &meta_fails))
            return rc;
        if (attempt == DB_READER_ATTEMPTS) {
            size_t n = strlen(open_error);
            snprintf(open_error + n, sizeof(open_error) - n,
                     " (a writer changed the database during each of %u attempts to open it;"
                     " try again)",
                     attempt);
            return QMDB_BUSY;
        }
        struct timespec ts = {0, (long)QM_MIN(attempt, 20u) * 1000000L};
        nanosleep(&ts, NULL);
    }
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
    /* Either indexer: a checkpoint of the committed state (the run files sXX.hix), so the
     * next fast open skips the log scan. Only when every applied block is durable; a failure
     * costs the next open a scan, never data: QMDB_NO_CHECKPOINT, the cause in open_error. */
    int rc = 0;
    if (!db->par.rdonly && !db_fatal(db) && db->submitted == db->meta.height) {
        db->err.msg[0] = '\0';
        rc = qm_pool_run(db_pool(db, false), QM_SHARD_COUNT, job_shard_checkpoint, db);
    }
    if (rc)
        snprintf(open_error, sizeof(open_error), "%s",
                 db->err.msg[0] ? db->err.msg : qmdb_strerror(rc));
    /* The history caches that proofs built (sXX.hist), so that the next open's first
     * historical proof needs no log scan. Best effort: a file that is missing or stale only
     * costs that scan. */
    if (!db->par.rdonly && !db_fatal(db) && db->submitted == db->meta.height && db->proof_cache) {
        qm_proof_ctx ctx;
        db_proof_ctx(db, &ctx);
        (void)qm_proof_cache_save(&ctx);
    }
    db_free(db);
    return rc ? QMDB_NO_CHECKPOINT : 0;
}

/* The full offline check (check.c): META slots, a read-only verifying open, then the checks
 * of the open handle. */
int
qmdb_check(const char *dir, qmdb_check_fn fn, void *arg, uint64_t *problems)
{
    if (problems)
        *problems = 0;
    if (!dir)
        return QMDB_INVALID;
    u64 n = qm_check_meta(dir, fn, arg);
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = QMDB_OPEN_RDONLY;
    qmdb_db *db = NULL;
    int rc = qmdb_open(dir, &o, &db);
    if (rc == QMDB_BUSY || rc == QMDB_NOTADB || rc == QMDB_VERSION_MISMATCH || rc == QMDB_INVALID) {
        if (problems)
            *problems = n;
        return rc; /* no answer about the files: not a problem found in them */
    }
    if (rc) {
        char msg[768];
        snprintf(msg, sizeof(msg), "open: %s: %s", qmdb_strerror(rc), qmdb_open_error());
        n++;
        if (fn)
            fn(arg, msg);
    } else {
        qm_check_view v;
        qm_db_check_view(db, &v);
        rc = qm_check_run(&v, fn, arg, &n);
        qmdb_close(db);
    }
    if (problems)
        *problems = n;
    if (rc && rc != QMDB_CORRUPT)
        return rc;
    return n ? QMDB_CORRUPT : 0;
}
