/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta.c -- metadata slots (format in meta.h). Thread: the committing thread.
 */
#include "meta.h"

#include <fcntl.h>
#include <stdio.h>

#include "codec.h"
#include "io.h"

static const u8 META_MAGIC[8] = {'Q', 'M', 'D', 'B', 'M', 'E', 'T', 'A'};

void
qm_meta_encode(const qm_meta *m, u8 *b)
{
    memset(b, 0, QM_META_SLOT);
    memcpy(b, META_MAGIC, 8);
    qm_put_u32le(b + 8, QMDB_FORMAT_VERSION);
    qm_put_u32le(b + 12, QM_META_LEN);
    qm_put_u64le(b + 16, m->seq);
    qm_put_u64le(b + 24, m->height);
    qm_put_u64le(b + 32, m->compact_thres);
    qm_put_u32le(b + 40, m->util_ratio);
    qm_put_u32le(b + 44, m->util_div);
    qm_put_u64le(b + 48, m->history_blocks);
    qm_put_u64le(b + 56, m->entry_seg);
    qm_put_u64le(b + 64, m->twig_seg);
    memcpy(b + 72, m->state_root, 32);
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++) {
        u8 *p = b + 104 + 96 * s;
        const qm_shard_meta *sm = &m->shard[s];
        qm_put_u64le(p, sm->next_sn);
        qm_put_u64le(p + 8, sm->sn_start);
        qm_put_u64le(p + 16, sm->sn_start_pos);
        qm_put_u64le(p + 24, sm->live);
        qm_put_u64le(p + 32, sm->entry_size);
        qm_put_u64le(p + 40, sm->entry_head);
        qm_put_u64le(p + 48, sm->first_twig);
        memcpy(p + 64, sm->root, 32);
    }
    qm_put_u32le(b + QM_META_LEN - 4, qm_crc32c(0, b, QM_META_LEN - 4));
    /* Second copy in the same slot (see meta.h): a damaged byte in one copy loses nothing. */
    memcpy(b + QM_META_COPY, b, QM_META_LEN);
}

/* Decodes one slot: the valid copy with the higher sequence number. (A torn write can leave
 * one copy new and the other old; any valid record's data was durable before it was
 * written, so the newer one is safe to use.) */
static int
meta_decode_slot(const u8 *b, size_t len, qm_meta *m)
{
    qm_meta c;
    int rc = qm_meta_decode(b, len, m);
    if (rc == QMDB_VERSION_MISMATCH || len < QM_META_COPY + QM_META_LEN ||
        qm_meta_decode(b + QM_META_COPY, len - QM_META_COPY, &c) != 0)
        return rc;
    if (rc != 0 || c.seq > m->seq)
        *m = c;
    return 0;
}

int
qm_meta_decode(const u8 *b, size_t len, qm_meta *m)
{
    if (len < QM_META_LEN || memcmp(b, META_MAGIC, 8) != 0)
        return QMDB_CORRUPT;
    u32 ver = qm_get_u32le(b + 8);
    if (ver > QMDB_FORMAT_VERSION)
        return QMDB_VERSION_MISMATCH;
    if (ver != QMDB_FORMAT_VERSION || qm_get_u32le(b + 12) != QM_META_LEN)
        return QMDB_CORRUPT;
    if (qm_get_u32le(b + QM_META_LEN - 4) != qm_crc32c(0, b, QM_META_LEN - 4))
        return QMDB_CORRUPT;
    memset(m, 0, sizeof(*m));
    m->seq = qm_get_u64le(b + 16);
    m->height = qm_get_u64le(b + 24);
    m->compact_thres = qm_get_u64le(b + 32);
    m->util_ratio = qm_get_u32le(b + 40);
    m->util_div = qm_get_u32le(b + 44);
    m->history_blocks = qm_get_u64le(b + 48);
    m->entry_seg = qm_get_u64le(b + 56);
    m->twig_seg = qm_get_u64le(b + 64);
    memcpy(m->state_root, b + 72, 32);
    if (m->util_ratio == 0 || m->util_div == 0 || m->entry_seg < 65536 ||
        m->entry_seg % 4096 != 0 || m->twig_seg == 0 || m->twig_seg % (128 * 1024) != 0)
        return QMDB_CORRUPT;
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++) {
        const u8 *p = b + 104 + 96 * s;
        qm_shard_meta *sm = &m->shard[s];
        sm->next_sn = qm_get_u64le(p);
        sm->sn_start = qm_get_u64le(p + 8);
        sm->sn_start_pos = qm_get_u64le(p + 16);
        sm->live = qm_get_u64le(p + 24);
        sm->entry_size = qm_get_u64le(p + 32);
        sm->entry_head = qm_get_u64le(p + 40);
        sm->first_twig = qm_get_u64le(p + 48);
        memcpy(sm->root, p + 64, 32);
        if (sm->next_sn < QM_SENTRIES_PER_SHARD || sm->sn_start > sm->next_sn ||
            sm->live > sm->next_sn || sm->entry_head > sm->entry_size ||
            sm->sn_start_pos > sm->entry_size || sm->sn_start_pos % 8 != 0 ||
            sm->first_twig > (sm->next_sn >> QM_TWIG_SHIFT))
            return QMDB_CORRUPT;
    }
    return 0;
}

int
qm_meta_load(const char *dir, qm_meta *m, qm_err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/META", dir);
    const qm_io *io = qm_io_get();
    int fd = io->open(path, O_RDONLY, 0);
    if (fd == -ENOENT || fd == -ENOTDIR)
        return qm_err_set(err, QMDB_NOTADB, "%s: no META file: not a qmdb database", dir);
    if (fd < 0)
        return qm_err_set(err, fd, "cannot open %s: %s", path, qmdb_strerror(fd));
    u8 buf[2 * QM_META_SLOT];
    size_t got = 0;
    int rc = qm_io_pread_upto(fd, buf, sizeof(buf), 0, &got);
    io->close(fd);
    if (rc)
        return qm_err_set(err, rc, "cannot read %s: %s", path, qmdb_strerror(rc));
    qm_meta a, b;
    int ra = got >= QM_META_SLOT ? meta_decode_slot(buf, QM_META_SLOT, &a) : QMDB_CORRUPT;
    if (got < QM_META_SLOT && got >= QM_META_LEN)
        ra = meta_decode_slot(buf, got, &a);
    int rb = got >= 2 * QM_META_SLOT ? meta_decode_slot(buf + QM_META_SLOT, QM_META_SLOT, &b)
                                     : QMDB_CORRUPT;
    if (ra == QMDB_VERSION_MISMATCH || rb == QMDB_VERSION_MISMATCH)
        return qm_err_set(err, QMDB_VERSION_MISMATCH, "%s: written by a newer qmdb", path);
    if (ra && rb)
        return QM_CORRUPT(err, "%s: both metadata slots are invalid (offsets 0 and %u)", path,
                          QM_META_SLOT);
    bool use_a = !ra && (rb || a.seq >= b.seq);
    *m = use_a ? a : b;
    /* A valid slot must sit at the offset its sequence number selects. */
    if ((m->seq & 1) != (use_a ? 0u : 1u))
        return QM_CORRUPT(err, "%s: metadata sequence %llu found in the wrong slot", path,
                          (unsigned long long)m->seq);
    return 0;
}

int
qm_meta_store(const char *dir, int *fd, const qm_meta *m, qm_err *err)
{
    const qm_io *io = qm_io_get();
    if (*fd < 0) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/META", dir);
        int f = io->open(path, O_RDWR | O_CREAT, 0644);
        if (f < 0)
            return qm_err_set(err, f, "cannot open %s: %s", path, qmdb_strerror(f));
        *fd = f;
    }
    u8 buf[QM_META_SLOT];
    qm_meta_encode(m, buf);
    u64 off = (m->seq & 1) * QM_META_SLOT;
    int rc = qm_io_pwrite_full(*fd, buf, sizeof(buf), off);
    if (!rc)
        rc = io->fsync(*fd);
    if (rc)
        return qm_err_set(err, rc, "%s/META: metadata write at offset %llu failed: %s", dir,
                          (unsigned long long)off, qmdb_strerror(rc));
    return 0;
}
