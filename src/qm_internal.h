/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qm_internal.h -- common definitions for every libqmdb source file: fixed-width types,
 * the error-propagation idiom (QM_RET / QM_TRY + `out:` label), assertions, and the
 * corruption-reporting helper. Included first by every .c file under src/. No state.
 */
#ifndef QM_INTERNAL_H
#define QM_INTERNAL_H

#include "qmdb.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t i64;

#define QM_HIDDEN __attribute__((visibility("hidden")))
#define QM_LIKELY(x) __builtin_expect(!!(x), 1)
#define QM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define QM_STATIC_ASSERT(c, msg) _Static_assert(c, msg)
#define QM_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define QM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define QM_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Our own invariants only; never on bytes read from disk (those return QMDB_CORRUPT). */
#define QM_ASSERT(x) assert(x)

/* Return rc if the expression fails. */
#define QM_RET(expr)         \
    do {                     \
        int qm_rc_ = (expr); \
        if (qm_rc_ != 0)     \
            return qm_rc_;   \
    } while (0)

/* Set rc and jump to the function's `out:` label if the expression fails. */
#define QM_TRY(expr)  \
    do {              \
        rc = (expr);  \
        if (rc != 0)  \
            goto out; \
    } while (0)

/* Twig and tree geometry (FORMAT.md §3-§4). */
#define QM_TWIG_SHIFT 11
#define QM_TWIG_LEAVES 2048u
#define QM_TWIG_MASK 2047u
#define QM_SENTRIES_PER_SHARD 4096u
#define QM_SHARD_COUNT 16u
#define QM_UNITS 65536u /* indexer units: first two key-hash bytes */

/* Round up to a multiple of 8. */
static inline u64
qm_round8(u64 x)
{
    return (x + 7) & ~(u64)7;
}

/*
 * Error detail reporting. Functions that detect a problem record a message in a
 * caller-supplied qm_err (file, offset, what) and return the code. The db handle owns one.
 */
typedef struct qm_err {
    char msg[512];
} qm_err;

QM_HIDDEN int qm_err_set(qm_err *e, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Report corruption with file and offset; returns QMDB_CORRUPT. */
#define QM_CORRUPT(e, ...) qm_err_set((e), QMDB_CORRUPT, __VA_ARGS__)

/* Whether the environment variable `name` is set to something other than "" or "0" (the
 * QMDB_NO_* switches). */
static inline bool
qm_env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] && strcmp(v, "0") != 0;
}

/* How many keys ahead a batch of lookups gives the CPU its hints (qmdb_get_many's index
 * records and entries, the hybrid memo's slots in the update stage: docs/DESIGN.md "Two-phase
 * prefetch"): 8, or 0 with QMDB_NO_HINTS=1 in the environment (read once per file that asks;
 * for comparisons). */
static inline unsigned
qm_hint_ahead(void)
{
    static int ahead = -1;
    int a = __atomic_load_n(&ahead, __ATOMIC_RELAXED);
    if (a < 0) {
        a = qm_env_flag("QMDB_NO_HINTS") ? 0 : 8;
        __atomic_store_n(&ahead, a, __ATOMIC_RELAXED);
    }
    return (unsigned)a;
}

#endif /* QM_INTERNAL_H */
