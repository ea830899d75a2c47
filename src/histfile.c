/* SPDX-License-Identifier: Apache-2.0 */
/*
 * histfile.c -- the history cache file `sXX.hist` (layout: histfile.h, docs/FORMAT.md): header
 * codec, the body's checks, and the file's atomic write and read. What the file must match in
 * the database (shard state, ROOTS) is checked by its user, proof.c.
 *
 * Thread: the handle's writer (proofs and close).
 */
#include "histfile.h"

#include "codec.h"
#include "io.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HF_MAGIC "QMDBHIST"
#define HF_MAX_SN (1ull << 48) /* SNs are far below; bounds every length computed here */

void
qm_hist_hdr_encode(const qm_hist_hdr *h, u8 out[QM_HIST_HDR])
{
    memset(out, 0, QM_HIST_HDR);
    memcpy(out, HF_MAGIC, 8);
    qm_put_u32le(out + 8, QM_HIST_VERSION);
    qm_put_u32le(out + 12, h->shard);
    qm_put_u64le(out + 16, h->height);
    memcpy(out + 24, h->root, 32);
    qm_put_u64le(out + 56, h->first_twig);
    qm_put_u64le(out + 64, h->base);
    qm_put_u64le(out + 72, h->upto);
    qm_put_u64le(out + 80, h->scan_pos);
    qm_put_u64le(out + 88, (h->upto - h->base) * QM_HIST_PER_SN);
    qm_put_u32le(out + 96, h->body_crc);
    qm_put_u32le(out + 124, qm_crc32c(0, out, 124));
}

int
qm_hist_hdr_decode(const u8 *buf, size_t len, qm_hist_hdr *h)
{
    if (len < QM_HIST_HDR || memcmp(buf, HF_MAGIC, 8) != 0)
        return QMDB_CORRUPT;
    if (qm_get_u32le(buf + 124) != qm_crc32c(0, buf, 124))
        return QMDB_CORRUPT;
    if (qm_get_u32le(buf + 8) != QM_HIST_VERSION)
        return QMDB_VERSION_MISMATCH;
    for (unsigned i = 100; i < 124; i++)
        if (buf[i])
            return QMDB_CORRUPT;
    memset(h, 0, sizeof(*h));
    h->shard = qm_get_u32le(buf + 12);
    h->height = qm_get_u64le(buf + 16);
    memcpy(h->root, buf + 24, 32);
    h->first_twig = qm_get_u64le(buf + 56);
    h->base = qm_get_u64le(buf + 64);
    h->upto = qm_get_u64le(buf + 72);
    h->scan_pos = qm_get_u64le(buf + 80);
    u64 blen = qm_get_u64le(buf + 88);
    h->body_crc = qm_get_u32le(buf + 96);
    if (h->shard >= QM_SHARD_COUNT || h->first_twig >= (HF_MAX_SN >> QM_TWIG_SHIFT) ||
        h->base != h->first_twig << QM_TWIG_SHIFT || h->upto < h->base || h->upto > HF_MAX_SN ||
        blen != (h->upto - h->base) * QM_HIST_PER_SN || h->scan_pos > HF_MAX_SN * 64)
        return QMDB_CORRUPT;
    return 0;
}

/* The body's sections as stored are little-endian; on a big-endian host swap them. */
static void
hf_to_host(u64 *p, u64 n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (u64 i = 0; i < n; i++)
        p[i] = __builtin_bswap64(p[i]);
#else
    (void)p;
    (void)n;
#endif
}

int
qm_hist_body_accept(const qm_hist_hdr *h, qm_hist_arrays *a)
{
    u64 n = h->upto - h->base;
    u32 crc = qm_crc32c(0, a->pos, n * 8);
    crc = qm_crc32c(crc, a->verh, n * 8);
    crc = qm_crc32c(crc, a->deact, n * 8);
    crc = qm_crc32c(crc, a->keys, n * 16);
    if (crc != h->body_crc)
        return QMDB_CORRUPT;
    hf_to_host(a->pos, n);
    hf_to_host(a->verh, n);
    hf_to_host(a->deact, n);
    hf_to_host((u64 *)a->keys, 2 * n);
    for (u64 i = 0; i < n; i++) {
        if ((i > 0 && a->pos[i] <= a->pos[i - 1]) || a->pos[i] >= h->scan_pos)
            return QMDB_CORRUPT;
        u64 d = a->deact[i];
        if (d != QM_HIST_NONE && (d <= h->base + i || d >= h->upto))
            return QMDB_CORRUPT;
    }
    /* keys: strictly sorted, and every SN of the range exactly once. */
    u8 *seen = calloc(n / 8 + 1, 1);
    if (!seen)
        return -ENOMEM;
    int rc = 0;
    for (u64 i = 0; i < n && !rc; i++) {
        const qm_hist_key *k = &a->keys[i];
        if (k->sn < h->base || k->sn >= h->upto)
            rc = QMDB_CORRUPT;
        else if (i > 0 && (k->kh8 < k[-1].kh8 || (k->kh8 == k[-1].kh8 && k->sn <= k[-1].sn)))
            rc = QMDB_CORRUPT;
        else {
            u64 j = k->sn - h->base;
            if (seen[j >> 3] & (1u << (j & 7)))
                rc = QMDB_CORRUPT;
            seen[j >> 3] |= (u8)(1u << (j & 7));
        }
    }
    free(seen);
    return rc;
}

static void
hf_path(char *out, size_t cap, const char *dir, unsigned shard, const char *suffix)
{
    snprintf(out, cap, "%s/s%02x.hist%s", dir, shard, suffix);
}

int
qm_hist_file_open(const char *dir, unsigned shard, int *fd, qm_hist_hdr *h)
{
    const qm_io *io = qm_io_get();
    char path[4096];
    hf_path(path, sizeof(path), dir, shard, "");
    int f = io->open(path, O_RDONLY | O_CLOEXEC, 0);
    if (f < 0)
        return f;
    u8 buf[QM_HIST_HDR];
    u64 size = 0;
    int rc = io->fsize(f, &size);
    if (!rc)
        rc = size < QM_HIST_HDR ? QMDB_CORRUPT : qm_io_pread_full(f, buf, QM_HIST_HDR, 0);
    if (!rc)
        rc = qm_hist_hdr_decode(buf, QM_HIST_HDR, h);
    if (!rc && (h->shard != shard || size != QM_HIST_HDR + (h->upto - h->base) * QM_HIST_PER_SN))
        rc = QMDB_CORRUPT;
    if (rc) {
        io->close(f);
        return rc;
    }
    *fd = f;
    return 0;
}

int
qm_hist_file_read(int fd, const qm_hist_hdr *h, qm_hist_arrays *a)
{
    u64 n = h->upto - h->base, off = QM_HIST_HDR;
    int rc = qm_io_pread_full(fd, a->pos, n * 8, off);
    if (!rc)
        rc = qm_io_pread_full(fd, a->verh, n * 8, off += n * 8);
    if (!rc)
        rc = qm_io_pread_full(fd, a->deact, n * 8, off += n * 8);
    if (!rc)
        rc = qm_io_pread_full(fd, a->keys, n * 16, off += n * 8);
    qm_io_get()->close(fd);
    return rc ? rc : qm_hist_body_accept(h, a);
}

/* Writes n u64 of p at *off in little-endian through buf (cap u64), extending *crc. */
static int
hf_put(int fd, const u64 *p, u64 n, u64 *buf, u64 cap, u64 *off, u32 *crc)
{
    while (n > 0) {
        u64 k = QM_MIN(n, cap);
        for (u64 i = 0; i < k; i++)
            qm_put_u64le((u8 *)(buf + i), p[i]);
        *crc = qm_crc32c(*crc, buf, k * 8);
        QM_RET(qm_io_pwrite_full(fd, buf, k * 8, *off));
        *off += k * 8;
        p += k;
        n -= k;
    }
    return 0;
}

int
qm_hist_file_write(const char *dir, const qm_hist_hdr *h0, const qm_hist_arrays *a, qm_err *err)
{
    const qm_io *io = qm_io_get();
    char tmp[4096], path[4096];
    hf_path(tmp, sizeof(tmp), dir, h0->shard, ".tmp");
    hf_path(path, sizeof(path), dir, h0->shard, "");
    u64 n = h0->upto - h0->base, cap = 8192, off = QM_HIST_HDR;
    u64 *buf = malloc(cap * 8);
    if (!buf)
        return -ENOMEM;
    int fd = io->open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        free(buf);
        return qm_err_set(err, fd, "%s: %s", tmp, qmdb_strerror(fd));
    }
    qm_hist_hdr h = *h0;
    u32 crc = 0;
    int rc = hf_put(fd, a->pos, n, buf, cap, &off, &crc);
    if (!rc)
        rc = hf_put(fd, a->verh, n, buf, cap, &off, &crc);
    if (!rc)
        rc = hf_put(fd, a->deact, n, buf, cap, &off, &crc);
    if (!rc)
        rc = hf_put(fd, (const u64 *)a->keys, 2 * n, buf, cap, &off, &crc);
    if (!rc) {
        h.body_crc = crc;
        u8 hdr[QM_HIST_HDR];
        qm_hist_hdr_encode(&h, hdr);
        rc = qm_io_pwrite_full(fd, hdr, QM_HIST_HDR, 0);
    }
    if (!rc)
        rc = io->fsync(fd);
    io->close(fd);
    free(buf);
    if (!rc)
        rc = io->rename(tmp, path);
    if (!rc)
        rc = qm_io_fsync_dir(dir);
    if (rc) {
        io->unlink(tmp);
        return qm_err_set(err, rc, "%s: writing the history cache: %s", path, qmdb_strerror(rc));
    }
    return 0;
}
