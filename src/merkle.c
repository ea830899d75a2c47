/* SPDX-License-Identifier: Apache-2.0 */
/*
 * merkle.c -- one shard's in-DRAM Merkle tree (see merkle.h).
 * Thread: the shard's writer.
 */
#include "merkle.h"

#include "hash.h"

#include <stdlib.h>

/* The arrays drop pruned twigs once at least this many, and at least a quarter of the twigs
 * held, are pruned: each move is paid for by the twigs it drops (amortised O(1) per twig). */
#define TRIM_MIN 8

/* Grows an array to hold need elements, by a quarter at least: the twig and upper-level arrays
 * grow by one twig at a time and live as long as the tree, so doubling left up to half of them
 * unused; a quarter still makes the copies O(1) per element. */
static int
tree_reserve(u8 **arr, u64 *cap, u64 need, size_t elem)
{
    if (need <= *cap)
        return 0;
    u64 n = QM_MAX(need, *cap + *cap / 4 + 8);
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
    QM_RET(tree_reserve((u8 **)&t->twigs, &t->cap, ntwigs - t->twig_base, sizeof(qm_twig)));
    for (u64 i = t->ntwigs; i < ntwigs; i++) {
        qm_twig *tw = &t->twigs[i - t->twig_base];
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
    qm_twig *tw = qm_tree_twig(t, id);
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
    for (u64 id = t->twig_base; id < t->ntwigs; id++)
        free(qm_tree_twig(t, id)->active);
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
    qm_twig *tw = qm_tree_twig(t, id);
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
    if (sn >= t->next_sn || id < t->first_twig)
        return false;
    const u8 *bits = qm_tree_twig(t, id)->active;
    unsigned p = (unsigned)(sn & QM_TWIG_MASK);
    return bits && (bits[p >> 3] >> (p & 7)) & 1;
}

void
qm_tree_deactivate(qm_tree *t, u64 sn, u64 height)
{
    u64 id = sn >> QM_TWIG_SHIFT;
    QM_ASSERT(qm_tree_is_active(t, sn));
    qm_twig *tw = qm_tree_twig(t, id);
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

static u64
level_count(u64 youngest, unsigned l)
{
    return (youngest >> (l - 12)) + 1;
}

/* Where node n of level l is held. */
static u8 *
node_at(const qm_tree *t, unsigned l, u64 n)
{
    QM_ASSERT(n >= t->upper_base[l] && n - t->upper_base[l] < t->upper_cap[l]);
    return t->upper[l] + 32 * (n - t->upper_base[l]);
}

const u8 *
qm_tree_node(const qm_tree *t, unsigned l, u64 n)
{
    return n < level_count(t->ntwigs - 1, l) ? node_at(t, l, n) : qm_null_node(l);
}

/* Room for every node of levels 12..maxl from the level's base to its last node. */
static int
tree_upper_reserve(qm_tree *t, unsigned maxl)
{
    u64 youngest = t->ntwigs - 1;
    for (unsigned l = 12; l <= maxl; l++)
        QM_RET(tree_reserve(&t->upper[l], &t->upper_cap[l],
                            level_count(youngest, l) - t->upper_base[l], 32));
    return 0;
}

/*
 * Moves array *arr (elements of elem bytes, element i holding index *base + i, *cap elements
 * allocated) to start at index nb >= *base, dropping what lies below, and shrinks the
 * allocation to about 1.5 times what indexes nb..end-1 need.
 */
static void
tree_rebase(u8 **arr, u64 *cap, u64 *base, u64 nb, u64 end, size_t elem)
{
    if (nb <= *base)
        return;
    u64 shift = nb - *base;
    *base = nb;
    if (shift >= *cap) {
        free(*arr);
        *arr = NULL;
        *cap = 0;
        return;
    }
    u64 len = end > nb ? end - nb : 0;
    memmove(*arr, *arr + shift * elem, QM_MIN(len, *cap - shift) * elem);
    u64 want = len + len / 2 + 8;
    if (want < *cap) {
        u8 *p = realloc(*arr, want * elem);
        if (p) {
            *arr = p;
            *cap = want;
        }
    }
}

/*
 * Drops the pruned twigs and the upper-tree nodes that no later commit or proof reads, once
 * enough twigs are pruned (TRIM_MIN). With x = first_twig, what stays is twigs x.. and, at
 * level L, nodes from ((x >> (L - 12)) & ~1): the path of twig x and everything right of it,
 * plus the left sibling of each node of that path. A commit rehashes only parents of twigs
 * >= x, whose children lie in that range; a proof of twig id >= x reads the siblings
 * ((id >> (L - 12)) ^ 1), also in it. The dropped nodes cover pruned twigs only, which never
 * change again: their hashes live on in the kept left siblings, so every root is unchanged.
 * Only done when no twig below x waits to be hashed (the pruned ones were hashed by the
 * commit that made them prunable: qm_shard_plan_prune runs after qm_tree_commit).
 */
static void
tree_trim(qm_tree *t)
{
    u64 x = t->first_twig, held = t->ntwigs - t->twig_base;
    if (x < t->twig_base + TRIM_MIN || (x - t->twig_base) * 4 < held)
        return;
    if (t->ndirty == UINT64_MAX)
        return;
    for (u64 i = 0; i < t->ndirty; i++)
        if (t->dirty[i] < x)
            return;
    for (u64 id = t->twig_base; id < x; id++) {
        qm_twig *tw = qm_tree_twig(t, id);
        free(tw->active);
        tw->active = NULL;
    }
    tree_rebase((u8 **)&t->twigs, &t->cap, &t->twig_base, x, t->ntwigs, sizeof(qm_twig));
    u64 youngest = t->ntwigs - 1;
    for (unsigned l = 12; l < QM_MAX_LEVEL; l++)
        tree_rebase(&t->upper[l], &t->upper_cap[l], &t->upper_base[l], (x >> (l - 12)) & ~(u64)1,
                    level_count(youngest, l), 32);
}

int
qm_tree_commit(qm_tree *t)
{
    u64 youngest = t->ntwigs - 1;
    bool all = (t->ndirty == UINT64_MAX);
    unsigned maxl = tree_max_level(youngest);
    t->max_level = maxl;
    QM_RET(tree_upper_reserve(t, maxl));
    /* Youngest twig's left tree. */
    qm_left_tree_update(t->ltree, t->lt_lo, t->lt_hi);
    t->lt_lo = t->lt_hi = 0;

    u64 *cur;
    u64 n;
    if (all) {
        /* Every twig held; the edge nodes left of them never change (tree_trim). */
        n = t->ntwigs - t->twig_base;
        QM_RET(tree_reserve((u8 **)&t->scratch, &t->scratch_cap, n, sizeof(u64)));
        cur = t->scratch;
        for (u64 i = 0; i < n; i++)
            cur[i] = t->twig_base + i;
    } else {
        n = t->ndirty;
        cur = t->dirty;
        qsort(cur, n, sizeof(u64), u64_cmp);
    }
    /* Level 12: twig roots. */
    for (u64 i = 0; i < n; i++) {
        qm_twig *tw = qm_tree_twig(t, cur[i]);
        const u8 *left = (cur[i] == youngest) ? t->ltree[1] : tw->left_root;
        qm_twig_root(left, tw->active, node_at(t, 12, cur[i]));
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
            jobs[nj++] =
                (qm_h2_job){qm_tree_node(t, l - 1, 2 * p), qm_tree_node(t, l - 1, 2 * p + 1),
                            node_at(t, l, p), (u8)(l - 1)};
            if (nj == QM_ARRAY_LEN(jobs)) {
                qm_h2_batch(jobs, nj);
                nj = 0;
            }
        }
        qm_h2_batch(jobs, nj);
    }
    memcpy(t->root, node_at(t, maxl, 0), 32);
    t->ndirty = 0;
    tree_trim(t);
    return 0;
}

void
qm_tree_prune_twig(qm_tree *t, u64 id)
{
    qm_twig *tw = qm_tree_twig(t, id);
    QM_ASSERT(tw->nactive == 0);
    free(tw->active);
    tw->active = NULL;
    if (id + 1 > t->first_twig)
        t->first_twig = id + 1;
    tree_trim(t);
}

u64
qm_tree_dram_bytes(const qm_tree *t)
{
    u64 b = sizeof(*t) + t->cap * sizeof(qm_twig) + QM_LEFT_NODES * 32;
    for (u64 id = t->first_twig; id < t->ntwigs; id++)
        if (qm_tree_twig(t, id)->active)
            b += QM_ACTIVE_BYTES;
    for (int l = 0; l < QM_MAX_LEVEL; l++)
        b += t->upper_cap[l] * 32;
    b += (t->dirty_cap + t->scratch_cap) * sizeof(u64);
    return b;
}

int
qm_tree_recover_begin(qm_tree *t, u64 first, u64 ntwigs)
{
    QM_ASSERT(t->ntwigs == 1 && t->twig_base == 0 && t->next_sn == 0 && first < ntwigs);
    if (first > 0) {
        /* Twig 0 (from qm_tree_init) is pruned: the held twigs start at `first`. */
        free(t->twigs[0].active);
        t->twigs[0].active = NULL;
        t->twig_base = t->ntwigs = first;
        t->ndirty = 0;
        for (unsigned l = 12; l < QM_MAX_LEVEL; l++)
            t->upper_base[l] = (first >> (l - 12)) & ~(u64)1;
    }
    t->first_twig = first;
    QM_RET(qm_tree_ensure_twigs(t, ntwigs));
    t->max_level = tree_max_level(ntwigs - 1);
    return tree_upper_reserve(t, t->max_level);
}

/*
 * The pruned twigs' roots, fed in id order, form complete subtrees; each one that is an edge
 * node (at or right of the level's base) is stored. Nodes left of the base are only carried
 * in b->pend until their sibling arrives.
 */
void
qm_tree_add_pruned(qm_tree *t, qm_edge_builder *b, const u8 left_root[32])
{
    u64 idx = b->n++;
    QM_ASSERT(idx < t->first_twig);
    u8 node[32], parent[32];
    qm_twig_root(left_root, NULL, node);
    for (unsigned l = 12; l < QM_MAX_LEVEL; l++, idx >>= 1) {
        if (idx >= t->upper_base[l])
            memcpy(node_at(t, l, idx), node, 32);
        if (!(idx & 1)) {
            memcpy(b->pend[l], node, 32);
            return;
        }
        qm_h2((u8)l, b->pend[l], node, parent);
        memcpy(node, parent, 32);
    }
}

/* ---- Rollback (rollback.c) ---------------------------------------------------------------- */

int
qm_tree_reactivate(qm_tree *t, u64 sn)
{
    u64 id = sn >> QM_TWIG_SHIFT;
    if (sn >= t->next_sn || id < t->first_twig || !qm_tree_twig(t, id)->active ||
        qm_tree_is_active(t, sn))
        return QMDB_CORRUPT;
    qm_twig *tw = qm_tree_twig(t, id);
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
        free(qm_tree_twig(t, id)->active);
        qm_tree_twig(t, id)->active = NULL;
    }
    t->ntwigs = y + 1;
    if (t->ndirty != UINT64_MAX) { /* drop dirty marks of the removed twigs */
        u64 k = 0;
        for (u64 i = 0; i < t->ndirty; i++)
            if (t->dirty[i] <= y)
                t->dirty[k++] = t->dirty[i];
        t->ndirty = k;
    }
    qm_twig *tw = qm_tree_twig(t, y);
    unsigned keep = (unsigned)(n & QM_TWIG_MASK);
    for (unsigned p = keep; p < QM_TWIG_LEAVES; p++)
        tw->active[p >> 3] &= (u8) ~(1u << (p & 7));
    tw->nactive = 0;
    for (unsigned k = 0; k < QM_ACTIVE_BYTES; k++)
        tw->nactive += (u32)__builtin_popcount(tw->active[k]);
    /* Every deactivation after `height` is undone: no twig's latest one is later. */
    for (u64 id = t->first_twig; id <= y; id++)
        if (qm_tree_twig(t, id)->deact_height > height)
            qm_tree_twig(t, id)->deact_height = height;
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
    return qm_tree_twig(t, id)->first_pos;
}

u64
qm_tree_live(const qm_tree *t)
{
    u64 n = 0;
    for (u64 id = t->first_twig; id < t->ntwigs; id++)
        n += qm_tree_twig(t, id)->nactive;
    return n;
}
