/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot.c -- snapshot export: builds the chunks (snap_fmt.h, docs/SYNC.md) of the committed
 * state of the shards it is given. Per shard, F (the first twig carried in full) is the first
 * twig at or after first_twig with a live entry (or the youngest); twigs below F travel as
 * their left roots (pruned ones read from the twig-meta file), twigs from F on as ActiveBits
 * and entries read sequentially from the entry log. The range proofs come from the tree's
 * upper levels, which hold every sibling right of the pruned edge (merkle.h).
 *
 * Thread: the handle's one caller (snapshot.h).
 */
#include "snapshot.h"

#include "codec.h"
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

/* The first twig carried in full: past the unpruned twigs that hold no live entry. */
static u64
sx_first_full(const qm_tree *t)
{
    u64 y = t->next_sn >> QM_TWIG_SHIFT;
    for (u64 id = t->first_twig; id < y; id++)
        if (qm_tree_twig(t, id)->nactive > 0)
            return id;
    return y;
}

/* Header, shard roots and range proof of twigs [t0, t1). */
static int
sx_head(sx_buf *b, const qm_snap_ctx *c, const qm_shard *s, u64 t0, u64 t1)
{
    const qm_tree *t = &s->tree;
    u64 y = t->next_sn >> QM_TWIG_SHIFT;
    bool tail = t1 == y + 1;
    u8 h[64] = {0};
    memcpy(h, QM_SNAP_MAGIC, 4);
    h[4] = QM_SNAP_VERSION;
    h[5] = (u8)s->id;
    h[6] = tail ? QM_SNAP_TAIL : 0;
    h[7] = (u8)(t->max_level - 12);
    qm_put_u64le(h + 8, c->height);
    qm_put_u64le(h + 16, t0);
    qm_put_u64le(h + 24, t1);
    qm_put_u64le(h + 32, tail ? t->next_sn : 0);
    qm_put_u64le(h + 40, tail ? s->sn_start : 0);
    QM_RET(sx_put(b, h, sizeof(h)));
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
        QM_RET(sx_put(b, c->shards[i].tree.root, 32));
    u64 a = t0, e = t1;
    for (unsigned L = 12; L < t->max_level; L++) {
        if (a & 1)
            QM_RET(sx_put(b, qm_tree_node(t, L, a - 1), 32));
        if (e & 1)
            QM_RET(sx_put(b, qm_tree_node(t, L, e), 32));
        a >>= 1;
        e = (e + 1) >> 1;
    }
    return 0;
}

/* The chunk of the dead prefix [0, F): summaries (left roots) only. */
static int
sx_prefix(sx_buf *b, const qm_snap_ctx *c, qm_shard *s, u64 F)
{
    QM_RET(sx_head(b, c, s, 0, F));
    u8 rec[QM_TMETA_REC], kind = QM_SNAP_SUMMARY;
    for (u64 id = 0; id < F; id++) {
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

/* A chunk of full twigs [t0, t1), t0 >= F. */
static int
sx_full(sx_buf *b, const qm_snap_ctx *c, qm_shard *s, qm_scan *sc, u64 t0, u64 t1)
{
    const qm_tree *t = &s->tree;
    u64 y = t->next_sn >> QM_TWIG_SHIFT;
    u64 pos =
        t0 == y && (t->next_sn & QM_TWIG_MASK) == 0 ? s->entries.size : qm_tree_first_pos(t, t0);
    QM_RET(sx_head(b, c, s, t0, t1));
    static const u8 zero[QM_ACTIVE_BYTES];
    u8 kind = QM_SNAP_FULL;
    for (u64 id = t0; id < t1; id++) {
        const qm_twig *tw = qm_tree_twig(t, id);
        QM_RET(sx_put(b, &kind, 1));
        QM_RET(sx_put(b, tw->active ? tw->active : zero, QM_ACTIVE_BYTES));
        u64 cnt = id < y ? QM_TWIG_LEAVES : (t->next_sn & QM_TWIG_MASK);
        for (u64 i = 0; i < cnt; i++) {
            const u8 *p;
            u32 len;
            qm_entry e;
            QM_RET(qm_shard_scan_entry(s, sc, pos, (id << QM_TWIG_SHIFT) + i, &p, &len, &e));
            QM_RET(sx_put(b, p, len));
            pos += len;
        }
    }
    return 0;
}

int
qm_snap_export(const qm_snap_ctx *c, u64 twigs_per_chunk, qm_snap_sink sink, void *arg)
{
    if (twigs_per_chunk == 0)
        twigs_per_chunk = 1;
    sx_buf b = {0};
    qm_scan sc = {0};
    int rc = 0;
    for (unsigned k = 0; k < QM_SHARD_COUNT; k++) {
        qm_shard *s = &c->shards[k];
        u64 F = sx_first_full(&s->tree), y = s->tree.next_sn >> QM_TWIG_SHIFT;
        if (F > 0) {
            b.len = 0;
            QM_TRY(sx_prefix(&b, c, s, F));
            QM_TRY(sink(arg, k, 0, F, b.p, b.len));
        }
        QM_TRY(qm_scan_init(&sc, &s->entries, 1u << 20));
        for (u64 t0 = F; t0 <= y; t0 += twigs_per_chunk) {
            u64 t1 = QM_MIN(y + 1, t0 + twigs_per_chunk);
            b.len = 0;
            QM_TRY(sx_full(&b, c, s, &sc, t0, t1));
            QM_TRY(sink(arg, k, t0, t1, b.p, b.len));
        }
        qm_scan_free(&sc);
        memset(&sc, 0, sizeof(sc));
    }
out:
    qm_scan_free(&sc);
    free(b.p);
    return rc;
}
