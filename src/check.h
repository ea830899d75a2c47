/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check.h -- the deep offline check behind qmdb_check() (check.c), and the view of an open
 * handle it needs from db.c (qm_db_check_view). Thread: the checking thread only.
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

/* Runs checks 3-5 of check.c (ROOTS, indexer against ActiveBits, key-hash chain) on an open
 * handle, adding to *problems. Used by qmdb_check and by tests that damage a handle's memory. */
QM_HIDDEN int qm_check_handle(qmdb_db *db, qmdb_check_fn fn, void *arg, u64 *problems);

/* Fills v from an open handle (db.c). */
QM_HIDDEN void qm_db_check_view(qmdb_db *db, qm_check_view *v);

#endif /* QM_CHECK_H */
