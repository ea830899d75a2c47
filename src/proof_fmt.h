/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proof_fmt.h -- the proof byte format (docs/PROOFS.md) shared by the prover (proof.c, uses
 * the engine's internals; prover.h) and the verifier (proof_verify.c, pure: needs only hash.c
 * and its two backends).
 *
 * Proof format version 1 (all integers little-endian):
 *   OFFSET  SIZE   FIELD
 *   0       4      magic "QMPF"
 *   4       1      format version (1)
 *   5       1      kind: 0 = K is present with a value, 1 = K is absent
 *   6       1      liveness: 0 = main entry's active bit is 1 under the root;
 *                            1 = main entry was deactivated by entry D (second record),
 *                                appended at a height above `height`
 *   7       1      shard k (0..15)
 *   8       8      height h the proof answers for
 *   16      32     key hash SHA256(K)
 *   48      128    global peers: siblings at levels 64, 65, 66, 67 from shard root k up
 *   176     ...    1 + liveness entry records, each:
 *                    4             payload length n
 *                    n             entry payload (FORMAT.md §1, padding excluded)
 *                    1             U = max_level - 12 (1..51)
 *                    8+32(17+U)    upstream shard path: sn | leaf | 11 left peers |
 *                                  ActiveBits page holding sn | 3 right peers (levels 8,9,10) |
 *                                  U upper peers (levels 12..) | shard root
 * Nothing may follow the last record.
 *
 * Multi-key proof format version 1 (docs/PROOFS.md §9; one proof for a list of keys at one
 * height, every Merkle node sent once):
 *   OFFSET  SIZE   FIELD
 *   0       4      magic "QMMP"
 *   4       1      format version (1)
 *   5       8      height h the proof answers for
 *   13      4      number of keys n (1..2^20), in the order the caller asked for them
 *   17      4      number of entry records m (1..2n)
 *   21      ...    n key records: 1 byte answer (bit 0: absent; bit 1: deactivated; the rest
 *                  zero), 4 bytes main entry index, and if deactivated 4 bytes index of the
 *                  entry that deactivated the main entry
 *   ...     ...    m entry records: 4 bytes payload length, payload; strictly ascending by
 *                  (shard, SN), shard = key hash[0] >> 4
 *   ...     ...    one byte U = max_level - 12 (1..51) per distinct shard of the entries,
 *                  ascending
 *   ...     ...    node stream: 32-byte items (hashes, or ActiveBits pages) in the order a
 *                  depth-first, left-first walk of the global tree from the state root needs
 *                  them (docs/PROOFS.md §9); nothing may follow
 *
 * Block witness format version 1 (docs/PROOFS.md §10; block H against the root of H - 1):
 *   OFFSET  SIZE   FIELD
 *   0       4      magic "QMBW"
 *   4       1      format version (1)
 *   5       8      height H of the witnessed block
 *   13      8      compact_thres            } the database's compaction parameters
 *   21      4      utilization_ratio        } (FORMAT.md §7), fixed at creation
 *   25      4      utilization_div          }
 *   29      512    the 16 shard roots of height H - 1
 *   541     32     block digest: SHA256 over the block's operations in order, each
 *                  tx (4) | klen (1) | key | vlen (4; 0xFFFFFFFF for a delete) | value;
 *                  all zero when the witness was built from the log alone (not bound)
 *   573     2      shard mask: bit k set = shard k has a section (exactly the shards that
 *                  the block's operations fall in)
 *   575     ...    one section per shard of the mask, ascending:
 *                    8   next_sn before the block       8   sn_start before the block
 *                    8   first unpruned twig id F
 *                    32 x e  edge nodes: for each level i in 0..U-1 (U from next_sn) with
 *                            bit i of F set, node (12 + i, (F >> i) - 1)
 *                    (32 + 256) x (y - F)  per full twig F..y-1 (y = next_sn >> 11): left
 *                            root, ActiveBits
 *                    32 x popcount(c)  youngest twig y, c = next_sn & 2047: the full left
 *                            subtrees left of position c, highest level first
 *                    256 youngest twig's ActiveBits
 *                    the entry at SN next_sn - 1 (binds next_sn: its leaf is not null), as
 *                        an entry record below
 *                    4   entry count m
 *                    m x (4 payload length p, p payload bytes, 11 x 32 left-tree siblings),
 *                        ascending SN
 *                  nothing may follow the last section
 *
 * Thread: pure definitions.
 */
#ifndef QM_PROOF_FMT_H
#define QM_PROOF_FMT_H

#include "qm_internal.h"

#define QM_PROOF_MAGIC "QMPF"
#define QM_PROOF_VERSION 1u
#define QM_PROOF_HDR 176u
#define QM_PROOF_ENTRY_MIN 53u /* payload of an entry with empty key/value, no DSN */
#define QM_PROOF_MAX_U 51u     /* max_level <= 63 */
#define QM_PROOF_PATH_LEN(U) (8u + 32u * (17u + (unsigned)(U)))

enum { QM_PROOF_PRESENT = 0, QM_PROOF_ABSENT = 1 };
enum { QM_PROOF_ACTIVE = 0, QM_PROOF_DEACTIVATED = 1 };

/* Offsets inside one upstream shard path. */
#define QM_PATH_SN 0u
#define QM_PATH_LEAF 8u
#define QM_PATH_LEFT 40u
#define QM_PATH_PAGE 392u
#define QM_PATH_RIGHT 424u
#define QM_PATH_UPPER 520u

/* Multi-key proofs. */
#define QM_MPROOF_MAGIC "QMMP"
#define QM_MPROOF_VERSION 1u
#define QM_MPROOF_HDR 21u
#define QM_MPROOF_MAX_KEYS (1u << 20)
enum { QM_MPROOF_ABSENT = 1, QM_MPROOF_DEACT = 2 };

/* Block witnesses. */
#define QM_WITNESS_MAGIC "QMBW"
#define QM_WITNESS_VERSION 1u
#define QM_WITNESS_HDR 575u
#define QM_WITNESS_DIGEST 541u
#define QM_WITNESS_MASK 573u
/* The block digest above (witness_verify.c); -ENOMEM or 0. */
QM_HIDDEN int qm_block_digest(const qmdb_block_op *ops, size_t nops, u8 out[32]);

#endif /* QM_PROOF_FMT_H */
