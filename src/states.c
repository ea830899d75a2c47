/* SPDX-License-Identifier: Apache-2.0 */
/*
 * states.c -- the per-height state records, file `STATES` (format in states.h and
 * FORMAT.md "STATES"):
 *   header (64 bytes): magic "QMDBSTAT" | version 1 (4) | record length 664 (4) |
 *     capacity C (8) | first height (8) | CRC-32C of [0, 32) (4) | zero (28)
 *   prune slots at 64 and 96 (a rollback's prune_max, slot seq mod 2): prune_max (8) |
 *     seq (8) | CRC-32C of [0, 16) (4) | zero (12)
 *   record of height h at 128 + 664 * (h mod C): height (8) | prune_max (8) |
 *     16 x (next_sn, sn_start, sn_start_pos, live, entry_size) (640) | CRC-32C of [0, 656)
 *     (4) | zero (4)
 * Thread: the committing thread.
 */
#include "states.h"

#include "codec.h"
#include "io.h"

#include <fcntl.h>
#include <stdio.h>

static const u8 STATES_MAGIC[8] = {'Q', 'M', 'D', 'B', 'S', 'T', 'A', 'T'};
#define STATES_VERSION 1u
#define REC_CRC (QM_STATES_REC - 8u)

u64
qm_states_window(u64 history_blocks)
{
    return QM_MIN(history_blocks, (u64)QM_STATES_MAX_WINDOW);
}

/* The newest valid prune slot of the 64 bytes at offset 64. */
static void
prune_slots_read(qm_states *st, const u8 *b)
{
    st->prune_max = st->prune_seq = 0;
    for (unsigned k = 0; k < 2; k++) {
        const u8 *p = b + 32 * k;
        u64 seq = qm_get_u64le(p + 8);
        if (seq && qm_get_u32le(p + 16) == qm_crc32c(0, p, 16) && seq > st->prune_seq) {
            st->prune_seq = seq;
            st->prune_max = qm_get_u64le(p);
        }
    }
}

static void
states_path(const char *dir, char *out, size_t cap)
{
    snprintf(out, cap, "%s/STATES", dir);
}

static int
states_create(const qm_io *io, const char *path, const char *dir, u64 cap, u64 first, qm_states *st,
              qm_err *err)
{
    int fd = io->open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return qm_err_set(err, fd, "cannot create %s: %s", path, qmdb_strerror(fd));
    u8 h[QM_STATES_HDR];
    memset(h, 0, sizeof(h));
    memcpy(h, STATES_MAGIC, 8);
    qm_put_u32le(h + 8, STATES_VERSION);
    qm_put_u32le(h + 12, QM_STATES_REC);
    qm_put_u64le(h + 16, cap);
    qm_put_u64le(h + 24, first);
    qm_put_u32le(h + 32, qm_crc32c(0, h, 32));
    int rc = qm_io_pwrite_full(fd, h, sizeof(h), 0);
    if (!rc)
        rc = io->fsync(fd);
    if (!rc)
        rc = qm_io_fsync_dir(dir);
    if (rc) {
        io->close(fd);
        return qm_err_set(err, rc, "cannot write %s: %s", path, qmdb_strerror(rc));
    }
    st->fd = fd;
    st->cap = cap;
    st->first = first;
    st->prune_max = st->prune_seq = 0;
    return 0;
}

int
qm_states_open(const char *dir, u64 cap, u64 first, qm_states *st, bool *created, qm_err *err)
{
    const qm_io *io = qm_io_get();
    char path[4200];
    states_path(dir, path, sizeof(path));
    *created = false;
    st->fd = -1;
    int fd = io->open(path, O_RDWR | O_CLOEXEC, 0644);
    if (fd >= 0) {
        u8 h[QM_STATES_RECS];
        size_t got = 0;
        int rc = qm_io_pread_upto(fd, h, sizeof(h), 0, &got);
        if (rc) {
            io->close(fd);
            return qm_err_set(err, rc, "read of %s: %s", path, qmdb_strerror(rc));
        }
        if (got >= QM_STATES_HDR && memcmp(h, STATES_MAGIC, 8) == 0 &&
            qm_get_u32le(h + 32) == qm_crc32c(0, h, 32) && qm_get_u32le(h + 8) == STATES_VERSION &&
            qm_get_u32le(h + 12) == QM_STATES_REC && qm_get_u64le(h + 16) >= 2) {
            st->fd = fd;
            st->cap = qm_get_u64le(h + 16);
            st->first = qm_get_u64le(h + 24);
            if (got < sizeof(h))
                memset(h + got, 0, sizeof(h) - got);
            prune_slots_read(st, h + QM_STATES_HDR);
            return 0;
        }
        /* A header torn while the file was created, or damaged: the records cannot be
         * placed. Start again (rollbacks below `first` are then refused). */
        io->close(fd);
    } else if (fd != -ENOENT) {
        return qm_err_set(err, fd, "cannot open %s: %s", path, qmdb_strerror(fd));
    }
    *created = true;
    return states_create(io, path, dir, cap, first, st, err);
}

int
qm_states_open_rdonly(const char *dir, qm_states *st, qm_err *err)
{
    const qm_io *io = qm_io_get();
    char path[4200];
    states_path(dir, path, sizeof(path));
    st->fd = -1;
    int fd = io->open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return qm_err_set(err, fd == -ENOENT ? QMDB_NOTFOUND : fd, "cannot open %s: %s", path,
                          qmdb_strerror(fd));
    u8 h[QM_STATES_RECS];
    size_t got = 0;
    int rc = qm_io_pread_upto(fd, h, sizeof(h), 0, &got);
    if (rc == 0 && got >= QM_STATES_HDR && memcmp(h, STATES_MAGIC, 8) == 0 &&
        qm_get_u32le(h + 32) == qm_crc32c(0, h, 32) && qm_get_u32le(h + 8) == STATES_VERSION &&
        qm_get_u32le(h + 12) == QM_STATES_REC && qm_get_u64le(h + 16) >= 2) {
        st->fd = fd;
        st->cap = qm_get_u64le(h + 16);
        st->first = qm_get_u64le(h + 24);
        if (got < sizeof(h))
            memset(h + got, 0, sizeof(h) - got);
        prune_slots_read(st, h + QM_STATES_HDR);
        return 0;
    }
    io->close(fd);
    return qm_err_set(err, rc ? rc : QMDB_NOTFOUND, "%s: no usable header", path);
}

void
qm_states_close(qm_states *st)
{
    if (st->fd >= 0)
        qm_io_get()->close(st->fd);
    st->fd = -1;
}

static u64
rec_off(const qm_states *st, u64 h)
{
    return QM_STATES_RECS + QM_STATES_REC * (h % st->cap);
}

int
qm_states_store(qm_states *st, const char *dir, const qm_states_rec *r, qm_err *err)
{
    u8 b[QM_STATES_REC];
    memset(b, 0, sizeof(b));
    qm_put_u64le(b, r->height);
    qm_put_u64le(b + 8, r->prune_max);
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++) {
        u8 *p = b + 16 + 40 * s;
        const qm_states_shard *x = &r->sh[s];
        qm_put_u64le(p, x->next_sn);
        qm_put_u64le(p + 8, x->sn_start);
        qm_put_u64le(p + 16, x->sn_start_pos);
        qm_put_u64le(p + 24, x->live);
        qm_put_u64le(p + 32, x->entry_size);
    }
    qm_put_u32le(b + REC_CRC, qm_crc32c(0, b, REC_CRC));
    u64 off = rec_off(st, r->height);
    int rc = qm_io_pwrite_full(st->fd, b, sizeof(b), off);
    if (!rc)
        rc = qm_io_get()->fsync(st->fd);
    if (rc)
        return qm_err_set(
            err, rc, "%s/STATES: write of the record of height %llu at offset %llu: %s", dir,
            (unsigned long long)r->height, (unsigned long long)off, qmdb_strerror(rc));
    return 0;
}

int
qm_states_store_prune(qm_states *st, const char *dir, u64 prune_max, qm_err *err)
{
    u8 b[32];
    memset(b, 0, sizeof(b));
    u64 seq = st->prune_seq + 1;
    qm_put_u64le(b, prune_max);
    qm_put_u64le(b + 8, seq);
    qm_put_u32le(b + 16, qm_crc32c(0, b, 16));
    u64 off = QM_STATES_HDR + 32 * (seq & 1);
    int rc = qm_io_pwrite_full(st->fd, b, sizeof(b), off);
    if (!rc)
        rc = qm_io_get()->fsync(st->fd);
    if (rc)
        return qm_err_set(err, rc, "%s/STATES: write of the prune slot at offset %llu: %s", dir,
                          (unsigned long long)off, qmdb_strerror(rc));
    st->prune_seq = seq;
    st->prune_max = prune_max;
    return 0;
}

int
qm_states_read(qm_states *st, const char *dir, u64 h, qm_states_rec *r, qm_err *err)
{
    if (h < st->first)
        return QMDB_NOTFOUND;
    u8 b[QM_STATES_REC];
    size_t got = 0;
    u64 off = rec_off(st, h);
    int rc = qm_io_pread_upto(st->fd, b, sizeof(b), off, &got);
    if (rc)
        return qm_err_set(err, rc, "%s/STATES: read of height %llu at offset %llu: %s", dir,
                          (unsigned long long)h, (unsigned long long)off, qmdb_strerror(rc));
    if (got < sizeof(b))
        return QMDB_NOTFOUND;
    if (qm_get_u32le(b + REC_CRC) != qm_crc32c(0, b, REC_CRC) || qm_get_u32le(b + REC_CRC + 4))
        return QM_CORRUPT(err,
                          "%s/STATES: the record slot of height %llu at offset %llu fails its "
                          "CRC",
                          dir, (unsigned long long)h, (unsigned long long)off);
    if (qm_get_u64le(b) != h)
        return QMDB_NOTFOUND;
    r->height = h;
    r->prune_max = qm_get_u64le(b + 8);
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++) {
        const u8 *p = b + 16 + 40 * s;
        qm_states_shard *x = &r->sh[s];
        x->next_sn = qm_get_u64le(p);
        x->sn_start = qm_get_u64le(p + 8);
        x->sn_start_pos = qm_get_u64le(p + 16);
        x->live = qm_get_u64le(p + 24);
        x->entry_size = qm_get_u64le(p + 32);
    }
    return 0;
}
