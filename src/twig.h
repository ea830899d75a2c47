/* SPDX-License-Identifier: Apache-2.0 */
/*
 * twig.h -- twig geometry and hashing (FORMAT.md §3-§4): the 2048-leaf left tree, the
 * ActiveBits right side (8 pages -> L1[4] -> L2[2] -> L3), the twig root, and the null
 * values that pad the tree on the right (null left-tree nodes per level, null twig root,
 * NULL_NODE[level] for the upper tree). Pure; the null tables are computed once.
 */
#ifndef QM_TWIG_H
#define QM_TWIG_H

#include "qm_internal.h"

#define QM_ACTIVE_BYTES 256u
#define QM_LEFT_NODES 4096u /* heap: node 1 = left root, leaves at 2048..4095 */
#define QM_MAX_LEVEL 64

/* Null left-tree node at level 0..11 (0 = null leaf). */
QM_HIDDEN const u8 *qm_null_left(unsigned level);
/* Null upper node at level 12..63 (12 = null twig root). */
QM_HIDDEN const u8 *qm_null_node(unsigned level);

/* L3 of an ActiveBits bitmap (7 node hashes). */
QM_HIDDEN void qm_active_root(const u8 bits[QM_ACTIVE_BYTES], u8 out[32]);
/* Twig root = H2(11, left_root, L3(bits)). bits NULL means all zero. */
QM_HIDDEN void qm_twig_root(const u8 left_root[32], const u8 *bits, u8 out[32]);

/* Fills a 4096-node left-tree heap with the null tree. */
QM_HIDDEN void qm_left_tree_null(u8 (*nodes)[32]);
/* Recomputes the ancestors of leaves [lo, hi) (positions 0..2047) of a left-tree heap. */
QM_HIDDEN void qm_left_tree_update(u8 (*nodes)[32], unsigned lo, unsigned hi);

#endif /* QM_TWIG_H */
