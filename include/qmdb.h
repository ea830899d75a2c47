/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qmdb.h -- the public API of libqmdb, a C implementation of QMDB (the Quick Merkle Database).
 *
 * This is the only installed header. Handles are opaque; everything else is internal.
 *
 * Model: state is a set of (key, value) pairs, changed one block at a time. A block is an
 * ordered list of transactions, each an ordered list of put/delete operations (see the
 * contract in shared/spec/FORMAT.md §6). Committing block H makes it durable and yields the
 * 32-byte state root of height H. The database keeps the state root of every committed height.
 *
 * Errors: every function that can fail returns int. 0 is QMDB_OK; system errors are negated
 * errno values (-EIO, -ENOSPC, ...); library errors are the QMDB_* codes below. After a failed
 * durable write the handle is in a sticky fatal state: every later call returns QMDB_PANIC
 * until qmdb_close(). qmdb_last_error() gives a detailed message (file, offset) for the
 * latest failure on a handle.
 *
 * Threads: the read functions qmdb_get, qmdb_get_many, qmdb_get_committed,
 * qmdb_get_many_committed, qmdb_height and qmdb_root may be called on one handle from any
 * number of threads at once, also while another thread commits (a read never sees part of a
 * block). Every other function on a handle (commit, submit, wait, prune, rollback, prove,
 * prove_many, witness, snapshot_export, backup, stat, shard_root, last_error, close) must come
 * from one thread at a time: the caller serializes them, and qmdb_close must not race any
 * other call on the handle. Distinct handles on distinct directories are independent (so is
 * qmdb_snapshot_restore, which takes directories). qmdb_batch objects are owned by the caller
 * and are not thread-safe (one thread at a time per batch). The verifiers qmdb_proof_verify,
 * qmdb_proof_verify_many, qmdb_witness_verify and qmdb_chunk_verify, and qmdb_proof_info_get,
 * qmdb_strerror and the version functions are pure and may be called from any thread;
 * qmdb_open_error is per thread.
 *
 * ABI: handles are opaque. Structs the library may grow (qmdb_options, qmdb_stats,
 * qmdb_proof_info) begin with a struct_size field: qmdb_options_init sets it for options;
 * for the output structs the caller sets it (QMDB_STATS_INIT, QMDB_PROOF_INFO_INIT) and the
 * library writes no byte past it. Library threads are named qmdb-flush, qmdb-pool-N and
 * qmdb-merge-S (pthread_setname_np).
 */
#ifndef QMDB_H
#define QMDB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define QMDB_API __attribute__((visibility("default")))
#else
#define QMDB_API
#endif

/* The library's version: the single source of it (CMakeLists.txt reads these three lines). */
#define QMDB_VERSION_MAJOR 0
#define QMDB_VERSION_MINOR 1
#define QMDB_VERSION_PATCH 0
/** MAJOR*10000 + MINOR*100 + PATCH of the header compiled against. */
#define QMDB_VERSION_NUMBER \
    (QMDB_VERSION_MAJOR * 10000 + QMDB_VERSION_MINOR * 100 + QMDB_VERSION_PATCH)
/** Version of the on-disk format written by this library. */
#define QMDB_FORMAT_VERSION 2

#define QMDB_HASH_LEN 32
#define QMDB_SHARDS 16
#define QMDB_MAX_KEY_LEN 255
#define QMDB_MAX_VALUE_LEN ((1u << 24) - 1)
#define QMDB_MAX_TXS_PER_BLOCK (1u << 24)

/* Error codes. X-macro: (NAME, value, message). */
#define QMDB_ERROR_MAP(X)                                                          \
    X(QMDB_NOTFOUND, -30900, "not found")                                          \
    X(QMDB_CORRUPT, -30901, "database file is corrupt")                            \
    X(QMDB_INVALID, -30902, "invalid argument")                                    \
    X(QMDB_BUFFER_TOO_SMALL, -30903, "buffer too small")                           \
    X(QMDB_EXISTS, -30904, "database already exists")                              \
    X(QMDB_NOTADB, -30905, "not a qmdb database")                                  \
    X(QMDB_VERSION_MISMATCH, -30906, "unsupported on-disk format version")         \
    X(QMDB_PANIC, -30907, "database handle is in a fatal state; close and reopen") \
    X(QMDB_BAD_HEIGHT, -30908, "not the next block height, or above the latest")   \
    X(QMDB_PRUNED, -30909, "requested history has been pruned")                    \
    X(QMDB_BAD_PROOF, -30910, "proof is invalid")                                  \
    X(QMDB_TOO_MANY, -30911, "too many transactions or operations")                \
    X(QMDB_BUSY, -30912, "database is locked by another process")                  \
    X(QMDB_NO_CHECKPOINT, -30913,                                                  \
      "every committed block is durable; only the index checkpoint was not written")

enum {
    QMDB_OK = 0,
#define QMDB_ERR_ENUM_(name, val, msg) name = (val),
    QMDB_ERROR_MAP(QMDB_ERR_ENUM_)
#undef QMDB_ERR_ENUM_
};

/** Returns a static, human-readable string for any return code (including -errno). */
QMDB_API const char *qmdb_strerror(int rc);
/** Returns "major.minor.patch" of the library loaded at run time. */
QMDB_API const char *qmdb_version(void);
/** Returns MAJOR*10000 + MINOR*100 + PATCH of the library loaded at run time (compare with
 *  QMDB_VERSION_NUMBER, the header's). */
QMDB_API int qmdb_version_number(void);

typedef struct qmdb_db qmdb_db;
typedef struct qmdb_batch qmdb_batch;

/**
 * Options. Always initialise with qmdb_options_init(), then change fields.
 * Fields marked [create] are fixed when the database is created (qmdb_create) and stored
 * with it; at qmdb_open they are ignored and the stored values are used.
 */
typedef struct qmdb_options {
    size_t struct_size;            /**< set by qmdb_options_init */
    uint64_t compact_thres;        /**< [create] compaction threshold (live entries per shard);
                                        default 20,000,000 */
    uint32_t utilization_ratio;    /**< [create] default 7 */
    uint32_t utilization_div;      /**< [create] default 10 */
    uint64_t entry_segment_bytes;  /**< [create] size of one entry-file segment; default 1 GiB;
                                        a multiple of 4096, at least 64 KiB */
    uint64_t twig_segment_bytes;   /**< [create] size of one twig-file segment; default 128 MiB;
                                        a multiple of 128 KiB */
    uint64_t history_blocks;       /**< blocks of history kept for historical proofs; a fully
                                        inactive twig is pruned only once the last of its
                                        entries was deactivated at least this many blocks
                                        ago. Default 100,000. Stored at create; may be changed
                                        at open with QMDB_OPEN_SET_HISTORY. */
    uint32_t flags;                /**< QMDB_OPEN_* flags */
    uint32_t read_queue_depth;     /**< batched reads (prefetch, qmdb_get_many) kept in flight
                                        with io_uring, per batch (up to three batches of
                                        different threads may run at once); default 64 */
    uint32_t indexer;              /**< QMDB_INDEXER_AUTO (default), QMDB_INDEXER_MEMORY or
                                        QMDB_INDEXER_HYBRID; chosen at every create and open
                                        (roots never depend on it) */
    int32_t worker_threads;        /**< threads of the commit's CPU pool: QMDB_AUTO (default:
                                        one less than the online CPUs, at most 15), 0 (no
                                        worker pools: shards run on the caller's thread) or
                                        1..15 */
    int32_t pipeline;              /**< block pipeline: QMDB_AUTO (default: on), 1 on, 0 off
                                        (as QMDB_OPEN_NO_PIPELINE); read-only opens never
                                        pipeline */
    int32_t io_uring;              /**< batched reads through io_uring: QMDB_AUTO (default: when
                                        the kernel allows it), 1 (when the kernel allows it,
                                        whatever the environment says), 0 (the pread pool) */
    uint32_t hybrid_merge_changes; /**< hybrid indexer: merge a shard's overlay into its
                                        run after this many changes; 0 (default) = the
                                        library's choice */
} qmdb_options;

/** "Let the library choose" for the int32_t fields of qmdb_options. */
#define QMDB_AUTO (-1)

/*
 * Precedence of settings. A field (or flag) the caller set is always obeyed. The environment
 * variables below exist for tests and debugging; each one only decides a field left at its
 * default (QMDB_AUTO, QMDB_INDEXER_AUTO, 0):
 *   QMDB_THREADS=N        worker_threads (0: no worker pools)
 *   QMDB_PIPELINE=0       pipeline off
 *   QMDB_NO_URING=1       io_uring off (the pread pool)
 *   QMDB_INDEXER=memory|hybrid   indexer
 *   QMDB_HIX_MERGE=N      hybrid_merge_changes
 * Neither a field nor a variable can switch on what the system lacks: without io_uring the
 * pread pool is used, and a test I/O layer runs everything inline.
 */

/** Default of qmdb_options.indexer: QMDB_INDEXER_MEMORY unless QMDB_INDEXER says otherwise. */
#define QMDB_INDEXER_AUTO 0xffffffffu
/** The in-memory indexer: about 10 bytes of DRAM per live entry. qmdb_close writes an index
 *  checkpoint (sXX.hix: the committed state's index records and ActiveBits, in the hybrid
 *  indexer's run format); a QMDB_OPEN_FAST open loads it instead of scanning the log when it
 *  holds exactly the committed state. Without a usable checkpoint (none, stale after a crash
 *  of a writer that committed blocks, damaged) and on a verifying open, open scans the log. */
#define QMDB_INDEXER_MEMORY 0u
/** The hybrid indexer: records on SSD (files sXX.hix) in sorted runs, a sparse index and an
 *  overlay of recent changes in DRAM (about 1-2 bytes per live entry), merged by a background
 *  thread. Every run records the state it reflects, and each block's index changes go to a
 *  journal (sXX.hixj0/1; not fsynced). A QMDB_OPEN_FAST open loads the last run
 *  instead of scanning the log, and replays the journal of the blocks since (none after
 *  qmdb_close, which writes a run of the committed state; after a crash, those since the
 *  last merge). A verifying open, or an open whose run and journal do not lead exactly to
 *  the committed state, rebuilds the index from the log. */
#define QMDB_INDEXER_HYBRID 1u

/** Open flag: skip hashing the entries of full twigs at open. By default open hashes every
 *  unpruned entry and checks it against the stored twig trees, so a corrupt byte anywhere in
 *  the log is reported as QMDB_CORRUPT instead of being served later. With this flag only
 *  the youngest twig of each shard is hashed, and the index comes from the checkpoint when
 *  there is one of the committed state (open is then bounded by reading the checkpoint, or
 *  else the log; see QMDB_INDEXER_MEMORY). */
#define QMDB_OPEN_FAST 0x1u
/** Open flag: do not prune automatically at commit (qmdb_prune still works). */
#define QMDB_OPEN_NO_AUTO_PRUNE 0x2u
/** Open flag: replace the stored history_blocks with options->history_blocks. */
#define QMDB_OPEN_SET_HISTORY 0x4u
/** Open flag: open for reading only (no commits; no files are changed). Takes no lock: it
 *  works while a writer (in this or another process) holds the database, never waits for it
 *  and never makes it fail. The handle reads the latest durable height at open (qmdb_height)
 *  and keeps answering for it; reopen to see newer blocks. If the writer changed the
 *  database during each of 50 attempts to open, QMDB_BUSY (docs/RELIABILITY.md). */
#define QMDB_OPEN_RDONLY 0x8u
/** Open flag: sequential mode. Each block's prefetch, update, hashing and flush run to
 *  completion inside qmdb_commit/qmdb_submit (for debugging and the pipeline ablation). By
 *  default the hash and flush stages of block N run on a background thread while the
 *  caller reads and builds block N+1 (docs/DESIGN.md, "Pipeline"). Roots are identical. */
#define QMDB_OPEN_NO_PIPELINE 0x10u
/** Open flag: batched reads (prefetch, qmdb_get_many) use O_DIRECT, bypassing the page cache
 *  (for databases much larger than memory). By default they are buffered without
 *  read-ahead. An entry still in the page cache (most often one written a moment ago) is
 *  copied from it rather than read from the device (qmdb_stats.page_cache_reads). While the
 *  entry logs do not fit in memory, point reads (qmdb_get) of entries whose pages are not
 *  in the page cache use O_DIRECT too, so they do not push out what it holds. */
#define QMDB_OPEN_DIRECT_IO 0x20u
/** Open flag, for recovery by an operator: open although one META slot is damaged (blank,
 *  truncated away, or both of its copies invalid), using the other, valid slot. Without it
 *  such an open fails with QMDB_CORRUPT, because the damaged slot may have held the newest
 *  committed block and opening the older one would silently roll the database back
 *  (docs/RELIABILITY.md, "META damage"). With it the database opens at the older height and
 *  the blocks after it are discarded; a writable open then rewrites the damaged slot. */
#define QMDB_OPEN_SALVAGE 0x40u

QMDB_API void qmdb_options_init(qmdb_options *opt);

/**
 * Creates a new database at height 0 in directory dir (created if missing; it must be empty
 * of qmdb files). opt may be NULL: qmdb_create(dir, NULL) uses the defaults of
 * qmdb_options_init (compaction threshold 20,000,000, utilization 7/10, 1 GiB entry and
 * 128 MiB twig segments, 100,000 blocks of history). The database is closed again: open it
 * with qmdb_open. Returns QMDB_EXISTS if a database is already there, QMDB_INVALID for bad
 * options, -errno on I/O failure.
 */
QMDB_API int qmdb_create(const char *dir, const qmdb_options *opt);

/**
 * Opens an existing database, recovering to its latest committed height.
 * opt may be NULL (defaults). On failure *out is NULL and there is nothing to free.
 * Returns QMDB_NOTADB if dir holds no database, QMDB_CORRUPT if recovery finds bad bytes or a
 * root mismatch (see qmdb_open_error() for details), -errno on I/O failure.
 */
QMDB_API int qmdb_open(const char *dir, const qmdb_options *opt, qmdb_db **out);

/** Detail of the last failed qmdb_open/qmdb_create in this thread (static buffer); also of
 *  the cause after qmdb_close returned QMDB_NO_CHECKPOINT. */
QMDB_API const char *qmdb_open_error(void);

/**
 * Closes the handle (NULL is allowed). Nothing uncommitted is kept; every block that
 * qmdb_commit (or qmdb_wait) reported committed stays durable whatever this returns.
 * Returns 0, or QMDB_NO_CHECKPOINT when the index checkpoint (written here by a writable
 * handle of either indexer, see QMDB_INDEXER_MEMORY and QMDB_INDEXER_HYBRID) could not be
 * written, for instance on a full disk: every committed block is durable; only the
 * checkpoint was not written, so the next open rebuilds the index from the log. qmdb_open_error()
 * then names the cause (file and errno). Do not retry blocks because of it.
 */
QMDB_API int qmdb_close(qmdb_db *db);

/** Detail of the latest failure on db ("" if none). Valid until the next call on db. */
QMDB_API const char *qmdb_last_error(qmdb_db *db);

/** Latest committed (durable) height. */
QMDB_API uint64_t qmdb_height(qmdb_db *db);

/**
 * State root of committed height `height` (UINT64_MAX means the latest).
 * Returns QMDB_NOTFOUND if height is above the latest committed height.
 */
QMDB_API int qmdb_root(qmdb_db *db, uint64_t height, uint8_t out[QMDB_HASH_LEN]);

/** Current (latest committed) root of one shard (0..15). */
QMDB_API int qmdb_shard_root(qmdb_db *db, unsigned shard, uint8_t out[QMDB_HASH_LEN]);

/**
 * Reads the value of key: the state after the latest block handed to qmdb_commit or
 * qmdb_submit (with qmdb_submit that block may not be durable yet; see qmdb_wait). Copies it
 * into buf (capacity cap) and sets *vlen to its length. Returns QMDB_NOTFOUND if absent,
 * QMDB_BUFFER_TOO_SMALL (with *vlen set) if cap is too small. buf may be NULL when cap is 0.
 * Thread-safe: qmdb_get, qmdb_get_many, qmdb_height and qmdb_root may be called from any
 * thread, also while another thread commits (a read never sees part of a block). The other
 * functions on one handle must come from one thread at a time.
 */
QMDB_API int qmdb_get(qmdb_db *db, const void *key, size_t klen, void *buf, size_t cap,
                      size_t *vlen);

/** One read of qmdb_get_many. */
typedef struct qmdb_read {
    const void *key; /**< in */
    size_t klen;     /**< in */
    void *buf;       /**< in: where the value goes (may be NULL when cap is 0) */
    size_t cap;      /**< in */
    size_t vlen;     /**< out: the value's length (when found) */
    int rc;          /**< out: 0, QMDB_NOTFOUND, QMDB_BUFFER_TOO_SMALL or QMDB_INVALID */
} qmdb_read;

/**
 * Reads many keys at once, as qmdb_get does one: the entries are fetched from the SSD in one
 * batch (io_uring at the read queue depth, or a pool of pread threads where io_uring is not
 * available or QMDB_NO_URING=1 is set). The entries stay cached for the next block, so a
 * read-modify-write reads each entry once; for an absent key the entry of its predecessor is
 * fetched too (a create of it needs that), except in a read-only database. Returns 0 when every
 * read has its own rc, or a negative error (I/O, corruption) for the whole call.
 */
QMDB_API int qmdb_get_many(qmdb_db *db, qmdb_read *reads, size_t n);

/**
 * As qmdb_get and qmdb_get_many, but reading the latest *durable* block (qmdb_height()),
 * even while later blocks are submitted and in flight: for readers that must never see
 * state a crash could still take back (RPC queries, light-client servers). One call sees one
 * height for all its keys. Each in-flight block keeps the values its writes replaced until it
 * is durable, so these reads cost what qmdb_get_many costs.
 */
QMDB_API int qmdb_get_committed(qmdb_db *db, const void *key, size_t klen, void *buf, size_t cap,
                                size_t *vlen);
QMDB_API int qmdb_get_many_committed(qmdb_db *db, qmdb_read *reads, size_t n);

/* ---- Blocks ---------------------------------------------------------------------------- */

/** Creates an empty batch: one block's worth of transactions. */
QMDB_API int qmdb_batch_new(qmdb_batch **out);
QMDB_API void qmdb_batch_free(qmdb_batch *b);
/** Empties b for reuse (keeps its memory). */
QMDB_API void qmdb_batch_reset(qmdb_batch *b);
/** Starts the next transaction (FORMAT.md §8). A new batch already has transaction 0 open.
 *  The first call on a batch that has no operation yet only names transaction 0; every other
 *  call opens the next index, so two calls in a row leave an empty transaction, which still
 *  counts for versions. QMDB_TOO_MANY past 2^24 transactions. */
QMDB_API int qmdb_batch_tx(qmdb_batch *b);
/** Adds put(key, value) to the current transaction (both are copied). QMDB_INVALID if the key
 *  is 0 or more than 255 bytes, or the value is empty or longer than QMDB_MAX_VALUE_LEN. */
QMDB_API int qmdb_batch_put(qmdb_batch *b, const void *key, size_t klen, const void *val,
                            size_t vlen);
/** Adds delete(key) to the current transaction. */
QMDB_API int qmdb_batch_del(qmdb_batch *b, const void *key, size_t klen);
/** Number of operations and transactions in b. */
QMDB_API size_t qmdb_batch_ops(const qmdb_batch *b);
QMDB_API size_t qmdb_batch_txs(const qmdb_batch *b);

/**
 * Applies batch b as block `height` (must be qmdb_height()+1, else QMDB_BAD_HEIGHT with
 * nothing changed) and commits it durably. On success writes the new state root to root_out
 * (may be NULL). On an I/O failure the handle goes fatal (QMDB_PANIC afterwards); the block
 * is not committed and reopening recovers the previous height.
 */
QMDB_API int qmdb_commit(qmdb_db *db, uint64_t height, const qmdb_batch *b,
                         uint8_t root_out[QMDB_HASH_LEN]);

/**
 * Asynchronous commit: applies batch b as block `height` and returns once the block's update
 * stage is done (the batch may then be reused). Hashing, the fsyncs and the metadata write
 * continue in the background; at most two blocks are in flight, so this call first waits
 * until block height-2 is durable. Reads (qmdb_get, qmdb_get_many) made after it returns see
 * this block's writes, although the block is not durable yet; qmdb_height() and qmdb_root()
 * report the latest durable block. Errors of a background stage make the handle fatal and
 * are returned by the next qmdb_submit, qmdb_wait or qmdb_commit.
 */
QMDB_API int qmdb_submit(qmdb_db *db, uint64_t height, const qmdb_batch *b);

/** Waits until block `height` (already submitted) is durable; writes its state root to
 *  root_out (may be NULL). */
QMDB_API int qmdb_wait(qmdb_db *db, uint64_t height, uint8_t root_out[QMDB_HASH_LEN]);

/** Prunes now every twig that the history setting allows. Never changes a root. */
QMDB_API int qmdb_prune(qmdb_db *db);

/**
 * Rolls the database back to committed height `height` (a chain reorganization): afterwards
 * qmdb_height() is `height`, reads, roots and proofs are those of that height, and the next
 * block to commit is height + 1 (any batch: the discarded blocks are gone). One durable step:
 * a crash at any moment recovers either the height before the call or `height`, exactly.
 * Blocks in flight (qmdb_submit) are first waited for and become durable, then rolled back.
 * Cost: the discarded blocks' entries are read once, plus the twigs holding the entries they
 * deactivated (each as far as the last such entry); the hybrid indexer also writes a
 * checkpoint of its index (docs/DESIGN.md, "Rollback").
 * Window: height >= M - min(history_blocks, 2^20), M the highest height ever committed
 * (blocks discarded by earlier rollbacks count: pruning done at M is not undone).
 * Precisely: at most min(history_blocks, 2^20) blocks below the latest (history_blocks when
 * the database was created or upgraded), its per-height record still kept, and no twig
 * pruned so far may have held an entry live at `height`; pruning waits history_blocks
 * blocks after a twig's last deactivation, so all three hold for height >= M -
 * min(history_blocks, 2^20) unless history_blocks was raised at open after pruning.
 * Returns 0 (also when height is the latest: nothing to do), QMDB_BAD_HEIGHT if height is
 * above the latest, QMDB_PRUNED if it is outside the window (nothing changed in either
 * case), QMDB_INVALID on a read-only handle, QMDB_CORRUPT if the recomputed root differs
 * from the stored root of `height` (nothing durable changed; the handle turns fatal), -errno
 * on an I/O failure (the handle turns fatal; reopening recovers the old or the new height).
 */
QMDB_API int qmdb_rollback(qmdb_db *db, uint64_t height);

/* ---- Statistics ------------------------------------------------------------------------- */

typedef struct qmdb_stats {
    size_t struct_size; /**< in: sizeof(qmdb_stats) (QMDB_STATS_INIT); out: bytes
                             written */
    uint64_t height;
    uint64_t live_entries;         /**< live user entries (sentries excluded) */
    uint64_t live_with_sentries;   /**< live entries including the 65,536 sentries */
    uint64_t total_entries;        /**< entries ever appended (sum of next serial numbers) */
    uint64_t unpruned_entries;     /**< entries still on disk (not pruned) */
    uint64_t index_dram_bytes;     /**< DRAM used by the indexer */
    uint64_t index_ssd_bytes;      /**< hybrid indexer: bytes of its run files */
    uint64_t index_merges;         /**< hybrid indexer: overlay merges installed since open */
    uint64_t index_page_reads;     /**< hybrid indexer: run pages read by lookups since open */
    uint32_t indexer;              /**< QMDB_INDEXER_* in use */
    uint32_t index_resumed_shards; /**< shards whose index was loaded from its run file at
                                        open instead of scanning the log (either indexer: the
                                        checkpoint of a clean close; hybrid, after a crash: a
                                        merge's run plus the index journal); 0..16; 0 = every
                                        shard rebuilt from the log */
    uint64_t tree_dram_bytes;      /**< DRAM used by twigs, ActiveBits and upper trees */
    uint64_t cache_dram_bytes;     /**< DRAM of per-block buffers: warm-entry caches, the
                                        in-flight blocks' pre-images, the hybrid indexer's
                                        change buffer, journal record and memo of lookups,
                                        the deactivation position records (scale with the
                                        block size, not with the number of entries) */
    uint64_t ssd_bytes;            /**< bytes of all database files */
    uint64_t entry_file_bytes;     /**< bytes of entry files (unpruned) */
    uint64_t twig_file_bytes;      /**< bytes of twig files (unpruned) */
    uint64_t compactions;          /**< compaction steps done since open */
    uint64_t warm_hits;            /**< entry reads served from entries that qmdb_get fetched
                                        for the next block (log reads saved), since open */
    uint64_t pruned_twigs;         /**< twigs pruned (all shards), from the durable metadata:
                                        the count survives reopening */
    uint64_t batched_reads;        /**< reads issued in batches by the prefetcher and
                                        qmdb_get_many: entries (not those a writable handle
                                        finds in the page cache of its mapped log), and with
                                        the hybrid indexer the index pages not in the page
                                        cache */
    uint64_t sha256_compressions;  /**< SHA-256 compressions done by commits since open */
    uint64_t blocks_committed;     /**< blocks committed since open */
    uint32_t pipeline;             /**< 1 when the block pipeline is on */
    uint32_t io_uring;             /**< 1 when batched reads use io_uring (0: pread pool) */
    uint64_t compact_thres;
    uint32_t utilization_ratio, utilization_div;
    uint64_t history_blocks;
    uint64_t index_replayed_blocks;  /**< hybrid indexer: blocks replayed from the index
                                          journal at open, all shards (0 after a clean close
                                          or a rebuild from the log) */
    uint64_t index_replayed_changes; /**< hybrid indexer: index changes and deactivations
                                          replayed from the journal at open */
    uint64_t rollback_reactivated;   /**< entries made live again by qmdb_rollback since
                                          open (ones that a discarded block deactivated) */
    uint64_t rollback_entries_read;  /**< entries below the discarded blocks that
                                          qmdb_rollback read to re-index those (one each when
                                          the sXX.dpos records lead to them; more when a twig
                                          is walked instead), since open */
    uint64_t rollback_walked;        /**< of rollback_reactivated: the ones found by walking
                                          their twig (blocks with no usable sXX.dpos record:
                                          committed before the file existed, or damaged) */
    uint64_t page_cache_reads;       /**< entries that batched reads copied from the page
                                          cache instead of reading them from the device,
                                          since open: with QMDB_OPEN_DIRECT_IO where memory
                                          is short (docs/DESIGN.md, "Batched reads"); they
                                          are not counted in batched_reads */
} qmdb_stats;

/** Initializer: qmdb_stats st = QMDB_STATS_INIT; */
#define QMDB_STATS_INIT                   \
    {                                     \
        .struct_size = sizeof(qmdb_stats) \
    }

/** Fills *st (st->struct_size must be set: QMDB_STATS_INIT; QMDB_INVALID if it is smaller
 *  than qmdb_stats before page_cache_reads; a caller built against that older header gets
 *  the fields it knows and struct_size unchanged). Waits for blocks in flight. */
QMDB_API int qmdb_stat(qmdb_db *db, qmdb_stats *st);

/* ---- Offline check (docs/RELIABILITY.md) ------------------------------------------------ */

/** Receives one problem found by qmdb_check (a message naming the file and offset). */
typedef void (*qmdb_check_fn)(void *arg, const char *problem);

/**
 * Full offline check of the database in dir (opened read-only; writers are refused while it
 * runs): both metadata slots; every unpruned entry hashed and every root recomputed from the
 * entry and twig files and compared with the metadata and ROOTS; the indexer against the
 * ActiveBits; the key-hash chain of the live entries. Calls fn (may be NULL) once per problem
 * and sets *problems (may be NULL) to their number. Returns 0 if the database is healthy,
 * QMDB_CORRUPT if any problem was found, or another error if the check could not run
 * (QMDB_NOTADB, QMDB_BUSY, -errno, ...).
 */
QMDB_API int qmdb_check(const char *dir, qmdb_check_fn fn, void *arg, uint64_t *problems);

/* ---- Proofs (docs/PROOFS.md) ---------------------------------------------------------- */

/** Version of the proof byte format written by qmdb_prove. */
#define QMDB_PROOF_FORMAT_VERSION 1

/**
 * Builds a proof about key at `height` against the latest committed state root
 * (UINT64_MAX or the latest height: a proof about the current state). If the key has a value
 * at that height the proof shows it (inclusion); otherwise it shows the live predecessor
 * whose gap covers the key's hash (exclusion). For an earlier height the proof shows the
 * entry that was live then and that it stayed live past that height (historical).
 * On success *out (free with qmdb_proof_free) holds *outlen bytes.
 * Returns QMDB_NOTFOUND if height is above the latest, QMDB_PRUNED if the entries needed
 * lie in pruned twigs, QMDB_INVALID for a bad key.
 * Cost: a proof about the latest height reads a few entries and 12 twig-file nodes; the first
 * historical proof on a shard after a commit scans that shard's new log tail; the first after
 * an open maps the shard's history cache file sXX.hist that a clean close wrote, or without
 * a usable one scans the shard's whole unpruned log (see PROOFS.md).
 */
QMDB_API int qmdb_prove(qmdb_db *db, const void *key, size_t klen, uint64_t height, uint8_t **out,
                        size_t *outlen);
QMDB_API void qmdb_proof_free(uint8_t *proof);

/**
 * Verifies a proof. Pure: no I/O, no allocation, no global state beyond the hash backend
 * choice. Claim: key has value (value, vlen) -- or, with value NULL, key is absent -- at
 * `height` (UINT64_MAX: at the height of `root`, whatever it is), under the trusted state
 * root `root`, which must be the root of a height >= the claimed height.
 * Returns 0 if the proof holds (and sets *proved_height_out, if not NULL, to the height the
 * proof states; it is authenticated only when the caller passed a height), else
 * QMDB_BAD_PROOF with *why (if not NULL) set to a static reason string, or QMDB_INVALID for a
 * malformed claim (key length 0 or > 255, vlen 0 or too long).
 */
QMDB_API int qmdb_proof_verify(const uint8_t *proof, size_t len, const uint8_t root[QMDB_HASH_LEN],
                               const void *key, size_t klen, const void *value, size_t vlen,
                               uint64_t height, uint64_t *proved_height_out, const char **why);

/** What a proof says, from its header (not verified). */
typedef struct qmdb_proof_info {
    size_t struct_size; /**< in: sizeof(qmdb_proof_info) (QMDB_PROOF_INFO_INIT); out: bytes
                             written */
    uint32_t format_version;
    int absent;      /**< 1: exclusion proof */
    int deactivated; /**< 1: historical proof through the deactivating entry */
    unsigned shard;
    uint64_t height;
    unsigned entries;      /**< entry records (1 or 2) */
    unsigned upper_levels; /**< U = max_level - 12 of the shard tree */
} qmdb_proof_info;

/** Initializer: qmdb_proof_info info = QMDB_PROOF_INFO_INIT; */
#define QMDB_PROOF_INFO_INIT                   \
    {                                          \
        .struct_size = sizeof(qmdb_proof_info) \
    }

/** Parses a proof's header; QMDB_BAD_PROOF if it is not a well-formed proof, QMDB_INVALID if
 *  info->struct_size is not set (QMDB_PROOF_INFO_INIT). */
QMDB_API int qmdb_proof_info_get(const uint8_t *proof, size_t len, qmdb_proof_info *info);

/** Version of the multi-key proof format written by qmdb_prove_many (magic "QMMP"). */
#define QMDB_MPROOF_FORMAT_VERSION 1
/** Most keys in one multi-key proof. */
#define QMDB_MPROOF_MAX_KEYS (1u << 20)

/**
 * Builds one proof for nkeys keys (1..QMDB_MPROOF_MAX_KEYS; repeats allowed) at `height`
 * (UINT64_MAX: the latest), against the latest committed state root: for each key, its value
 * or its absence at that height, as qmdb_prove would show it, with every entry and Merkle node
 * that several keys share written once (docs/PROOFS.md §9). On success *out (free with
 * qmdb_proof_free) holds *outlen bytes. Errors as qmdb_prove (the first failing key decides),
 * QMDB_INVALID for a bad key or count.
 */
QMDB_API int qmdb_prove_many(qmdb_db *db, const void *const *keys, const size_t *klens,
                             size_t nkeys, uint64_t height, uint8_t **out, size_t *outlen);

/** What a verified multi-key proof shows for one key. */
typedef struct qmdb_proof_answer {
    int present;          /**< 1: the key has `value`; 0: the key has no value */
    const uint8_t *value; /**< points into the proof bytes (NULL when absent) */
    size_t vlen;
} qmdb_proof_answer;

/**
 * Verifies a multi-key proof for keys[0..nkeys) (the same list, in the same order, that it
 * was built for) under the trusted state root `root` at `height` (UINT64_MAX: at the height
 * of `root`; then every answer must rest on a live entry). Pure: no I/O, no global state
 * beyond the hash backend; it allocates scratch memory proportional to the proof's entries
 * and frees it before returning. On 0, answers[i] (the caller's array of nkeys) holds what
 * the proof shows for keys[i] and *proved_height_out (if not NULL) the proof's height.
 * Returns QMDB_BAD_PROOF with *why (static string) if the proof does not hold, QMDB_INVALID
 * for malformed arguments, -ENOMEM if the scratch memory is not available.
 */
QMDB_API int qmdb_proof_verify_many(const uint8_t *proof, size_t len,
                                    const uint8_t root[QMDB_HASH_LEN], const void *const *keys,
                                    const size_t *klens, size_t nkeys, uint64_t height,
                                    uint64_t *proved_height_out, qmdb_proof_answer *answers,
                                    const char **why);

/* ---- Block witnesses (docs/PROOFS.md §10) ---------------------------------------------- */

/** Version of the block witness format written by qmdb_witness (magic "QMBW"). */
#define QMDB_WITNESS_FORMAT_VERSION 1

/** One operation of a block, for witnesses: transaction index tx (0-based, non-decreasing
 *  along the array), key, and value (NULL: delete). */
typedef struct qmdb_block_op {
    uint32_t tx;
    const void *key;
    size_t klen;
    const void *value; /**< NULL: delete */
    size_t vlen;
} qmdb_block_op;

/**
 * Builds the witness of block `height` (1..latest, with the state of height - 1 still in the
 * history window): what a verifier holding no database needs to compute the block's
 * post-state root from the root of height - 1 and the block's operations. ops/nops are the
 * block's operations (as committed); with ops NULL the witness is built from the log alone
 * and covers every operation that changed the state, but not a delete of an absent key in a
 * shard (qmdb_witness_verify then fails with a reason, never a wrong root).
 * On success *out (free with qmdb_proof_free) holds *outlen bytes. Returns QMDB_NOTFOUND for
 * a height above the latest or 0, QMDB_PRUNED when the state of height - 1 is no longer
 * available, QMDB_INVALID for bad arguments.
 */
QMDB_API int qmdb_witness(qmdb_db *db, uint64_t height, const qmdb_block_op *ops, size_t nops,
                          uint8_t **out, size_t *outlen);

/** The compaction parameters of a database (FORMAT.md §7; fixed at creation). */
typedef struct qmdb_compaction_params {
    uint64_t compact_thres;
    uint32_t utilization_ratio, utilization_div;
} qmdb_compaction_params;

/**
 * Verifies a block witness and computes the post-state root. Pure: no I/O, no global state
 * beyond the hash backend; it allocates scratch memory and frees it before returning.
 * pre_root: the trusted root of height - 1; ops/nops: block `height` (nops may be 0);
 * params: the chain's compaction parameters, which the witness must state (NULL: take the
 * witness's; the state root does not commit to them). On 0, post_root holds the root the
 * engine computes for the block. Returns QMDB_BAD_PROOF with
 * *why (static string) when the witness does not match the pre-root, the block or itself,
 * QMDB_INVALID for malformed arguments (ops out of tx order, bad key or value lengths),
 * -ENOMEM.
 */
QMDB_API int qmdb_witness_verify(const uint8_t *witness, size_t len,
                                 const uint8_t pre_root[QMDB_HASH_LEN], uint64_t height,
                                 const qmdb_block_op *ops, size_t nops,
                                 const qmdb_compaction_params *params,
                                 uint8_t post_root[QMDB_HASH_LEN], const char **why);

/* ---- end of Proofs ---------------------------------------------------------------------- */

/* ---- State sync: snapshot chunks (docs/SYNC.md) ------------------------------------------ */

/** Version of the snapshot chunk format written by the exporter. */
#define QMDB_CHUNK_FORMAT_VERSION 1

/** What a verified chunk holds (filled by qmdb_chunk_verify on success). */
typedef struct qmdb_chunk_info {
    size_t struct_size; /**< in: sizeof(qmdb_chunk_info) (QMDB_CHUNK_INFO_INIT) */
    uint32_t format_version;
    unsigned shard;
    int tail; /**< 1: the chunk holds the shard's youngest twig */
    uint64_t height;
    uint64_t next_sn;              /**< tail: the shard's next serial number; else 0 */
    uint64_t sn_start;             /**< tail: the compaction cursor (docs/SYNC.md on its
                                        trust); else 0 */
    uint64_t twig_begin, twig_end; /**< the chunk's twigs [twig_begin, twig_end) */
    uint64_t summaries;            /**< twigs carried as their left root only (no entries) */
    uint64_t log_bytes;            /**< stored bytes of the carried entries */
    uint64_t entries;              /**< entries carried in their stored form (not the
                                        dead entries a sparse record carries as leaf
                                        hashes) */
    uint64_t live;                 /**< ActiveBits set in the carried twigs */
} qmdb_chunk_info;

/** Initializer: qmdb_chunk_info info = QMDB_CHUNK_INFO_INIT; */
#define QMDB_CHUNK_INFO_INIT                   \
    {                                          \
        .struct_size = sizeof(qmdb_chunk_info) \
    }

/**
 * Verifies one snapshot chunk against a trusted state root and its height. Pure: no I/O, no
 * allocation, no global state beyond the hash backend and the null-node tables. Every byte of
 * the chunk that the root commits to is checked (entries, ActiveBits, left roots, the range
 * proof, the 16 shard roots); the fields it does not commit to are checked for consistency
 * (docs/SYNC.md). Returns 0 (and fills *info if not NULL), QMDB_BAD_PROOF with *why (if not
 * NULL) set to a static reason, or QMDB_INVALID for a NULL root or an unset info->struct_size.
 */
QMDB_API int qmdb_chunk_verify(const uint8_t *chunk, size_t len, const uint8_t root[QMDB_HASH_LEN],
                               uint64_t height, qmdb_chunk_info *info, const char **why);

/** What an export wrote (qmdb_snapshot_export) or a restore did (qmdb_snapshot_restore). */
typedef struct qmdb_snapshot_stat {
    size_t struct_size; /**< in: sizeof(qmdb_snapshot_stat) (QMDB_SNAPSHOT_STAT_INIT) */
    uint64_t height;
    uint8_t root[QMDB_HASH_LEN];
    uint64_t chunks;   /**< export: chunks written; restore: chunks listed in the manifest */
    uint64_t accepted; /**< restore: chunks verified and kept (this run and earlier ones) */
    uint64_t rejected; /**< restore: chunks rejected in this run */
    uint64_t missing;  /**< restore: chunks not (yet) in the input directory */
    uint64_t bytes;    /**< chunk bytes written (export) or verified in this run (restore) */
    uint64_t entries;  /**< entries carried in their stored form: written (export) or in
                            the chunks verified in this run (restore) */
    uint64_t live;     /**< live entries (sentries included) */
} qmdb_snapshot_stat;

#define QMDB_SNAPSHOT_STAT_INIT                   \
    {                                             \
        .struct_size = sizeof(qmdb_snapshot_stat) \
    }

/**
 * Writes a snapshot of the committed state of `height` (UINT64_MAX: the latest) into outdir
 * (created if missing; it must not hold a MANIFEST yet): chunk files of up to twigs_per_chunk
 * twigs of one shard (0: 8) and, last, the MANIFEST that lists them. An earlier height must lie
 * in the rollback window (its state record is kept and no twig live at it is pruned; else
 * QMDB_PRUNED); its ActiveBits are rebuilt from the log written after it. A read-only handle
 * exports while a writer keeps committing in another process. st may be NULL.
 * Errors: QMDB_NOTFOUND (above the latest), QMDB_PRUNED, QMDB_EXISTS, QMDB_CORRUPT, -errno.
 */
QMDB_API int qmdb_snapshot_export(qmdb_db *db, const char *outdir, uint64_t height,
                                  uint64_t twigs_per_chunk, qmdb_snapshot_stat *st);

/** Called by qmdb_snapshot_restore for every chunk it rejects (rc, a reason) -- and, with
 *  rc 0, for every chunk it accepts. */
typedef void (*qmdb_restore_fn)(void *arg, const char *chunk, int rc, const char *why);

/**
 * Restores the snapshot in indir (MANIFEST + chunks) into the new database newdir, trusting
 * only `root` (and `height`, UINT64_MAX: the manifest's). Every chunk is checked with
 * qmdb_chunk_verify before it is kept (in newdir/restore/); chunks may arrive in any order
 * and over several calls: each call verifies the chunks not kept yet. Returns 0 once every
 * chunk is kept and the database is built and opens at `height` with `root`;
 * QMDB_BAD_PROOF if a chunk was rejected (named through fn; the good ones stay kept);
 * QMDB_NOTFOUND if chunks are still missing (call again when they arrived); QMDB_EXISTS if
 * newdir already holds a database. st may be NULL. qmdb_open_error() gives the detail of a
 * failed call.
 */
QMDB_API int qmdb_snapshot_restore(const char *newdir, const char *indir,
                                   const uint8_t root[QMDB_HASH_LEN], uint64_t height,
                                   qmdb_restore_fn fn, void *arg, qmdb_snapshot_stat *st);

/**
 * Writes a consistent, openable copy of the committed state of db into outdir (created if
 * missing; it must not hold a database): the logs and twig files of the unpruned twigs, the
 * roots of every height, and the metadata, written last. A read-only handle copies the
 * height it opened while a writer keeps committing in another process. The copy is opened
 * with full verification before this returns 0. Not copied: the rollback records (the copy
 * rolls back only to heights it committed itself) and the index checkpoint.
 * Errors: QMDB_EXISTS, QMDB_CORRUPT (the copy does not verify: the source changed under it),
 * QMDB_PANIC, -errno (also when the writer pruned a segment since the handle opened).
 */
QMDB_API int qmdb_backup(qmdb_db *db, const char *outdir);

/* ---- end of State sync ------------------------------------------------------------------ */

#ifdef __cplusplus
}
#endif
#endif /* QMDB_H */
