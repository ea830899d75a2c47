/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hpfile.h -- head-prunable, segmented, append-only file.
 *
 * A logical byte stream [head, size) stored in fixed-size segment files named
 * `<dir>/<prefix>.<segment number, 10 digits>`; segment k holds logical bytes
 * [k*seg_size, (k+1)*seg_size). Appends go to an in-memory write buffer; qm_hpfile_flush
 * writes it out and qm_hpfile_sync makes everything durable. Pruning the head deletes whole
 * segments that lie entirely below the new head. The committed size and head are recorded by
 * the metadata (meta.h), never in the files themselves: at open, the file is cut back to the
 * committed size (torn tails and uncommitted appends are dropped).
 *
 * Thread: owned by one shard's writer (the block's update stage). Readers on other threads
 * may call qm_hpfile_read* and qm_hpfile_read_fd while the writer is not appending (the
 * database's reader lock guarantees that); the flusher thread calls qm_hpfile_sync_finish
 * on a ticket from qm_hpfile_sync_begin. The segment fd tables are guarded by `mu`; fds are
 * closed only by the writer (qm_hpfile_close_cold, prune) while readers are excluded.
 *
 * Read mapping (cfg.map): each segment of a writable file may also be mapped read-only
 * (PROT_READ, MAP_SHARED, seg_size bytes), so that qm_hpfile_view hands out the bytes of the
 * written prefix [head, flushed) with no system call and no copy. Only bytes below `flushed`
 * are ever touched through a mapping: they were written by pwrite before, so they lie inside
 * the segment file (no SIGBUS); a cut or prune that shrinks or deletes a segment runs with
 * readers excluded and lowers `flushed`/raises `head` (or unmaps) first. Mappings are made by
 * the writer (open, segment writes) and dropped by prune, cut and close, always with readers
 * excluded; readers find them through `maps`, a table published with release/acquire whose retired
 * copies are freed only at close, so a reader never follows a freed pointer. A read-only handle
 * (whose files another process may cut), a non-POSIX I/O layer (fault injection sees every read)
 * and QMDB_NO_MMAP=1 in the environment leave files unmapped; every read then goes through pread.
 * A mapped file counts its live bytes as open logs (hugefolio.h), whose total decides whether
 * readers use the mapping at all (qm_logs_fit).
 * At most 16,384 segments are mapped per process (each is a memory area, and vm.max_map_count is
 * shared with malloc); beyond, segments stay unmapped. A record of at least a sixteenth of the
 * write buffer is written at once; with qm_hpfile_populate on, its pages are also put into the
 * read mapping's page tables as it is written (MADV_POPULATE_READ), so that a read through the
 * mapping finds them without a fault (qm_hpfile_populated says which records were).
 *
 * Huge folios (mapped files, segments a multiple of 2 MiB): before the first byte of a new
 * 2 MiB region of a segment is written, the region may be readied as one huge page-cache
 * folio (hugefolio.h), so that a read mapping covers it with one page-table entry; only while
 * the records appended through this handle average at most 4 KiB (an entry log of short
 * entries, not the twig file's 128 KiB records nor a log of 64 KiB values). Readying
 * extends the segment file over the region (a hole), so a segment file may be longer than
 * its data by less than 2 MiB; the committed size is the metadata's, and the open cuts the
 * file back to it as it does an uncommitted tail.
 */
#ifndef QM_HPFILE_H
#define QM_HPFILE_H

#include "qm_internal.h"

#include <pthread.h>

typedef struct qm_hpfile {
    char *path_prefix; /* "<dir>/<prefix>" */
    u64 seg_size;
    u64 head;    /* first logical byte still kept */
    u64 size;    /* logical size including buffered bytes */
    u64 flushed; /* bytes written to segment files */
    u64 synced;  /* bytes known durable */
    int *fds;    /* fd per segment number, -1 when not open (guarded by mu) */
    u64 nfds;
    int *dfds; /* batched-read fd per segment (rio.h), -1 when not open (guarded by mu) */
    u64 ndfds;
    int *pfds; /* point-read fd per segment (qm_hpfile_read_point), -1 when not open, -2 when
                * it could not be opened and point reads use fds (guarded by mu) */
    u64 npfds;
    u64 cold;     /* segments below this one have had their fds closed */
    u64 closable; /* segments below this one are complete and durable (atomic) */
    pthread_mutex_t mu;
    bool new_segment; /* a segment file was created since the last sync */
    bool rdonly;
    u8 *buf;                /* holds logical bytes [flushed, size) */
    struct qm_hpmaps *maps; /* read mappings per segment (NULL: unmapped; see above) */
    bool map;               /* segments are mapped as they are opened or written */
    size_t buf_cap;
    bool huge;            /* new 2 MiB regions may get one huge folio each (see above) */
    u64 huge_acct;        /* live bytes this mapped file has counted as open logs (hugefolio.h) */
    u64 app_n, app_bytes; /* records appended by this handle, and their bytes */
    bool pop;             /* map the pages of records written at once (qm_hpfile_populate) */
    u64 pop_lo;           /* records written at once from here on are mapped (atomic; none:
                           * UINT64_MAX) */
    qm_err *err;
} qm_hpfile;

/* How to open one file (qm_hpfile_open). */
typedef struct qm_hpfile_cfg {
    const char *dir, *prefix; /* segments are dir/prefix.NNNNNNNNNN */
    u64 seg_size;
    u64 head, size; /* committed values from the metadata (0, 0 when creating) */
    size_t buf_cap; /* write buffer (0: every append is written at once) */
    bool create;    /* create an empty file */
    bool rdonly;    /* open for reading only: nothing is cut, deleted or written */
    bool map;       /* map segments for qm_hpfile_view (see above; may be refused) */
} qm_hpfile_cfg;

/*
 * Opens (or, with create, creates an empty) file. Segment files past `size` are cut back or
 * deleted, and segments wholly below head are deleted. Returns QMDB_CORRUPT if a committed
 * segment is missing or too short.
 */
QM_HIDDEN int qm_hpfile_open(qm_hpfile *f, const qm_hpfile_cfg *cfg, qm_err *err);
QM_HIDDEN int qm_hpfile_close(qm_hpfile *f);

/* Appends len bytes; *pos receives their logical offset. A record of at least a sixteenth
 * of the write buffer is written at once (after the buffered bytes), not copied into it. */
QM_HIDDEN int qm_hpfile_append(qm_hpfile *f, const void *data, size_t len, u64 *pos);
/* Writer: whether the records written at once from now on get their pages mapped into the
 * read mapping as they are written (MADV_POPULATE_READ), so that a read through the mapping
 * finds them without a fault. Off at open. */
QM_HIDDEN void qm_hpfile_populate(qm_hpfile *f, bool on);
/* Any thread: whether the record [pos, pos + len) was written at once with its pages mapped,
 * as was every such record written after it (a cut or a record that was not mapped resets
 * this). A hint: the kernel may have unmapped a page since, which a read then faults in. */
QM_HIDDEN bool qm_hpfile_populated(const qm_hpfile *f, u64 pos, size_t len);
/* Reads exactly len bytes at logical offset pos (must lie in [head, size)). */
QM_HIDDEN int qm_hpfile_read(qm_hpfile *f, u64 pos, void *out, size_t len);
/* The len bytes at logical offset pos straight from the segment's read mapping, when they
 * lie in [head, flushed) within one mapped segment: NULL otherwise (the caller reads them
 * with qm_hpfile_read*). Valid while readers hold the database's reader lock. No lock, no
 * system call: any thread that may read (see above). */
QM_HIDDEN const u8 *qm_hpfile_view(const qm_hpfile *f, u64 pos, size_t len);
/* Whether [pos, pos+len) can be read through the mapping without waiting for the device:
 * mapped, and all its pages in the page cache (mincore; one system call per 64 pages). A
 * batched read skips such bytes: the reader takes them from the mapping, with no system call
 * and no copy. */
QM_HIDDEN bool qm_hpfile_resident(const qm_hpfile *f, u64 pos, size_t len);
/* How many of the len bytes from pos one view could cover: those flushed and within pos's
 * segment (0 when pos is outside [head, flushed]). */
QM_HIDDEN size_t qm_hpfile_span(const qm_hpfile *f, u64 pos, size_t len);
/* Whether segment mapping is in effect for f (tests, qmdb_stat). */
QM_HIDDEN bool qm_hpfile_mapped(const qm_hpfile *f);
/* Reads up to len bytes at pos, stopping at size; *got receives the count. */
QM_HIDDEN int qm_hpfile_read_upto(qm_hpfile *f, u64 pos, void *out, size_t len, size_t *got);
/* qm_hpfile_read_upto for a read at a random place (an entry): through a second descriptor per
 * segment with the kernel's read-ahead off (POSIX_FADV_RANDOM), so that it reads the pages asked
 * for and no more; fds keep their read-ahead for the sequential scans (qm_scan). */
QM_HIDDEN int qm_hpfile_read_point(qm_hpfile *f, u64 pos, void *out, size_t len, size_t *got);
/* qm_hpfile_read_upto past the page cache (O_DIRECT through the batched reads' descriptor, the
 * bytes widened to whole pages in a bounce buffer): up to len bytes at pos, within pos's
 * segment and below `flushed`, which pos must be under. */
QM_HIDDEN int qm_hpfile_read_direct(qm_hpfile *f, u64 pos, void *out, size_t len, size_t *got);
/* Asks the kernel to forget the cached pages that lie wholly inside [pos, pos + len), bytes
 * already written out in an earlier block (below synced): a dead entry's, so that the page
 * cache holds live ones. Unmaps them from f's read mapping first (mapped pages are not
 * dropped). A hint: nothing is read or changed on disk, and failures are ignored. */
QM_HIDDEN void qm_hpfile_drop(qm_hpfile *f, u64 pos, u64 len);
/* Writes the buffer out (no fsync). */
QM_HIDDEN int qm_hpfile_flush(qm_hpfile *f);
/* Flushes and fsyncs every segment touched since the last sync (and the directory if a
 * segment was created). */
QM_HIDDEN int qm_hpfile_sync(qm_hpfile *f);
/* The two halves of qm_hpfile_sync, for a pipeline: begin (writer thread) writes the buffer
 * out and records which segments need an fsync; finish (any thread) performs the fsyncs. */
typedef struct qm_hp_ticket {
    u64 first, last; /* segments to fsync, if any */
    bool any, dir;   /* dir: a segment was created, fsync the directory */
} qm_hp_ticket;
QM_HIDDEN int qm_hpfile_sync_begin(qm_hpfile *f, qm_hp_ticket *t);
QM_HIDDEN int qm_hpfile_sync_finish(qm_hpfile *f, const qm_hp_ticket *t);
/* Closes the fds of complete, durable segments (writer thread, readers excluded). */
QM_HIDDEN void qm_hpfile_close_cold(qm_hpfile *f);

/* For batched reads: the read-only fd (O_DIRECT when direct, else buffered, no read-ahead) and
 * in-segment offset of logical byte pos, and the bytes from pos to the end of that segment. pos
 * must be below `flushed`. */
QM_HIDDEN int qm_hpfile_read_fd(qm_hpfile *f, u64 pos, bool direct, int *fd, u64 *off,
                                u64 *seg_left);

/* Raises the head to new_head and deletes segments wholly below it. Call only after the
 * metadata recording new_head is durable. */
QM_HIDDEN int qm_hpfile_prune_head(qm_hpfile *f, u64 new_head);
/* Cuts the file back to size (>= head; the write buffer must be empty): the segment holding
 * byte `size` is truncated, later ones deleted. For a rollback, after the metadata recording
 * the smaller size is durable (an open would cut the same bytes). */
QM_HIDDEN int qm_hpfile_cut(qm_hpfile *f, u64 size);
/* Total bytes of kept segment data ([head rounded down to a segment, size)). */
QM_HIDDEN u64 qm_hpfile_disk_bytes(const qm_hpfile *f);

/* Sequential reader over an hpfile, buffered (recovery scans, the compaction cursor,
 * history scans of the prover). A one-pass scan (qm_scan_one_pass) also keeps the kernel
 * reading ahead of it, and hands out the bytes of mapped segments in place. */
typedef struct qm_scan {
    qm_hpfile *f;
    u8 *buf;
    size_t cap;
    u64 pos; /* logical offset of buf[0] */
    size_t len;
    bool one_pass; /* qm_scan_one_pass */
    u64 ra_end;    /* one pass: readahead has been asked for up to this offset */
} qm_scan;

QM_HIDDEN int qm_scan_init(qm_scan *sc, qm_hpfile *f, size_t cap);
QM_HIDDEN void qm_scan_free(qm_scan *sc);
/* Makes [pos, pos+need) available; *p points at it (valid until the next call). */
QM_HIDDEN int qm_scan_get(qm_scan *sc, u64 pos, size_t need, const u8 **p);
/* For a one-pass read of much of the file (snapshot export): asks the kernel to read
 * QM_SCAN_AHEAD bytes ahead of the position, so that the device works while the caller
 * computes (segment mappings and batched-read descriptors are advised for random point reads
 * and do not read ahead), and serves the scan from the segment mappings where the handle has
 * them (a writer's), no copy. Other bytes (a read-only handle's, a record across a segment
 * end) still come through the buffer. The scan must only move forward. */
QM_HIDDEN void qm_scan_one_pass(qm_scan *sc);
#define QM_SCAN_AHEAD (8u << 20)

#endif /* QM_HPFILE_H */
