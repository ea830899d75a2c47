/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_fmt.h -- the snapshot chunk byte format (docs/SYNC.md), shared by the exporter
 * (snapshot.c, uses the engine's internals) and the chunk verifier (snap_verify.c, pure).
 *
 * A chunk is a range of twigs [twig_begin, twig_end) of one shard at one height. Format
 * version 1 (all integers little-endian):
 *   OFFSET  SIZE   FIELD
 *   0       4      magic "QMSC"
 *   4       1      format version (1)
 *   5       1      shard (0..15)
 *   6       2      zero
 *   8       8      height H of the state
 *   16      8      next_sn of the shard at H
 *   24      8      sn_start: the shard's compaction cursor at H (every SN below it is dead)
 *   32      8      first_full F: twigs below F are carried as their left root only (all of
 *                  their entries are dead); twigs F.. as ActiveBits and every entry
 *   40      8      twig_begin t0
 *   48      8      twig_end t1 (exclusive; t0 < t1 <= youngest + 1, youngest = next_sn >> 11)
 *   56      8      zero (reserved; the importer lays the entry log out itself)
 *   64      16x32  the 16 shard roots at H (they hash to the state root, FORMAT.md §5)
 *   576     32*P   upper-tree range proof: per level L = 12 .. max_level-1 (max_level =
 *                  13 + floor(log2(youngest))), with [a, b) the range's node indices at L
 *                  (a = t0, b = t1 at level 12; then a >>= 1, b = (b + 1) >> 1):
 *                    the left sibling node(L, a - 1) if a is odd, then
 *                    the right sibling node(L, b) if b is odd and node(L, b) covers a twig
 *                    <= youngest (otherwise it is the null node, which is not carried)
 *   ...            twig records, t0 .. t1-1:
 *                    t < F:  32 bytes  left root
 *                    t >= F: 256 bytes ActiveBits, then the twig's entries in SN order
 *                            (2048, or next_sn & 2047 for the youngest twig), each in its
 *                            stored form (entry.h: padded to a multiple of 8)
 * Nothing may follow the last twig record.
 *
 * Thread: pure definitions.
 */
#ifndef QM_SNAP_FMT_H
#define QM_SNAP_FMT_H

#include "qm_internal.h"

#define QM_SNAP_MAGIC "QMSC"
#define QM_SNAP_VERSION 1u
#define QM_SNAP_HDR 576u
#define QM_SNAP_OFF_ROOTS 64u

#endif /* QM_SNAP_FMT_H */
