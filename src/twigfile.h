/* SPDX-License-Identifier: Apache-2.0 */
/*
 * twigfile.h -- persisted Merkle data of full twigs, so every unpruned entry can be proven and
 * the tree rebuilt at open without rehashing the log.
 *
 * Twig file (per shard, an hpfile `sXX.twig`), one 131072-byte record per full twig at offset
 * twig_id * 131072:
 *   OFFSET   SIZE        FIELD
 *   0        4095 x 32   left-tree nodes in heap order: node i (1..4095) at (i-1)*32;
 *                        node 1 = left root, nodes 2048..4095 = the 2048 entry hashes
 *   131040   8           twig id (u64 LE)
 *   131048   4           CRC-32C of bytes [0, 131048)
 *   131052   20          zero
 *
 * Twig-meta file (per shard, an hpfile `sXX.tmeta`, never pruned), one 48-byte record per full
 * twig at offset twig_id * 48:
 *   0   32  left root          32  8  entry-file offset of the twig's first entry
 *   40  4   CRC-32C of bytes [0, 40) followed by the twig id (u64 LE)
 *   44  4   zero
 *
 * Pure encode/decode; the shard's writer does the I/O.
 */
#ifndef QM_TWIGFILE_H
#define QM_TWIGFILE_H

#include "qm_internal.h"

#define QM_TWIG_REC 131072u
#define QM_TMETA_REC 48u

QM_HIDDEN void qm_twigrec_encode(u8 *rec, u64 twig_id, const u8 (*nodes)[32]);
/* Validates a twig record; QMDB_CORRUPT if its id or CRC is wrong. */
QM_HIDDEN int qm_twigrec_check(const u8 *rec, size_t len, u64 twig_id);

QM_HIDDEN void qm_tmeta_encode(u8 *rec, u64 twig_id, const u8 left_root[32], u64 first_pos);
QM_HIDDEN int qm_tmeta_decode(const u8 *rec, size_t len, u64 twig_id, u8 left_root[32],
                              u64 *first_pos);

#endif /* QM_TWIGFILE_H */
