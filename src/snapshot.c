/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot.c -- snapshot export: builds the chunks (snap_fmt.h, docs/SYNC.md) of the committed
 * state of one height from the shards it is given (holding the latest committed state).
 *
 * Per shard, a view of the exported height is built first (sx_view): its ActiveBits for the
 * unpruned twigs, the youngest twig's left root, every unpruned twig root and the upper levels
 * above them. At the latest height the bits are the tree's; at an earlier height h they are the
 * latest bits below h's next_sn plus every SN below it that an entry appended after h
 * deactivated (the log tail after h is read once), the youngest twig of h is hashed from the
 * log, and the upper tree is recomputed; nodes left of the unpruned twigs come from the tree's
 * kept edge (they cover pruned twigs, which were already dead at h when h is in the window).
 * The 16 view roots must hash to the state root of the height.
 *
 * Then, per shard, F is the first twig with a live entry (or the youngest); twigs below F
 * travel as summaries (left roots; pruned ones read from the twig-meta file), twigs from F to
 * the youngest as sparse records (ActiveBits, live entries from the entry log, the leaf hashes
 * of dead ones hashed from their bytes in the log, or a restored database's stubs), the
 * youngest in full (its entries from the log). The log is read once, front to back, with the
 * kernel reading ahead (qm_scan_one_pass); twig files are not read.
 *
 * Thread: the handle's one caller, which runs the per-shard jobs (views, then chunks) on the
 * handle's worker pool; a job touches only its own shard, view and scratch.
 */
#include "snapshot.h"

#include "codec.h"
#include "hash.h"
#include "pool.h"
#include "shard.h"
#include "snap_fmt.h"
#include "twigfile.h"

#include <inttypes.h>
#include <stdlib.h>

typedef struct sx_buf {
    u8 *p;
    size_t len, cap;
} sx_buf;

static int
sx_put(sx_buf *b, const void *d, size_t n)
{
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap - b->len < n)
            cap *= 2;
        u8 *p = realloc(b->p, cap);
        if (!p)
            return -ENOMEM;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
    return 0;
}

/* One shard at the exported height. Twig ids first..y are held (first = the tree's first
 * unpruned twig); level L holds node indices lo[L]..hi[L]. */
typedef struct sx_view {
    u64 next_sn, sn_start, y, first, F;
    unsigned top;          /* max_level */
    u8 *bits;              /* 256 bytes per twig first..y */
    u8 ylroot[32];         /* the youngest twig's left root */
    u8 *lvl[QM_MAX_LEVEL]; /* nodes of levels 12..top */
    u64 lo[QM_MAX_LEVEL], hi[QM_MAX_LEVEL];
    u8 root[32];
} sx_view;

static void
sx_view_free(sx_view *v)
{
    free(v->bits);
    for (unsigned L = 0; L < QM_MAX_LEVEL; L++)
        free(v->lvl[L]);
    memset(v, 0, sizeof(*v));
}

static u8 *
sx_bits(const sx_view *v, u64 t)
{
    return v->bits + QM_ACTIVE_BYTES * (t - v->first);
}

/* Node n of level L of the view: held, left of the unpruned twigs (the tree's kept edge), or
 * past the youngest twig (null). */
static const u8 *
sx_node(const sx_view *v, const qm_tree *t, unsigned L, u64 n)
{
    if (n > v->hi[L])
        return qm_null_node(L);
    if (n >= v->lo[L])
        return v->lvl[L] + 32 * (n - v->lo[L]);
    return qm_tree_node(t, L, n);
}

/* The youngest twig's left root at the view's next_sn, hashed from the log. */
static int
sx_young_root(qm_shard *s, qm_scan *sc, sx_view *v, u8 (*nodes)[32])
{
    unsigned cnt = (unsigned)(v->next_sn & QM_TWIG_MASK);
    qm_left_tree_null(nodes);
    if (cnt > 0) {
        u64 pos = qm_tree_first_pos(&s->tree, v->y);
        for (unsigned i = 0; i < cnt; i++) {
            const u8 *p;
            u32 len;
            qm_entry e;
            QM_RET(qm_shard_scan_entry(s, sc, pos, (v->y << QM_TWIG_SHIFT) + i, &p, &len, &e));
            qm_sha256(p, e.payload_len, nodes[QM_TWIG_LEAVES + i]);
            pos += len;
        }
        qm_left_tree_update(nodes, 0, cnt);
    }
    memcpy(v->ylroot, nodes[1], 32);
    return 0;
}

/* Builds the view of shard s at the exported height (at: NULL for the latest). */
static int
sx_view_build(const qm_snap_ctx *c, qm_shard *s, const qm_snap_at *at, sx_view *v, qm_scan *sc,
              u8 (*nodes)[32])
{
    const qm_tree *t = &s->tree;
    memset(v, 0, sizeof(*v));
    v->next_sn = at ? at->next_sn : t->next_sn;
    v->sn_start = at ? at->sn_start : s->sn_start;
    v->y = v->next_sn >> QM_TWIG_SHIFT;
    v->first = t->first_twig;
    if (v->next_sn > t->next_sn || v->y < v->first || v->y < 1)
        return qm_err_set(c->err, QMDB_PRUNED,
                          "shard %u: the state of height %" PRIu64 " lies in pruned twigs", s->id,
                          c->height);
    v->top = 13u + (unsigned)(63 - __builtin_clzll(v->y));
    u64 n = v->y - v->first + 1;
    v->bits = calloc(n, QM_ACTIVE_BYTES);
    if (!v->bits)
        return -ENOMEM;
    for (u64 id = v->first; id <= v->y; id++) {
        const qm_twig *tw = qm_tree_twig(t, id);
        if (tw->active)
            memcpy(sx_bits(v, id), tw->active, QM_ACTIVE_BYTES);
    }
    u8 *yb = sx_bits(v, v->y);
    for (unsigned i = (unsigned)(v->next_sn & QM_TWIG_MASK); i < QM_TWIG_LEAVES; i++)
        yb[i >> 3] &= (u8) ~(1u << (i & 7));
    if (at && at->next_sn < t->next_sn) {
        /* Entries appended after the height: the SNs below its next_sn that they deactivated
         * were live then. */
        u64 pos = at->entry_size, end = s->entries.size;
        for (u64 sn = at->next_sn; pos < end; sn++) {
            const u8 *p;
            u32 len;
            qm_entry e;
            QM_RET(qm_shard_scan_entry(s, sc, pos, sn, &p, &len, &e));
            for (u32 i = 0; i < e.ndsn; i++) {
                u64 d = qm_entry_dsn_at(&e, i);
                if (d >= at->next_sn)
                    continue;
                if ((d >> QM_TWIG_SHIFT) < v->first)
                    return qm_err_set(c->err, QMDB_PRUNED,
                                      "shard %u: an entry live at height %" PRIu64
                                      " lies in a pruned twig",
                                      s->id, c->height);
                u8 *b = sx_bits(v, d >> QM_TWIG_SHIFT);
                b[(d & QM_TWIG_MASK) >> 3] |= (u8)(1u << (d & 7));
            }
            pos += len;
        }
    }
    QM_RET(sx_young_root(s, sc, v, nodes));
    /* Level 12: the twig roots; then each level up to the root. */
    v->lo[12] = v->first;
    v->hi[12] = v->y;
    v->lvl[12] = malloc(32 * n);
    if (!v->lvl[12])
        return -ENOMEM;
    for (u64 id = v->first; id <= v->y; id++)
        qm_twig_root(id == v->y ? v->ylroot : qm_tree_twig(t, id)->left_root, sx_bits(v, id),
                     v->lvl[12] + 32 * (id - v->first));
    for (unsigned L = 12; L < v->top; L++) {
        v->lo[L + 1] = v->lo[L] >> 1;
        v->hi[L + 1] = v->hi[L] >> 1;
        u64 m = v->hi[L + 1] - v->lo[L + 1] + 1;
        v->lvl[L + 1] = malloc(32 * m);
        if (!v->lvl[L + 1])
            return -ENOMEM;
        for (u64 j = 0; j < m; j++) {
            u64 k = (v->lo[L + 1] + j) << 1;
            qm_h2((u8)L, sx_node(v, t, L, k), sx_node(v, t, L, k + 1), v->lvl[L + 1] + 32 * j);
        }
    }
    memcpy(v->root, v->lvl[v->top], 32);
    v->F = v->y;
    for (u64 id = v->first; id < v->y; id++) {
        const u8 *b = sx_bits(v, id);
        bool any = false;
        for (unsigned i = 0; i < QM_ACTIVE_BYTES && !any; i++)
            any = b[i] != 0;
        if (any) {
            v->F = id;
            break;
        }
    }
    return 0;
}

/* Header, shard roots and range proof of twigs [t0, t1). */
static int
sx_head(sx_buf *b, const qm_snap_ctx *c, const qm_shard *s, const sx_view *vs, u64 t0, u64 t1)
{
    const sx_view *v = &vs[s->id];
    bool tail = t1 == v->y + 1;
    u8 h[64] = {0};
    memcpy(h, QM_SNAP_MAGIC, 4);
    h[4] = QM_SNAP_VERSION;
    h[5] = (u8)s->id;
    h[6] = tail ? QM_SNAP_TAIL : 0;
    h[7] = (u8)(v->top - 12);
    qm_put_u64le(h + 8, c->height);
    qm_put_u64le(h + 16, t0);
    qm_put_u64le(h + 24, t1);
    qm_put_u64le(h + 32, tail ? v->next_sn : 0);
    qm_put_u64le(h + 40, tail ? v->sn_start : 0);
    QM_RET(sx_put(b, h, sizeof(h)));
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
        QM_RET(sx_put(b, vs[i].root, 32));
    u64 a = t0, e = t1;
    for (unsigned L = 12; L < v->top; L++) {
        if (a & 1)
            QM_RET(sx_put(b, sx_node(v, &s->tree, L, a - 1), 32));
        if (e & 1)
            QM_RET(sx_put(b, sx_node(v, &s->tree, L, e), 32));
        a >>= 1;
        e = (e + 1) >> 1;
    }
    return 0;
}

/* The chunk of the dead prefix [0, F): summaries (left roots) only. */
static int
sx_prefix(sx_buf *b, const qm_snap_ctx *c, qm_shard *s, const sx_view *vs)
{
    const sx_view *v = &vs[s->id];
    QM_RET(sx_head(b, c, s, vs, 0, v->F));
    u8 rec[QM_TMETA_REC], kind = QM_SNAP_SUMMARY;
    for (u64 id = 0; id < v->F; id++) {
        QM_RET(sx_put(b, &kind, 1));
        if (id >= s->tree.first_twig) {
            QM_RET(sx_put(b, qm_tree_twig(&s->tree, id)->left_root, 32));
            continue;
        }
        QM_RET(qm_hpfile_read(&s->tmeta, id * QM_TMETA_REC, rec, sizeof(rec)));
        u8 left[32];
        u64 pos;
        if (qm_tmeta_decode(rec, sizeof(rec), id, left, &pos) != 0)
            return QM_CORRUPT(c->err, "%s: twig-meta record %" PRIu64 " is corrupt (CRC)",
                              s->tmeta.path_prefix, id);
        QM_RET(sx_put(b, left, 32));
    }
    return 0;
}

/* A chunk of twigs [t0, t1), t0 >= F: each full twig below the youngest as a sparse record
 * (its live entries from the log; the leaf hashes of its dead ones hashed from their bytes in
 * the log, which the pass reads anyway, or taken from a restored database's stubs), the
 * youngest in full. *carried += the entries written in stored form. */
static int
sx_full(sx_buf *b, const qm_snap_ctx *c, qm_shard *s, const sx_view *vs, qm_scan *sc, u64 t0,
        u64 t1, u64 *carried)
{
    const sx_view *v = &vs[s->id];
    QM_RET(sx_head(b, c, s, vs, t0, t1));
    for (u64 id = t0; id < t1; id++) {
        bool sparse = id < v->y;
        u8 kind = sparse ? QM_SNAP_SPARSE : QM_SNAP_FULL;
        const u8 *bits = sx_bits(v, id);
        QM_RET(sx_put(b, &kind, 1));
        QM_RET(sx_put(b, bits, QM_ACTIVE_BYTES));
        u64 cnt = id < v->y ? QM_TWIG_LEAVES : (v->next_sn & QM_TWIG_MASK);
        u64 pos = cnt ? qm_tree_first_pos(&s->tree, id) : 0;
        for (u64 i = 0; i < cnt; i++) {
            const u8 *p;
            u32 len;
            qm_entry e;
            if (sparse && !((bits[i >> 3] >> (i & 7)) & 1)) {
                u8 leaf[32];
                int k =
                    qm_shard_scan_rec(s, sc, pos, (id << QM_TWIG_SHIFT) + i, &p, &len, &e, leaf);
                if (k < 0)
                    return k;
                if (k == 0)
                    qm_entry_hash(p, leaf);
                QM_RET(sx_put(b, leaf, 32));
                pos += len;
                continue;
            }
            QM_RET(qm_shard_scan_entry(s, sc, pos, (id << QM_TWIG_SHIFT) + i, &p, &len, &e));
            QM_RET(sx_put(b, p, len));
            pos += len;
            (*carried)++;
        }
    }
    return 0;
}

/* One export run: the views of every shard (built first), then each shard's chunks. */
typedef struct sx_run {
    const qm_snap_ctx *c;
    sx_view *vs;
    u64 tpc;
    qm_snap_sink sink;
    void *arg;
} sx_run;

/* Pool job: the view of shard k (own scratch: jobs run concurrently). */
static int
sx_job_view(void *arg, size_t k)
{
    sx_run *r = arg;
    qm_scan sc = {0};
    u8(*nodes)[32] = malloc(QM_LEFT_NODES * 32);
    int rc = nodes ? qm_scan_init(&sc, &r->c->shards[k].entries, 1u << 20) : -ENOMEM;
    if (rc == 0)
        rc = sx_view_build(r->c, &r->c->shards[k], r->c->at ? &r->c->at[k] : NULL, &r->vs[k], &sc,
                           nodes);
    qm_scan_free(&sc);
    free(nodes);
    return rc;
}

/* Pool job: every chunk of shard k, handed to the sink in twig order. */
static int
sx_job_shard(void *arg, size_t k)
{
    sx_run *r = arg;
    const qm_snap_ctx *c = r->c;
    qm_shard *s = &c->shards[k];
    const sx_view *v = &r->vs[k];
    sx_buf b = {0};
    qm_scan sc = {0};
    u64 carried = 0;
    int rc = 0;
    if (v->F > 0) {
        rc = sx_prefix(&b, c, s, r->vs);
        if (rc == 0)
            rc = r->sink(r->arg, (unsigned)k, 0, v->F, b.p, b.len);
    }
    if (rc == 0 && (rc = qm_scan_init(&sc, &s->entries, 1u << 20)) == 0)
        qm_scan_one_pass(&sc);
    for (u64 t0 = v->F; rc == 0 && t0 <= v->y; t0 += r->tpc) {
        u64 t1 = QM_MIN(v->y + 1, t0 + r->tpc);
        b.len = 0;
        rc = sx_full(&b, c, s, r->vs, &sc, t0, t1, &carried);
        if (rc == 0)
            rc = r->sink(r->arg, (unsigned)k, t0, t1, b.p, b.len);
    }
    if (c->entries)
        __atomic_add_fetch(c->entries, carried, __ATOMIC_RELAXED);
    qm_scan_free(&sc);
    free(b.p);
    return rc;
}

int
qm_snap_export(const qm_snap_ctx *c, u64 twigs_per_chunk, qm_snap_sink sink, void *arg)
{
    sx_run r = {c, calloc(QM_SHARD_COUNT, sizeof(sx_view)), QM_MAX(twigs_per_chunk, 1), sink, arg};
    if (!r.vs)
        return -ENOMEM;
    int rc = qm_pool_run(c->pool, QM_SHARD_COUNT, sx_job_view, &r);
    if (rc == 0) {
        /* The views must give the state root of the height. */
        u8 roots[QM_SHARD_COUNT][32];
        for (unsigned k = 0; k < QM_SHARD_COUNT; k++)
            memcpy(roots[k], r.vs[k].root, 32);
        qm_gtree g;
        qm_global_tree((const u8(*)[32])roots, &g);
        if (memcmp(g.root, c->root, 32) != 0)
            rc = QM_CORRUPT(c->err,
                            "snapshot: the rebuilt state of height %" PRIu64
                            " does not hash to its root",
                            c->height);
    }
    if (rc == 0)
        rc = qm_pool_run(c->pool, QM_SHARD_COUNT, sx_job_shard, &r);
    for (unsigned k = 0; k < QM_SHARD_COUNT; k++)
        sx_view_free(&r.vs[k]);
    free(r.vs);
    return rc;
}
