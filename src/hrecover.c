/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hrecover.c -- the index checkpoint of a shard, for both indexers, and the hybrid indexer's
 * side of a shard's life cycle: the state snapshots that runs carry, the journal record of
 * each block, the checkpoint at close, and the opens that load the index from the run file
 * (plus, for the hybrid indexer, the journal) instead of scanning the entry log.
 *
 * A run (hixrun.c) holds the index as of a shard state S (its header) and a blob with the
 * ActiveBits of S (below); the journal of the run's generation (hixj.c) holds, per block
 * after S, the index changes and the deactivated SNs. An open with committed metadata M at
 * height H resumes when:
 *   - the run is well formed, its state is not ahead of M (S.height <= H, S.next_sn <=
 *     M.next_sn, S.entry_size <= M.entry_size, S.first_twig <= M.first_twig), and if
 *     S.height == H it equals M (next_sn, entry_size, live, shard root); or it is ahead
 *     (S.first_twig <= M.first_twig still) and the journal prefix below has an undo record;
 *   - the journal of the run's generation (then of the next one, which a merge that was
 *     running started) holds a chain of records from S.height + 1, each record's CRC valid
 *     (blocks of consecutive heights; an undo record, written by a rollback after its META,
 *     goes from the height just reached down to the rollback's target), and of it the prefix
 *     that qm_hixj_trusted picks for H (the last record reaching H, with no undo record
 *     below H after it) exists; its last record's state (next_sn, entry_size, live) equals
 *     M's.
 * Then ActiveBits = the blob's (none at or above M.next_sn), plus the SNs appended since (all
 * set), minus the journal's deactivations; an undo record sets every SN above its state's
 * next_sn again (they belong to the chain that follows), its 'A' items, and caps the
 * deactivation heights at its height, as the rollback did; the index = the run plus the
 * journal's changes (in the overlay), an undo record's too; the
 * youngest twig's leaves are hashed from the log as in the log scan. The counts must equal
 * M.live, and the shard root recomputed from ActiveBits and the twig roots must equal M's
 * (qm_shard_open); any mismatch before that falls back to the log scan, which rewrites the
 * run. Records after H (blocks never committed) are ignored and a writable open cuts them.
 * Runs written by merges that ran ahead of the committed height (the overlay held a block
 * not yet durable) fail the first rule and fall back.
 *
 * The in-memory indexer uses the same run file as its checkpoint: qmdb_close writes the
 * in-memory index (qm_index_foreach: key order; the 6 key-hash bytes and the position give
 * back the 10-byte records) with the blob, as a run of the committed state under a new chain
 * generation (qm_hix_write_run). A fast open loads it only when S == M exactly (the first rule
 * with S.height == H: no journal is ever read): ActiveBits from the blob, the records appended
 * unit by unit (they arrive sorted; every page's CRC is checked, and a record outside the
 * shard, out of order or past the log stops the load), the youngest twig hashed, the counts
 * and then the shard root checked as above; anything else scans the log. A writable
 * in-memory open deletes the journals (the blocks it commits would be missing from them) and
 * every run but the one it loaded, and syncs the directory (recover.c). The run it loaded
 * stays: it is stale (S.height < H) once a block is committed, so after a crash neither
 * indexer loads it (the hybrid finds no journal), and the clean close replaces it. A hybrid
 * open resumes from an in-memory checkpoint as from its own (S.height == H), and the
 * in-memory indexer loads a hybrid run of exactly the committed state.
 *
 * Blob (stored in sXX.hix; FORMAT.md §10):
 *   OFFSET      SIZE  FIELD
 *   0           8     log offset of the youngest twig's first entry
 *   8           8     ntw: twigs first_twig..youngest of the state
 *   16 + 264*i  256   ActiveBits of twig first_twig + i
 *   272 + 264*i 8     its deactivation height
 *
 * Thread: the shard's updater (checkpoints: the closing thread's pool); the resumes and
 * qm_ckpt_prefetch the opening thread (or its pool).
 */
#include "codec.h"
#include "hindex.h"
#include "hixj.h"
#include "io.h"
#include "shard.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#define CKPT_TWIG (QM_ACTIVE_BYTES + 8u)

static u64
youngest_first_pos(const qm_shard *s)
{
    const qm_tree *t = &s->tree;
    return ((t->ntwigs - 1) << QM_TWIG_SHIFT) < t->next_sn
               ? qm_tree_twig(t, t->ntwigs - 1)->first_pos
               : s->entries.size;
}

/* The shard's state after its last applied block, reported as `height`, and its blob. */
static int
shard_snapshot(qm_shard *s, u64 height, qm_hix_state *st, u8 **blob, size_t *len)
{
    const qm_tree *t = &s->tree;
    st->height = height;
    st->next_sn = t->next_sn;
    st->entry_size = s->entries.size;
    st->entry_head = s->entry_head;
    st->live = s->live;
    st->first_twig = t->first_twig;
    memcpy(st->root, t->root, 32);
    u64 ntw = t->ntwigs - t->first_twig;
    *len = 16 + (size_t)ntw * CKPT_TWIG;
    u8 *b = *blob = malloc(*len);
    if (!b)
        return -ENOMEM;
    qm_put_u64le(b, youngest_first_pos(s));
    qm_put_u64le(b + 8, ntw);
    for (u64 i = 0; i < ntw; i++) {
        const qm_twig *tw = qm_tree_twig(t, t->first_twig + i);
        memcpy(b + 16 + i * CKPT_TWIG, tw->active, QM_ACTIVE_BYTES);
        qm_put_u64le(b + 16 + i * CKPT_TWIG + QM_ACTIVE_BYTES, tw->deact_height);
    }
    return 0;
}

typedef struct snap_arg {
    qm_shard *s;
    u64 height;
} snap_arg;

static int
snap_cb(void *arg, qm_hix_state *st, u8 **blob, size_t *len)
{
    snap_arg *a = arg;
    return shard_snapshot(a->s, a->height, st, blob, len);
}

int
qm_shard_hix_maintain(qm_shard *s, u64 height)
{
    if (!s->index.hyb)
        return 0;
    /* Before block `height`: the tree's root is that of height - 1 (its hash stage is done),
     * and the overlay holds every change up to it. */
    snap_arg a = {s, height - 1};
    return qm_hix_maintain(s->index.hyb, height, snap_cb, &a);
}

int
qm_shard_hix_block_end(qm_shard *s, u64 height)
{
    if (!s->index.hyb)
        return 0;
    qm_hixj_blk b = {height, s->tree.next_sn, s->entries.size, s->live, youngest_first_pos(s)};
    return qm_hix_journal_block(s->index.hyb, &b);
}

int
qm_shard_hix_rebuilt(qm_shard *s, const qm_shard_meta *m)
{
    qm_hix_state st;
    u8 *blob = NULL;
    size_t len = 0;
    int rc = shard_snapshot(s, s->par->height, &st, &blob, &len);
    /* The committed state: the tree's root is recomputed (and compared with META's) only
     * after this. */
    st.entry_head = m->entry_head;
    memcpy(st.root, m->root, 32);
    if (!rc)
        rc = qm_hix_bulk_finish(s->index.hyb, &st, blob, len);
    free(blob);
    if (!rc)
        rc = qm_hixj_start(qm_hix_journal(s->index.hyb), qm_hix_gen(s->index.hyb),
                           s->par->height + 1, false, s->err);
    return rc;
}

/* Sets (on) or clears SN d's active bit; false if it already was so. */
static bool
flip_bit(qm_tree *t, u64 d, bool on)
{
    qm_twig *tw = qm_tree_twig(t, d >> QM_TWIG_SHIFT);
    unsigned bit = (unsigned)(d & QM_TWIG_MASK);
    u8 m = (u8)(1u << (bit & 7));
    if (((tw->active[bit >> 3] & m) != 0) == on)
        return false;
    tw->active[bit >> 3] = on ? (u8)(tw->active[bit >> 3] | m) : (u8)(tw->active[bit >> 3] & ~m);
    return true;
}

/* An undo record down to state b (a rollback): every SN appended after b is the committed
 * chain's (live unless a later record deactivates it), and no deactivation is later than
 * b's height. Its 'A' items then set the SNs that became live again. */
static void
replay_undo(qm_shard *s, const qm_hixj_blk *b, u64 sn0)
{
    qm_tree *t = &s->tree;
    for (u64 d = QM_MAX(b->next_sn, sn0); d < t->next_sn; d++)
        (void)flip_bit(t, d, true);
    for (u64 id = sn0 >> QM_TWIG_SHIFT; id < t->ntwigs; id++) {
        qm_twig *tw = qm_tree_twig(t, id);
        if (tw->deact_height > b->height)
            tw->deact_height = b->height;
    }
}

/* Replays journal records [p, p + len) into index x and the tree's ActiveBits (unpruned
 * twigs from sn0). *last: the state after the last record. false: they do not fit. SNs at or
 * above the committed next_sn (the tree's) occur only in blocks a later undo record
 * discards: their 'D' and 'A' items are skipped. */
static bool
replay(qm_shard *s, qm_hindex *x, const u8 *p, size_t len, u64 sn0, qm_hixj_blk *last)
{
    qm_tree *t = &s->tree;
    qm_hixj_blk b;
    const u8 *items;
    size_t ilen, step;
    while ((step = qm_hixj_next(p, len, &b, &items, &ilen)) != 0) {
        p += step;
        len -= step;
        qm_hixj_item it;
        size_t n;
        u64 from;
        if (qm_hixj_undo_from(items, ilen, &from)) {
            if (from != last->height || b.height >= from)
                return false;
            replay_undo(s, &b, sn0);
        }
        while ((n = qm_hixj_item_get(items, ilen, &it)) != 0) {
            items += n;
            ilen -= n;
            u8 kh[32] = {0};
            memcpy(kh, it.kh, 6);
            int rc = 0;
            if (it.tag == 'I') {
                rc = qm_hix_insert(x, kh, it.a);
            } else if (it.tag == 'E') {
                rc = qm_hix_erase(x, kh, it.a);
            } else if (it.tag == 'R') {
                rc = qm_hix_replace(x, kh, it.a, it.b);
            } else if (it.tag == 'U') {
                continue;                                  /* handled above */
            } else if (it.a >= sn0 && it.a < t->next_sn) { /* 'D', 'A'; below sn0: pruned */
                u64 d = it.a;
                if (d >= b.next_sn && it.tag == 'D')
                    return false;
                if (!flip_bit(t, d, it.tag == 'A'))
                    return false;
                qm_twig *tw = qm_tree_twig(t, d >> QM_TWIG_SHIFT);
                if (it.tag == 'D' && b.height > tw->deact_height)
                    tw->deact_height = b.height;
            }
            if (rc)
                return false;
            s->hix_replayed_changes++;
        }
        if (ilen != 0)
            return false;
        s->hix_replayed_blocks++;
        *last = b;
    }
    return len == 0;
}

bool
qm_ckpt_fits(const qm_hix_state *st, const u8 *blob, size_t len, const qm_shard_meta *m, u64 H,
             u64 *ntw)
{
    *ntw = len >= 16 ? qm_get_u64le(blob + 8) : 0;
    if (len < 16 || *ntw > (len - 16) / CKPT_TWIG || len != 16 + *ntw * CKPT_TWIG ||
        st->first_twig + *ntw != (st->next_sn >> QM_TWIG_SHIFT) + 1)
        return false;
    if (st->height > H || st->next_sn > m->next_sn || st->entry_size > m->entry_size ||
        st->first_twig > m->first_twig)
        return false;
    return st->height < H || (st->next_sn == m->next_sn && st->entry_size == m->entry_size &&
                              st->live == m->live && memcmp(st->root, m->root, 32) == 0);
}

bool
qm_ckpt_fits_ahead(const qm_hix_state *st, const u8 *blob, size_t len, const qm_shard_meta *m,
                   u64 *ntw)
{
    *ntw = len >= 16 ? qm_get_u64le(blob + 8) : 0;
    return len >= 16 && *ntw <= (len - 16) / CKPT_TWIG && len == 16 + *ntw * CKPT_TWIG &&
           st->first_twig + *ntw == (st->next_sn >> QM_TWIG_SHIFT) + 1 &&
           st->first_twig <= m->first_twig;
}

/* ActiveBits and deactivation heights of m's unpruned twigs from the blob of state st (ntw
 * twigs), with every SN appended since st set and none at or after m's next_sn (a run ahead
 * of m holds entries of blocks a rollback discarded). */
static void
ckpt_restore_bits(qm_shard *s, const qm_hix_state *st, const u8 *blob, u64 ntw,
                  const qm_shard_meta *m)
{
    qm_tree *t = &s->tree;
    u64 sn0 = m->first_twig << QM_TWIG_SHIFT, youngest = t->ntwigs - 1;
    for (u64 id = m->first_twig; id <= youngest; id++) {
        qm_twig *tw = qm_tree_twig(t, id);
        u64 i = id - st->first_twig;
        if (i < ntw) {
            memcpy(tw->active, blob + 16 + i * CKPT_TWIG, QM_ACTIVE_BYTES);
            tw->deact_height = qm_get_u64le(blob + 16 + i * CKPT_TWIG + QM_ACTIVE_BYTES);
        } else {
            memset(tw->active, 0, QM_ACTIVE_BYTES);
            tw->deact_height = 0;
        }
    }
    for (u64 sn = QM_MAX(st->next_sn, sn0); sn < m->next_sn; sn++) {
        unsigned bit = (unsigned)(sn & QM_TWIG_MASK);
        qm_tree_twig(t, sn >> QM_TWIG_SHIFT)->active[bit >> 3] |= (u8)(1u << (bit & 7));
    }
    for (u64 sn = QM_MAX(m->next_sn, sn0); sn < ((youngest + 1) << QM_TWIG_SHIFT); sn++) {
        unsigned bit = (unsigned)(sn & QM_TWIG_MASK);
        qm_tree_twig(t, sn >> QM_TWIG_SHIFT)->active[bit >> 3] &= (u8) ~(1u << (bit & 7));
    }
}

/* Once ActiveBits are final: each twig's count, their sum m's live count; then the youngest
 * twig's leaves from the log (its first entry at log offset yfirst). false: they do not fit
 * (or the log could not be read: the scan that follows reports it). */
static bool
ckpt_finish(qm_shard *s, const qm_shard_meta *m, u64 yfirst)
{
    qm_tree *t = &s->tree;
    u64 live = 0;
    for (u64 id = m->first_twig; id < t->ntwigs; id++) {
        qm_twig *tw = qm_tree_twig(t, id);
        tw->nactive = 0;
        for (unsigned k = 0; k < QM_ACTIVE_BYTES; k++)
            tw->nactive += (u32)__builtin_popcount(tw->active[k]);
        live += tw->nactive;
    }
    return live == m->live && qm_shard_youngest_leaves(s, m, yfirst) == 0;
}

int
qm_shard_hix_resume(qm_shard *s, const char *dir, const qm_shard_meta *m)
{
    const qm_io *io = qm_io_get();
    u64 H = s->par->height, gen = 0, ntw = 0;
    qm_hix_state st;
    qm_hindex *x = NULL;
    u8 *blob = NULL, *j1 = NULL, *j2 = NULL;
    size_t len = 0, l1 = 0, l2 = 0;
    u64 end1 = 0, end2 = 0, last_h = 0;
    int rc = qm_hix_load(dir, s->id, s->par->hix_merge, &st, &gen, &x, &blob, &len, s->err);
    if (rc)
        return rc;
    rc = QMDB_NOTFOUND; /* until everything fits */
    /* A run ahead of META (a merge of blocks a rollback discarded since, or of a block never
     * committed) may still lead to it through an undo record in the journal. */
    bool fits = qm_ckpt_fits(&st, blob, len, m, H, &ntw);
    if (!fits && !qm_ckpt_fits_ahead(&st, blob, len, m, &ntw))
        goto out;
    size_t plen = 0;
    u8 *cat = NULL;
    if (!fits || st.height < H) {
        /* The chain of both journals (the next generation's follows this one's), and of it
         * the prefix that leads to H. */
        if (qm_hixj_read(io, dir, s->id, gen, st.height + 1, UINT64_MAX, &j1, &l1, &end1,
                         &last_h) != 0)
            goto out;
        if (qm_hixj_read(io, dir, s->id, gen + 1, last_h + 1, UINT64_MAX, &j2, &l2, &end2,
                         &last_h) != 0)
            l2 = 0;
        cat = malloc(l1 + l2 + 1);
        if (!cat) {
            rc = -ENOMEM;
            goto out;
        }
        memcpy(cat, j1, l1);
        if (l2)
            memcpy(cat + l1, j2, l2);
        free(j1);
        j1 = cat;
        if (!qm_hixj_trusted(cat, l1 + l2, st.height + 1, H, &plen))
            goto out;
        if (!fits) { /* an ahead run needs an undo record on the way */
            bool undo = false;
            const u8 *items;
            size_t ilen, step, at = 0;
            qm_hixj_blk b;
            u64 from;
            while (!undo && (step = qm_hixj_next(cat + at, plen - at, &b, &items, &ilen)) != 0) {
                at += step;
                undo = qm_hixj_undo_from(items, ilen, &from);
            }
            if (!undo)
                goto out;
        }
    }
    /* ActiveBits: the run's state, the SNs appended since, then the journal's changes. */
    ckpt_restore_bits(s, &st, blob, ntw, m);
    u64 sn0 = m->first_twig << QM_TWIG_SHIFT;
    qm_hixj_blk last = {st.height, st.next_sn, st.entry_size, st.live, qm_get_u64le(blob)};
    if (!replay(s, x, j1, plen, sn0, &last))
        goto out;
    if (last.height != H || last.next_sn != m->next_sn || last.entry_size != m->entry_size ||
        last.live != m->live || qm_hix_count(x) != m->live || !ckpt_finish(s, m, last.yfirst))
        goto out;
    /* Later blocks continue the journal of the run's generation, cut after the prefix (with
     * the next generation's records of it moved in: its file is reused by the next merge). */
    rc = 0;
    if (!s->par->rdonly) {
        qm_hixj *j = qm_hix_journal(x);
        if (fits && st.height == H)
            rc = qm_hixj_start(j, gen, H + 1, true, s->err);
        else if (plen <= l1)
            rc = qm_hixj_resume(j, gen, QM_HIXJ_HDR + plen, NULL, 0, s->err);
        else
            rc = qm_hixj_resume(j, gen, end1, j1 + l1, plen - l1, s->err);
    }
    if (!rc) {
        s->index.hyb = x;
        x = NULL;
    }
out:
    if (rc == QMDB_NOTFOUND) { /* its message, if any, is dropped by qmdb_open (shared) */
        s->hix_replayed_blocks = 0;
        s->hix_replayed_changes = 0;
    }
    qm_hix_free(x);
    free(blob);
    free(j1);
    free(j2);
    return rc;
}

/* ---- the in-memory indexer's checkpoint ---------------------------------------------------- */

static int
mem_walk(void *warg, qm_hix_fn fn, void *fnarg)
{
    const qm_shard *s = warg;
    return qm_index_foreach(&s->index.mem, s->id, fn, fnarg);
}

typedef struct mem_load {
    qm_index *x;
    unsigned shard;
    unsigned unit; /* of the records in buf; QM_UNITS_PER_SHARD: none yet */
    u64 prev;      /* the previous record's key */
    u64 entry_size;
    u8 *buf; /* the unit's records so far, in the in-memory layout */
    u32 n, cap;
} mem_load;

static int
mem_load_flush(mem_load *l)
{
    int rc = l->n ? qm_index_load_unit(l->x, l->unit, l->buf, l->n) : 0;
    l->n = 0;
    return rc;
}

/* One run record into the in-memory index. The records come in key order, so each unit's
 * arrive together and sorted: collected, then given to the unit in one allocation of its
 * exact size (no sort, no regrowth). A record outside the shard, out of order or past the
 * log stops the load. */
static int
mem_load_rec(void *arg, const u8 key6[6], u64 pos)
{
    mem_load *l = arg;
    u64 k = qm_get_u48be(key6);
    if ((unsigned)(key6[0] >> 4) != l->shard || k < l->prev || pos >= l->entry_size)
        return QMDB_NOTFOUND;
    l->prev = k;
    unsigned u = ((unsigned)(key6[0] & 0x0f) << 8) | key6[1];
    if (u != l->unit) {
        QM_RET(mem_load_flush(l));
        l->unit = u;
    }
    if (l->n == l->cap) {
        u32 nc = l->cap ? l->cap * 2 : 1024;
        u8 *nb = realloc(l->buf, (size_t)nc * QM_INDEX_REC);
        if (!nb)
            return -ENOMEM;
        l->buf = nb;
        l->cap = nc;
    }
    u8 *r = l->buf + (size_t)l->n++ * QM_INDEX_REC;
    memcpy(r, key6 + 2, QM_INDEX_KEY);
    qm_put_u48be(r + QM_INDEX_KEY, pos >> 3);
    return 0;
}

int
qm_ckpt_load_index(qm_hindex *x, unsigned shard, u64 entry_size, qm_index *out)
{
    mem_load l = {out, shard, QM_UNITS_PER_SHARD, 0, entry_size, NULL, 0, 0};
    int rc = qm_hix_foreach(x, mem_load_rec, &l); /* checks every page's CRC */
    if (!rc)
        rc = mem_load_flush(&l);
    free(l.buf);
    if (rc == -ENOMEM)
        return rc;
    return rc || out->count != qm_hix_count(x) ? QMDB_NOTFOUND : 0;
}

void
qm_ckpt_prefetch(const char *dir, unsigned shard)
{
    if (!qm_io_concurrent()) /* a test layer: keep its sequence of calls as it was */
        return;
    char path[4200];
    snprintf(path, sizeof(path), "%s/s%02x.hix", dir, shard);
    const qm_io *io = qm_io_get();
    int fd = io->open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd >= 0) {
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
        io->close(fd);
    }
}

int
qm_shard_mem_resume(qm_shard *s, const char *dir, const qm_shard_meta *m)
{
    u64 H = s->par->height, gen = 0, ntw = 0;
    qm_hix_state st;
    qm_hindex *x = NULL;
    u8 *blob = NULL;
    size_t len = 0;
    int rc = qm_hix_load(dir, s->id, 0, &st, &gen, &x, &blob, &len, s->err);
    if (rc && rc != -ENOMEM) /* unreadable (say EACCES, EIO): the log scan needs no run */
        return QMDB_NOTFOUND;
    if (rc)
        return rc;
    rc = QMDB_NOTFOUND; /* until everything fits */
    /* Exactly the committed state: no journal follows a run for this indexer. */
    if (!qm_ckpt_fits(&st, blob, len, m, H, &ntw) || st.height != H || qm_hix_count(x) != m->live)
        goto out;
    ckpt_restore_bits(s, &st, blob, ntw, m);
    rc = qm_ckpt_load_index(x, s->id, m->entry_size, &s->index.mem);
    if (!rc && !ckpt_finish(s, m, qm_get_u64le(blob)))
        rc = QMDB_NOTFOUND;
out:
    if (rc) /* the message of a fallback, if any, is dropped by qmdb_open once it succeeds */
        qm_index_free(&s->index.mem);
    qm_hix_free(x);
    free(blob);
    return rc;
}

int
qm_shard_checkpoint(qm_shard *s, const char *dir, u64 height)
{
    if (s->par->rdonly)
        return 0;
    /* The in-memory index came from the run on disk and nothing was applied or undone since:
     * that run is this checkpoint. */
    if (!s->index.hyb && s->run_current)
        return 0;
    qm_hix_state st;
    u8 *blob = NULL;
    size_t len = 0;
    int rc = shard_snapshot(s, height, &st, &blob, &len);
    if (!rc)
        rc = s->index.hyb ? qm_hix_checkpoint(s->index.hyb, &st, blob, len)
                          : qm_hix_write_run(dir, s->id, mem_walk, s, &st, blob, len, s->err);
    free(blob);
    return rc;
}

int
qm_shard_hix_rollback(qm_shard *s, const char *dir, u64 from, u64 h)
{
    qm_hindex *x = s->index.hyb;
    qm_hixj *j = qm_hix_journal(x);
    u64 gen, first;
    const char *env = getenv("QMDB_ROLLBACK_CHECKPOINT"); /* tests of that path */
    bool ckpt = env && *env && atoi(env) != 0;
    if (!ckpt && qm_hix_run_below(x, h, &gen, &first)) {
        /* The run reflects a state at or below h: cut its journal after h's record, fsynced
         * (the records of the discarded blocks must not come back after a power loss and be
         * taken for the blocks committed next). */
        u8 *recs = NULL;
        size_t len = 0, plen = 0;
        u64 end = 0, last = 0;
        int rc = qm_hixj_read(j->io, dir, s->id, gen, first, UINT64_MAX, &recs, &len, &end, &last);
        bool ok = rc == 0 && qm_hixj_trusted(recs, len, first, h, &plen);
        free(recs);
        if (ok) {
            s->hix_rb_cut++;
            return qm_hixj_resume(j, gen, QM_HIXJ_HDR + plen, NULL, 0, s->err);
        }
        if (rc && rc != QMDB_NOTFOUND)
            return qm_err_set(s->err, rc, "shard %u: reading the index journal: %s", s->id,
                              qmdb_strerror(rc));
    }
    if (!ckpt) {
        /* The run holds blocks after h: the undo's index changes and re-activated SNs (which
         * the undo collected like a block's) as an undo record down to h, fsynced. */
        qm_hixj_blk b = {h, s->tree.next_sn, s->entries.size, s->live, youngest_first_pos(s)};
        int rc = qm_hixj_undo(j, from, &b, s->err);
        if (rc != QMDB_NOTFOUND) {
            s->hix_rb_undo += rc == 0;
            return rc;
        }
    }
    /* Not recording: a checkpoint run of state h, and the journal of its generation from
     * h + 1. */
    j->len = 0;
    QM_RET(qm_shard_checkpoint(s, dir, h));
    s->hix_rb_ckpt++;
    return qm_hixj_start(j, qm_hix_gen(x), h + 1, false, s->err);
}
