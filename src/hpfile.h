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
 * Thread: owned by one shard's writer; reads of bytes below `flushed` may come from any
 * thread once the pipeline lands (they only pread).
 */
#ifndef QM_HPFILE_H
#define QM_HPFILE_H

#include "qm_internal.h"

typedef struct qm_hpfile {
    char *path_prefix; /* "<dir>/<prefix>" */
    u64 seg_size;
    u64 head;    /* first logical byte still kept */
    u64 size;    /* logical size including buffered bytes */
    u64 flushed; /* bytes written to segment files */
    u64 synced;  /* bytes known durable */
    int *fds;    /* fd per segment number, -1 when not open */
    u64 nfds;
    bool new_segment; /* a segment file was created since the last sync */
    bool rdonly;
    u8 *buf;          /* holds logical bytes [flushed, size) */
    size_t buf_cap;
    qm_err *err;
} qm_hpfile;

/*
 * Opens (or, with create, creates an empty) file. head/size are the committed values from the
 * metadata. Segment files past `size` are cut back or deleted, and segments wholly below head
 * are deleted. Returns QMDB_CORRUPT if a committed segment is missing or too short.
 */
QM_HIDDEN int qm_hpfile_open(qm_hpfile *f, const char *dir, const char *prefix, u64 seg_size,
                             u64 head, u64 size, size_t buf_cap, bool create, bool rdonly,
                             qm_err *err);
QM_HIDDEN int qm_hpfile_close(qm_hpfile *f);

/* Appends len bytes; *pos receives their logical offset. */
QM_HIDDEN int qm_hpfile_append(qm_hpfile *f, const void *data, size_t len, u64 *pos);
/* Reads exactly len bytes at logical offset pos (must lie in [head, size)). */
QM_HIDDEN int qm_hpfile_read(qm_hpfile *f, u64 pos, void *out, size_t len);
/* Reads up to len bytes at pos, stopping at size; *got receives the count. */
QM_HIDDEN int qm_hpfile_read_upto(qm_hpfile *f, u64 pos, void *out, size_t len, size_t *got);
/* Writes the buffer out (no fsync). */
QM_HIDDEN int qm_hpfile_flush(qm_hpfile *f);
/* Flushes and fsyncs every segment touched since the last sync (and the directory if a
 * segment was created). */
QM_HIDDEN int qm_hpfile_sync(qm_hpfile *f);
/* Raises the head to new_head and deletes segments wholly below it. Call only after the
 * metadata recording new_head is durable. */
QM_HIDDEN int qm_hpfile_prune_head(qm_hpfile *f, u64 new_head);
/* Total bytes of kept segment data ([head rounded down to a segment, size)). */
QM_HIDDEN u64 qm_hpfile_disk_bytes(const qm_hpfile *f);

#endif /* QM_HPFILE_H */
