/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hixrun.c -- the hybrid indexer's run file: its writer, its sequential reader, merged
 * walks of a run with overlay layers (merges, checkpoints, foreach), bulk loads and loading a
 * run at open (layers and threads in hindex.h, hindex.c).
 *
 * Run file dir/sXX.hix (all integers little-endian unless noted; FORMAT.md §10):
 *   page 0 (4096 bytes), the header:
 *     OFFSET SIZE FIELD
 *     0      8    magic "QMDBHIX1"
 *     8      4    version (2)
 *     12     4    shard
 *     16     8    nrec: records in the run
 *     24     8    npages: record pages (pages 1..npages)
 *     32     8    blob_off: byte offset of the blob (after the sparse index)
 *     40     8    blob_len
 *     48     4    flags: bit 0 = the state fields below are valid
 *     52     4    CRC32C of the sparse index
 *     56     4    CRC32C of the blob
 *     60     4    zero
 *     64     8    height       \
 *     72     8    next_sn       |
 *     80     8    entry_size    | the shard state whose index the run holds (qm_hix_state):
 *     88     8    entry_head    | every insert and erase of the blocks up to `height`
 *     96     8    live          | and none later (the run may be ahead of the metadata)
 *     104    8    first_twig    |
 *     112    32   shard root   /
 *     144    8    generation: the index journal sXX.hixj<gen & 1> with this generation
 *                 holds the blocks after `height` (hixj.c)
 *     152    4    CRC32C of bytes [0, 152)
 *   pages 1..npages: 341 records of 12 bytes (key-hash bytes [0..6), then position/8 as 6
 *     big-endian bytes), sorted by key (records of one key in any order); the last page is
 *     zero-padded; bytes [4092, 4096) hold CRC32C(bytes [0, 4092)) XOR the page number.
 *   at 4096 * (npages + 1): the sparse index, npages * 6 bytes (each page's first key).
 *   at blob_off: the blob (opaque here; hrecover.c writes the ActiveBits of that state).
 * A new run is written to sXX.hix.tmp, synced, then renamed over sXX.hix (the directory is
 * synced after a checkpoint or a rebuild, not after a merge).
 * Every run carries its state: a checkpoint at close (of either indexer: the in-memory
 * indexer's through qm_hix_write_run), a rebuild at open (the committed state), a merge (the
 * state at the block boundary where the overlay was frozen, taken by the caller of
 * qm_hix_maintain). The merge starts journal generation gen + 1 at that
 * boundary: run g, journal g and journal g + 1 cover all blocks until run g + 1 is on disk.
 *
 * Thread: the merger thread (merges) or the updater (bulk loads, checkpoints, loading).
 */
#include "hindex_int.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* ---- the run writer ----------------------------------------------------------------------- */

typedef struct rwriter {
    qm_hindex *x;
    int fd;
    u8 *buf; /* HIX_WBUF bytes of whole pages */
    size_t blen;
    u64 off; /* file offset of buf[0] */
    u32 in_page;
    run out;
    u64 first_cap;
    qm_err *err;
    bool sync_dir; /* fsync the directory after the rename */
} rwriter;

static int
rw_open(rwriter *w, qm_hindex *x, qm_err *err)
{
    memset(w, 0, sizeof(*w));
    w->x = x;
    w->err = err;
    w->out.fd = -1;
    w->off = QM_HIX_PAGE;
    w->buf = hix_big_realloc(NULL, 0, HIX_WBUF);
    int fd = x->io->open(x->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (!w->buf || fd < 0) {
        hix_big_free(w->buf, HIX_WBUF);
        w->buf = NULL;
        if (fd >= 0)
            x->io->close(fd);
        return fd < 0 ? qm_err_set(err, fd, "%s: %s", x->tmp, strerror(-fd)) : -ENOMEM;
    }
    w->fd = fd;
    return 0;
}

static void
rw_abort(rwriter *w)
{
    if (w->fd >= 0) {
        w->x->io->close(w->fd);
        w->x->io->unlink(w->x->tmp);
    }
    hix_big_free(w->buf, HIX_WBUF);
    free(w->out.first);
    w->fd = -1;
    w->buf = NULL;
    w->out.first = NULL;
}

static int
rw_flush(rwriter *w)
{
    if (w->blen == 0)
        return 0;
    int rc = qm_iox_pwrite_full(w->x->io, w->fd, w->buf, w->blen, w->off);
    if (rc)
        return qm_err_set(w->err, rc, "%s: writing the index run: %s", w->x->tmp, strerror(-rc));
    w->off += w->blen;
    w->blen = 0;
    return 0;
}

/* Closes the page being filled (zero-padded, with its CRC). */
static int
rw_end_page(rwriter *w)
{
    if (w->in_page == 0)
        return 0;
    u8 *pg = w->buf + w->blen;
    memset(pg + (size_t)w->in_page * QM_HIX_REC, 0,
           QM_HIX_PAGE - 4 - (size_t)w->in_page * QM_HIX_REC);
    qm_put_u32le(pg + QM_HIX_PAGE - 4, page_crc(pg, w->out.npages));
    if (w->out.npages == w->first_cap) {
        w->first_cap = w->first_cap ? w->first_cap * 2 : 256;
        u8 *nf = realloc(w->out.first, w->first_cap * 6);
        if (!nf)
            return -ENOMEM;
        w->out.first = nf;
    }
    memcpy(w->out.first + w->out.npages * 6, pg, 6);
    w->out.npages++;
    w->in_page = 0;
    w->blen += QM_HIX_PAGE;
    return w->blen == HIX_WBUF ? rw_flush(w) : 0;
}

static int
rw_add(rwriter *w, const u8 key6[6], u64 pos)
{
    u8 *r = w->buf + w->blen + (size_t)w->in_page * QM_HIX_REC;
    memcpy(r, key6, 6);
    qm_put_u48be(r + 6, pos >> 3);
    w->out.nrec++;
    return ++w->in_page == QM_HIX_PER_PAGE ? rw_end_page(w) : 0;
}

static void
hdr_put_state(u8 *h, const qm_hix_state *st)
{
    qm_put_u64le(h + 64, st->height);
    qm_put_u64le(h + 72, st->next_sn);
    qm_put_u64le(h + 80, st->entry_size);
    qm_put_u64le(h + 88, st->entry_head);
    qm_put_u64le(h + 96, st->live);
    qm_put_u64le(h + 104, st->first_twig);
    memcpy(h + 112, st->root, 32);
}

/* Writes sparse index, blob and header, syncs, renames over the run file and opens it for
 * reading into w->out. */
static int
rw_finish(rwriter *w, const qm_hix_state *st, u64 gen, const u8 *blob, size_t blob_len)
{
    qm_hindex *x = w->x;
    const qm_io *io = x->io;
    QM_RET(rw_end_page(w));
    QM_RET(rw_flush(w));
    u64 sparse_off = w->off, sparse_len = w->out.npages * 6;
    int rc =
        sparse_len ? qm_iox_pwrite_full(x->io, w->fd, w->out.first, sparse_len, sparse_off) : 0;
    if (!rc && blob_len)
        rc = qm_iox_pwrite_full(x->io, w->fd, blob, blob_len, sparse_off + sparse_len);
    u8 *h = w->buf; /* reuse the buffer for the header page */
    memset(h, 0, QM_HIX_PAGE);
    memcpy(h, HIX_MAGIC, 8);
    qm_put_u32le(h + 8, HIX_VERSION);
    qm_put_u32le(h + 12, x->shard);
    qm_put_u64le(h + 16, w->out.nrec);
    qm_put_u64le(h + 24, w->out.npages);
    qm_put_u64le(h + 32, sparse_off + sparse_len);
    qm_put_u64le(h + 40, blob_len);
    qm_put_u32le(h + 48, st ? 1u : 0u);
    qm_put_u32le(h + 52, qm_crc32c(0, w->out.first, sparse_len));
    qm_put_u32le(h + 56, qm_crc32c(0, blob, blob_len));
    if (st)
        hdr_put_state(h, st);
    qm_put_u64le(h + 144, gen);
    qm_put_u32le(h + HIX_HDR_CRC_AT, qm_crc32c(0, h, HIX_HDR_CRC_AT));
    if (!rc)
        rc = qm_iox_pwrite_full(x->io, w->fd, h, QM_HIX_PAGE, 0);
    if (!rc)
        rc = io->fsync(w->fd);
    if (!rc)
        rc = io->rename(x->tmp, x->path);
    if (!rc && w->sync_dir)
        rc = qm_iox_fsync_dir(x->io, x->dir);
    if (rc)
        return qm_err_set(w->err, rc, "%s: writing the index run: %s", x->tmp, strerror(-rc));
    io->close(w->fd);
    w->fd = -1;
    hix_big_free(w->buf, HIX_WBUF);
    w->buf = NULL;
    int fd = io->open(x->path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return qm_err_set(w->err, fd, "%s: %s", x->path, strerror(-fd));
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    w->out.fd = fd;
    w->out.id = hix_new_run_id();
    w->out.file_bytes = sparse_off + sparse_len + blob_len;
    hix_run_map(&w->out);
    return 0;
}

/* ---- merging ------------------------------------------------------------------------------ */

/* A sequential reader of a run's records (merges, foreach). */
typedef struct rreader {
    qm_hindex *x;
    const run *r;
    u8 *buf;
    u64 page, npg; /* pages [page, page + npg) are in buf */
    u64 i;         /* next record index */
    qm_err *err;
} rreader;

#define RR_PAGES 64u

static int
rr_next(rreader *rd, const u8 **rec)
{
    if (rd->i >= rd->r->nrec) {
        *rec = NULL;
        return 0;
    }
    u64 p = rd->i / QM_HIX_PER_PAGE;
    if (p >= rd->page + rd->npg) {
        rd->page = p;
        rd->npg = QM_MIN((u64)RR_PAGES, rd->r->npages - p);
        int rc = qm_iox_pread_full(rd->x->io, rd->r->fd, rd->buf, rd->npg * QM_HIX_PAGE,
                                   (p + 1) * QM_HIX_PAGE);
        if (rc)
            return qm_err_set(rd->err, rc, "%s: reading the index run: %s", rd->x->path,
                              strerror(-rc));
        for (u64 k = 0; k < rd->npg; k++) {
            const u8 *pg = rd->buf + k * QM_HIX_PAGE;
            if (qm_get_u32le(pg + QM_HIX_PAGE - 4) != page_crc(pg, p + k) ||
                memcmp(pg, rd->r->first + (p + k) * 6, 6) != 0)
                return QM_CORRUPT(rd->err, "%s: index page %" PRIu64 " is corrupt", rd->x->path,
                                  p + k);
        }
    }
    *rec = rd->buf + (p - rd->page) * QM_HIX_PAGE + (rd->i % QM_HIX_PER_PAGE) * QM_HIX_REC;
    rd->i++;
    return 0;
}

static int
rv_add(void *arg, const u8 key6[6], u64 pos)
{
    recvec *rv = arg;
    if (rv->dead && qm_posset_has(rv->dead, pos))
        return 0;
    if (rv->n == rv->cap) {
        u64 nc = rv->cap ? rv->cap * 2 : 4096;
        u8 *nv = hix_big_realloc(rv->v, rv->cap * QM_HIX_REC, nc * QM_HIX_REC);
        if (!nv)
            return -ENOMEM;
        rv->v = nv;
        rv->cap = nc;
    }
    memcpy(rv->v + rv->n * QM_HIX_REC, key6, 6);
    qm_put_u48be(rv->v + rv->n * QM_HIX_REC + 6, pos >> 3);
    rv->n++;
    return 0;
}

static int
rec12_cmp(const void *a, const void *b)
{
    return memcmp(a, b, QM_HIX_REC);
}

/* The live records of overlay layers ls (NULL-terminated, oldest first, at most two) in key
 * order: each layer's records minus those the next layer erased. */
static int
overlay_collect(const qm_hindex *x, layer *const *ls, recvec *rv)
{
    for (unsigned k = 0; ls[k]; k++) {
        rv->dead = ls[k + 1] ? &ls[k + 1]->del : NULL;
        QM_RET(qm_index_foreach(&ls[k]->ins, x->shard, rv_add, rv));
    }
    if (ls[0] && ls[1] && rv->n > 1)
        qsort(rv->v, rv->n, QM_HIX_REC, rec12_cmp);
    return 0;
}

/* Whether a layer of ls (NULL-terminated, at most 2) erased pos; filt, built from their
 * erased sets, answers most positions (those no layer erased) without asking the sets. */
static bool
dead_in(layer *const *ls, const qm_posfilt *filt, u64 pos)
{
    if (!qm_posfilt_maybe(filt, pos))
        return false;
    for (; *ls; ls++)
        if (qm_posset_has(&(*ls)->del, pos))
            return true;
    return false;
}

/*
 * Every live record of run r merged with overlay layers ls (NULL-terminated, oldest first,
 * at most two), in key order: the run's records minus the positions the layers erased, and
 * the layers' records minus those a newer layer erased. fn's nonzero return stops the walk.
 */
int
hix_merged_walk(qm_hindex *x, const run *r, layer *const *ls, qm_hix_fn fn, void *arg, qm_err *err)
{
    recvec rv = {0};
    rreader rd = {x, r, NULL, 0, 0, 0, err};
    int rc = 0;
    /* Every run record is asked about, and few were erased: a merge starts when the overlay's
     * changes reach a twelfth of the run's records (hindex.c). */
    const qm_posset *sets[2];
    unsigned nsets = 0;
    for (unsigned k = 0; ls[k] && nsets < 2; k++)
        sets[nsets++] = &ls[k]->del;
    qm_posfilt filt;
    qm_posfilt_build(&filt, sets, nsets);
    QM_TRY(overlay_collect(x, ls, &rv));
    rd.buf = hix_big_realloc(NULL, 0, RR_PAGES * QM_HIX_PAGE);
    if (!rd.buf) {
        rc = -ENOMEM;
        goto out;
    }
    const u8 *rec = NULL;
    if (r->fd >= 0)
        rc = rr_next(&rd, &rec);
    u64 j = 0;
    while (!rc && (rec || j < rv.n)) {
        if (rec && (j >= rv.n || k48(rec) <= k48(rv.v + j * QM_HIX_REC))) {
            if (!dead_in(ls, &filt, rec_pos12(rec)))
                rc = fn(arg, rec, rec_pos12(rec));
            if (!rc)
                rc = rr_next(&rd, &rec);
        } else {
            const u8 *o = rv.v + j++ * QM_HIX_REC;
            rc = fn(arg, o, rec_pos12(o));
        }
    }
out:
    qm_posfilt_free(&filt);
    hix_big_free(rd.buf, RR_PAGES * QM_HIX_PAGE);
    hix_big_free(rv.v, rv.cap * QM_HIX_REC);
    return rc;
}

static int
write_rec(void *arg, const u8 key6[6], u64 pos)
{
    return rw_add(arg, key6, pos);
}

/*
 * Writes the merged walk of run r and layers ls (see merged_walk) as a new run of state st
 * and generation gen: the merger passes F; a checkpoint F and A, or A alone. sync_dir: the
 * rename is made durable (a checkpoint); a merge's need not be (the journal is not durable
 * either: after a power loss the open may scan the log instead, hixj.h).
 */
int
hix_merge_write(qm_hindex *x, const run *r, layer *const *ls, const qm_hix_state *st, u64 gen,
                const u8 *blob, size_t blob_len, bool sync_dir, run *out, qm_err *err)
{
    rwriter w;
    QM_RET(rw_open(&w, x, err));
    w.sync_dir = sync_dir;
    int rc = hix_merged_walk(x, r, ls, write_rec, &w, err);
    if (!rc)
        rc = rw_finish(&w, st, gen, blob, blob_len);
    if (rc) {
        rw_abort(&w);
        return rc;
    }
    *out = w.out;
    return 0;
}

/*
 * A run written from outside a hybrid index (the in-memory indexer's checkpoint at close):
 * the records walk() yields, in key order, under a new chain generation. The same writer as
 * a merge's or a rebuild's run, so the file is exactly what a hybrid checkpoint would be.
 */
int
qm_hix_write_run(const char *dir, unsigned shard, qm_hix_walk_fn walk, void *warg,
                 const qm_hix_state *st, const u8 *blob, size_t blob_len, qm_err *err)
{
    qm_hindex *x = calloc(1, sizeof(*x)); /* only the paths, the shard and the I/O layer */
    if (!x || hix_set_paths(x, dir, shard)) {
        free(x);
        return -ENOMEM;
    }
    x->io = qm_io_get();
    x->r.fd = x->out.fd = -1;
    rwriter w;
    int rc = rw_open(&w, x, err);
    if (!rc) {
        w.sync_dir = true;
        rc = walk(warg, write_rec, &w);
        if (!rc)
            rc = rw_finish(&w, st, hix_new_chain_gen(), blob, blob_len);
        if (rc)
            rw_abort(&w);
        else
            hix_run_close(x->io, &w.out);
    }
    free(x->dir);
    free(x);
    return rc;
}

/* ---- bulk loads and loading --------------------------------------------------------------- */

int
qm_hix_bulk_add(qm_hindex *x, const u8 kh[32], u64 pos)
{
    if (!x->bulk && !(x->bulk = calloc(1, sizeof(*x->bulk))))
        return -ENOMEM;
    return rv_add(x->bulk, kh, pos);
}

/* A generation number for a new chain of runs (a rebuild or a new index): unlikely to equal
 * that of a journal file left by an earlier chain in the directory. */
u64
hix_new_chain_gen(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    u64 g = ((u64)ts.tv_sec << 30) ^ (u64)ts.tv_nsec ^ ((u64)getpid() << 48);
    return (g & ~(u64)0xffff) | 0x100; /* room for 2^16 merges before wrapping a field */
}

int
qm_hix_bulk_finish(qm_hindex *x, const qm_hix_state *st, const u8 *blob, size_t blob_len)
{
    recvec none = {0}, *b = x->bulk ? x->bulk : &none;
    if (b->n > 1)
        qsort(b->v, b->n, QM_HIX_REC, rec12_cmp);
    /* The bulk records become the run (there is no run and no overlay yet). */
    rwriter w;
    QM_RET(rw_open(&w, x, x->err));
    w.sync_dir = true;
    int rc = 0;
    for (u64 i = 0; i < b->n && !rc; i++)
        rc = rw_add(&w, b->v + i * QM_HIX_REC, rec_pos12(b->v + i * QM_HIX_REC));
    u64 gen = hix_new_chain_gen();
    if (!rc)
        rc = rw_finish(&w, st, gen, blob, blob_len);
    if (rc) {
        rw_abort(&w);
        return rc;
    }
    hix_run_close(x->io, &x->r);
    x->r = w.out;
    x->count = x->r.nrec;
    x->gen = gen;
    x->rheight = st ? st->height : 0;
    hix_bulk_free(x);
    return 0;
}

int
hix_run_read(const char *dir, unsigned shard, run *out, qm_hix_state *st, u64 *gen, u8 **blob,
             size_t *blob_len, qm_err *err)
{
    *blob = NULL;
    *blob_len = 0;
    char path[4200];
    snprintf(path, sizeof(path), "%s/s%02x.hix", dir, shard);
    const qm_io *io = qm_io_get();
    int fd = io->open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return fd == -ENOENT ? QMDB_NOTFOUND : qm_err_set(err, fd, "%s: %s", path, strerror(-fd));
    u8 h[QM_HIX_PAGE];
    u64 fsize = 0;
    int rc = io->fsize(fd, &fsize);
    if (rc || fsize < QM_HIX_PAGE || qm_iox_pread_full(io, fd, h, QM_HIX_PAGE, 0) != 0 ||
        memcmp(h, HIX_MAGIC, 8) != 0 || qm_get_u32le(h + 8) != HIX_VERSION ||
        qm_get_u32le(h + 12) != shard || (qm_get_u32le(h + 48) & 1) == 0 ||
        qm_get_u32le(h + HIX_HDR_CRC_AT) != qm_crc32c(0, h, HIX_HDR_CRC_AT)) {
        io->close(fd);
        return QMDB_NOTFOUND;
    }
    u64 nrec = qm_get_u64le(h + 16), npages = qm_get_u64le(h + 24);
    u64 boff = qm_get_u64le(h + 32), blen = qm_get_u64le(h + 40);
    /* Sizes from the file: every comparison in a form that cannot wrap. */
    bool sane = npages < fsize / QM_HIX_PAGE &&
                npages == nrec / QM_HIX_PER_PAGE + (nrec % QM_HIX_PER_PAGE != 0) && boff <= fsize &&
                blen == fsize - boff;
    u64 soff = sane ? (npages + 1) * QM_HIX_PAGE : 0;
    if (!sane || boff != soff + npages * 6) {
        io->close(fd);
        return QMDB_NOTFOUND;
    }
    u8 *b = malloc(blen ? blen : 1);
    u8 *first = malloc(npages ? npages * 6 : 1);
    rc = (!b || !first) ? -ENOMEM : 0;
    if (!rc && npages)
        rc = qm_iox_pread_full(io, fd, first, npages * 6, soff);
    if (!rc && blen)
        rc = qm_iox_pread_full(io, fd, b, blen, boff);
    if (!rc && (qm_crc32c(0, first, npages * 6) != qm_get_u32le(h + 52) ||
                qm_crc32c(0, b, blen) != qm_get_u32le(h + 56)))
        rc = QMDB_NOTFOUND;
    if (rc) {
        free(b);
        free(first);
        io->close(fd);
        return rc < 0 && rc != -ENOMEM ? qm_err_set(err, rc, "%s: %s", path, strerror(-rc)) : rc;
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    memset(out, 0, sizeof(*out));
    out->fd = fd;
    out->id = hix_new_run_id();
    out->nrec = nrec;
    out->npages = npages;
    out->first = first;
    out->file_bytes = fsize;
    hix_run_map(out);
    st->height = qm_get_u64le(h + 64);
    st->next_sn = qm_get_u64le(h + 72);
    st->entry_size = qm_get_u64le(h + 80);
    st->entry_head = qm_get_u64le(h + 88);
    st->live = qm_get_u64le(h + 96);
    st->first_twig = qm_get_u64le(h + 104);
    memcpy(st->root, h + 112, 32);
    *gen = qm_get_u64le(h + 144);
    *blob = b;
    *blob_len = blen;
    return 0;
}

void
hix_bulk_free(qm_hindex *x)
{
    if (x->bulk)
        hix_big_free(x->bulk->v, x->bulk->cap * QM_HIX_REC);
    free(x->bulk);
    x->bulk = NULL;
}
