/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta.c -- the metadata slots and the ROOTS records (formats and the damage rule in
 * meta.h). Thread: the committing thread; qm_roots_read from any thread.
 */
#include "meta.h"

#include "codec.h"
#include "io.h"

#include <fcntl.h>
#include <stdio.h>

static const u8 META_MAGIC[8] = {'Q', 'M', 'D', 'B', 'M', 'E', 'T', 'A'};

void
qm_meta_encode(const qm_meta *m, u8 *b)
{
    memset(b, 0, QM_META_SLOT);
    memcpy(b, META_MAGIC, 8);
    bool stubs = false;
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        stubs |= m->shard[s].stub_end != 0;
    qm_put_u32le(b + 8, stubs ? QM_META_VERSION_STUBS : QMDB_FORMAT_VERSION);
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
        qm_put_u64le(p + 56, sm->stub_end);
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
    /* The CRC first, over the length the record declares: a damaged version field reads as
     * damage, and only an intact record of another format is a version mismatch. */
    u32 rlen = qm_get_u32le(b + 12);
    if (rlen < 32 || rlen > QM_META_COPY || rlen > len ||
        qm_get_u32le(b + rlen - 4) != qm_crc32c(0, b, rlen - 4))
        return QMDB_CORRUPT;
    u32 ver = qm_get_u32le(b + 8);
    if (ver != QMDB_FORMAT_VERSION && ver != QM_META_VERSION_STUBS)
        return QMDB_VERSION_MISMATCH;
    if (rlen != QM_META_LEN)
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
        sm->stub_end = qm_get_u64le(p + 56);
        memcpy(sm->root, p + 64, 32);
        if (ver == QMDB_FORMAT_VERSION && sm->stub_end != 0)
            return QMDB_CORRUPT;
        if (sm->stub_end > sm->next_sn)
            return QMDB_CORRUPT;
        if (sm->next_sn < QM_SENTRIES_PER_SHARD || sm->sn_start > sm->next_sn ||
            sm->live > sm->next_sn || sm->entry_head > sm->entry_size ||
            sm->sn_start_pos > sm->entry_size || sm->sn_start_pos % 8 != 0 ||
            sm->first_twig > (sm->next_sn >> QM_TWIG_SHIFT))
            return QMDB_CORRUPT;
    }
    return 0;
}

/* What one slot holds (see the damage rule in meta.h). */
enum slot_state { SLOT_VALID, SLOT_BLANK, SLOT_BAD, SLOT_NEWER };

static enum slot_state
slot_read(const u8 *buf, size_t got, unsigned k, qm_meta *m)
{
    size_t off = (size_t)k * QM_META_SLOT;
    size_t n = got > off ? QM_MIN(got - off, (size_t)QM_META_SLOT) : 0;
    int rc = n >= QM_META_LEN ? meta_decode_slot(buf + off, n, m) : QMDB_CORRUPT;
    if (rc == QMDB_VERSION_MISMATCH)
        return SLOT_NEWER;
    if (rc == 0)
        return SLOT_VALID;
    for (size_t i = 0; i < n; i++)
        if (buf[off + i] != 0)
            return SLOT_BAD;
    return SLOT_BLANK; /* all zero, or beyond the end of the file */
}

int
qm_meta_choose(const u8 *buf, size_t got, bool salvage, const char *path, qm_meta *m, qm_err *err)
{
    qm_meta s[2];
    enum slot_state st[2] = {slot_read(buf, got, 0, &s[0]), slot_read(buf, got, 1, &s[1])};
    if (st[0] == SLOT_NEWER || st[1] == SLOT_NEWER)
        return qm_err_set(err, QMDB_VERSION_MISMATCH,
                          "%s: written in a metadata format other than %d or %u (a newer or "
                          "older qmdb)",
                          path, QMDB_FORMAT_VERSION, QM_META_VERSION_STUBS);
    if (st[0] != SLOT_VALID && st[1] != SLOT_VALID)
        return QM_CORRUPT(err, "%s: both metadata slots are invalid (offsets 0 and %u)", path,
                          QM_META_SLOT);
    unsigned k = st[0] == SLOT_VALID && (st[1] != SLOT_VALID || s[0].seq >= s[1].seq) ? 0 : 1;
    *m = s[k];
    /* A valid slot must sit at the offset its sequence number selects. */
    if ((m->seq & 1) != k)
        return QM_CORRUPT(err, "%s: metadata sequence %llu found in the wrong slot (offset %u)",
                          path, (unsigned long long)m->seq, k * QM_META_SLOT);
    /* The other slot must hold the previous record. Only a new database (sequence 0, whose
     * slot 1 was never written) may lack it: anything else is damage that may have destroyed
     * the newest commit, and opening the older record would silently roll back. */
    const qm_meta *o = &s[k ^ 1];
    unsigned ooff = (k ^ 1) * QM_META_SLOT;
    if (st[k ^ 1] == SLOT_VALID && o->seq + 1 == m->seq)
        return 0;
    if (m->seq == 0 && k == 0)
        return 0;
    if (salvage)
        return 0;
    if (st[k ^ 1] == SLOT_VALID)
        return QM_CORRUPT(err,
                          "%s: the metadata slot at offset %u holds sequence %llu, not %llu "
                          "(the slot at offset %u holds %llu): a stale or misplaced record",
                          path, ooff, (unsigned long long)o->seq, (unsigned long long)(m->seq - 1),
                          k * QM_META_SLOT, (unsigned long long)m->seq);
    return QM_CORRUPT(err,
                      "%s: the metadata slot at offset %u is %s although sequence %llu at "
                      "offset %u shows it was written: the newest commit may be lost (height "
                      "%llu or the next one); open with the salvage flag to use height %llu",
                      path, ooff,
                      st[k ^ 1] == SLOT_BLANK ? (got <= ooff ? "missing (file truncated)" : "blank")
                                              : "damaged (neither copy is valid)",
                      (unsigned long long)m->seq, k * QM_META_SLOT, (unsigned long long)m->height,
                      (unsigned long long)m->height);
}

int
qm_meta_load(const char *dir, bool salvage, qm_meta *m, qm_err *err)
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
    return qm_meta_choose(buf, got, salvage, path, m, err);
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

void
qm_roots_encode(u64 height, const u8 root[32], u8 rec[QM_ROOTS_REC])
{
    u8 hb[8];
    qm_put_u64le(hb, height);
    memcpy(rec, root, 32);
    qm_put_u32le(rec + 32, qm_crc32c(qm_crc32c(0, hb, 8), root, 32));
    qm_put_u32le(rec + 36, 0);
}

int
qm_roots_decode(u64 height, const u8 rec[QM_ROOTS_REC], u8 root[32])
{
    u8 want[QM_ROOTS_REC];
    qm_roots_encode(height, rec, want);
    if (memcmp(rec + 32, want + 32, QM_ROOTS_REC - 32) != 0)
        return QMDB_CORRUPT;
    memcpy(root, rec, 32);
    return 0;
}

#define QM_ROOTS_BASE_MAGIC "QMDBRESTOREBASE1" /* 16 bytes */

void
qm_roots_base_encode(u64 base, u8 rec[QM_ROOTS_REC])
{
    u8 r[32] = {0};
    memcpy(r, QM_ROOTS_BASE_MAGIC, 16);
    qm_put_u64le(r + 16, base);
    qm_roots_encode(UINT64_MAX, r, rec);
}

bool
qm_roots_base_decode(const u8 rec[QM_ROOTS_REC], u64 *base)
{
    u8 r[32];
    if (qm_roots_decode(UINT64_MAX, rec, r) != 0 || memcmp(r, QM_ROOTS_BASE_MAGIC, 16) != 0)
        return false;
    for (unsigned i = 24; i < 32; i++)
        if (r[i] != 0)
            return false;
    *base = qm_get_u64le(r + 16);
    return *base > 0;
}

bool
qm_roots_unheld(const u8 rec[QM_ROOTS_REC])
{
    for (unsigned i = 0; i < QM_ROOTS_REC; i++)
        if (rec[i] != 0)
            return false;
    return true;
}

int
qm_roots_read(int fd, const char *dir, u64 height, u8 root[32], qm_err *err)
{
    u8 rec[QM_ROOTS_REC];
    u64 off = QM_ROOTS_REC * height;
    int rc = qm_io_pread_full(fd, rec, sizeof(rec), off);
    if (rc)
        return qm_err_set(err, rc, "%s/ROOTS: read of height %llu at offset %llu: %s", dir,
                          (unsigned long long)height, (unsigned long long)off, qmdb_strerror(rc));
    if (qm_roots_decode(height, rec, root) != 0) {
        /* A database restored from a snapshot of height B holds no roots below B: record 0
         * names B and the records in between are all zero (docs/SYNC.md). */
        u8 r0[QM_ROOTS_REC];
        u64 base = 0;
        if (qm_io_pread_full(fd, r0, sizeof(r0), 0) == 0 && qm_roots_base_decode(r0, &base) &&
            height < base && (height == 0 || qm_roots_unheld(rec)))
            return qm_err_set(err, QMDB_PRUNED,
                              "%s/ROOTS: height %llu lies below height %llu, the snapshot this "
                              "database was restored from",
                              dir, (unsigned long long)height, (unsigned long long)base);
    }
    if (qm_roots_decode(height, rec, root))
        return QM_CORRUPT(err,
                          "%s/ROOTS: the record of height %llu at offset %llu fails its "
                          "check (damaged)",
                          dir, (unsigned long long)height, (unsigned long long)off);
    return 0;
}

int
qm_roots_store(int fd, const char *dir, u64 height, const u8 root[32], qm_err *err)
{
    u8 rec[QM_ROOTS_REC];
    qm_roots_encode(height, root, rec);
    int rc = qm_io_pwrite_full(fd, rec, sizeof(rec), QM_ROOTS_REC * height);
    if (!rc)
        rc = qm_io_get()->fsync(fd);
    if (rc)
        return qm_err_set(err, rc, "%s/ROOTS: write of height %llu failed: %s", dir,
                          (unsigned long long)height, qmdb_strerror(rc));
    return 0;
}
