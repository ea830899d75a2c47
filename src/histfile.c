/* SPDX-License-Identifier: Apache-2.0 */
/*
 * histfile.c -- the history cache file `sXX.hist` (layout: histfile.h, docs/FORMAT.md): header
 * codec, the mapped reader with its per-chunk CRC checks, and the streaming atomic writer.
 * What the file must match in the database (shard state, ROOTS) and what its values must
 * satisfy is checked by its user, proof.c.
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
#include <sys/mman.h>
#include <unistd.h>

#define HF_MAGIC "QMDBHIST"
#define HF_MAX_SN (1ull << 40) /* SNs are far below; bounds every length computed here */

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
    qm_put_u32le(out + 96, h->table_crc);
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
    h->table_crc = qm_get_u32le(buf + 96);
    if (h->shard >= QM_SHARD_COUNT || h->first_twig >= (HF_MAX_SN >> QM_TWIG_SHIFT) ||
        h->base != h->first_twig << QM_TWIG_SHIFT || h->upto < h->base || h->upto > HF_MAX_SN ||
        blen != (h->upto - h->base) * QM_HIST_PER_SN)
        return QMDB_CORRUPT;
    return 0;
}

int
qm_hist_map_init(qm_hist_map *m, const u8 *p, size_t len)
{
    memset(m, 0, sizeof(*m));
    QM_RET(qm_hist_hdr_decode(p, len, &m->h));
    m->n = m->h.upto - m->h.base;
    m->nchunks = qm_hist_chunks(m->n);
    u64 tab = QM_HIST_HDR + m->n * QM_HIST_PER_SN;
    if (len != tab + 4 * m->nchunks)
        return QMDB_CORRUPT;
    if (qm_crc32c(0, p + tab, 4 * m->nchunks) != m->h.table_crc)
        return QMDB_CORRUPT;
    m->ok = calloc(m->nchunks / 8 + 1, 1);
    if (!m->ok)
        return -ENOMEM;
    m->p = p;
    m->len = len;
    return 0;
}

const u8 *
qm_hist_body(qm_hist_map *m, u64 off, size_t len)
{
    u64 blen = m->n * QM_HIST_PER_SN;
    if (m->bad || len == 0 || off > blen || len > blen - off) {
        m->bad = true;
        return NULL;
    }
    const u8 *body = m->p + QM_HIST_HDR, *tab = body + blen;
    for (u64 c = off / QM_HIST_CHUNK; c <= (off + len - 1) / QM_HIST_CHUNK; c++) {
        if (m->ok[c >> 3] & (1u << (c & 7)))
            continue;
        u64 start = c * QM_HIST_CHUNK, clen = QM_MIN((u64)QM_HIST_CHUNK, blen - start);
        if (qm_crc32c(0, body + start, clen) != qm_get_u32le(tab + 4 * c)) {
            m->bad = true;
            return NULL;
        }
        m->ok[c >> 3] |= (u8)(1u << (c & 7));
    }
    return body + off;
}

int
qm_hist_map_open(const char *dir, unsigned shard, qm_hist_map *m)
{
    memset(m, 0, sizeof(*m));
    const qm_io *io = qm_io_get();
    char path[4096];
    snprintf(path, sizeof(path), "%s/s%02x.hist", dir, shard);
    int fd = io->open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return fd;
    u64 size = 0;
    int rc = io->fsize(fd, &size);
    if (!rc && (size < QM_HIST_HDR || size > HF_MAX_SN * 64 || size > SIZE_MAX))
        rc = QMDB_CORRUPT;
    bool map = qm_io_map_allowed();
    void *p = map ? MAP_FAILED : NULL;
    if (!rc && map) {
        p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            rc = -errno;
    } else if (!rc) {
        p = malloc(size);
        rc = p ? qm_io_pread_full(fd, p, size, 0) : -ENOMEM;
    }
    io->close(fd);
    if (!rc)
        rc = qm_hist_map_init(m, p, size);
    if (!rc && m->h.shard != shard)
        rc = QMDB_CORRUPT;
    if (rc) {
        free(m->ok);
        if (map && p != MAP_FAILED)
            munmap(p, size);
        else if (!map)
            free(p);
        memset(m, 0, sizeof(*m));
        return rc;
    }
    m->mapped = map;
    m->owned = !map;
    return 0;
}

void
qm_hist_map_close(qm_hist_map *m)
{
    if (m->mapped)
        munmap((void *)m->p, m->len);
    else if (m->owned)
        free((void *)m->p);
    free(m->ok);
    memset(m, 0, sizeof(*m));
}

/* ---- Writer ------------------------------------------------------------------------------- */

static int
hw_table_add(qm_hist_writer *w, u32 crc)
{
    if (w->nt == w->cap) {
        u64 cap = w->cap ? 2 * w->cap : 64;
        u32 *t = realloc(w->table, cap * 4);
        if (!t)
            return -ENOMEM;
        w->table = t;
        w->cap = cap;
    }
    w->table[w->nt++] = crc;
    return 0;
}

/* Writes the buffered values (little-endian) and extends the chunk CRCs. */
static int
hw_flush(qm_hist_writer *w)
{
    u8 *b = (u8 *)w->buf;
    size_t len = (size_t)w->nbuf * 8;
    for (unsigned i = 0; i < w->nbuf; i++)
        qm_put_u64le(b + 8 * i, w->buf[i]);
    for (size_t done = 0; done < len;) {
        size_t k = (size_t)QM_MIN((u64)(len - done), QM_HIST_CHUNK - w->cfill);
        w->ccrc = qm_crc32c(w->ccrc, b + done, k);
        w->cfill += k;
        done += k;
        if (w->cfill == QM_HIST_CHUNK) {
            QM_RET(hw_table_add(w, w->ccrc));
            w->ccrc = 0;
            w->cfill = 0;
        }
    }
    QM_RET(qm_io_pwrite_full(w->fd, b, len, w->off));
    w->off += len;
    w->nbuf = 0;
    return 0;
}

int
qm_hist_writer_open(qm_hist_writer *w, const char *dir, unsigned shard)
{
    memset(w, 0, sizeof(*w));
    snprintf(w->tmp, sizeof(w->tmp), "%s/s%02x.hist.tmp", dir, shard);
    snprintf(w->path, sizeof(w->path), "%s/s%02x.hist", dir, shard);
    w->off = QM_HIST_HDR;
    w->fd = qm_io_get()->open(w->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    return w->fd < 0 ? w->fd : 0;
}

int
qm_hist_writer_put(qm_hist_writer *w, u64 v)
{
    w->buf[w->nbuf++] = v;
    return w->nbuf == QM_ARRAY_LEN(w->buf) ? hw_flush(w) : 0;
}

int
qm_hist_writer_finish(qm_hist_writer *w, const qm_hist_hdr *h0, const char *dir, bool ok,
                      qm_err *err)
{
    const qm_io *io = qm_io_get();
    int rc = ok ? 0 : -EINVAL;
    if (!rc)
        rc = hw_flush(w);
    if (!rc && w->cfill > 0)
        rc = hw_table_add(w, w->ccrc);
    qm_hist_hdr h = *h0;
    if (!rc && w->off != QM_HIST_HDR + (h.upto - h.base) * QM_HIST_PER_SN)
        rc = -EINVAL; /* the caller put a wrong number of values */
    if (!rc && w->nt != qm_hist_chunks(h.upto - h.base))
        rc = -EINVAL;
    if (!rc) {
        u8 *t = malloc(4 * w->nt + 1);
        if (!t)
            rc = -ENOMEM;
        for (u64 i = 0; !rc && i < w->nt; i++)
            qm_put_u32le(t + 4 * i, w->table[i]);
        if (!rc) {
            h.table_crc = qm_crc32c(0, t, 4 * w->nt);
            rc = qm_io_pwrite_full(w->fd, t, 4 * w->nt, w->off);
        }
        free(t);
    }
    if (!rc) {
        u8 hdr[QM_HIST_HDR];
        qm_hist_hdr_encode(&h, hdr);
        rc = qm_io_pwrite_full(w->fd, hdr, QM_HIST_HDR, 0);
    }
    if (!rc)
        rc = io->fsync(w->fd);
    io->close(w->fd);
    free(w->table);
    w->table = NULL;
    if (!rc)
        rc = io->rename(w->tmp, w->path);
    if (!rc)
        rc = qm_io_fsync_dir(dir);
    if (rc) {
        io->unlink(w->tmp);
        if (ok)
            return qm_err_set(err, rc, "%s: writing the history cache: %s", w->path,
                              qmdb_strerror(rc));
    }
    return rc;
}
