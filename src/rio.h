/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rio.h -- batched asynchronous reads of entries (the prefetcher's I/O engine).
 *
 * A caller hands over a list of reads (fd, offset, the shard they belong to); rio performs
 * them with io_uring at a bounded queue depth when the kernel allows it, or else with a pool
 * of threads issuing pread (one job per shard, so that the completion callback for a shard
 * never runs on two threads at once). With direct = true the fds are O_DIRECT fds and every
 * read is widened to 4 KiB alignment into aligned buffers; the callback receives a pointer
 * to the requested offset either way.
 *
 * Selection: io_uring is probed once at qm_rio_new (ring setup plus one NOP). QMDB_NO_URING=1
 * in the environment, or a failed probe, selects the pread pool. Both paths deliver the same
 * bytes; tests run both.
 *
 * Thread: qm_rio_run may be called from any thread. With io_uring a call takes one of three
 * lanes (a ring each), so three threads' batches run at once and a fourth waits; the pread
 * pool runs one batch at a time. Completions of several batches may therefore run at the same
 * time, on their callers' threads: a done callback must be safe for that.
 */
#ifndef QM_RIO_H
#define QM_RIO_H

#include "qm_internal.h"

typedef struct qm_rio qm_rio;

typedef struct qm_rreq {
    int fd;
    u32 shard; /* requests must be sorted by shard */
    u64 off;   /* byte offset in fd */
    u32 len;   /* bytes wanted at off (at most QM_RIO_MAX_LEN) */
    u64 tag;   /* caller's (e.g. the logical position) */
} qm_rreq;

#define QM_RIO_MAX_LEN 4096u

/* Completion: got bytes of the request are at data (got < len at end of file). rc < 0 is an
 * I/O error for this request (the caller may retry synchronously). */
typedef void (*qm_rio_done)(void *arg, const qm_rreq *r, const u8 *data, size_t got, int rc);

/* Creates the engine. qd: io_uring queue depth (32-64 suits NVMe/virtio SSDs). */
/* uring: 1 use io_uring when the kernel allows it, 0 never, -1 unless QMDB_NO_URING=1. */
QM_HIDDEN int qm_rio_new(unsigned qd, bool direct, int uring, qm_rio **out);
QM_HIDDEN void qm_rio_free(qm_rio *r);
/* True when io_uring is in use (false: the pread pool). */
QM_HIDDEN bool qm_rio_uring(const qm_rio *r);
QM_HIDDEN bool qm_rio_direct(const qm_rio *r);
/* Batches that can run at once: 2 with io_uring (1 where the kernel gave one ring), 1 with the
 * pread pool. */
QM_HIDDEN unsigned qm_rio_lanes(const qm_rio *r);
/* Performs every request, calling done once for each. Returns 0 or a setup error (-ENOMEM). */
QM_HIDDEN int qm_rio_run(qm_rio *r, const qm_rreq *reqs, size_t n, qm_rio_done done, void *arg);
/* Lanes whose ring failed for good and that now read with pread (a statistic). */
QM_HIDDEN unsigned qm_rio_broken_lanes(const qm_rio *r);
/* Tests: the calls-th system call on a ring from now on (a submission, or a submission and
 * wait; any lane) and every one after it fail as they would on a ring that failed for good;
 * with waits, the waits for the reads the kernel took fail too. Set while no batch runs. */
QM_HIDDEN void qm_rio_fail_in(qm_rio *r, long calls, bool waits);
/* Reads issued so far (a statistic). */
QM_HIDDEN u64 qm_rio_reads(const qm_rio *r);

#endif /* QM_RIO_H */
