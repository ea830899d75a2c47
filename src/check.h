/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check.h -- the deep offline check behind qmdb_check(): the checks of check.c over a view of
 * an open handle, which the top layer builds (db_read.c). Thread: the checking thread only.
 */
#ifndef QM_CHECK_H
#define QM_CHECK_H

#include "meta.h"
#include "qm_internal.h"
#include "shard.h"

typedef struct qm_check_view {
    const char *dir;
    qm_shard *shards; /* QM_SHARD_COUNT of them */
    const qm_meta *meta;
    int roots_fd;
} qm_check_view;

/* Check 1 of check.c: both META slots of dir. Returns the number of problems reported. */
QM_HIDDEN u64 qm_check_meta(const char *dir, qmdb_check_fn fn, void *arg);
/* Checks 3-6 of check.c (ROOTS, indexer against ActiveBits, key-hash chain, dpos files) on the view
 * of an open handle, adding to *problems. Used by qmdb_check and by tests that damage a handle's
 * memory. */
QM_HIDDEN int qm_check_run(const qm_check_view *v, qmdb_check_fn fn, void *arg, u64 *problems);

#endif /* QM_CHECK_H */
