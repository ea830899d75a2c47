/* SPDX-License-Identifier: Apache-2.0 */
/*
 * indexer.c -- the in-memory indexer (record layout in indexer.h).
 * Thread: the shard's writer.
 */
#include "indexer.h"

#include "codec.h"

#include <stdlib.h>

/* The unit of kh within its shard: key-hash bits 4..15. */
static inline unsigned
idx_unit_no(const u8 kh[32])
{
    return ((unsigned)(kh[0] & 0x0f) << 8) | kh[1];
}

static inline qm_index_unit *
idx_unit(qm_index *x, const u8 kh[32])
{
    return &x->units[idx_unit_no(kh)];
}

static inline u64
rec_pos(const u8 *r)
{
    return qm_get_u48be(r + QM_INDEX_KEY) << 3;
}

/* Record keys are 4 bytes in hash order; compare them as big-endian integers. */
static inline u32
rec_key(const u8 *r)
{
    return ((u32)r[0] << 24) | ((u32)r[1] << 16) | ((u32)r[2] << 8) | r[3];
}

/* First record index in [lo, hi) whose key is >= key, all before lo being below it. */
static u32
idx_bsearch(const qm_index_unit *u, u32 key, u32 lo, u32 hi)
{
    while (lo < hi) {
        u32 mid = lo + (hi - lo) / 2;
        if (rec_key(u->recs + (size_t)mid * QM_INDEX_REC) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#define IDX_GUESS_MIN 8u /* units with fewer records are bisected */

/* Where a key's record lies in a unit of n records if keys are uniform (idx_lower_bound). */
static inline u32
idx_guess(u32 key, u32 n)
{
    return (u32)(((u64)key * n) >> 32);
}

/* First record index whose key is >= the key at k4. Record keys are key-hash bytes 2..5,
 * uniform over 32 bits within a unit, so the answer lies near key * n / 2^32: start there
 * and walk (a few records, on one or two cache lines, where a binary search touches a line
 * per step); a walk that goes on (skewed keys) finishes as a binary search. */
static u32
idx_lower_bound(const qm_index_unit *u, const u8 *k4)
{
    u32 key = rec_key(k4), n = u->n;
    if (n < IDX_GUESS_MIN)
        return idx_bsearch(u, key, 0, n);
    u32 g = idx_guess(key, n);
    if (rec_key(u->recs + (size_t)g * QM_INDEX_REC) < key) {
        for (u32 end = g + 16 < n ? g + 16 : n; ++g < end;)
            if (rec_key(u->recs + (size_t)g * QM_INDEX_REC) >= key)
                return g;
        return idx_bsearch(u, key, g, n);
    }
    for (u32 stop = g > 16 ? g - 16 : 0; g > stop; g--)
        if (rec_key(u->recs + (size_t)(g - 1) * QM_INDEX_REC) < key)
            return g;
    return idx_bsearch(u, key, 0, g);
}

void
qm_index_prefetch(const qm_index *x, const u8 kh[32])
{
    const qm_index_unit *u = &x->units[idx_unit_no(kh)];
    if (u->n >= IDX_GUESS_MIN) /* the record idx_lower_bound starts at */
        __builtin_prefetch(u->recs + (size_t)idx_guess(rec_key(kh + 2), u->n) * QM_INDEX_REC);
}

void
qm_index_init(qm_index *x)
{
    memset(x, 0, sizeof(*x));
}

void
qm_index_free(qm_index *x)
{
    for (unsigned i = 0; i < QM_UNITS_PER_SHARD; i++)
        free(x->units[i].recs);
    memset(x, 0, sizeof(*x));
}

size_t
qm_index_find(const qm_index *xc, const u8 kh[32], u64 *out, size_t cap)
{
    qm_index *x = (qm_index *)xc;
    const qm_index_unit *u = idx_unit(x, kh);
    size_t cnt = 0;
    for (u32 i = idx_lower_bound(u, kh + 2); i < u->n; i++) {
        const u8 *r = u->recs + (size_t)i * QM_INDEX_REC;
        if (memcmp(r, kh + 2, QM_INDEX_KEY) != 0)
            break;
        if (cnt < cap)
            out[cnt] = rec_pos(r);
        cnt++;
    }
    return cnt;
}

size_t
qm_index_pred_candidates(const qm_index *xc, const u8 kh[32], u64 *out, size_t cap)
{
    qm_index *x = (qm_index *)xc;
    const qm_index_unit *u = idx_unit(x, kh);
    u32 lb = idx_lower_bound(u, kh + 2);
    size_t cnt = 0;
    if (lb > 0) {
        /* The group of records sharing the largest prefix below kh's. */
        const u8 *prev = u->recs + (size_t)(lb - 1) * QM_INDEX_REC;
        u32 i = lb;
        while (i > 0 && memcmp(u->recs + (size_t)(i - 1) * QM_INDEX_REC, prev, QM_INDEX_KEY) == 0)
            i--;
        for (; i < lb; i++) {
            if (cnt < cap)
                out[cnt] = rec_pos(u->recs + (size_t)i * QM_INDEX_REC);
            cnt++;
        }
    }
    for (u32 i = lb; i < u->n; i++) {
        const u8 *r = u->recs + (size_t)i * QM_INDEX_REC;
        if (memcmp(r, kh + 2, QM_INDEX_KEY) != 0)
            break;
        if (cnt < cap)
            out[cnt] = rec_pos(r);
        cnt++;
    }
    return cnt;
}

bool
qm_index_below(const qm_index *xc, const u8 kh[32], qm_index_dead_fn dead, const void *arg,
               u8 key6[6])
{
    qm_index *x = (qm_index *)xc;
    const qm_index_unit *u = idx_unit(x, kh);
    for (u32 i = idx_lower_bound(u, kh + 2); i > 0; i--) {
        const u8 *r = u->recs + (size_t)(i - 1) * QM_INDEX_REC;
        if (dead && dead(arg, rec_pos(r)))
            continue;
        key6[0] = kh[0];
        key6[1] = kh[1];
        memcpy(key6 + 2, r, QM_INDEX_KEY);
        return true;
    }
    return false;
}

int
qm_index_foreach(const qm_index *x, unsigned shard, qm_index_fn fn, void *arg)
{
    u8 key6[6];
    for (unsigned u = 0; u < QM_UNITS_PER_SHARD; u++) {
        const qm_index_unit *un = &x->units[u];
        key6[0] = (u8)((shard << 4) | (u >> 8));
        key6[1] = (u8)u;
        for (u32 i = 0; i < un->n; i++) {
            const u8 *r = un->recs + (size_t)i * QM_INDEX_REC;
            memcpy(key6 + 2, r, QM_INDEX_KEY);
            int rc = fn(arg, key6, rec_pos(r));
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int
unit_grow(qm_index *x, qm_index_unit *u, u32 need)
{
    if (need <= u->cap)
        return 0;
    /* Grow by 1/16 (at least 2 records) to keep slack, and so DRAM per entry, low. */
    u32 ncap = QM_MAX(need, u->cap + QM_MAX(2u, u->cap / 16));
    u8 *p = realloc(u->recs, (size_t)ncap * QM_INDEX_REC);
    if (!p)
        return -ENOMEM;
    x->bytes += (u64)(ncap - u->cap) * QM_INDEX_REC;
    u->recs = p;
    u->cap = ncap;
    return 0;
}

int
qm_index_insert(qm_index *x, const u8 kh[32], u64 pos)
{
    qm_index_unit *u = idx_unit(x, kh);
    QM_RET(unit_grow(x, u, u->n + 1));
    u32 at = idx_lower_bound(u, kh + 2);
    u8 *r = u->recs + (size_t)at * QM_INDEX_REC;
    memmove(r + QM_INDEX_REC, r, (size_t)(u->n - at) * QM_INDEX_REC);
    memcpy(r, kh + 2, QM_INDEX_KEY);
    qm_put_u48be(r + QM_INDEX_KEY, pos >> 3);
    u->n++;
    x->count++;
    return 0;
}

static u8 *
idx_find_exact(qm_index *x, qm_index_unit *u, const u8 kh[32], u64 pos)
{
    (void)x;
    for (u32 i = idx_lower_bound(u, kh + 2); i < u->n; i++) {
        u8 *r = u->recs + (size_t)i * QM_INDEX_REC;
        if (memcmp(r, kh + 2, QM_INDEX_KEY) != 0)
            break;
        if (rec_pos(r) == pos)
            return r;
    }
    return NULL;
}

int
qm_index_erase(qm_index *x, const u8 kh[32], u64 pos)
{
    qm_index_unit *u = idx_unit(x, kh);
    u8 *r = idx_find_exact(x, u, kh, pos);
    if (!r)
        return QMDB_NOTFOUND;
    u8 *end = u->recs + (size_t)u->n * QM_INDEX_REC;
    memmove(r, r + QM_INDEX_REC, (size_t)(end - r - QM_INDEX_REC));
    u->n--;
    x->count--;
    if (u->n == 0) {
        free(u->recs);
        x->bytes -= (u64)u->cap * QM_INDEX_REC;
        u->recs = NULL;
        u->cap = 0;
    }
    return 0;
}

int
qm_index_replace(qm_index *x, const u8 kh[32], u64 old_pos, u64 new_pos)
{
    qm_index_unit *u = idx_unit(x, kh);
    u8 *r = idx_find_exact(x, u, kh, old_pos);
    if (!r)
        return QMDB_NOTFOUND;
    qm_put_u48be(r + QM_INDEX_KEY, new_pos >> 3);
    return 0;
}

int
qm_index_bulk_add(qm_index *x, const u8 kh[32], u64 pos)
{
    qm_index_unit *u = idx_unit(x, kh);
    QM_RET(unit_grow(x, u, u->n + 1));
    u8 *r = u->recs + (size_t)u->n * QM_INDEX_REC;
    memcpy(r, kh + 2, QM_INDEX_KEY);
    qm_put_u48be(r + QM_INDEX_KEY, pos >> 3);
    u->n++;
    x->count++;
    return 0;
}

static int
rec_cmp(const void *a, const void *b)
{
    return memcmp(a, b, QM_INDEX_REC);
}

void
qm_index_bulk_finish(qm_index *x)
{
    for (unsigned i = 0; i < QM_UNITS_PER_SHARD; i++) {
        qm_index_unit *u = &x->units[i];
        if (u->n > 1)
            qsort(u->recs, u->n, QM_INDEX_REC, rec_cmp);
    }
}

int
qm_index_load_unit(qm_index *x, unsigned u, const u8 *recs, u32 n)
{
    qm_index_unit *un = &x->units[u];
    if (un->n != 0 || n == 0)
        return un->n != 0 ? -EINVAL : 0;
    u8 *p = malloc((size_t)n * QM_INDEX_REC);
    if (!p)
        return -ENOMEM;
    memcpy(p, recs, (size_t)n * QM_INDEX_REC);
    free(un->recs);
    un->recs = p;
    un->n = un->cap = n;
    x->count += n;
    x->bytes += (u64)n * QM_INDEX_REC;
    return 0;
}

u64
qm_index_dram_bytes(const qm_index *x)
{
    /* Count the allocator's per-chunk overhead too (16 bytes per non-empty unit). */
    u64 chunks = 0;
    for (unsigned i = 0; i < QM_UNITS_PER_SHARD; i++)
        chunks += x->units[i].recs != NULL;
    return sizeof(*x) + x->bytes + 16 * chunks;
}
