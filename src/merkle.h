/* SPDX-License-Identifier: Apache-2.0 */
/*
 * merkle.h -- one shard's Merkle tree in DRAM: per-twig ActiveBits and left roots, the
 * youngest twig's full left tree, and the upper tree (levels 12..max_level). It hashes
 * lazily: appends and deactivations only mark twigs dirty; qm_tree_commit rehashes the dirty
 * paths and yields the shard root (FORMAT.md §3-§4, and §7a: the root is always the pure
 * Merkle root of the current leaves and ActiveBits).
 *
 * DRAM per unpruned twig: ~64 bytes of bookkeeping (qm_twig) + 256 bytes of ActiveBits + ~64
 * bytes of upper-tree nodes: about 0.2 bytes per unpruned entry. Pruned twigs cost nothing: the
 * arrays start at a base (twig_base for twigs[], upper_base[L] for level L) that follows
 * first_twig; once enough twigs are pruned the live parts move down and the allocations
 * shrink (qm_tree_prune_twig, qm_tree_commit). What stays of the pruned part of the upper
 * tree is its right edge: per level at most one node left of the path to first_twig, the
 * left sibling that the roots and the proofs of unpruned twigs need (FORMAT.md §4).
 *
 * Thread: owned by one shard's writer (the flusher once the pipeline lands).
 */
#ifndef QM_MERKLE_H
#define QM_MERKLE_H

#include "qm_internal.h"
#include "twig.h"

typedef struct qm_twig {
    u8 left_root[32]; /* valid for full twigs; the youngest uses qm_tree.ltree[1] */
    u8 *active;       /* 256 bytes of ActiveBits; NULL once pruned (all zero) */
    u64 first_pos;    /* entry-file offset of the twig's first entry */
    u64 deact_height; /* height of the latest deactivation of one of its entries */
    u32 nactive;      /* number of set ActiveBits */
    bool dirty;       /* twig root must be recomputed */
} qm_twig;

typedef struct qm_tree {
    qm_twig *twigs;  /* twigs[i] is twig twig_base + i: use qm_tree_twig() */
    u64 twig_base;   /* lowest twig id held; <= first_twig */
    u64 ntwigs, cap; /* ntwigs = youngest + 1 (a twig id, not a count of slots); cap in slots */
    u64 first_twig;  /* lowest twig id not pruned */
    u64 next_sn;
    u8 (*ltree)[32];       /* youngest twig's left tree: 4096-node heap */
    unsigned lt_lo, lt_hi; /* dirty leaf range of ltree */
    /* Level L's 32-byte nodes (upper[12] = twig roots): node n at upper[L] + 32 * (n -
     * upper_base[L]), for upper_base[L] <= n <= the level's last node: use qm_tree_node(). */
    u8 *upper[QM_MAX_LEVEL];
    u64 upper_base[QM_MAX_LEVEL];
    u64 upper_cap[QM_MAX_LEVEL]; /* in nodes */
    u64 *dirty;                  /* dirty twig ids (unsorted, may repeat) */
    u64 ndirty, dirty_cap;
    u64 *scratch; /* for dirty-set propagation */
    u64 scratch_cap;
    unsigned max_level;
    u8 root[32]; /* shard root as of the last qm_tree_commit */
} qm_tree;

/* An empty tree (no entries; next_sn 0). */
QM_HIDDEN int qm_tree_init(qm_tree *t);
QM_HIDDEN void qm_tree_free(qm_tree *t);

/*
 * Appends the leaf for serial number t->next_sn (setting its active bit). pos is the entry's
 * file offset. If this fills the youngest twig (position 2047), *full is set and the twig's
 * completed left tree is available through qm_tree_full_nodes() until the next append; the
 * caller persists it, then the next append starts a new twig.
 */
QM_HIDDEN int qm_tree_append(qm_tree *t, const u8 leaf[32], u64 pos, bool *full);
/* The 4096-node heap of the twig just filled (valid right after qm_tree_append sets *full). */
QM_HIDDEN const u8 (*qm_tree_full_nodes(const qm_tree *t))[32];
/* Called after the filled twig is persisted: resets the youngest left tree. */
QM_HIDDEN int qm_tree_start_next_twig(qm_tree *t);

QM_HIDDEN bool qm_tree_is_active(const qm_tree *t, u64 sn);
/* Clears the active bit of sn (which must be set) at block `height`. */
QM_HIDDEN void qm_tree_deactivate(qm_tree *t, u64 sn, u64 height);

/* Rehashes the dirty paths and stores the shard root in t->root. */
QM_HIDDEN int qm_tree_commit(qm_tree *t);
/* Marks every twig dirty (after a rebuild) so the next commit recomputes everything. */
QM_HIDDEN void qm_tree_mark_all_dirty(qm_tree *t);

/*
 * Prunes twig `id` (which must have no ActiveBit set and be hashed): frees its ActiveBits and
 * advances first_twig past it. When enough twigs are pruned, the arrays drop them (above).
 */
QM_HIDDEN void qm_tree_prune_twig(qm_tree *t, u64 id);

/* Twig `id`, which must be held: twig_base <= id < ntwigs (every id >= first_twig is). */
static inline qm_twig *
qm_tree_twig(const qm_tree *t, u64 id)
{
    QM_ASSERT(id >= t->twig_base && id < t->ntwigs);
    return &t->twigs[id - t->twig_base];
}

/*
 * Node n of level L (12 <= L <= max_level) as of the last commit, or the null node if n lies
 * past the level's last node. n must not lie left of the kept edge: n >= upper_base[L], which
 * holds for the siblings on the path of every twig >= first_twig (n >= ((first_twig >> (L -
 * 12)) & ~1)).
 */
QM_HIDDEN const u8 *qm_tree_node(const qm_tree *t, unsigned L, u64 n);

/* DRAM bytes held by the tree. */
QM_HIDDEN u64 qm_tree_dram_bytes(const qm_tree *t);

/* Makes twigs up to ntwigs - 1 exist (new ones: all-zero ActiveBits, null left root). */
QM_HIDDEN int qm_tree_ensure_twigs(qm_tree *t, u64 ntwigs);

/*
 * Recovery. On a tree fresh from qm_tree_init: twigs below `first` are pruned and not held,
 * twigs first..ntwigs-1 are (all-zero ActiveBits; the caller fills in left roots and first
 * positions). Then the left roots of the pruned twigs 0..first-1 are given in order to
 * qm_tree_add_pruned, which keeps only the edge nodes of the upper tree that they determine.
 * The next qm_tree_commit (after qm_tree_mark_all_dirty) computes the rest.
 */
typedef struct qm_edge_builder {
    u64 n;                     /* pruned twigs given so far */
    u8 pend[QM_MAX_LEVEL][32]; /* per level L: the left node still waiting for its sibling */
} qm_edge_builder;
QM_HIDDEN int qm_tree_recover_begin(qm_tree *t, u64 first, u64 ntwigs);
QM_HIDDEN void qm_tree_add_pruned(qm_tree *t, qm_edge_builder *b, const u8 left_root[32]);
/* Rollback (rollback.c). reactivate: sets the active bit of sn (QMDB_CORRUPT if it is set,
 * pruned or not appended). truncate: drops the leaves from SN n on (the twigs after n's and
 * their ActiveBits), caps every deactivation height at `height`, and installs leaves[0 ..
 * n mod 2048) as the youngest twig's left tree. first_pos: log offset of twig id's first
 * entry. live: set ActiveBits of the unpruned twigs. */
QM_HIDDEN int qm_tree_reactivate(qm_tree *t, u64 sn);
QM_HIDDEN int qm_tree_truncate(qm_tree *t, u64 n, u64 height, const u8 (*leaves)[32]);
QM_HIDDEN u64 qm_tree_first_pos(const qm_tree *t, u64 id);
QM_HIDDEN u64 qm_tree_live(const qm_tree *t);

#endif /* QM_MERKLE_H */
