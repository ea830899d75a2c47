/* SPDX-License-Identifier: Apache-2.0 */
/*
 * merkle.h -- one shard's Merkle tree in DRAM: per-twig ActiveBits and left roots, the
 * youngest twig's full left tree, and the upper tree (levels 12..max_level). It hashes
 * lazily: appends and deactivations only mark twigs dirty; qm_tree_commit rehashes the dirty
 * paths and yields the shard root (FORMAT.md §3-§4, and §7a: the root is always the pure
 * Merkle root of the current leaves and ActiveBits).
 *
 * DRAM per twig: ~100 bytes of bookkeeping + 256 bytes of ActiveBits (freed when the twig is
 * pruned) + ~64 bytes of upper-tree nodes: about 0.2 bytes per entry.
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
    qm_twig *twigs; /* index = twig id; ntwigs = youngest + 1 */
    u64 ntwigs, cap;
    u64 first_twig; /* lowest twig id not pruned */
    u64 next_sn;
    u8 (*ltree)[32];         /* youngest twig's left tree: 4096-node heap */
    unsigned lt_lo, lt_hi;   /* dirty leaf range of ltree */
    u8 *upper[QM_MAX_LEVEL]; /* level L array of 32-byte nodes; upper[12] = twig roots */
    u64 upper_cap[QM_MAX_LEVEL];
    u64 *dirty; /* dirty twig ids (unsorted, may repeat) */
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

/* Frees the ActiveBits of twig `id` (which must have none set). */
QM_HIDDEN void qm_tree_prune_twig(qm_tree *t, u64 id);

/* DRAM bytes held by the tree. */
QM_HIDDEN u64 qm_tree_dram_bytes(const qm_tree *t);

/* For recovery: install a full twig (left root + first pos) / the youngest twig's leaves. */
QM_HIDDEN int qm_tree_ensure_twigs(qm_tree *t, u64 ntwigs);

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
