/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dpos.h -- the deactivation-position records of one shard (files sXX.dpos0, sXX.dpos1):
 * for every committed block, the (SN, log offset) of each entry the block deactivated. A
 * rollback (rollback.c) reads the records of the blocks it discards, so that it reads exactly
 * the entries that become live again instead of walking their twigs from the start.
 *
 * The records only say where to look: the rollback still takes the SNs to re-activate from
 * the DSNs of the discarded entries, and accepts a record's offset only when the entry there
 * decodes with that SN (SNs are unique in the log). Anything missing, torn or damaged (CRC)
 * sends that SN to the twig walk, so a wrong byte here can cost time, never a wrong state.
 * The files are therefore written without fsync and never part of a root.
 *
 * File layout (little-endian; FORMAT.md "Deactivation positions"):
 *   header, 64 bytes:
 *     0   8  magic "QMDBDPOS"
 *     8   4  version (1)
 *     12  4  shard
 *     16  8  generation (the file with the larger one is appended to)
 *     24  8  first height: the block the file was started for (records are >= it)
 *     32  4  CRC-32C of bytes [0, 32)
 *     36  28 zero
 *   then one record per block, heights strictly increasing:
 *     0   8  height
 *     8   4  count n
 *     12  4  zero
 *     16  16 x n  pairs: SN (8), log offset of the entry with that SN (8)
 *     16+16n  4  record length 24 + 16n (read first when walking backwards)
 *     20+16n  4  CRC-32C of bytes [0, 20 + 16n)
 * Two files per shard: once the appended file's first height is `window` blocks old, the
 * other one is restarted (truncated, new header, generation + 1), so the two always hold the
 * records of the last `window` blocks (min(history_blocks, 2^20)).
 *
 * Thread: the shard's updater (the update stage writes a block's record at its end, no
 * fsync), the writer during a rollback, the opening thread.
 */
#ifndef QM_DPOS_H
#define QM_DPOS_H

#include "qm_internal.h"

#define QM_DPOS_HDR 64u
#define QM_DPOS_REC_FIXED 24u /* record bytes besides the pairs */

typedef struct qm_dpos {
    unsigned shard;
    char *path[2]; /* dir/sXX.dpos0, dir/sXX.dpos1 */
    int fd[2];     /* -1: closed */
    u64 gen[2], first[2], end[2];
    unsigned cur; /* the file appended to */
    bool on;      /* recording (a write failure or a missing file turns it off) */
    u64 window;
    u64 *pairs; /* the block being applied: SN, offset, SN, offset, ... */
    size_t n, cap;
    u8 *enc;
    size_t enc_cap;
} qm_dpos;

/* What a rollback found in the records (qm_dpos_collect). */
typedef struct qm_dpos_found {
    u64 records;   /* records of discarded blocks read */
    u64 damaged;   /* walks stopped by a record failing its checks (CRC, length) */
    bool complete; /* every discarded block had its record */
} qm_dpos_found;

QM_HIDDEN void qm_dpos_init(qm_dpos *d);
/* Opens (or creates) the shard's two files for a database committed at `height`: drops the
 * records of later heights (blocks that a rollback or a crash discarded) and restarts a file
 * whose last record is damaged. Never fails: without usable files, recording is off and a
 * rollback walks the twigs. */
QM_HIDDEN void qm_dpos_open(qm_dpos *d, const char *dir, unsigned shard, u64 height, u64 window);
QM_HIDDEN void qm_dpos_close(qm_dpos *d);
/* DRAM of the per-block buffers (they count with the caches in qmdb_stat). */
QM_HIDDEN u64 qm_dpos_dram_bytes(const qm_dpos *d);
/* The block being applied deactivated the entry with SN sn at log offset pos. */
QM_HIDDEN void qm_dpos_note(qm_dpos *d, u64 sn, u64 pos);
/* Ends block `height`: appends its record (no fsync). Failures turn recording off. */
QM_HIDDEN void qm_dpos_block(qm_dpos *d, u64 height);
/* Drops the noted pairs of a block that is not recorded. */
QM_HIDDEN void qm_dpos_reset_block(qm_dpos *d);
/* A rollback from L to h: appends to *out (pairs SN, offset; *nout pairs) the pairs of the
 * records of heights h+1 .. L whose SN is below sn_below, walking the files backwards from
 * the newest record. 0 or -ENOMEM; unreadable or damaged records end the walk (counted). */
QM_HIDDEN int qm_dpos_collect(qm_dpos *d, u64 h, u64 L, u64 sn_below, u64 **out, size_t *nout,
                              qm_dpos_found *f);
/* After a rollback to h is committed: drops the records of heights above h. */
QM_HIDDEN void qm_dpos_cut(qm_dpos *d, u64 h);

/* The record decoder (pure; fuzzed by tests/fuzz/fuzz_dpos.c): rec[0, len) must be exactly
 * one record (length field, count and CRC agree). Sets *height and *count. 0 or
 * QMDB_CORRUPT. */
QM_HIDDEN int qm_dpos_rec_check(const u8 *rec, size_t len, u64 *height, u32 *count);
/* Encodes a record of n pairs (out: QM_DPOS_REC_FIXED + 16 n bytes). */
QM_HIDDEN void qm_dpos_rec_encode(u8 *out, u64 height, const u64 *pairs, u32 n);
/* The header decoder (pure): 0 or QMDB_CORRUPT. */
QM_HIDDEN int qm_dpos_hdr_check(const u8 *h, unsigned shard, u64 *gen, u64 *first);

/* For `qmdb check`: reads file `path` from its start, checking the header and every record
 * (length, CRC, increasing heights). 0 (also for a missing file: *nrec 0), QMDB_CORRUPT with
 * *bad_off the offset of the first bad header or record, or an I/O error. */
QM_HIDDEN int qm_dpos_verify(const char *path, unsigned shard, u64 *nrec, u64 *bad_off);

#endif /* QM_DPOS_H */
