/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dpos.c -- the deactivation-position records sXX.dpos0 / sXX.dpos1 (format and rules in
 * dpos.h and FORMAT.md "Deactivation positions"):
 *   header (64 bytes): magic "QMDBDPOS" | version 1 (4) | shard (4) | generation (8) |
 *     first height (8) | CRC-32C of [0, 32) (4) | zero (28)
 *   record: height (8) | count n (4) | zero (4) | n x (SN (8), log offset (8)) |
 *     length 24 + 16n (4) | CRC-32C of the record's bytes before it (4)
 * Nothing here is fsynced and nothing here is trusted: every failure turns recording off or
 * ends a walk, and the rollback checks each offset against the entry it finds there.
 *
 * Thread: the shard's updater; the writer during a rollback; the opening thread.
 */
#include "dpos.h"

#include "codec.h"
#include "io.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

static const u8 DPOS_MAGIC[8] = {'Q', 'M', 'D', 'B', 'D', 'P', 'O', 'S'};
#define DPOS_VERSION 1u
/* A record longer than this is taken for damage (a block deactivates at most 3 entries per
 * operation; 2^27 pairs is far beyond any block). */
#define DPOS_MAX_PAIRS (1u << 27)

void
qm_dpos_init(qm_dpos *d)
{
    memset(d, 0, sizeof(*d));
    d->fd[0] = d->fd[1] = -1;
}

int
qm_dpos_hdr_check(const u8 *h, unsigned shard, u64 *gen, u64 *first)
{
    if (memcmp(h, DPOS_MAGIC, 8) != 0 || qm_get_u32le(h + 8) != DPOS_VERSION ||
        qm_get_u32le(h + 12) != shard || qm_get_u32le(h + 32) != qm_crc32c(0, h, 32))
        return QMDB_CORRUPT;
    *gen = qm_get_u64le(h + 16);
    *first = qm_get_u64le(h + 24);
    return 0;
}

static void
hdr_encode(u8 *h, unsigned shard, u64 gen, u64 first)
{
    memset(h, 0, QM_DPOS_HDR);
    memcpy(h, DPOS_MAGIC, 8);
    qm_put_u32le(h + 8, DPOS_VERSION);
    qm_put_u32le(h + 12, shard);
    qm_put_u64le(h + 16, gen);
    qm_put_u64le(h + 24, first);
    qm_put_u32le(h + 32, qm_crc32c(0, h, 32));
}

int
qm_dpos_rec_check(const u8 *rec, size_t len, u64 *height, u32 *count)
{
    if (len < QM_DPOS_REC_FIXED || (len - QM_DPOS_REC_FIXED) % 16 != 0)
        return QMDB_CORRUPT;
    u32 n = qm_get_u32le(rec + 8);
    if (n > DPOS_MAX_PAIRS || (u64)QM_DPOS_REC_FIXED + 16ull * n != len ||
        qm_get_u32le(rec + 12) != 0 || qm_get_u32le(rec + len - 8) != len ||
        qm_get_u32le(rec + len - 4) != qm_crc32c(0, rec, len - 4))
        return QMDB_CORRUPT;
    *height = qm_get_u64le(rec);
    *count = n;
    return 0;
}

void
qm_dpos_rec_encode(u8 *out, u64 height, const u64 *pairs, u32 n)
{
    size_t len = QM_DPOS_REC_FIXED + 16 * (size_t)n;
    qm_put_u64le(out, height);
    qm_put_u32le(out + 8, n);
    qm_put_u32le(out + 12, 0);
    for (size_t i = 0; i < 2 * (size_t)n; i++)
        qm_put_u64le(out + 16 + 8 * i, pairs[i]);
    qm_put_u32le(out + len - 8, (u32)len);
    qm_put_u32le(out + len - 4, qm_crc32c(0, out, len - 4));
}

/* (Re)starts file k empty: header only. */
static int
file_restart(qm_dpos *d, unsigned k, u64 gen, u64 first)
{
    const qm_io *io = qm_io_get();
    u8 h[QM_DPOS_HDR];
    hdr_encode(h, d->shard, gen, first);
    int rc = io->ftruncate(d->fd[k], 0);
    if (!rc)
        rc = qm_io_pwrite_full(d->fd[k], h, sizeof(h), 0);
    if (rc)
        return rc;
    d->gen[k] = gen;
    d->first[k] = first;
    d->end[k] = QM_DPOS_HDR;
    return 0;
}

/* Reads the record that ends at offset end of file k (end > QM_DPOS_HDR) into *buf. */
static int
rec_before(qm_dpos *d, unsigned k, u64 end, u8 **buf, size_t *cap, size_t *len, u64 *height,
           u32 *count)
{
    u8 tr[8];
    if (end < QM_DPOS_HDR + QM_DPOS_REC_FIXED)
        return QMDB_CORRUPT;
    QM_RET(qm_io_pread_full(d->fd[k], tr, 8, end - 8));
    u64 l = qm_get_u32le(tr);
    if (l < QM_DPOS_REC_FIXED || l > end - QM_DPOS_HDR ||
        l > QM_DPOS_REC_FIXED + 16ull * DPOS_MAX_PAIRS)
        return QMDB_CORRUPT;
    if (l > *cap) {
        u8 *p = realloc(*buf, l);
        if (!p)
            return -ENOMEM;
        *buf = p;
        *cap = l;
    }
    QM_RET(qm_io_pread_full(d->fd[k], *buf, l, end - l));
    *len = l;
    return qm_dpos_rec_check(*buf, l, height, count);
}

/* Drops file k's records of heights above h (a damaged tail restarts the file). */
static int
file_cut(qm_dpos *d, unsigned k, u64 h, u8 **buf, size_t *cap)
{
    u64 end = d->end[k];
    while (end > QM_DPOS_HDR) {
        size_t len;
        u64 rh;
        u32 n;
        int rc = rec_before(d, k, end, buf, cap, &len, &rh, &n);
        if (rc == -ENOMEM)
            return rc;
        if (rc)
            return file_restart(d, k, d->gen[k], QM_MIN(d->first[k], h + 1));
        if (rh <= h)
            break;
        end -= len;
    }
    if (end != d->end[k]) {
        QM_RET(qm_io_get()->ftruncate(d->fd[k], end));
        d->end[k] = end;
    }
    if (end == QM_DPOS_HDR && d->first[k] > h + 1)
        return file_restart(d, k, d->gen[k], h + 1);
    return 0;
}

static void
dpos_off(qm_dpos *d)
{
    d->on = false;
    d->n = 0;
}

void
qm_dpos_open(qm_dpos *d, const char *dir, unsigned shard, u64 height, u64 window)
{
    const qm_io *io = qm_io_get();
    qm_dpos_init(d);
    d->shard = shard;
    d->window = QM_MAX(window, (u64)1);
    u8 *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (unsigned k = 0; k < 2 && !rc; k++) {
        size_t pl = strlen(dir) + 16;
        d->path[k] = malloc(pl);
        if (!d->path[k]) {
            rc = -ENOMEM;
            break;
        }
        snprintf(d->path[k], pl, "%s/s%02x.dpos%u", dir, shard, k);
        int fd = io->open(d->path[k], O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            rc = fd;
            break;
        }
        d->fd[k] = fd;
        u8 h[QM_DPOS_HDR];
        size_t got = 0;
        rc = qm_io_pread_upto(fd, h, sizeof(h), 0, &got);
        if (!rc)
            rc = io->fsize(fd, &d->end[k]);
        if (rc)
            break;
        if (got < sizeof(h) || qm_dpos_hdr_check(h, shard, &d->gen[k], &d->first[k]) != 0)
            rc = file_restart(d, k, 0, height + 1);
        if (!rc)
            rc = file_cut(d, k, height, &buf, &cap);
    }
    free(buf);
    if (rc)
        return; /* recording stays off; rollbacks walk the twigs */
    d->cur = d->gen[1] > d->gen[0];
    d->on = true;
}

void
qm_dpos_close(qm_dpos *d)
{
    for (unsigned k = 0; k < 2; k++) {
        /* A zeroed, never opened qm_dpos (a shard whose open did not get this far) has no
         * path: its fd fields are not descriptors. */
        if (d->path[k] && d->fd[k] >= 0)
            qm_io_get()->close(d->fd[k]);
        free(d->path[k]);
    }
    free(d->pairs);
    free(d->enc);
    qm_dpos_init(d);
}

/* After an outsized block, the pair and record buffers give their capacity back when the
 * last block used less than a quarter of it (buffers below QM_DPOS_KEEP bytes stay), so that
 * one huge block does not pin them for the life of the handle. */
#define QM_DPOS_KEEP ((size_t)256 << 10)
static void
dpos_trim(qm_dpos *d, size_t used_pairs, size_t used_enc)
{
    if (d->cap * sizeof(u64) > QM_DPOS_KEEP && used_pairs < d->cap / 4) {
        free(d->pairs);
        d->pairs = NULL;
        d->cap = 0;
    }
    if (d->enc_cap > QM_DPOS_KEEP && used_enc < d->enc_cap / 4) {
        free(d->enc);
        d->enc = NULL;
        d->enc_cap = 0;
    }
}

void
qm_dpos_note(qm_dpos *d, u64 sn, u64 pos)
{
    if (!d->on)
        return;
    if (d->n + 2 > d->cap) {
        size_t c = d->cap ? d->cap * 2 : 1024;
        u64 *p = realloc(d->pairs, c * sizeof(u64));
        if (!p) {
            dpos_off(d);
            return;
        }
        d->pairs = p;
        d->cap = c;
    }
    d->pairs[d->n++] = sn;
    d->pairs[d->n++] = pos;
}

void
qm_dpos_reset_block(qm_dpos *d)
{
    d->n = 0;
}

void
qm_dpos_block(qm_dpos *d, u64 height)
{
    if (!d->on)
        return;
    unsigned c = d->cur;
    /* The other file holds the blocks before first[c]; once first[c] is `window` blocks
     * old, they are no longer needed. */
    if (height >= d->first[c] && height - d->first[c] >= d->window) {
        unsigned o = 1 - c;
        if (file_restart(d, o, d->gen[c] + 1, height) != 0) {
            dpos_off(d);
            return;
        }
        d->cur = c = o;
    }
    u32 np = (u32)(d->n / 2);
    size_t len = QM_DPOS_REC_FIXED + 16 * (size_t)np;
    if (len > d->enc_cap) {
        u8 *p = realloc(d->enc, len);
        if (!p) {
            dpos_off(d);
            return;
        }
        d->enc = p;
        d->enc_cap = len;
    }
    qm_dpos_rec_encode(d->enc, height, d->pairs, np);
    if (qm_io_pwrite_full(d->fd[c], d->enc, len, d->end[c]) != 0) {
        dpos_off(d); /* a torn record: the next open restarts the file */
        return;
    }
    d->end[c] += len;
    dpos_trim(d, d->n, len);
    d->n = 0;
}

u64
qm_dpos_dram_bytes(const qm_dpos *d)
{
    return d->cap * sizeof(u64) + d->enc_cap;
}

int
qm_dpos_collect(qm_dpos *d, u64 h, u64 L, u64 sn_below, u64 **out, size_t *nout, qm_dpos_found *f)
{
    memset(f, 0, sizeof(*f));
    if (!d->on)
        return 0;
    u8 *buf = NULL;
    size_t cap = 0, ocap = 0;
    u64 next = L + 1; /* the walk wants the record of height next - 1 */
    int rc = 0;
    unsigned order[2] = {d->cur, 1 - d->cur};
    for (unsigned i = 0; i < 2 && next > h + 1 && !rc; i++) {
        unsigned k = order[i];
        u64 end = d->end[k];
        while (end > QM_DPOS_HDR && next > h + 1) {
            size_t len;
            u64 rh;
            u32 n;
            rc = rec_before(d, k, end, &buf, &cap, &len, &rh, &n);
            if (rc == -ENOMEM)
                break;
            if (rc) {
                f->damaged++;
                rc = 0;
                next = 0; /* stop: the rest is unreachable */
                break;
            }
            end -= len;
            if (rh >= next)
                break; /* not below the records read so far: not this chain */
            if (rh <= h) {
                next = h + 1;
                break;
            }
            if (rh != next - 1)
                next = 0; /* a gap: the blocks between had no record */
            else
                next = rh;
            f->records++;
            for (u32 j = 0; j < n; j++) {
                u64 sn = qm_get_u64le(buf + 16 + 16 * (size_t)j);
                if (sn >= sn_below)
                    continue;
                if (*nout * 2 + 2 > ocap) {
                    size_t c = ocap ? ocap * 2 : 1024;
                    while (c < *nout * 2 + 2)
                        c *= 2;
                    u64 *p = realloc(*out, c * sizeof(u64));
                    if (!p) {
                        rc = -ENOMEM;
                        break;
                    }
                    *out = p;
                    ocap = c;
                }
                (*out)[2 * *nout] = sn;
                (*out)[2 * *nout + 1] = qm_get_u64le(buf + 24 + 16 * (size_t)j);
                (*nout)++;
            }
            if (rc || next == 0)
                break;
        }
        if (next == 0)
            break;
    }
    f->complete = !rc && next == h + 1;
    free(buf);
    return rc;
}

void
qm_dpos_cut(qm_dpos *d, u64 h)
{
    if (!d->on)
        return;
    u8 *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (unsigned k = 0; k < 2 && !rc; k++)
        rc = file_cut(d, k, h, &buf, &cap);
    free(buf);
    if (rc)
        dpos_off(d);
    d->n = 0;
}

int
qm_dpos_verify(const char *path, unsigned shard, u64 *nrec, u64 *bad_off)
{
    const qm_io *io = qm_io_get();
    *nrec = 0;
    *bad_off = 0;
    int fd = io->open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd == -ENOENT)
        return 0;
    if (fd < 0)
        return fd;
    u64 size = 0, gen, first, off = QM_DPOS_HDR, last = 0;
    u8 h[QM_DPOS_HDR];
    size_t got = 0;
    int rc = io->fsize(fd, &size);
    if (!rc)
        rc = qm_io_pread_upto(fd, h, sizeof(h), 0, &got);
    if (!rc && (got < sizeof(h) || qm_dpos_hdr_check(h, shard, &gen, &first) != 0))
        rc = QMDB_CORRUPT, off = 0; /* the header */
    u8 *buf = NULL;
    size_t cap = 0;
    while (!rc && off < size) {
        u8 head[16];
        rc = size - off < 16 ? QMDB_CORRUPT : qm_io_pread_full(fd, head, 16, off);
        if (rc)
            break;
        u64 len = QM_DPOS_REC_FIXED + 16ull * qm_get_u32le(head + 8);
        if (qm_get_u32le(head + 8) > DPOS_MAX_PAIRS || len > size - off) {
            rc = QMDB_CORRUPT;
            break;
        }
        if (len > cap) {
            u8 *p = realloc(buf, len);
            if (!p) {
                rc = -ENOMEM;
                break;
            }
            buf = p;
            cap = len;
        }
        rc = qm_io_pread_full(fd, buf, len, off);
        u64 rh;
        u32 n;
        if (!rc && (qm_dpos_rec_check(buf, len, &rh, &n) != 0 || (*nrec && rh <= last)))
            rc = QMDB_CORRUPT;
        if (rc)
            break;
        last = rh;
        (*nrec)++;
        off += len;
    }
    if (rc == QMDB_CORRUPT)
        *bad_off = off;
    free(buf);
    io->close(fd);
    return rc;
}
