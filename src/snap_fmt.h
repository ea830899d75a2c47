/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_fmt.h -- the snapshot chunk byte format (docs/SYNC.md), shared by the exporter
 * (snapshot.c, uses the engine's internals) and the chunk verifier (snap_verify.c, pure).
 *
 * A chunk is a range of twigs [t0, t1) of one shard at one height. The chunk holding the
 * shard's youngest twig is its tail; only the tail states the shard's next_sn and compaction
 * cursor, so that every other header byte of every chunk is bound by the state root.
 * Format version 2 (all integers little-endian; version 1 is the same without kind 2):
 *   OFFSET  SIZE   FIELD
 *   0       4      magic "QMSC"
 *   4       1      format version (2; 1 is still read)
 *   5       1      shard (0..15)
 *   6       1      flags: bit 0 = tail (t1 - 1 is the youngest twig); other bits zero
 *   7       1      U = max_level - 12 of the shard tree (1..51)
 *   8       8      height H of the state
 *   16      8      t0: first twig
 *   24      8      t1: end of the range (exclusive; t0 < t1 <= 2^U)
 *   32      8      tail: next_sn of the shard (then U = 1 + floor(log2(next_sn >> 11)) and
 *                  t1 = (next_sn >> 11) + 1); else zero
 *   40      8      tail: sn_start, the compaction cursor (no live entry below it); else zero
 *   48      16     zero
 *   64      16x32  the 16 shard roots at H (they hash to the state root, FORMAT.md §5)
 *   576     32*P   range proof: per level L = 12 .. 11+U, with [a, b) the range's node
 *                  indices at L (a = t0, b = t1 at level 12; then a >>= 1, b = (b + 1) >> 1):
 *                    node(L, a - 1) if a is odd, then node(L, b) if b is odd (null nodes too)
 *   ...            twig records, t0 .. t1-1, each a kind byte and its data:
 *                    0: summary  32 bytes: the left root (its ActiveBits are all zero)
 *                    1: full     256 bytes ActiveBits, then the twig's entries in SN order
 *                                (2048; the tail's youngest twig: next_sn & 2047), each in
 *                                its stored form (entry.h: padded to a multiple of 8)
 *                    2: sparse   (version 2 only; never the tail's youngest twig) 256 bytes
 *                                ActiveBits, then for each of the 2048 positions in SN order:
 *                                its entry in stored form if its active bit is set, else
 *                                (a dead entry) its 32-byte leaf hash
 * Nothing may follow the last twig record.
 *
 * Thread: pure definitions.
 */
#ifndef QM_SNAP_FMT_H
#define QM_SNAP_FMT_H

#include "qm_internal.h"

#define QM_SNAP_MAGIC "QMSC"
#define QM_SNAP_VERSION 2u
#define QM_SNAP_VERSION_V1 1u
#define QM_SNAP_HDR 576u
#define QM_SNAP_OFF_ROOTS 64u
#define QM_SNAP_TAIL 1u
#define QM_SNAP_SUMMARY 0u
#define QM_SNAP_FULL 1u
#define QM_SNAP_SPARSE 2u

#endif /* QM_SNAP_FMT_H */
