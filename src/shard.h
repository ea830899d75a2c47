/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shard.h -- one of the 16 shards: its entry log, twig files, Merkle tree, indexer and
 * compaction cursor, and the operations of FORMAT.md §6-§7 on them (the updater).
 *
 * A shard owns all of its state; shards share nothing, so they run as parallel jobs. The
 * block pipeline (db.c) feeds each shard its operations in transaction order (update stage),
 * then calls qm_shard_seal (hash stage); the files are made durable through hpfile sync
 * tickets (flush stage), and once the metadata is durable qm_shard_after_commit prunes.
 *
 * Files of shard XX (two hex digits) in the database directory:
 *   sXX.entries.NNNNNNNNNN  entry-log segments (hpfile; entry layout in entry.h)
 *   sXX.twig.NNNNNNNNNN     twig-file segments (twigfile.h)
 *   sXX.tmeta.NNNNNNNNNN    twig-meta records (twigfile.h)
 *   sXX.dpos0, sXX.dpos1    per block, the log offsets of the entries it deactivated
 *                           (dpos.h; read by a rollback, never part of a root)
 *
 * Thread: one writer per shard (the update stage); qm_shard_get, qm_shard_get_client and
 * qm_shard_read_entry also from reader threads while the writer is excluded (db.c's reader
 * lock); seal, meta_fill and plan_prune on the pipeline's hash stage.
 */
#ifndef QM_SHARD_H
#define QM_SHARD_H

#include "dpos.h"
#include "entry.h"
#include "hpfile.h"
#include "ix.h"
#include "merkle.h"
#include "meta.h"
#include "qm_internal.h"
#include "warm.h"

#include <pthread.h>
#include <stdio.h>

typedef struct qm_params {
    u64 compact_thres;
    u32 util_ratio, util_div;
    u64 history_blocks;
    u64 entry_seg, twig_seg;
    bool verify; /* hash all entries at open */
    bool rdonly;
    bool hybrid;   /* the hybrid indexer (hindex.h) instead of the in-memory one */
    u64 hix_merge; /* hybrid: overlay changes that start a merge (0 = by run size) */
    u64 height;    /* committed height at open (checkpoints of the hybrid indexer) */
} qm_params;

/* A growable byte buffer holding one entry read from the log. p may start as caller storage
 * (a stack array, own == NULL); growing moves it to the heap (own). */
typedef struct qm_ebuf {
    u8 *p;
    size_t cap;
    u8 *own;
} qm_ebuf;

/* One operation of a block, as the updater sees it (after last-op-wins). */
typedef struct qm_op {
    u8 kh[32];
    const u8 *key, *val;
    u32 klen, vlen; /* vlen == 0: delete */
    u32 tx;
    u32 seq; /* position in the batch, for last-op-wins */
} qm_op;

typedef struct qm_shard {
    unsigned id;
    const qm_params *par;
    qm_err *err;
    qm_hpfile entries, twigs, tmeta;
    qm_tree tree;
    qm_ix index;
    u64 sn_start, sn_start_pos, live;
    u64 entry_head;         /* committed prune head of the entry log */
    u64 pending_first_twig; /* twigs below this are pruned once the metadata is durable */
    u64 pruned_deact;       /* latest deactivation height of a twig planned for pruning */
    u64 height;             /* block being applied */
    u64 compactions;
    u64 stub_end; /* stubs (entry.h) may stand at SNs below this (restored databases); 0: none */
    u8 *enc;      /* encode buffer for appended entries */
    size_t enc_cap;
    qm_ebuf rb[4];           /* read buffers for entries under work */
    qm_scan cursor;          /* compaction cursor reader */
    qm_warm warm;            /* entries fetched by client reads for the next block (warm.h) */
    pthread_mutex_t warm_mu; /* guards warm: concurrent readers fill it */
    u32 seen_len;     /* length of the latest entry over 512 bytes read from this shard, 0 before
                         one: sizes the next reads (prefetch.c, shard.c; relaxed atomic) */
    qm_trust res;     /* residency checks of the log's mapped pages that found them in the
                         page cache, in a row: client reads (shard.c's shard_read_mapped) and
                         batched reads of short entries (prefetch.c's pf_queue); io.h */
    qm_cprobe cprobe; /* where memory is short, the ages of the log that batched reads find
                         in the page cache (prefetch.c's pf_cached); io.h */
    u8 *twigrec;      /* 128 KiB scratch for twig records */
    FILE *trace;      /* optional append trace (debugging aid) */
    struct qm_undo *undo; /* when set, the update stage records pre-images here (undo.h) */
    bool point_direct;    /* client reads of pages not in the page cache bypass it (O_DIRECT)
                             while the logs do not fit: QMDB_OPEN_DIRECT_IO (db.c, shard.c) */
    bool index_resumed;   /* the index came from its run file at open (no log scan) */
    bool run_current;     /* ... and no block was applied or undone since: that run is the
                             checkpoint of the current state */
    u64 hix_replayed_blocks, hix_replayed_changes; /* of the index journal, at open */
    qm_dpos dpos; /* the blocks' deactivation positions, for rollbacks (dpos.h) */
    u64 *forget;  /* offset, length, ...: dead entries whose pages the next block drops */
    size_t nforget, forget_cap;
    /* Rollbacks since open (rollback.c): SNs made live again, entries below the discarded
     * tail read for them, and how many of those were read by walking a twig (no usable
     * dpos record). */
    u64 rb_reactivated, rb_entries_read, rb_walked;
    u64 hix_rb_cut, hix_rb_undo, hix_rb_ckpt; /* hybrid rollbacks: journal cut / undo record /
                                                 checkpoint written */
} qm_shard;

/* Creates a new shard with its 4096 sentries (not yet durable). */
QM_HIDDEN int qm_shard_create(qm_shard *s, unsigned id, const char *dir, const qm_params *par,
                              qm_err *err);
/* Opens and recovers a shard from its committed metadata. */
QM_HIDDEN int qm_shard_open(qm_shard *s, unsigned id, const char *dir, const qm_params *par,
                            const qm_shard_meta *m, qm_err *err);
QM_HIDDEN void qm_shard_close(qm_shard *s);
/* Opens the shard's three files, its tree and its log cursor (s->id, s->par, s->err set):
 * from the committed sizes in m, or new and empty when m is NULL. The one opening path of
 * qm_shard_create and qm_shard_open. */
QM_HIDDEN int qm_shard_open_files(qm_shard *s, const char *dir, const qm_shard_meta *m);
/* The index checkpoint (hrecover.c), either indexer: writes the run file dir/sXX.hix of the
 * committed state at `height` (all of the shard's blocks must be durable), so that the next
 * fast open skips the log scan. No-op for a read-only handle, and for an in-memory index
 * loaded from that very run with no block committed since. */
QM_HIDDEN int qm_shard_checkpoint(qm_shard *s, const char *dir, u64 height);
/* Hybrid indexer (hrecover.c). maintain: before block `height` is applied (qm_hix_maintain
 * with the shard's snapshot; a finished merge is installed after a block, by
 * qm_shard_end_update). block_end: after block `height` was applied, its journal
 * record (written, not fsynced: hixj.h). No-ops without the hybrid indexer. */
QM_HIDDEN int qm_shard_hix_maintain(qm_shard *s, u64 height);
/* Hybrid indexer, a rollback from `from` to h after its META is durable (hrecover.c): when
 * the run on disk reflects a state at or below h, cuts the journal after h's record; else
 * appends the undo's index changes (collected in the journal's buffer) as an undo record;
 * both fsynced. Only when the journal is off, a checkpoint run of state h and a journal
 * generation from h + 1. QMDB_ROLLBACK_CHECKPOINT=1 in the environment forces the latter. */
QM_HIDDEN int qm_shard_hix_rollback(qm_shard *s, const char *dir, u64 from, u64 h);
QM_HIDDEN int qm_shard_hix_block_end(qm_shard *s, u64 height);
/* At open (hrecover.c): resume the hybrid index from its run and journal. QMDB_NOTFOUND:
 * nothing usable (the caller rebuilds from the log and then calls qm_shard_hix_rebuilt). */
QM_HIDDEN int qm_shard_hix_resume(qm_shard *s, const char *dir, const qm_shard_meta *m);
/* At open (hrecover.c): load the in-memory index, ActiveBits and deactivation heights from
 * the run file when its state is exactly the committed one (a checkpoint written at close).
 * QMDB_NOTFOUND: missing, stale or damaged (the caller scans the log). */
QM_HIDDEN int qm_shard_mem_resume(qm_shard *s, const char *dir, const qm_shard_meta *m);
/* The two decoders of a checkpoint (hrecover.c; pure but for the run's page reads; fuzzed
 * by tests/fuzz/fuzz_hix.c). fits: the checks every resume makes on a run's state st and blob
 * (len bytes) against the committed state m at height H: the blob holds the ActiveBits of
 * st's twigs first_twig..youngest (*ntw of them), st is not ahead of m, and equals it when
 * st.height == H. load_index: appends run x's records to the empty in-memory index out (of
 * shard `shard`): 0, QMDB_NOTFOUND if a page fails its CRC or a record lies outside the
 * shard, out of key order or at a position >= entry_size (out then holds a part), or an
 * errno code. */
QM_HIDDEN bool qm_ckpt_fits(const qm_hix_state *st, const u8 *blob, size_t len,
                            const qm_shard_meta *m, u64 H, u64 *ntw);
/* The part of qm_ckpt_fits that a run ahead of m must meet too (its blob well formed, no twig
 * pruned since m): such a run resumes only through a journal undo record (hrecover.c). */
QM_HIDDEN bool qm_ckpt_fits_ahead(const qm_hix_state *st, const u8 *blob, size_t len,
                                  const qm_shard_meta *m, u64 *ntw);
QM_HIDDEN int qm_ckpt_load_index(qm_hindex *x, unsigned shard, u64 entry_size, qm_index *out);
/* Before the shards' opens (in-memory indexer, fast open): asks the kernel to read shard's
 * run file ahead, so that the files of all shards are read at once, at the device's queue
 * depth, while the first shards are being loaded. Only under the concurrent (production)
 * I/O layer; a missing file is no error. */
QM_HIDDEN void qm_ckpt_prefetch(const char *dir, unsigned shard);
/* After a rebuild from the log (bulk records added): writes the run of the committed state
 * and starts its journal. */
QM_HIDDEN int qm_shard_hix_rebuilt(qm_shard *s, const qm_shard_meta *m);
/* Shared by the log scan and the resume (recover.c): hashes the youngest twig's entries,
 * which start at log offset pos, into its left tree; checks that they end at the committed
 * log size. */
QM_HIDDEN int qm_shard_youngest_leaves(qm_shard *s, const qm_shard_meta *m, u64 pos);
/* Log scans: decodes the entry with serial number sn at log offset pos through sc (*p, *len:
 * its bytes); QMDB_CORRUPT naming the segment and offset otherwise. */
QM_HIDDEN int qm_shard_scan_entry(qm_shard *s, qm_scan *sc, u64 pos, u64 sn, const u8 **p, u32 *len,
                                  qm_entry *e);
/* The same, but a stub (entry.h) is accepted at an SN below s->stub_end: returns 1 for a stub
 * (leaf: its leaf hash; *e untouched), 0 for an entry. Only the open-time scan and compaction
 * meet stubs; every other reader uses qm_shard_scan_entry, which refuses them as damage. */
QM_HIDDEN int qm_shard_scan_rec(qm_shard *s, qm_scan *sc, u64 pos, u64 sn, const u8 **p, u32 *len,
                                qm_entry *e, u8 leaf[32]);
/* After a scan that ended at log offset pos: the committed log size must be exactly there. */
QM_HIDDEN int qm_shard_scan_end(qm_shard *s, u64 pos, const qm_shard_meta *m);

/* Applies the shard's operations of one block (sorted by tx, key hash; deduplicated). */
QM_HIDDEN int qm_shard_apply(qm_shard *s, u64 height, const qm_op *ops, size_t n);
/* Hashes the dirty tree paths; the shard root is then s->tree.root. */
QM_HIDDEN int qm_shard_seal(qm_shard *s);
/* Decides which twigs can be pruned at `height` (recorded in the next metadata). */
QM_HIDDEN void qm_shard_plan_prune(qm_shard *s, u64 height);
/* Fills the shard's metadata record. */
QM_HIDDEN void qm_shard_meta_fill(const qm_shard *s, qm_shard_meta *m);
/* After metadata with first_twig ft is durable: frees those twigs, deletes the pruned
 * segments. */
QM_HIDDEN int qm_shard_after_commit(qm_shard *s, u64 ft);

/* The update stage of one block (writer lock held): qm_shard_begin_block (pre-images go to
 * undo) and qm_shard_hix_maintain, qm_shard_update (apply the ops, drop the warm
 * cache), qm_shard_sync_begin (write the buffers out, take the block's sync tickets of the
 * entry log, twig file and twig-meta file, in that order), then qm_shard_end_update (installs
 * a finished index merge, empties the hybrid indexer's memo). The flush stage calls
 * qm_shard_sync_finish with the same tickets. */
QM_HIDDEN void qm_shard_begin_block(qm_shard *s, struct qm_undo *undo);
QM_HIDDEN int qm_shard_update(qm_shard *s, u64 height, const qm_op *ops, size_t n);
QM_HIDDEN int qm_shard_sync_begin(qm_shard *s, qm_hp_ticket t[3]);
QM_HIDDEN void qm_shard_end_update(qm_shard *s);
QM_HIDDEN int qm_shard_sync_finish(qm_shard *s, const qm_hp_ticket t[3]);
/* Adds the shard's figures to st (entries, DRAM, SSD, compactions, warm cache). */
QM_HIDDEN void qm_shard_add_stats(qm_shard *s, qmdb_stats *st);

/* Prefetch support: the log positions an operation on kh may read: its index candidates
 * (the first *nkey of out), then per pred the predecessor's candidates (deletes always read
 * it; a put of a key with no candidate is a create, which does). Writes up to cap, returns
 * the count written. *nkey = SIZE_MAX (and 0 returned) if the key has more than cap
 * candidates. */
enum qm_pred { QM_PRED_NONE, QM_PRED_IF_ABSENT, QM_PRED_ALWAYS };
QM_HIDDEN size_t qm_shard_op_positions(qm_shard *s, const u8 kh[32], enum qm_pred pred, u64 *out,
                                       size_t cap, size_t *nkey);
/* A hint to the CPU, a few keys ahead of a read: start loading the first two cache lines of
 * the entry at pos while the logs are read through their mapping (a page not mapped yet is
 * not faulted in; no answer depends on it). */
QM_HIDDEN void qm_shard_prefetch_entry(qm_shard *s, u64 pos);
/* qm_shard_get over given candidate positions (from qm_shard_op_positions). */
QM_HIDDEN int qm_shard_get_in(qm_shard *s, const u64 *cand, size_t n, const u8 *key, u32 klen,
                              qm_ebuf *buf, qm_entry *e, u64 *pos);
/* Caches an entry read for this block (thread-safe); with kh, also marks that key as read
 * for the block (its prefetch is then skipped, see warm.h). */
QM_HIDDEN void qm_shard_warm_put(qm_shard *s, u64 pos, const u8 *bytes, u32 len, const u8 *kh);
/* True when the entry at pos is cached (thread-safe). */
QM_HIDDEN bool qm_shard_warm_has(qm_shard *s, u64 pos);
/* Per-shard setup shared by create and open. */
QM_HIDDEN void qm_shard_init_common(qm_shard *s);

/* Looks up the live entry of key. Returns 0 with *e decoded into buf, or QMDB_NOTFOUND. */
QM_HIDDEN int qm_shard_get(qm_shard *s, const u8 kh[32], const u8 *key, u32 klen, qm_ebuf *buf,
                           qm_entry *e, u64 *pos);

/* qm_shard_get for a client's point read (qmdb_get, qmdb_get_committed) or the prover:
 * entries come from the entry log's read mapping first (no lock, no system call; hpfile.h;
 * an entry longer than a page only when all of it is in the page cache, else one pread
 * reads it whole), then the warm cache and pread. in_place: an entry served by the mapping is
 * decoded where it lies (e's key and value point into the mapping, valid while the caller holds the
 * database's reader lock), not copied into buf. */
QM_HIDDEN int qm_shard_get_client(qm_shard *s, const u8 kh[32], const u8 *key, u32 klen,
                                  qm_ebuf *buf, qm_entry *e, u64 *pos, bool in_place);

/* Reads and decodes the entry at pos into buf (the warm cache, the log's read mapping, then
 * pread). */
QM_HIDDEN int qm_shard_read_entry(qm_shard *s, u64 pos, qm_ebuf *buf, qm_entry *e);
/* seen_len: read it; record the length of an entry just read (kept when over 512 bytes). */
QM_HIDDEN u32 qm_shard_seen_len(const qm_shard *s);
QM_HIDDEN void qm_shard_saw_len(qm_shard *s, u32 len);
/* qm_shard_read_entry for readers outside the update stage (proofs): the log's read mapping
 * first (no lock, no system call), then the warm cache and pread. */
QM_HIDDEN int qm_shard_read_entry_client(qm_shard *s, u64 pos, qm_ebuf *buf, qm_entry *e);
/* qm_shard_read_entry_client of the entry a key had before an in-flight block (undo.h), at
 * pos; QMDB_CORRUPT when the entry there holds another key. */
QM_HIDDEN int qm_shard_read_pre(qm_shard *s, u64 pos, const u8 *key, u32 klen, qm_ebuf *buf,
                                qm_entry *e);

QM_HIDDEN void qm_ebuf_free(qm_ebuf *b);

#endif /* QM_SHARD_H */
