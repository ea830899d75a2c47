/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backup.c -- qmdb_backup: a consistent, openable copy of a database, taken through a handle
 * (typically read-only, while a writer keeps committing in another process). The copy holds
 * the handle's committed height: per shard the entry log [head, size), the twig file of the
 * unpruned full twigs and the whole twig-meta file, as the handle's META describes them (the
 * bytes below those sizes never change while the writer appends), ROOTS up to that height,
 * then META (sequence 0, the handle's state), written last. The copy is then opened with full
 * verification (every entry hashed, every root recomputed) and must have the handle's height
 * and root; a source changed under the copy (a segment pruned by the writer since the handle
 * opened, a rollback below the handle's height) fails the copy clearly. Not copied: STATES
 * (the copy creates it at its first commit, so it rolls back only to heights it committed
 * itself) and the index checkpoint (rebuilt by the verifying open).
 *
 * Thread: the handle's one caller.
 */
#include "db_int.h"
#include "segw.h"
#include "twigfile.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define BK_BUF (1u << 20)

/* Copies logical bytes [from, to) of f into the segment writer. */
static int
bk_copy(qm_hpfile *f, qm_segw *w, u64 from, u64 to, u8 *buf, qm_err *err)
{
    for (u64 off = from; off < to;) {
        size_t n = (size_t)QM_MIN((u64)BK_BUF, to - off);
        int rc = qm_hpfile_read(f, off, buf, n);
        if (rc)
            return qm_err_set(err, rc,
                              "%s: read at %" PRIu64 " failed (%s); if the writer pruned it "
                              "since this handle opened, open again and retry",
                              f->path_prefix, off, qmdb_strerror(rc));
        rc = qm_segw_write(w, off, buf, n);
        if (rc)
            return qm_err_set(err, rc, "%s: write failed: %s", w->prefix, strerror(-rc));
        off += n;
    }
    return 0;
}

static int
bk_shard(qmdb_db *db, unsigned k, const char *outdir, u8 *buf)
{
    qm_shard *s = &db->shard[k];
    const qm_shard_meta *m = &db->meta.shard[k];
    u64 nfull = m->next_sn >> QM_TWIG_SHIFT;
    char name[64];
    qm_segw w;
    snprintf(name, sizeof(name), "s%02x.entries", k);
    qm_segw_init(&w, outdir, name, db->par.entry_seg);
    int rc = bk_copy(&s->entries, &w, m->entry_head, m->entry_size, buf, &db->err);
    int r2 = qm_segw_close(&w);
    QM_RET(rc ? rc : r2);
    snprintf(name, sizeof(name), "s%02x.twig", k);
    qm_segw_init(&w, outdir, name, db->par.twig_seg);
    rc = bk_copy(&s->twigs, &w, m->first_twig * QM_TWIG_REC, nfull * QM_TWIG_REC, buf, &db->err);
    r2 = qm_segw_close(&w);
    QM_RET(rc ? rc : r2);
    snprintf(name, sizeof(name), "s%02x.tmeta", k);
    qm_segw_init(&w, outdir, name, 1ull << 30);
    rc = bk_copy(&s->tmeta, &w, 0, nfull * QM_TMETA_REC, buf, &db->err);
    r2 = qm_segw_close(&w);
    return rc ? rc : r2;
}

static int
bk_roots(qmdb_db *db, const char *outdir, u8 *buf)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/ROOTS", outdir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return qm_err_set(&db->err, -errno, "%s: %s", path, strerror(errno));
    u64 need = QM_ROOTS_REC * (db->meta.height + 1);
    int rc = 0;
    for (u64 off = 0; off < need && rc == 0;) {
        size_t n = (size_t)QM_MIN((u64)BK_BUF, need - off);
        rc = qm_io_pread_full(db->roots_fd, buf, n, off);
        if (rc == 0 && pwrite(fd, buf, n, (off_t)off) != (ssize_t)n)
            rc = -errno ? -errno : -EIO;
        off += n;
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    close(fd);
    return rc ? qm_err_set(&db->err, rc, "%s: copy failed: %s", path, qmdb_strerror(rc)) : 0;
}

int
qmdb_backup(qmdb_db *db, const char *outdir)
{
    if (!db || !outdir)
        return QMDB_INVALID;
    if (db_fatal(db))
        return QMDB_PANIC;
    QM_RET(db_drain(db));
    if (mkdir(outdir, 0755) != 0 && errno != EEXIST)
        return qm_err_set(&db->err, -errno, "%s: %s", outdir, strerror(errno));
    char path[4200];
    snprintf(path, sizeof(path), "%s/META", outdir);
    if (access(path, F_OK) == 0)
        return qm_err_set(&db->err, QMDB_EXISTS, "%s: already a database", outdir);
    u8 *buf = malloc(BK_BUF);
    if (!buf)
        return -ENOMEM;
    int rc = 0;
    for (unsigned k = 0; k < QM_SHARD_COUNT && rc == 0; k++)
        rc = bk_shard(db, k, outdir, buf);
    if (rc == 0)
        rc = bk_roots(db, outdir, buf);
    free(buf);
    if (rc)
        return rc;
    int dfd = open(outdir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    qm_meta m = db->meta;
    m.seq = 0; /* a fresh META: slot 0, slot 1 blank */
    int mfd = -1;
    rc = qm_meta_store(outdir, &mfd, &m, &db->err);
    if (mfd >= 0)
        close(mfd);
    if (rc)
        return rc;
    /* The copy must open with full verification at the handle's height and root. */
    qmdb_db *cp = NULL;
    qmdb_options opt;
    qmdb_options_init(&opt);
    opt.flags |= QMDB_OPEN_RDONLY;
    rc = qmdb_open(outdir, &opt, &cp);
    if (rc)
        return qm_err_set(&db->err, rc,
                          "the copy does not verify (%s): was the source rolled "
                          "back during the copy?",
                          qmdb_open_error());
    u8 root[32];
    rc = qmdb_root(cp, UINT64_MAX, root);
    if (rc == 0 && (qmdb_height(cp) != db->meta.height || memcmp(root, db->meta.state_root, 32)))
        rc = qm_err_set(&db->err, QMDB_CORRUPT,
                        "the copy's height or root differs from the source's");
    qmdb_close(cp);
    return rc;
}
