/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool.h -- a small fixed pool of worker threads that runs "parallel for" jobs: fn(arg, i) for
 * every i in [0, n), spread over the workers and the calling thread, returning when all are
 * done. The commit path uses it to apply and hash the 16 independent shards and to fsync their
 * files concurrently (the device then serves one flush for many files).
 *
 * Thread: qm_pool_run is called by one thread at a time (the committing thread); the workers
 * touch only the job they claim.
 */
#ifndef QM_POOL_H
#define QM_POOL_H

#include "qm_internal.h"

typedef struct qm_pool qm_pool;

/* Creates a pool with `threads` workers (0 = run everything on the caller). */
QM_HIDDEN int qm_pool_new(unsigned threads, qm_pool **out);
QM_HIDDEN void qm_pool_free(qm_pool *p);

/* Runs fn(arg, i) for i in [0, n) and waits. After a job fails, jobs not yet started are
 * skipped (sequentially: the run stops at the failure). Returns the first nonzero result in
 * index order. A NULL pool runs sequentially. */
QM_HIDDEN int qm_pool_run(qm_pool *p, size_t n, int (*fn)(void *arg, size_t i), void *arg);

/* Number of worker threads to use on this machine for n independent jobs. */
QM_HIDDEN unsigned qm_pool_default_threads(void);

#endif /* QM_POOL_H */
