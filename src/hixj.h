/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hixj.h -- the change journal of the hybrid indexer: per block, the index changes and the
 * deactivated serial numbers a shard's update made, so that an open after a crash resumes
 * from the last run (which records the shard state it reflects, hixrun.c) plus the journal
 * of the blocks since, instead of scanning the whole entry log.
 *
 * File dir/sXX.hixj<gen & 1> (layout in hixj.c and FORMAT.md §11): a header naming the
 * generation (the run it continues) and its first block height, then one record per block.
 * Run g's journal holds the blocks after the state run g reflects; a merge freezes the
 * overlay at a block boundary and starts journal g+1 there, so that run g + journal g +
 * journal g+1 cover every committed block until run g+1 is on disk. Records are written at
 * the end of a block's update stage and never fsynced: a SIGKILL leaves them in the page
 * cache, and after a power loss a missing or torn record (CRC, consecutive heights, the last
 * state compared with the metadata) only sends the open back to the log scan. So the
 * journal adds no fsync to a commit.
 *
 * Thread: the shard's updater (the open before the handle is returned).
 */
#ifndef QM_HIXJ_H
#define QM_HIXJ_H

#include "io.h"
#include "qm_internal.h"

#define QM_HIXJ_HDR 64u
#define QM_HIXJ_REC_HDR 48u

/* The shard state after a block (checked against the metadata at the end of a replay). */
typedef struct qm_hixj_blk {
    u64 height, next_sn, entry_size, live, yfirst; /* yfirst: youngest twig's first entry */
} qm_hixj_blk;

typedef struct qm_hixj {
    const qm_io *io;
    const char *dir; /* the owner's string (qm_hixj_init): it outlives the journal */
    unsigned shard;
    int fd[2]; /* by generation & 1; -1 when closed */
    u64 gen;   /* the generation appended to */
    u64 off;   /* its append offset */
    bool on;   /* recording (a generation was started or resumed) */
    u8 *buf;   /* items of the block being applied */
    size_t len, cap;
    int rc; /* first failure to grow buf (reported at qm_hixj_block) */
} qm_hixj;

/* dir is kept, not copied: it must outlive j. */
QM_HIDDEN void qm_hixj_init(qm_hixj *j, const qm_io *io, const char *dir, unsigned shard);
QM_HIDDEN void qm_hixj_close(qm_hixj *j);
/* DRAM of the record buffer (a per-block buffer: it counts with the caches in qmdb_stat). */
QM_HIDDEN u64 qm_hixj_dram_bytes(const qm_hixj *j);
/* Path of journal file of generation parity p (0/1). */
QM_HIDDEN void qm_hixj_path(const char *dir, unsigned shard, unsigned p, char *out, size_t cap);

/* Creates (truncates) the journal of generation gen, whose first record is block first_h.
 * Later blocks are recorded there. sync: fsync it (an open restarting the journal of its
 * run's generation: the records it drops, of blocks never committed, must not come back
 * after a power loss; a new generation's file needs no fsync, its header and heights
 * tell an earlier generation's leftovers apart). */
QM_HIDDEN int qm_hixj_start(qm_hixj *j, u64 gen, u64 first_h, bool sync, qm_err *err);
/* Continues the existing journal of generation gen at byte offset off (cut there), after
 * appending `more` (records of the next generation's file, which is then deleted). */
QM_HIDDEN int qm_hixj_resume(qm_hixj *j, u64 gen, u64 off, const u8 *more, size_t more_len,
                             qm_err *err);

/* Items of the block being applied (no-ops unless recording). */
QM_HIDDEN void qm_hixj_ins(qm_hixj *j, const u8 kh[6], u64 pos);
QM_HIDDEN void qm_hixj_erase(qm_hixj *j, const u8 kh[6], u64 pos);
QM_HIDDEN void qm_hixj_replace(qm_hixj *j, const u8 kh[6], u64 old_pos, u64 new_pos);
QM_HIDDEN void qm_hixj_deact(qm_hixj *j, u64 sn);

/* Ends a block: writes its record (no fsync; nothing when not recording). */
QM_HIDDEN int qm_hixj_block(qm_hixj *j, const qm_hixj_blk *b, qm_err *err);
/* A rollback (rollback.c): SN sn is live again (an 'A' item; the index changes come through
 * ins/erase as for a block). */
QM_HIDDEN void qm_hixj_react(qm_hixj *j, u64 sn);
/* Ends a rollback from height `from` to b->height (after its META is durable): writes the
 * collected items as an undo record (first item 'U' from) and fsyncs it. QMDB_NOTFOUND when
 * not recording (nothing written). */
QM_HIDDEN int qm_hixj_undo(qm_hixj *j, u64 from, const qm_hixj_blk *b, qm_err *err);

/*
 * Reads the records of journal gen (file parity gen & 1) whose header says generation gen
 * and first block first_h: the valid records (CRC; heights consecutive from first_h, except
 * that an undo record goes from the height just reached down to a lower one) until the
 * height reached exceeds max_h (UINT64_MAX: all of them), copied to *recs (malloc'd, *len
 * bytes); *end: their end offset in the file; *last_h: the height reached after the last
 * record read (first_h - 1 if none). QMDB_NOTFOUND: no such journal.
 */
QM_HIDDEN int qm_hixj_read(const qm_io *io, const char *dir, unsigned shard, u64 gen, u64 first_h,
                           u64 max_h, u8 **recs, size_t *len, u64 *end, u64 *last_h);

/* Whether a record's items start with 'U' (an undo record): *from, the height it undoes. */
QM_HIDDEN bool qm_hixj_undo_from(const u8 *items, size_t ilen, u64 *from);
/* Which prefix of the records recs[0, len) (a chain read by qm_hixj_read from first_h, one
 * generation's or two concatenated) leads to the committed state of height h: the one ending
 * at the last record that reaches h (a block of height h, or an undo record down to h; no
 * record when first_h - 1 == h and none reaches h later), provided no undo record after it
 * goes below h (then the records that led back up to h were lost). *plen: its length.
 * False when there is none. Pure. */
QM_HIDDEN bool qm_hixj_trusted(const u8 *recs, size_t len, u64 first_h, u64 h, size_t *plen);
/* Walks records read by qm_hixj_read: *b the block, its items in [*items, *items + *ilen).
 * Returns the record's length, 0 at the end. */
QM_HIDDEN size_t qm_hixj_next(const u8 *p, size_t left, qm_hixj_blk *b, const u8 **items,
                              size_t *ilen);

/* One item: tag 'I' (insert kh6 at a), 'E' (erase kh6 at a), 'R' (kh6 moves a -> b), 'D'
 * (SN a deactivated). Returns the item's length, 0 if malformed. */
typedef struct qm_hixj_item {
    u8 tag;
    u8 kh[6];
    u64 a, b;
} qm_hixj_item;
QM_HIDDEN size_t qm_hixj_item_get(const u8 *p, size_t left, qm_hixj_item *it);

#endif /* QM_HIXJ_H */
