/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta.h -- the metadata record: the recovery point of the database.
 *
 * File `META` holds two 4096-byte slots (offsets 0 and 4096). Commit k writes slot k % 2 and
 * fsyncs it; the slot with the highest valid sequence number wins at open. A torn or corrupt
 * slot fails its CRC and the other (previous) one is used. Slot layout (little-endian):
 *   OFFSET SIZE FIELD
 *   0      8    magic "QMDBMETA"
 *   8      4    format version (1)
 *   12     4    record length in bytes (including the trailing CRC)
 *   16     8    sequence number (one per commit)
 *   24     8    committed height H
 *   32     8    compact_thres
 *   40     4    utilization_ratio
 *   44     4    utilization_div
 *   48     8    history_blocks
 *   56     8    entry-file segment size
 *   64     8    twig-file segment size
 *   72     32   state root of height H
 *   104    16 x 96  per-shard records:
 *          +0  8  next_sn          +8  8  sn_start (compaction cursor)
 *          +16 8  sn_start_pos     +24 8  live entries (sentries included)
 *          +32 8  entry-file size  +40 8  entry-file head (pruned below)
 *          +48 8  first unpruned twig id
 *          +56 8  stub_end: stubs (entry.h) may stand at SNs below it (a restored
 *                 database, until it prunes past them); 0 = none
 *          +64 32 shard root
 * Format version (offset 8): 2 when every shard's stub_end is 0, else 3, so that a binary
 * that does not know stubs refuses the database as another format (QMDB_VERSION_MISMATCH)
 * instead of reporting its stubs as damage. A version-2 record's stub_end must be 0.
 *   1640   4    CRC-32C of bytes [0, 1640)
 *   2048   1644 a second copy of bytes [0, 1644): a damaged byte in one copy loses nothing,
 *                the other copy is used. Within a slot the copy with the higher sequence wins.
 * The rest of the slot is zero.
 *
 * Damage versus a torn write (the rule qm_meta_load applies; docs/RELIABILITY.md). Commit k
 * writes sequence k into slot k % 2 with one 4096-byte write of both copies, so a crash
 * during it leaves a prefix of the new bytes over the old record: at least one copy is still
 * valid (the new one if the prefix covers copy one, else the old copy two). Therefore:
 *   - the newest valid sequence n decides; the other slot must hold n - 1;
 *   - the one exception is a new database: n = 0 in slot 0, slot 1 never written;
 *   - a slot that is blank (all zero), missing (file too short) or has no valid copy while
 *     the other slot holds n >= 1 is damage, not "never written": that slot held n - 1 or
 *     n + 1, and the latter would be a committed block that opening n would silently drop.
 *     qm_meta_load refuses with QMDB_CORRUPT naming the file and offset, unless `salvage` is
 *     set (QMDB_OPEN_SALVAGE), which accepts n; a writable salvage open then rewrites the
 *     damaged slot with the next sequence, same height.
 *   - a valid other slot whose sequence is not n - 1 is a stale or misplaced record: damage.
 * File `ROOTS` holds one 40-byte record per height h at offset 40*h (db.c): the state root
 * of h (32 bytes), CRC-32C of (h as u64 LE || root) (4 bytes LE), 4 zero bytes. It is
 * fsynced before the slot that commits H records it (ROOTS size = 40*(H+1)).
 *
 * Thread: the committing thread only.
 */
#ifndef QM_META_H
#define QM_META_H

#include "qm_internal.h"

#define QM_META_SLOT 4096u
#define QM_META_LEN 1644u
#define QM_META_COPY 2048u       /* offset of the second copy inside a slot */
#define QM_ROOTS_REC 40u         /* one ROOTS record */
#define QM_META_VERSION_STUBS 3u /* the format version of a record with a nonzero stub_end */

typedef struct qm_shard_meta {
    u64 next_sn, sn_start, sn_start_pos, live;
    u64 entry_size, entry_head, first_twig;
    u64 stub_end; /* stubs may stand below this SN (restored databases); 0: none */
    u8 root[32];
} qm_shard_meta;

typedef struct qm_meta {
    u64 seq, height;
    u64 compact_thres;
    u32 util_ratio, util_div;
    u64 history_blocks;
    u64 entry_seg, twig_seg;
    u8 state_root[32];
    qm_shard_meta shard[QM_SHARD_COUNT];
} qm_meta;

/* Encodes into buf (QM_META_SLOT bytes). */
QM_HIDDEN void qm_meta_encode(const qm_meta *m, u8 *buf);
/* Decodes and validates one slot; QMDB_CORRUPT if invalid, QMDB_VERSION_MISMATCH if newer. */
QM_HIDDEN int qm_meta_decode(const u8 *buf, size_t len, qm_meta *m);

/* Reads META in dir and picks the newest valid slot under the damage rule above (salvage:
 * accept the newest valid slot whatever the other holds). QMDB_NOTADB if the file is
 * missing, QMDB_CORRUPT on damage, QMDB_VERSION_MISMATCH for an intact record of another
 * format. */
QM_HIDDEN int qm_meta_load(const char *dir, bool salvage, qm_meta *m, qm_err *err);
/* The same over the first `got` bytes of a META file in buf (path names it in messages). */
QM_HIDDEN int qm_meta_choose(const u8 *buf, size_t got, bool salvage, const char *path, qm_meta *m,
                             qm_err *err);
/* Writes m (its seq decides the slot) and fsyncs. Creates META if needed. */
QM_HIDDEN int qm_meta_store(const char *dir, int *fd, const qm_meta *m, qm_err *err);

/* ROOTS records (format above). */
QM_HIDDEN void qm_roots_encode(u64 height, const u8 root[32], u8 rec[QM_ROOTS_REC]);
/* QMDB_CORRUPT unless rec is the intact record of height (CRC and padding). */
QM_HIDDEN int qm_roots_decode(u64 height, const u8 rec[QM_ROOTS_REC], u8 root[32]);
/* A database restored from a snapshot of height B > 0 (restore.c) holds no roots below B:
 * record 0 is the base record naming B (the 16 bytes "QMDBRESTOREBASE1", B as u64 LE, 8 zero
 * bytes, then the CRC of the usual layout computed with height 2^64-1), and the records of
 * heights 1 .. B-1 are all zero (qm_roots_unheld). */
QM_HIDDEN void qm_roots_base_encode(u64 base, u8 rec[QM_ROOTS_REC]);
QM_HIDDEN bool qm_roots_base_decode(const u8 rec[QM_ROOTS_REC], u64 *base);
QM_HIDDEN bool qm_roots_unheld(const u8 rec[QM_ROOTS_REC]);
/* Reads and checks the root of height from the ROOTS file fd of dir (errors name the file
 * and offset; QMDB_PRUNED for a height below a restored database's snapshot). */
QM_HIDDEN int qm_roots_read(int fd, const char *dir, u64 height, u8 root[32], qm_err *err);
/* Writes the record of height and fsyncs. */
QM_HIDDEN int qm_roots_store(int fd, const char *dir, u64 height, const u8 root[32], qm_err *err);

#endif /* QM_META_H */
