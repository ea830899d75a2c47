/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hixj.c -- the hybrid indexer's change journal (roles in hixj.h).
 *
 * File dir/sXX.hixj0 or sXX.hixj1 (generation parity; all integers little-endian; FORMAT.md
 * §11):
 *   header, 64 bytes:
 *     OFFSET SIZE FIELD
 *     0      8    magic "QMDBHIXJ"
 *     8      4    version (2; 1, written by earlier versions, has no 'A' or 'U' items)
 *     12     4    shard
 *     16     8    generation (the run file sXX.hix it continues carries the same number)
 *     24     8    height of the first record
 *     32     4    CRC32C of bytes [0, 32)
 *     36     28   zero
 *   then one record per block, heights consecutive, or an undo record (a rollback from the
 *   height just reached down to a lower one; the next block follows that):
 *     0      4    record length L (48 + items)
 *     4      4    CRC32C of bytes [8, L)
 *     8      8    block height
 *     16     8    next SN after the block
 *     24     8    entry-log size after the block
 *     32     8    live entries after the block
 *     40     8    log offset of the youngest twig's first entry after the block
 *     48     ...  items, in the order the update made them:
 *                   'I' key-hash bytes [0..6), position/8 (6 bytes BE)   insert
 *                   'E' key-hash bytes [0..6), position/8                erase
 *                   'R' key-hash bytes [0..6), old/8, new/8              replace
 *                   'D' SN (8 bytes)                                     deactivation
 *                   'A' SN (8 bytes)                                     live again (undo)
 *                   'U' height (8 bytes)                                 first item of an
 *                                     undo record: the height it undoes from; the record's
 *                                     height and state are those rolled back to
 * An undo record is written and fsynced by qmdb_rollback after its META (rollback.c); which
 * prefix of a chain is the committed state is qm_hixj_trusted's rule (hixj.h).
 * Records past the committed height are ignored at open (and cut by a writable open); a
 * record failing its CRC ends the journal. Nothing here is fsynced on the commit path (see
 * hixj.h); an open that resumes fsyncs what it keeps.
 *
 * Thread: see hixj.h.
 */
#include "hixj.h"

#include "codec.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#define HIXJ_MAGIC "QMDBHIXJ"
#define HIXJ_VERSION 2u /* 1: no 'U' or 'A' items (read as well) */

void
qm_hixj_path(const char *dir, unsigned shard, unsigned p, char *out, size_t cap)
{
    snprintf(out, cap, "%s/s%02x.hixj%u", dir, shard, p & 1);
}

void
qm_hixj_init(qm_hixj *j, const qm_io *io, const char *dir, unsigned shard)
{
    memset(j, 0, sizeof(*j));
    j->io = io;
    j->dir = dir;
    j->shard = shard;
    j->fd[0] = j->fd[1] = -1;
}

void
qm_hixj_close(qm_hixj *j)
{
    for (unsigned p = 0; p < 2; p++)
        if (j->fd[p] >= 0)
            j->io->close(j->fd[p]);
    j->fd[0] = j->fd[1] = -1;
    free(j->buf);
    j->buf = NULL;
    j->len = j->cap = 0;
    j->on = false;
}

static int
jerr(qm_err *err, int rc, const char *path, const char *what)
{
    return qm_err_set(err, rc, "%s: %s: %s", path, what, strerror(-rc));
}

int
qm_hixj_start(qm_hixj *j, u64 gen, u64 first_h, bool sync, qm_err *err)
{
    char path[4200];
    unsigned p = (unsigned)(gen & 1);
    qm_hixj_path(j->dir, j->shard, p, path, sizeof(path));
    /* The file of this parity belongs to generation gen - 2, which no run needs any more
     * (run gen - 1 is on disk). */
    if (j->fd[p] >= 0)
        j->io->close(j->fd[p]);
    j->fd[p] = -1;
    j->on = false;
    int fd = j->io->open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return jerr(err, fd, path, "cannot create the index journal");
    u8 h[QM_HIXJ_HDR];
    memset(h, 0, sizeof(h));
    memcpy(h, HIXJ_MAGIC, 8);
    qm_put_u32le(h + 8, HIXJ_VERSION);
    qm_put_u32le(h + 12, j->shard);
    qm_put_u64le(h + 16, gen);
    qm_put_u64le(h + 24, first_h);
    qm_put_u32le(h + 32, qm_crc32c(0, h, 32));
    int rc = qm_iox_pwrite_full(j->io, fd, h, sizeof(h), 0);
    if (!rc && sync)
        rc = j->io->fsync(fd);
    if (rc) {
        j->io->close(fd);
        return jerr(err, rc, path, "writing the index journal");
    }
    j->fd[p] = fd;
    j->gen = gen;
    j->off = QM_HIXJ_HDR;
    j->len = 0;
    j->on = true;
    return 0;
}

int
qm_hixj_resume(qm_hixj *j, u64 gen, u64 off, const u8 *more, size_t more_len, qm_err *err)
{
    char path[4200];
    unsigned p = (unsigned)(gen & 1);
    qm_hixj_path(j->dir, j->shard, p, path, sizeof(path));
    int fd = j->io->open(path, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return jerr(err, fd, path, "cannot open the index journal");
    int rc = more_len ? qm_iox_pwrite_full(j->io, fd, more, more_len, off) : 0;
    if (!rc)
        rc = j->io->ftruncate(fd, off + more_len);
    if (!rc)
        rc = j->io->fsync(fd);
    if (rc) {
        j->io->close(fd);
        return jerr(err, rc, path, "writing the index journal");
    }
    /* The other parity's file holds the next generation's records (now in this file) or an
     * older generation's: either way nothing reads it again. */
    char other[4200];
    qm_hixj_path(j->dir, j->shard, p ^ 1, other, sizeof(other));
    if (j->fd[p ^ 1] < 0 && j->io->unlink(other) == 0)
        (void)qm_iox_fsync_dir(j->io, j->dir);
    if (j->fd[p] >= 0)
        j->io->close(j->fd[p]);
    j->fd[p] = fd;
    j->gen = gen;
    j->off = off + more_len;
    j->len = 0;
    j->on = true;
    return 0;
}

/* After an outsized block, the record buffer gives its capacity back: it keeps at most four
 * times what the last block used (and never less than QM_HIXJ_KEEP), so that one huge block
 * does not pin its buffer for the life of the handle. */
#define QM_HIXJ_KEEP ((size_t)256 << 10)
static void
jtrim(qm_hixj *j, size_t used)
{
    if (j->cap > QM_HIXJ_KEEP && used < j->cap / 4) {
        free(j->buf);
        j->buf = NULL;
        j->cap = 0;
    }
}

static u8 *
jroom(qm_hixj *j, size_t n)
{
    if (j->len + n > j->cap) {
        size_t nc = QM_MAX(j->cap * 2, (size_t)4096);
        while (nc < j->len + n)
            nc *= 2;
        u8 *nb = realloc(j->buf, nc);
        if (!nb) {
            j->rc = -ENOMEM;
            return NULL;
        }
        j->buf = nb;
        j->cap = nc;
    }
    u8 *p = j->buf + j->len;
    j->len += n;
    return p;
}

static void
jkp(qm_hixj *j, u8 tag, const u8 kh[6], u64 a, u64 b, bool two)
{
    if (!j->on)
        return;
    u8 *p = jroom(j, two ? 19 : 13);
    if (!p)
        return;
    p[0] = tag;
    memcpy(p + 1, kh, 6);
    qm_put_u48be(p + 7, a >> 3);
    if (two)
        qm_put_u48be(p + 13, b >> 3);
}

void
qm_hixj_ins(qm_hixj *j, const u8 kh[6], u64 pos)
{
    jkp(j, 'I', kh, pos, 0, false);
}

void
qm_hixj_erase(qm_hixj *j, const u8 kh[6], u64 pos)
{
    jkp(j, 'E', kh, pos, 0, false);
}

void
qm_hixj_replace(qm_hixj *j, const u8 kh[6], u64 old_pos, u64 new_pos)
{
    jkp(j, 'R', kh, old_pos, new_pos, true);
}

void
qm_hixj_deact(qm_hixj *j, u64 sn)
{
    if (!j->on)
        return;
    u8 *p = jroom(j, 9);
    if (p) {
        p[0] = 'D';
        qm_put_u64le(p + 1, sn);
    }
}

void
qm_hixj_react(qm_hixj *j, u64 sn)
{
    if (!j->on)
        return;
    u8 *p = jroom(j, 9);
    if (p) {
        p[0] = 'A';
        qm_put_u64le(p + 1, sn);
    }
}

int
qm_hixj_block(qm_hixj *j, const qm_hixj_blk *b, qm_err *err)
{
    if (!j->on)
        return 0;
    if (j->rc) {
        int rc = j->rc;
        j->rc = 0;
        j->len = 0;
        return rc;
    }
    u8 *h = jroom(j, QM_HIXJ_REC_HDR);
    if (!h)
        return -ENOMEM;
    /* The header goes first: move the items up (a block's items are small). */
    size_t items = j->len - QM_HIXJ_REC_HDR;
    memmove(j->buf + QM_HIXJ_REC_HDR, j->buf, items);
    h = j->buf;
    qm_put_u32le(h, (u32)j->len);
    qm_put_u64le(h + 8, b->height);
    qm_put_u64le(h + 16, b->next_sn);
    qm_put_u64le(h + 24, b->entry_size);
    qm_put_u64le(h + 32, b->live);
    qm_put_u64le(h + 40, b->yfirst);
    qm_put_u32le(h + 4, qm_crc32c(0, h + 8, j->len - 8));
    int fd = j->fd[j->gen & 1];
    int rc = qm_iox_pwrite_full(j->io, fd, j->buf, j->len, j->off);
    if (rc) {
        char path[4200];
        qm_hixj_path(j->dir, j->shard, (unsigned)(j->gen & 1), path, sizeof(path));
        j->len = 0;
        return jerr(err, rc, path, "writing the index journal");
    }
    j->off += j->len;
    jtrim(j, j->len);
    j->len = 0;
    return 0;
}

u64
qm_hixj_dram_bytes(const qm_hixj *j)
{
    return j->cap;
}

size_t
qm_hixj_next(const u8 *p, size_t left, qm_hixj_blk *b, const u8 **items, size_t *ilen)
{
    if (left < QM_HIXJ_REC_HDR)
        return 0;
    u32 len = qm_get_u32le(p);
    if (len < QM_HIXJ_REC_HDR || len > left)
        return 0;
    b->height = qm_get_u64le(p + 8);
    b->next_sn = qm_get_u64le(p + 16);
    b->entry_size = qm_get_u64le(p + 24);
    b->live = qm_get_u64le(p + 32);
    b->yfirst = qm_get_u64le(p + 40);
    *items = p + QM_HIXJ_REC_HDR;
    *ilen = len - QM_HIXJ_REC_HDR;
    return len;
}

size_t
qm_hixj_item_get(const u8 *p, size_t left, qm_hixj_item *it)
{
    if (left == 0)
        return 0;
    it->tag = p[0];
    bool sn8 = p[0] == 'D' || p[0] == 'A' || p[0] == 'U';
    size_t n = p[0] == 'R' ? 19 : sn8 ? 9 : (p[0] == 'I' || p[0] == 'E') ? 13 : 0;
    if (n == 0 || n > left)
        return 0;
    if (sn8) {
        it->a = qm_get_u64le(p + 1);
        return n;
    }
    memcpy(it->kh, p + 1, 6);
    it->a = qm_get_u48be(p + 7) << 3;
    it->b = n == 19 ? qm_get_u48be(p + 13) << 3 : 0;
    return n;
}

int
qm_hixj_read(const qm_io *io, const char *dir, unsigned shard, u64 gen, u64 first_h, u64 max_h,
             u8 **recs, size_t *len, u64 *end, u64 *last_h)
{
    *recs = NULL;
    *len = 0;
    *end = QM_HIXJ_HDR;
    *last_h = first_h - 1;
    char path[4200];
    qm_hixj_path(dir, shard, (unsigned)(gen & 1), path, sizeof(path));
    int fd = io->open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return fd == -ENOENT ? QMDB_NOTFOUND : fd;
    u64 fsize = 0;
    u8 h[QM_HIXJ_HDR];
    int rc = io->fsize(fd, &fsize);
    if (!rc && (fsize < QM_HIXJ_HDR || qm_iox_pread_full(io, fd, h, sizeof(h), 0) != 0 ||
                memcmp(h, HIXJ_MAGIC, 8) != 0 ||
                (qm_get_u32le(h + 8) != 1 && qm_get_u32le(h + 8) != HIXJ_VERSION) ||
                qm_get_u32le(h + 12) != shard || qm_get_u64le(h + 16) != gen ||
                qm_get_u64le(h + 24) != first_h || qm_get_u32le(h + 32) != qm_crc32c(0, h, 32)))
        rc = QMDB_NOTFOUND;
    u8 *buf = NULL;
    size_t n = rc ? 0 : (size_t)(fsize - QM_HIXJ_HDR);
    if (!rc && !(buf = malloc(n ? n : 1)))
        rc = -ENOMEM;
    if (!rc && n)
        rc = qm_iox_pread_full(io, fd, buf, n, QM_HIXJ_HDR);
    io->close(fd);
    if (rc) {
        free(buf);
        return rc;
    }
    size_t at = 0, step;
    u64 want = first_h;
    qm_hixj_blk b;
    const u8 *items;
    size_t ilen;
    while (want <= max_h && (step = qm_hixj_next(buf + at, n - at, &b, &items, &ilen)) != 0) {
        if (qm_get_u32le(buf + at + 4) != qm_crc32c(0, buf + at + 8, step - 8))
            break;
        u64 from;
        if (qm_hixj_undo_from(items, ilen, &from)) {
            /* A rollback from the height just reached down to b.height. */
            if (from != want - 1 || b.height >= from)
                break;
        } else if (b.height != want) {
            break;
        }
        at += step;
        want = b.height + 1;
    }
    *recs = buf;
    *len = at;
    *end = QM_HIXJ_HDR + at;
    *last_h = want - 1;
    return 0;
}

bool
qm_hixj_undo_from(const u8 *items, size_t ilen, u64 *from)
{
    qm_hixj_item it;
    if (qm_hixj_item_get(items, ilen, &it) == 0 || it.tag != 'U')
        return false;
    *from = it.a;
    return true;
}

bool
qm_hixj_trusted(const u8 *recs, size_t len, u64 first_h, u64 h, size_t *plen)
{
    bool found = first_h - 1 == h, bad = false;
    *plen = 0;
    size_t at = 0, step;
    qm_hixj_blk b;
    const u8 *items;
    size_t ilen;
    while ((step = qm_hixj_next(recs + at, len - at, &b, &items, &ilen)) != 0) {
        at += step;
        u64 from;
        if (qm_hixj_undo_from(items, ilen, &from) && b.height < h)
            bad = true; /* the chain went below h after the occurrence found so far */
        if (b.height == h) {
            found = true;
            bad = false;
            *plen = at;
        }
    }
    return found && !bad;
}

int
qm_hixj_undo(qm_hixj *j, u64 from, const qm_hixj_blk *b, qm_err *err)
{
    if (!j->on)
        return QMDB_NOTFOUND;
    char path[4200];
    unsigned p = (unsigned)(j->gen & 1);
    qm_hixj_path(j->dir, j->shard, p, path, sizeof(path));
    if (j->rc) {
        int rc = j->rc;
        j->rc = 0;
        j->len = 0;
        return jerr(err, rc, path, "collecting the rollback's index changes");
    }
    u8 *h = jroom(j, QM_HIXJ_REC_HDR + 9);
    if (!h)
        return jerr(err, -ENOMEM, path, "collecting the rollback's index changes");
    size_t items = j->len - QM_HIXJ_REC_HDR - 9;
    memmove(j->buf + QM_HIXJ_REC_HDR + 9, j->buf, items);
    h = j->buf;
    h[QM_HIXJ_REC_HDR] = 'U';
    qm_put_u64le(h + QM_HIXJ_REC_HDR + 1, from);
    qm_put_u32le(h, (u32)j->len);
    qm_put_u64le(h + 8, b->height);
    qm_put_u64le(h + 16, b->next_sn);
    qm_put_u64le(h + 24, b->entry_size);
    qm_put_u64le(h + 32, b->live);
    qm_put_u64le(h + 40, b->yfirst);
    qm_put_u32le(h + 4, qm_crc32c(0, h + 8, j->len - 8));
    /* A file started by an older version says version 1, which knows no 'U' record: mark it
     * version 2 first, so that such a version falls back to the log scan instead of reading
     * the blocks this record undoes as committed. */
    int fd = j->fd[p];
    u8 hd[QM_HIXJ_HDR];
    int rc = qm_iox_pread_full(j->io, fd, hd, sizeof(hd), 0);
    if (!rc && qm_get_u32le(hd + 8) != HIXJ_VERSION) {
        qm_put_u32le(hd + 8, HIXJ_VERSION);
        qm_put_u32le(hd + 32, qm_crc32c(0, hd, 32));
        rc = qm_iox_pwrite_full(j->io, fd, hd, sizeof(hd), 0);
    }
    if (!rc)
        rc = qm_iox_pwrite_full(j->io, fd, j->buf, j->len, j->off);
    if (!rc)
        rc = j->io->fsync(fd);
    size_t n = j->len;
    j->len = 0;
    if (rc)
        return jerr(err, rc, path, "writing the index journal");
    j->off += n;
    return 0;
}
