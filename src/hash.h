/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hash.h -- SHA-256 and the Merkle node hash H2(level, L, R) = SHA256(level || L || R).
 * Two backends: portable C (hash_portable.c) and x86 SHA-NI (hash_shani.c), chosen once at
 * run time by cpuid. Pure functions; any thread.
 */
#ifndef QM_HASH_H
#define QM_HASH_H

#include "qm_internal.h"

#define QM_HASH_LEN 32

#include "hash_backend.h"

enum { QM_HASH_AUTO = 0, QM_HASH_PORTABLE = 1, QM_HASH_SHANI = 2 };
/* Selects the backend (tests only). Returns 0, or -1 if the backend is not supported. */
QM_HIDDEN int qm_hash_set_backend(int which);
/* Name of the backend in use ("sha-ni" or "portable"). */
QM_HIDDEN const char *qm_hash_backend_name(void);

/* SHA-256 of len bytes. */
QM_HIDDEN void qm_sha256(const void *data, size_t len, u8 out[32]);
/* SHA-256 of the concatenation a || b. */
QM_HIDDEN void qm_sha256_2(const void *a, size_t alen, const void *b, size_t blen, u8 out[32]);

/* H2(level, l, r). out may alias l or r. */
QM_HIDDEN void qm_h2(u8 level, const u8 l[32], const u8 r[32], u8 out[32]);

/* Batch of node hashes: every job is independent (out must not alias another job's input). */
typedef struct qm_h2_job {
    const u8 *l, *r;
    u8 *out;
    u8 level;
} qm_h2_job;
QM_HIDDEN void qm_h2_batch(const qm_h2_job *jobs, size_t n);

/* The global tree over the 16 shard roots (FORMAT.md §5): its nodes of levels 65, 66 and 67
 * (n1, n2, n3) and the state root. */
typedef struct qm_gtree {
    u8 n1[8][32], n2[4][32], n3[2][32], root[32];
} qm_gtree;
QM_HIDDEN void qm_global_tree(const u8 (*roots)[32], qm_gtree *g);

/* Count of SHA-256 compressions done by this thread (for statistics). */
QM_HIDDEN u64 qm_hash_compressions(void);

#endif /* QM_HASH_H */
