/* SPDX-License-Identifier: Apache-2.0 */
/*
 * posset.h -- a set of 64-bit log positions (open addressing, grown at 3/4 full): the hybrid
 * indexer's erased positions (hindex.c) and the reads a large qmdb_get_many already queued
 * (prefetch.c). Positions are multiples of 8 in the common use; any value but UINT64_MAX may
 * be stored.
 *
 * Thread: none of its own; a set is guarded by its owner.
 */
#ifndef QM_POSSET_H
#define QM_POSSET_H

#include "qm_internal.h"

typedef struct qm_posset {
    u64 *slot; /* value + 1, 0 = empty */
    u64 cap, n;
} qm_posset;

/* Adds pos: 1 if it was not there, 0 if it was, or -ENOMEM. */
QM_HIDDEN int qm_posset_add(qm_posset *s, u64 pos);
QM_HIDDEN bool qm_posset_has(const qm_posset *s, u64 pos);
QM_HIDDEN void qm_posset_free(qm_posset *s);

#endif /* QM_POSSET_H */
