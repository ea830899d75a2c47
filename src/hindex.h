/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hindex.h -- the hybrid indexer of one shard: the same multimap as indexer.h (key hash ->
 * log positions of the live entries), with the bulk of the records on SSD.
 *
 * Layers, newest last:
 *   run R       an immutable sorted file of 12-byte records (key-hash bytes [0..6), position/8
 *               as 6 big-endian bytes) in 4 KiB pages of 341 records plus a CRC; DRAM keeps
 *               only the first key of each page (the sparse index, 6 bytes per page).
 *   frozen F    the overlay being merged into a new run by the merger thread (read-only).
 *   active A    the overlay the updater changes: inserted records (an indexer.h index) and
 *               the positions erased from the layers below (a hash set).
 * A lookup combines the three: run records and F records whose position A (or F) erased are
 * skipped. When A holds enough changes and no merge runs, A becomes F and the merger writes
 * R' = R - F.erased + F.inserted to a new file; the updater installs R' at a block boundary
 * (qm_hix_maintain). Lookups read one run page in the common case (two when a page boundary
 * falls inside the key's records or all predecessors on a page are erased).
 *
 * The run file sXX.hix (layout in hixrun.c and FORMAT.md) records the shard state whose
 * index it holds and an opaque blob (hrecover.c stores the ActiveBits of that state), and a
 * generation: the change journal of that generation (hixj.h) records every block after that
 * state. An open resumes from run + journal (hrecover.c): a checkpoint written at close is
 * the case of an empty journal; a merge's run, after a crash, is followed by the journal of
 * the blocks since the merge froze its overlay.
 *
 * Thread: the shard's updater calls insert/erase/replace/maintain (writer lock held); lookups
 * from the updater and from reader threads (reader lock held, so never during a mutation);
 * one merger thread per index works on R and F only.
 */
#ifndef QM_HINDEX_H
#define QM_HINDEX_H

#include "hixfmt.h"
#include "hixj.h"
#include "qm_internal.h"

typedef struct qm_hindex qm_hindex;

/* The shard state a checkpoint describes (compared field by field with META at open). */
typedef struct qm_hix_state {
    u64 height, next_sn, entry_size, entry_head, live, first_twig;
    u8 root[32];
} qm_hix_state;

/* Creates an empty index whose run file is dir/sXX.hix (written by bulk_finish or the first
 * merge). merge_changes: overlay size (inserts + erasures) that starts a merge; 0 = default. */
QM_HIDDEN int qm_hix_new(const char *dir, unsigned shard, u64 merge_changes, qm_hindex **out,
                         qm_err *err);
/* Opens dir/sXX.hix if it is a well-formed run with a state. Returns 0 with the index, its
 * state *st and generation *gen, and the blob (malloc'd, *blob_len bytes); QMDB_NOTFOUND if
 * there is no usable run (missing, old version, or corrupt: the caller rebuilds), or another
 * error. The caller decides whether the state fits the committed one. */
QM_HIDDEN int qm_hix_load(const char *dir, unsigned shard, u64 merge_changes, qm_hix_state *st,
                          u64 *gen, qm_hindex **out, u8 **blob, size_t *blob_len, qm_err *err);
/* Stops the merger and frees everything (the run file stays). */
QM_HIDDEN void qm_hix_free(qm_hindex *x);

/* Same contracts as qm_index_find / qm_index_pred_candidates; *n is the total count, up to
 * cap written. Errors: I/O, or QMDB_CORRUPT for a run page failing its CRC. */
QM_HIDDEN int qm_hix_find(qm_hindex *x, const u8 kh[32], u64 *out, size_t cap, size_t *n);
QM_HIDDEN int qm_hix_pred(qm_hindex *x, const u8 kh[32], u64 *out, size_t cap, size_t *n);
/* qm_hix_find for a client's point read: the same answer; the per-block memo is neither asked
 * nor filled while the process's logs fit in memory (qm_logs_fit). hint (may be NULL) is told
 * each position the run holds for kh as soon as it is found, before the overlays say whether
 * it is still live: the caller may start loading the entry (a hint to the CPU, nothing more). */
typedef void (*qm_hix_hint_fn)(void *arg, u64 pos);
QM_HIDDEN int qm_hix_find_point(qm_hindex *x, const u8 kh[32], u64 *out, size_t cap, size_t *n,
                                qm_hix_hint_fn hint, void *hint_arg);

QM_HIDDEN int qm_hix_insert(qm_hindex *x, const u8 kh[32], u64 pos);
/* Removes record (kh, pos); the caller guarantees it exists (the updater read it). */
QM_HIDDEN int qm_hix_erase(qm_hindex *x, const u8 kh[32], u64 pos);
QM_HIDDEN int qm_hix_replace(qm_hindex *x, const u8 kh[32], u64 old_pos, u64 new_pos);

/* Bulk load (recovery): add records in any order, then bulk_finish sorts and writes the run
 * (of state st with blob; a new generation: the caller starts its journal). */
QM_HIDDEN int qm_hix_bulk_add(qm_hindex *x, const u8 kh[32], u64 pos);
QM_HIDDEN int qm_hix_bulk_finish(qm_hindex *x, const qm_hix_state *st, const u8 *blob,
                                 size_t blob_len);

/* The state of the shard (after the last applied block) and its blob, malloc'd. */
typedef int (*qm_hix_snap_fn)(void *arg, qm_hix_state *st, u8 **blob, size_t *blob_len);

/* Before block `height` is applied (updater): starts a merge when the overlay is large and
 * none is pending: then snap(arg) gives the state the frozen overlay reflects (written into
 * the new run) and the journal of the next generation starts at `height`. snap NULL: runs
 * without state, no journal (tests). Returns a merge failure (I/O, disk full) once. Without a
 * merger thread (a sequential test I/O layer) it merges and installs at once. */
QM_HIDDEN int qm_hix_maintain(qm_hindex *x, u64 height, qm_hix_snap_fn snap, void *arg);

/* After a block is applied (updater): installs a merge that finished. Not before the block:
 * the block's lookups made before its update stage (the batched client reads, the prefetch)
 * memoize their run answers keyed by the run (hixmemo.c), and a run installed between them and
 * the update stage would make the update stage read every run page again. */
QM_HIDDEN void qm_hix_install(qm_hindex *x);

/* The journal (hixj.h): deactivations (the updater's), the end of a block (its record), the
 * journal itself (open), the run's generation. */
QM_HIDDEN void qm_hix_note_deact(qm_hindex *x, u64 sn);
QM_HIDDEN int qm_hix_journal_block(qm_hindex *x, const qm_hixj_blk *b);
QM_HIDDEN qm_hixj *qm_hix_journal(qm_hindex *x);
QM_HIDDEN u64 qm_hix_gen(const qm_hindex *x);
/* A rollback to height h (after its META): true when the run on disk reflects a state at or
 * below h and no merge is pending, so that the run plus its generation's journal up to h is
 * state h (the journal only needs its later records cut). *gen: the run's generation;
 * *first_h: the height of its journal's first record. */
QM_HIDDEN bool qm_hix_run_below(qm_hindex *x, u64 h, u64 *gen, u64 *first_h);

/* True when the lookup of kh can read its first run page without a system call: the page is
 * in this thread's page slots, or (with a mapped run) resident in the OS page cache. False:
 * read it in a batch first (qm_hix_page_of, then qm_hix_pages_use). */
QM_HIDDEN bool qm_hix_cached(qm_hindex *x, const u8 kh[32]);
/* A hint to the CPU a few keys ahead of a lookup of kh that uses the memo (the batched reads,
 * the update stage): start loading the memo slot its probe begins at. */
QM_HIDDEN void qm_hix_prefetch(qm_hindex *x, const u8 kh[32]);

/* Run pages read in one batch ahead of the lookups that need them (prefetch.c): n pages
 * sorted by key = fd << 40 | offset / QM_HIX_PAGE; the bytes of page i at data + pg[i].slot *
 * QM_HIX_PAGE. Pages that did not arrive whole are left out. */
typedef struct qm_hix_pg {
    u64 key;
    u32 slot;
} qm_hix_pg;
typedef struct qm_hix_pages {
    const qm_hix_pg *pg;
    size_t n;
    const u8 *data;
} qm_hix_pages;
/* Lets this thread's lookups take run pages from p (NULL: no more). A page taken is copied
 * into the thread's page slots and CRC-checked there; one that fails is read again. p must
 * outlive its use, and the runs must not change meanwhile (a reader or the writer lock). */
QM_HIDDEN void qm_hix_pages_use(const qm_hix_pages *p);
/* A page's key, and the order of a batch's pages (for qsort). */
QM_HIDDEN u64 qm_hix_pages_key(int fd, u64 off);
QM_HIDDEN int qm_hix_pg_cmp(const void *a, const void *b);

/* The run page a lookup of kh reads first (for the prefetcher): its fd and byte offset.
 * False when the key needs no run page (empty run). */
QM_HIDDEN bool qm_hix_page_of(qm_hindex *x, const u8 kh[32], int *fd, u64 *off);

/* Lookups remember the run's part of their answers in a memo, so that the update stage's
 * lookups of the keys the prefetch stage (or qmdb_get_many) looked up read no page. The
 * prefetch stage makes room for a block's nkeys keys; the end of the update stage empties
 * it. Both with the writer lock held. */
QM_HIDDEN int qm_hix_memo_reserve(qm_hindex *x, size_t nkeys);
QM_HIDDEN void qm_hix_memo_reset(qm_hindex *x);
QM_HIDDEN u64 qm_hix_memo_bytes(qm_hindex *x); /* DRAM of the memo (per block) */

/* Every live record in key order: fn(arg, key-hash bytes [0..6), position). A nonzero
 * return from fn stops the walk and is returned. */
typedef int (*qm_hix_fn)(void *arg, const u8 key6[6], u64 pos);
QM_HIDDEN int qm_hix_foreach(qm_hindex *x, qm_hix_fn fn, void *arg);

/* Merges everything (waiting for a running merge) into a new run (a new generation) that
 * carries state *st and blob, and stops the journal. Durable (fsync, rename, directory
 * fsync) when it returns 0. */
QM_HIDDEN int qm_hix_checkpoint(qm_hindex *x, const qm_hix_state *st, const u8 *blob,
                                size_t blob_len);

/* A run file written without a hybrid index (the in-memory indexer's checkpoint at close):
 * walk(warg, fn, fnarg) calls fn with every record in key order; the run dir/sXX.hix carries
 * state *st and blob under a new chain generation (no journal follows it). Durable (fsync,
 * rename, directory fsync) when it returns 0. */
typedef int (*qm_hix_walk_fn)(void *warg, qm_hix_fn fn, void *fnarg);
QM_HIDDEN int qm_hix_write_run(const char *dir, unsigned shard, qm_hix_walk_fn walk, void *warg,
                               const qm_hix_state *st, const u8 *blob, size_t blob_len,
                               qm_err *err);

QM_HIDDEN u64 qm_hix_count(const qm_hindex *x);      /* live records */
QM_HIDDEN u64 qm_hix_dram_bytes(const qm_hindex *x); /* sparse index + overlays */
QM_HIDDEN u64 qm_hix_ssd_bytes(const qm_hindex *x);  /* run file */
QM_HIDDEN u64 qm_hix_merges(const qm_hindex *x);     /* merges installed */
QM_HIDDEN bool qm_hix_merge_waiting(qm_hindex *x);   /* one finished, not yet installed */
QM_HIDDEN u64 qm_hix_page_reads(const qm_hindex *x); /* run pages read by lookups */

#endif /* QM_HINDEX_H */
