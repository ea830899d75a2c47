/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hixmemo.c -- the hybrid indexer's per-block memo (hindex_int.h). The prefetch stage and the
 * block's batched client reads (qmdb_get_many) look up every key of a block before the update
 * stage looks them up again; the run's part of each answer cannot change in between (a run
 * never changes, and run records only die), so lookups record it here, keyed by the run, and
 * the update stage reads no page for it. Erasures since are applied when an answer is used.
 * Emptied after each update stage, and when full (reads between blocks fill it too).
 *
 * Thread: lookups from the prefetch stage, client readers and the updater; every access holds
 * the index's mmu.
 */
#include "hindex_int.h"

#include <stdlib.h>

/* The slot where key's probe begins in a table of cap slots (a power of two). */
static inline u64
memo_home(u64 key, u64 cap)
{
    return (key * 0x9E3779B97F4A7C15ull) >> 20 & (cap - 1);
}

static memo_ent *
memo_find_locked(const qm_hindex *x, u64 key)
{
    if (x->mrun != x->r.id || x->mn == 0)
        return NULL;
    u64 m = x->mcap - 1;
    for (u64 i = memo_home(key, x->mcap);; i = (i + 1) & m) {
        if (x->mt[i].key == key + 1)
            return &x->mt[i];
        if (x->mt[i].key == 0)
            return NULL;
    }
}

/* A copy of key's memo entry; false if there is none. */
bool
hix_memo_get(qm_hindex *x, u64 key, memo_ent *out)
{
    pthread_mutex_lock(&x->mmu);
    const memo_ent *m = memo_find_locked(x, key);
    if (m)
        *out = *m;
    pthread_mutex_unlock(&x->mmu);
    return m != NULL;
}

/* Installs a new table (mmu held). Stored atomically for hix_memo_prefetch, which reads them
 * without the lock. */
static void
memo_publish(qm_hindex *x, memo_ent *t, u64 cap)
{
    __atomic_store_n(&x->mt, t, __ATOMIC_RELAXED);
    __atomic_store_n(&x->mcap, cap, __ATOMIC_RELAXED);
}

/* Starts loading the slot where key's probe begins, without the lock: the table and its size
 * are read atomically and may be a moment old (a table being replaced), which costs a wasted
 * load at worst; a prefetch never faults. */
void
hix_memo_prefetch(qm_hindex *x, u64 key)
{
    memo_ent *t = __atomic_load_n(&x->mt, __ATOMIC_RELAXED);
    u64 cap = __atomic_load_n(&x->mcap, __ATOMIC_RELAXED);
    if (t && cap)
        __builtin_prefetch(&t[memo_home(key, cap)]);
}

/* Slots for n answers at a load of at most one half. */
static u64
memo_cap_for(u64 n)
{
    u64 cap = 64;
    while (cap < 2 * n + 2)
        cap *= 2;
    return cap;
}

/* Forgets every answer (an empty memo has mn == 0 and no key in any slot). */
static void
memo_clear_locked(qm_hindex *x)
{
    if (x->mn)
        memset(x->mt, 0, x->mcap * sizeof(memo_ent));
    x->mn = 0;
}

/* Answers are kept for one run: a new run forgets them. */
static void
memo_sync_run_locked(qm_hindex *x)
{
    if (x->mrun != x->r.id) {
        memo_clear_locked(x);
        x->mrun = x->r.id;
    }
}

/* Merges what a lookup learnt (fields per flags) into key's entry. */
void
hix_memo_put(qm_hindex *x, u64 key, const memo_ent *v)
{
    pthread_mutex_lock(&x->mmu);
    memo_sync_run_locked(x);
    memo_ent *e = memo_find_locked(x, key);
    if (!e && x->mcap) {
        /* Full: mostly answers of reads made since the last block (no update stage empties
         * the memo after them), which no update stage will ask for. Keeping them would drop
         * every answer of the next block's batched reads, and its update stage would read
         * those pages again; start over instead. */
        if ((x->mn + 1) * 2 > x->mcap)
            memo_clear_locked(x);
        u64 m = x->mcap - 1, i = memo_home(key, x->mcap);
        while (x->mt[i].key)
            i = (i + 1) & m;
        e = &x->mt[i];
        memset(e, 0, sizeof(*e));
        e->key = key + 1;
        x->mn++;
    }
    if (e && (v->flags & MEMO_F)) {
        memcpy(e->fpos, v->fpos, sizeof(e->fpos));
        e->nf = v->nf;
    }
    if (e && (v->flags & MEMO_B)) {
        memcpy(e->bpos, v->bpos, sizeof(e->bpos));
        e->nb = v->nb;
        e->best = v->best;
        e->has_best = v->has_best;
    }
    if (e)
        e->flags |= v->flags;
    pthread_mutex_unlock(&x->mmu);
}

int
qm_hix_memo_reserve(qm_hindex *x, size_t nkeys)
{
    int rc = 0;
    pthread_mutex_lock(&x->mmu);
    memo_sync_run_locked(x);
    u64 cap = memo_cap_for(x->mn + (u64)nkeys);
    if (cap > x->mcap) {
        memo_ent *t = calloc(cap, sizeof(memo_ent));
        if (!t) {
            rc = -ENOMEM;
        } else {
            for (u64 k = 0; x->mn && k < x->mcap; k++) { /* rehash the kept answers */
                if (!x->mt[k].key)
                    continue;
                u64 i = memo_home(x->mt[k].key - 1, cap);
                while (t[i].key)
                    i = (i + 1) & (cap - 1);
                t[i] = x->mt[k];
            }
            free(x->mt);
            memo_publish(x, t, cap);
        }
    }
    pthread_mutex_unlock(&x->mmu);
    return rc;
}

/* A table over MEMO_KEEP bytes that MEMO_SMALL_BLOCKS blocks in a row used less than an
 * eighth of (a quarter of its usual load) shrinks to what the largest of them needed: one
 * huge block does not pin it for the life of the handle, and one small block (an empty one)
 * does not leave the next block's batched reads, which come before its reserve, a table too
 * small to keep their answers. */
#define MEMO_KEEP ((size_t)256 << 10)
#define MEMO_SMALL_BLOCKS 16u

void
qm_hix_memo_reset(qm_hindex *x)
{
    pthread_mutex_lock(&x->mmu);
    if (x->mcap * sizeof(memo_ent) > MEMO_KEEP && x->mn < x->mcap / 8) {
        x->msmall++;
        x->mpeak = QM_MAX(x->mpeak, x->mn);
    } else {
        x->msmall = 0;
        x->mpeak = 0;
    }
    memo_ent *t = NULL;
    u64 cap = memo_cap_for(x->mpeak);
    if (x->msmall >= MEMO_SMALL_BLOCKS && (t = calloc(cap, sizeof(memo_ent))) != NULL) {
        free(x->mt);
        memo_publish(x, t, cap);
        x->mn = 0;
        x->msmall = 0;
        x->mpeak = 0;
    } else {
        memo_clear_locked(x);
    }
    pthread_mutex_unlock(&x->mmu);
}

u64
qm_hix_memo_bytes(qm_hindex *x)
{
    pthread_mutex_lock(&x->mmu);
    u64 b = x->mcap * sizeof(memo_ent);
    pthread_mutex_unlock(&x->mmu);
    return b;
}
