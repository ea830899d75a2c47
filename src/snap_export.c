/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_export.c -- qmdb_snapshot_export: hands the chunk builder (snapshot.c) the handle's
 * committed shards and writes what it builds: one file per chunk, named
 * sXX-TTTTTTTTTTTT.qmsc (shard, first twig; its write-back started at once, every chunk
 * fsynced before the MANIFEST), then the MANIFEST (manifest.c) with
 * every chunk's size and SHA-256, written last so that a MANIFEST means a complete export.
 * Formats: snap_fmt.h, manifest.h, docs/SYNC.md.
 *
 * Thread: the handle's one caller (a writer function: every submitted block is drained
 * first, so the shards hold exactly the committed state while it runs); the sink runs on the
 * handle's worker pool, one shard per job, so it takes the context's mutex.
 */
#include "db_int.h"
#include "hash.h"
#include "manifest.h"
#include "pool.h"
#include "snapshot.h"
#include "states.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct ex_ctx {
    const char *dir;
    pthread_mutex_t mu; /* guards man and bytes: shards are cut concurrently */
    qm_manifest man;
    qm_err *err;
    u64 bytes;
} ex_ctx;

static int
ex_write_file(const char *path, const u8 *p, size_t len, qm_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return qm_err_set(err, -errno, "%s: %s", path, strerror(errno));
    int rc = 0;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, p + done, len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        done += (size_t)n;
    }
    /* Start the write-back now; the fsync of every chunk comes before the MANIFEST
     * (ex_sync_all), so the disk writes this chunk while the next one is built. */
    if (rc == 0)
        (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    close(fd);
    if (rc)
        return qm_err_set(err, rc, "%s: %s", path, strerror(-rc));
    return 0;
}

#define EX_SYNC_JOBS 16u

/* Pool job j: makes chunk files j, j + EX_SYNC_JOBS, ... of the manifest durable. */
static int
ex_sync_job(void *arg, size_t j)
{
    const ex_ctx *x = arg;
    for (u64 i = j; i < x->man.nchunks; i += EX_SYNC_JOBS) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", x->dir, x->man.chunks[i].name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        int rc = fd < 0 ? -errno : fsync(fd) != 0 ? -errno : 0;
        if (fd >= 0)
            close(fd);
        if (rc)
            return qm_err_set(x->err, rc, "%s: %s", path, strerror(-rc));
    }
    return 0;
}

/* Makes every chunk file of the manifest durable (before the MANIFEST is written), on the
 * handle's I/O pool: concurrent fsyncs let the device serve one cache flush for many files
 * (one after another, every file paid its own). */
static int
ex_sync_all(qmdb_db *db, ex_ctx *x)
{
    return qm_pool_run(db_pool(db, true), EX_SYNC_JOBS, ex_sync_job, x);
}

static int
ex_sink(void *arg, unsigned shard, u64 t0, u64 t1, const u8 *chunk, size_t len)
{
    (void)t1;
    ex_ctx *x = arg;
    char name[QM_CHUNK_NAME_MAX], path[4096];
    snprintf(name, sizeof(name), "s%02x-%012" PRIu64 ".qmsc", shard, t0);
    snprintf(path, sizeof(path), "%s/%s", x->dir, name);
    QM_RET(ex_write_file(path, chunk, len, x->err));
    u8 sha[32];
    qm_sha256(chunk, len, sha);
    pthread_mutex_lock(&x->mu);
    x->bytes += len;
    int rc = qm_manifest_add(&x->man, name, len, sha);
    pthread_mutex_unlock(&x->mu);
    return rc;
}

static int
ex_cmp(const void *a, const void *b)
{
    return strcmp(((const qm_mchunk *)a)->name, ((const qm_mchunk *)b)->name);
}

/* The shard states and the root of an earlier height h, from STATES (rollback.c's records)
 * and ROOTS. h must lie in the rollback window: at or above every pruned twig's last
 * deactivation (then every entry live at h is in an unpruned twig). */
static int
ex_state_of(qmdb_db *db, u64 h, qm_snap_at at[QM_SHARD_COUNT], u8 root[32], u64 *live)
{
    qm_states st;
    int rc = qm_states_open_rdonly(db->dir, &st, &db->err);
    if (rc)
        return rc == QMDB_NOTFOUND ? qm_err_set(&db->err, QMDB_PRUNED,
                                                "snapshot: no state records (STATES) to "
                                                "export height %" PRIu64 " from",
                                                h)
                                   : rc;
    qm_states_rec r, top;
    rc = qm_states_read(&st, db->dir, h, &r, &db->err);
    if (rc == 0)
        rc = qm_states_read(&st, db->dir, db->meta.height, &top, &db->err);
    u64 prune_max = st.prune_max;
    qm_states_close(&st);
    if (rc == QMDB_NOTFOUND)
        return qm_err_set(&db->err, QMDB_PRUNED,
                          "snapshot: height %" PRIu64 " is outside the history window", h);
    QM_RET(rc);
    prune_max = QM_MAX(prune_max, top.prune_max);
    if (h < prune_max)
        return qm_err_set(&db->err, QMDB_PRUNED,
                          "snapshot: height %" PRIu64 " lies below pruned history (%" PRIu64 ")", h,
                          prune_max);
    *live = 0;
    for (unsigned k = 0; k < QM_SHARD_COUNT; k++) {
        at[k] = (qm_snap_at){r.sh[k].next_sn, r.sh[k].sn_start, r.sh[k].entry_size};
        *live += r.sh[k].live;
    }
    return db_root(db, h, root);
}

int
qmdb_snapshot_export(qmdb_db *db, const char *outdir, uint64_t height, uint64_t twigs_per_chunk,
                     qmdb_snapshot_stat *st)
{
    if (!db || !outdir || (st && st->struct_size < sizeof(*st)))
        return QMDB_INVALID;
    if (db_fatal(db))
        return QMDB_PANIC;
    QM_RET(db_drain(db));
    u64 H = height == UINT64_MAX ? db->meta.height : height;
    if (H > db->meta.height)
        return qm_err_set(&db->err, QMDB_NOTFOUND,
                          "snapshot: height %" PRIu64 " is above the latest (%" PRIu64 ")", H,
                          db->meta.height);
    qm_snap_at at[QM_SHARD_COUNT];
    u8 root[32];
    u64 live = 0;
    if (H < db->meta.height)
        QM_RET(ex_state_of(db, H, at, root, &live));
    else
        memcpy(root, db->meta.state_root, 32);
    if (mkdir(outdir, 0755) != 0 && errno != EEXIST)
        return qm_err_set(&db->err, -errno, "%s: %s", outdir, strerror(errno));
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", outdir, QM_MANIFEST_NAME);
    if (access(path, F_OK) == 0)
        return qm_err_set(&db->err, QMDB_EXISTS, "%s: a snapshot is already there", path);
    ex_ctx x = {.dir = outdir, .mu = PTHREAD_MUTEX_INITIALIZER, .err = &db->err};
    x.man.height = H;
    memcpy(x.man.root, root, 32);
    x.man.compact_thres = db->par.compact_thres;
    x.man.util_ratio = db->par.util_ratio;
    x.man.util_div = db->par.util_div;
    x.man.history_blocks = db->par.history_blocks;
    x.man.entry_seg = db->par.entry_seg;
    x.man.twig_seg = db->par.twig_seg;
    u64 carried = 0;
    qm_snap_ctx c = {.shards = db->shard,
                     .height = H,
                     .at = H < db->meta.height ? at : NULL,
                     .root = root,
                     .err = &db->err,
                     .entries = &carried,
                     .pool = db_pool(db, false)};
    int rc = qm_snap_export(&c, twigs_per_chunk ? twigs_per_chunk : 8, ex_sink, &x);
    /* The shards' chunks arrive interleaved; the MANIFEST lists them by name, which is shard
     * then first twig (both zero-padded), as a sequential export adds them. */
    if (rc == 0)
        qsort(x.man.chunks, x.man.nchunks, sizeof(x.man.chunks[0]), ex_cmp);
    if (rc == 0)
        rc = ex_sync_all(db, &x);
    if (rc == 0)
        rc = qm_manifest_write(outdir, &x.man, &db->err);
    if (rc == 0 && st) {
        memset(st, 0, sizeof(*st));
        st->struct_size = sizeof(*st);
        st->height = H;
        memcpy(st->root, root, 32);
        st->chunks = x.man.nchunks;
        st->bytes = x.bytes;
        st->entries = carried;
        st->live = live;
        if (H == db->meta.height)
            for (unsigned k = 0; k < QM_SHARD_COUNT; k++)
                st->live += db->shard[k].live;
    }
    qm_manifest_free(&x.man);
    return rc;
}
