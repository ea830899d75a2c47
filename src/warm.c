/* SPDX-License-Identifier: Apache-2.0 */
/*
 * warm.c -- the warm-entry cache (see warm.h): an open-addressing table from log position to
 * a copy of the entry in a bump arena.
 */
#include "warm.h"

#include <stdlib.h>

static size_t
warm_slot(u64 pos, size_t cap)
{
    u64 h = (pos >> 3) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

void
qm_warm_free(qm_warm *w)
{
    free(w->kset);
    free(w->keys);
    free(w->offs);
    free(w->arena);
    memset(w, 0, sizeof(*w));
}

void
qm_warm_clear(qm_warm *w)
{
    if (w->n)
        memset(w->keys, 0, w->cap * sizeof(u64));
    if (w->kn)
        memset(w->kset, 0, w->kcap * sizeof(u64));
    __atomic_store_n(&w->n, 0, __ATOMIC_RELAXED); /* qm_warm_none reads it without the lock */
    w->kn = 0;
    w->alen = 0;
}

u64
qm_warm_dram_bytes(const qm_warm *w)
{
    return (u64)w->cap * 16 + w->acap + (u64)w->kcap * 8;
}

static u64
kset_key(const u8 kh[32])
{
    u64 k;
    memcpy(&k, kh, 8);
    return k ? k : 1;
}

bool
qm_warm_key_has(const qm_warm *w, const u8 kh[32])
{
    if (w->kn == 0)
        return false;
    u64 k = kset_key(kh);
    for (size_t j = (size_t)(k >> 7) & (w->kcap - 1); w->kset[j]; j = (j + 1) & (w->kcap - 1))
        if (w->kset[j] == k)
            return true;
    return false;
}

void
qm_warm_key_add(qm_warm *w, const u8 kh[32])
{
    if (w->kn >= QM_WARM_MAX_KEYS)
        return;
    if ((w->kn + 1) * 2 > w->kcap) {
        size_t cap = w->kcap ? w->kcap * 2 : 1024;
        u64 *ks = calloc(cap, sizeof(u64));
        if (!ks)
            return;
        for (size_t i = 0; i < w->kcap; i++) {
            if (!w->kset[i])
                continue;
            size_t j = (size_t)(w->kset[i] >> 7) & (cap - 1);
            while (ks[j])
                j = (j + 1) & (cap - 1);
            ks[j] = w->kset[i];
        }
        free(w->kset);
        w->kset = ks;
        w->kcap = cap;
    }
    u64 k = kset_key(kh);
    size_t j = (size_t)(k >> 7) & (w->kcap - 1);
    for (; w->kset[j]; j = (j + 1) & (w->kcap - 1))
        if (w->kset[j] == k)
            return;
    w->kset[j] = k;
    w->kn++;
}

static int
warm_grow(qm_warm *w)
{
    size_t cap = w->cap ? w->cap * 2 : 1024;
    u64 *keys = calloc(cap, sizeof(u64)), *offs = malloc(cap * sizeof(u64));
    if (!keys || !offs) {
        free(keys);
        free(offs);
        return -ENOMEM;
    }
    for (size_t i = 0; i < w->cap; i++) {
        if (!w->keys[i])
            continue;
        size_t j = warm_slot(w->keys[i] - 1, cap);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = w->keys[i];
        offs[j] = w->offs[i];
    }
    free(w->keys);
    free(w->offs);
    w->keys = keys;
    w->offs = offs;
    w->cap = cap;
    return 0;
}

void
qm_warm_put(qm_warm *w, u64 pos, const u8 *bytes, u32 len)
{
    if (len >= (1u << 24) || w->alen + len > QM_WARM_MAX_BYTES)
        return;
    if ((w->n + 1) * 2 > w->cap && warm_grow(w) != 0)
        return;
    size_t j = warm_slot(pos, w->cap);
    while (w->keys[j]) {
        if (w->keys[j] == pos + 1)
            return; /* already cached: the bytes at a position never change */
        j = (j + 1) & (w->cap - 1);
    }
    if (w->alen + len > w->acap) {
        size_t acap = QM_MAX(w->alen + len, w->acap * 2 + 65536);
        acap = QM_MIN(acap, (size_t)QM_WARM_MAX_BYTES);
        u8 *a = realloc(w->arena, acap);
        if (!a)
            return;
        w->arena = a;
        w->acap = acap;
    }
    memcpy(w->arena + w->alen, bytes, len);
    w->keys[j] = pos + 1;
    w->offs[j] = ((u64)w->alen << 24) | len;
    w->alen += len;
    __atomic_store_n(&w->n, w->n + 1, __ATOMIC_RELAXED);
}

const u8 *
qm_warm_peek(const qm_warm *w, u64 pos, u32 *len)
{
    if (w->n == 0)
        return NULL;
    size_t j = warm_slot(pos, w->cap);
    while (w->keys[j]) {
        if (w->keys[j] == pos + 1) {
            *len = (u32)(w->offs[j] & 0xFFFFFF);
            return w->arena + (w->offs[j] >> 24);
        }
        j = (j + 1) & (w->cap - 1);
    }
    return NULL;
}

const u8 *
qm_warm_get(qm_warm *w, u64 pos, u32 *len)
{
    const u8 *p = qm_warm_peek(w, pos, len);
    if (p)
        w->hits++;
    return p;
}
