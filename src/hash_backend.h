/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hash_backend.h -- the SHA-256 compression backends that hash.c chooses between: portable C
 * (hash_portable.c, which also owns the round constants) and x86 SHA-NI (hash_shani.c). The
 * backends include only this header, so they depend on nothing above them. Pure; any thread.
 */
#ifndef QM_HASH_BACKEND_H
#define QM_HASH_BACKEND_H

#include "qm_internal.h"

/* One SHA-256 compression over `nblocks` 64-byte blocks, updating state[8]. */
typedef void (*qm_sha256_compress_fn)(u32 state[8], const u8 *blocks, size_t nblocks);

/* SHA-256 round constants (FIPS 180-4), 16-byte aligned (hash_portable.c). */
QM_HIDDEN extern const u32 qm_sha256_k[64];

QM_HIDDEN void qm_sha256_compress_portable(u32 state[8], const u8 *blocks, size_t nblocks);
QM_HIDDEN void qm_sha256_compress_shani(u32 state[8], const u8 *blocks, size_t nblocks);
QM_HIDDEN int qm_sha256_shani_supported(void);

#endif /* QM_HASH_BACKEND_H */
