/* SPDX-License-Identifier: Apache-2.0 */
/*
 * merkle.c -- one shard's in-DRAM Merkle tree (see merkle.h).
 * Thread: the shard's writer.
 */
#include "merkle.h"

#include "hash.h"

#include <stdlib.h>

static int
tree_reserve(u8 **arr, u64 *cap, u64 need, size_t elem)
{
    if (need <= *cap)
        return 0;
    u64 n = QM_MAX(need, *cap * 2 + 8);
    u8 *p = realloc(*arr, n * elem);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = n;
    return 0;
}

int
qm_tree_ensure_twigs(qm_tree *t, u64 ntwigs)
{
    if (ntwigs <= t->ntwigs)
        return 0;
    QM_RET(tree_reserve((u8 **)&t->twigs, &t->cap, ntwigs, sizeof(qm_twig)));
    for (u64 i = t->ntwigs; i < ntwigs; i++) {
        qm_twig *tw = &t->twigs[i];
        memset(tw, 0, sizeof(*tw));
        memcpy(tw->left_root, qm_null_left(11), 32);
        tw->active = calloc(1, QM_ACTIVE_BYTES);
        if (!tw->active)
            return -ENOMEM;
        tw->dirty = false;
        t->ntwigs = i + 1;
    }
    return 0;
}

static int
tree_mark_dirty(qm_tree *t, u64 id)
{
    qm_twig *tw = &t->twigs[id];
    if (tw->dirty)
        return 0;
    if (t->ndirty == t->dirty_cap)
        QM_RET(tree_reserve((u8 **)&t->dirty, &t->dirty_cap, t->ndirty + 1, sizeof(u64)));
    t->dirty[t->ndirty++] = id;
    tw->dirty = true;
    return 0;
}

int
qm_tree_init(qm_tree *t)
{
    memset(t, 0, sizeof(*t));
    t->ltree = malloc(QM_LEFT_NODES * 32);
    if (!t->ltree)
        return -ENOMEM;
    qm_left_tree_null(t->ltree);
    QM_RET(qm_tree_ensure_twigs(t, 1));
    QM_RET(tree_mark_dirty(t, 0));
    t->max_level = 13;
    return 0;
}

void
qm_tree_free(qm_tree *t)
{
    for (u64 i = 0; i < t->ntwigs; i++)
        free(t->twigs[i].active);
    free(t->twigs);
    free(t->ltree);
    for (int l = 0; l < QM_MAX_LEVEL; l++)
        free(t->upper[l]);
    free(t->dirty);
    free(t->scratch);
    memset(t, 0, sizeof(*t));
}

int
qm_tree_append(qm_tree *t, const u8 leaf[32], u64 pos, bool *full)
{
    u64 sn = t->next_sn;
    u64 id = sn >> QM_TWIG_SHIFT;
    unsigned p = (unsigned)(sn & QM_TWIG_MASK);
    *full = false;
    QM_ASSERT(id == t->ntwigs - 1);
    qm_twig *tw = &t->twigs[id];
    if (p == 0)
        tw->first_pos = pos;
    memcpy(t->ltree[2048 + p], leaf, 32);
    if (t->lt_lo >= t->lt_hi) {
        t->lt_lo = p;
        t->lt_hi = p + 1;
    } else {
        t->lt_lo = QM_MIN(t->lt_lo, p);
        t->lt_hi = QM_MAX(t->lt_hi, p + 1);
    }
    tw->active[p >> 3] |= (u8)(1u << (p & 7));
    tw->nactive++;
    QM_RET(tree_mark_dirty(t, id));
    t->next_sn = sn + 1;
    if (p == QM_TWIG_MASK) {
        qm_left_tree_update(t->ltree, t->lt_lo, t->lt_hi);
        t->lt_lo = t->lt_hi = 0;
        memcpy(tw->left_root, t->ltree[1], 32);
        /* The next twig exists as soon as next_sn points into it. */
        QM_RET(qm_tree_ensure_twigs(t, id + 2));
        QM_RET(tree_mark_dirty(t, id + 1));
        *full = true;
    }
    return 0;
}

const u8 (*qm_tree_full_nodes(const qm_tree *t))[32]
{
    return (const u8(*)[32])t->ltree;
}

int
qm_tree_start_next_twig(qm_tree *t)
{
    qm_left_tree_null(t->ltree);
    t->lt_lo = t->lt_hi = 0;
    return 0;
}

bool
qm_tree_is_active(const qm_tree *t, u64 sn)
{
    u64 id = sn >> QM_TWIG_SHIFT;
    if (sn >= t->next_sn || id < t->first_twig || !t->twigs[id].active)
        return false;
    unsigned p = (unsigned)(sn & QM_TWIG_MASK);
    return (t->twigs[id].active[p >> 3] >> (p & 7)) & 1;
}

void
qm_tree_deactivate(qm_tree *t, u64 sn, u64 height)
{
    u64 id = sn >> QM_TWIG_SHIFT;
    QM_ASSERT(qm_tree_is_active(t, sn));
    qm_twig *tw = &t->twigs[id];
    unsigned p = (unsigned)(sn & QM_TWIG_MASK);
    tw->active[p >> 3] &= (u8) ~(1u << (p & 7));
    tw->nactive--;
    if (height > tw->deact_height)
        tw->deact_height = height;
    if (tree_mark_dirty(t, id) != 0) {
        /* Out of memory for the dirty list: fall back to rehashing everything. */
        tw->dirty = true;
        t->ndirty = UINT64_MAX;
    }
}

void
qm_tree_mark_all_dirty(qm_tree *t)
{
    t->ndirty = UINT64_MAX;
}

static int
u64_cmp(const void *a, const void *b)
{
    u64 x = *(const u64 *)a, y = *(const u64 *)b;
    return x < y ? -1 : x > y;
}

static unsigned
tree_max_level(u64 youngest)
{
    unsigned lvl = 13;
    while (youngest > 1) {
        youngest >>= 1;
        lvl++;
    }
    return lvl;
}

/* Node n of level l, or the null node if n lies past the level's last node. */
static const u8 *
tree_node(const qm_tree *t, unsigned l, u64 n, u64 youngest)
{
    u64 count = (youngest >> (l - 12)) + 1;
    return n < count ? t->upper[l] + 32 * n : qm_null_node(l);
}

int
qm_tree_commit(qm_tree *t)
{
    u64 youngest = t->ntwigs - 1;
    bool all = (t->ndirty == UINT64_MAX);
    unsigned maxl = tree_max_level(youngest);
    t->max_level = maxl;
    for (unsigned l = 12; l <= maxl; l++) {
        u64 count = (youngest >> (l - 12)) + 1;
        QM_RET(tree_reserve(&t->upper[l], &t->upper_cap[l], count, 32));
    }
    /* Youngest twig's left tree. */
    qm_left_tree_update(t->ltree, t->lt_lo, t->lt_hi);
    t->lt_lo = t->lt_hi = 0;

    u64 *cur;
    u64 n;
    if (all) {
        n = t->ntwigs;
        QM_RET(tree_reserve((u8 **)&t->scratch, &t->scratch_cap, n, sizeof(u64)));
        cur = t->scratch;
        for (u64 i = 0; i < n; i++)
            cur[i] = i;
    } else {
        n = t->ndirty;
        cur = t->dirty;
        qsort(cur, n, sizeof(u64), u64_cmp);
    }
    /* Level 12: twig roots. */
    for (u64 i = 0; i < n; i++) {
        qm_twig *tw = &t->twigs[cur[i]];
        const u8 *left = (cur[i] == youngest) ? t->ltree[1] : tw->left_root;
        qm_twig_root(left, tw->active, t->upper[12] + 32 * cur[i]);
        tw->dirty = false;
    }
    /* Upper levels: the parents of the dirty positions, level by level. */
    for (unsigned l = 13; l <= maxl; l++) {
        u64 m = 0;
        for (u64 i = 0; i < n; i++) {
            u64 parent = cur[i] >> 1;
            if (m == 0 || cur[m - 1] != parent)
                cur[m++] = parent;
        }
        n = m;
        qm_h2_job jobs[64];
        size_t nj = 0;
        for (u64 i = 0; i < n; i++) {
            u64 p = cur[i];
            jobs[nj++] = (qm_h2_job){tree_node(t, l - 1, 2 * p, youngest),
                                     tree_node(t, l - 1, 2 * p + 1, youngest), t->upper[l] + 32 * p,
                                     (u8)(l - 1)};
            if (nj == QM_ARRAY_LEN(jobs)) {
                qm_h2_batch(jobs, nj);
                nj = 0;
            }
        }
        qm_h2_batch(jobs, nj);
    }
    memcpy(t->root, t->upper[maxl], 32);
    t->ndirty = 0;
    return 0;
}

void
qm_tree_prune_twig(qm_tree *t, u64 id)
{
    qm_twig *tw = &t->twigs[id];
    QM_ASSERT(tw->nactive == 0);
    free(tw->active);
    tw->active = NULL;
    if (id + 1 > t->first_twig)
        t->first_twig = id + 1;
}

u64
qm_tree_dram_bytes(const qm_tree *t)
{
    u64 b = sizeof(*t) + t->cap * sizeof(qm_twig) + QM_LEFT_NODES * 32;
    for (u64 i = t->first_twig; i < t->ntwigs; i++)
        if (t->twigs[i].active)
            b += QM_ACTIVE_BYTES;
    for (int l = 0; l < QM_MAX_LEVEL; l++)
        b += t->upper_cap[l] * 32;
    b += (t->dirty_cap + t->scratch_cap) * sizeof(u64);
    return b;
}

/* ---- Rollback (rollback.c) ---------------------------------------------------------------- */

int
qm_tree_reactivate(qm_tree *t, u64 sn)
{
    u64 id = sn >> QM_TWIG_SHIFT;
    if (sn >= t->next_sn || id < t->first_twig || !t->twigs[id].active || qm_tree_is_active(t, sn))
        return QMDB_CORRUPT;
    qm_twig *tw = &t->twigs[id];
    unsigned p = (unsigned)(sn & QM_TWIG_MASK);
    tw->active[p >> 3] |= (u8)(1u << (p & 7));
    tw->nactive++;
    return t->ndirty == UINT64_MAX ? 0 : tree_mark_dirty(t, id);
}

int
qm_tree_truncate(qm_tree *t, u64 n, u64 height, const u8 (*leaves)[32])
{
    u64 y = n >> QM_TWIG_SHIFT;
    if (n > t->next_sn || y < t->first_twig)
        return QMDB_CORRUPT;
    for (u64 id = y + 1; id < t->ntwigs; id++) {
        free(t->twigs[id].active);
        t->twigs[id].active = NULL;
    }
    t->ntwigs = y + 1;
    if (t->ndirty != UINT64_MAX) { /* drop dirty marks of the removed twigs */
        u64 k = 0;
        for (u64 i = 0; i < t->ndirty; i++)
            if (t->dirty[i] <= y)
                t->dirty[k++] = t->dirty[i];
        t->ndirty = k;
    }
    qm_twig *tw = &t->twigs[y];
    unsigned keep = (unsigned)(n & QM_TWIG_MASK);
    for (unsigned p = keep; p < QM_TWIG_LEAVES; p++)
        tw->active[p >> 3] &= (u8) ~(1u << (p & 7));
    tw->nactive = 0;
    for (unsigned k = 0; k < QM_ACTIVE_BYTES; k++)
        tw->nactive += (u32)__builtin_popcount(tw->active[k]);
    /* Every deactivation after `height` is undone: no twig's latest one is later. */
    for (u64 id = t->first_twig; id <= y; id++)
        if (t->twigs[id].deact_height > height)
            t->twigs[id].deact_height = height;
    qm_left_tree_null(t->ltree);
    for (unsigned p = 0; p < keep; p++)
        memcpy(t->ltree[2048 + p], leaves[p], 32);
    t->lt_lo = 0;
    t->lt_hi = keep;
    t->next_sn = n;
    return t->ndirty == UINT64_MAX ? 0 : tree_mark_dirty(t, y);
}

u64
qm_tree_first_pos(const qm_tree *t, u64 id)
{
    return t->twigs[id].first_pos;
}

u64
qm_tree_live(const qm_tree *t)
{
    u64 n = 0;
    for (u64 id = t->first_twig; id < t->ntwigs; id++)
        n += t->twigs[id].nactive;
    return n;
}
