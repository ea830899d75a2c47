/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpt_cache.c -- the clean-node LRU cache of the MPT baseline (see mpt_cache.h). Entries
 * are charged their size plus header and bucket overhead against the byte budget.
 * Thread: whoever owns the mpt handle (no locking).
 * Owns: the cache's hash table, LRU list and byte accounting.
 */
#include "mpt_cache.h"

#include <stdlib.h>
#include <string.h>

void
mpt_cache_init(ncache *c, size_t cap)
{
    memset(c, 0, sizeof(*c));
    c->nb = 1024;
    c->cap = cap;
    c->b = calloc(c->nb, sizeof(cent *));
}

static size_t
cent_charge(uint32_t len)
{
    return sizeof(cent) + len + 2 * sizeof(cent *);
}

/* Path keys are not uniformly random (short paths are mostly zero padding), so every byte
 * is mixed in. */
uint64_t
mpt_ckey_hash(const uint8_t k[MPT_CKEY])
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ k[0];
    for (int i = 0; i < 4; i++) {
        uint64_t w;
        memcpy(&w, k + 1 + 8 * i, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 29);
}

static size_t
bucket_of(size_t nb, const uint8_t k[MPT_CKEY])
{
    return (size_t)(mpt_ckey_hash(k) & (nb - 1));
}

static void
lru_unlink(ncache *c, cent *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void
lru_front(ncache *c, cent *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

cent *
mpt_cache_find(ncache *c, const uint8_t k[MPT_CKEY])
{
    for (cent *e = c->b[bucket_of(c->nb, k)]; e; e = e->hnext)
        if (memcmp(e->k, k, MPT_CKEY) == 0) {
            if (c->head != e) {
                lru_unlink(c, e);
                lru_front(c, e);
            }
            return e;
        }
    return NULL;
}

static void
cache_remove(ncache *c, cent *e)
{
    cent **pp = &c->b[bucket_of(c->nb, e->k)];
    while (*pp != e)
        pp = &(*pp)->hnext;
    *pp = e->hnext;
    lru_unlink(c, e);
    c->n--;
    c->bytes -= cent_charge(e->len);
    free(e);
}

void
mpt_cache_del(ncache *c, const uint8_t k[MPT_CKEY])
{
    for (cent *e = c->b[bucket_of(c->nb, k)]; e; e = e->hnext)
        if (memcmp(e->k, k, MPT_CKEY) == 0) {
            cache_remove(c, e);
            return;
        }
}

static int
cache_grow(ncache *c)
{
    size_t nb = c->nb * 2;
    cent **b = calloc(nb, sizeof(*b));
    if (!b)
        return -1;
    for (size_t i = 0; i < c->nb; i++)
        for (cent *e = c->b[i], *nx; e; e = nx) {
            nx = e->hnext;
            size_t k = bucket_of(nb, e->k);
            e->hnext = b[k];
            b[k] = e;
        }
    free(c->b);
    c->b = b;
    c->nb = nb;
    return 0;
}

cent *
mpt_cache_put(ncache *c, const uint8_t k[MPT_CKEY], const void *d, size_t len)
{
    cent *e = mpt_cache_find(c, k);
    if (e && e->len == len) { /* same size: overwrite in place */
        memcpy(e->d, d, len);
        return e;
    }
    if (e)
        cache_remove(c, e);
    e = malloc(sizeof(cent) + len);
    if (!e)
        return NULL;
    memcpy(e->k, k, MPT_CKEY);
    e->len = (uint32_t)len;
    memcpy(e->d, d, len);
    if (c->n >= c->nb && cache_grow(c) != 0) {
        free(e);
        return NULL;
    }
    size_t b = bucket_of(c->nb, k);
    e->hnext = c->b[b];
    c->b[b] = e;
    lru_front(c, e);
    c->n++;
    c->bytes += cent_charge(e->len);
    while (c->bytes > c->cap && c->tail && c->tail != e)
        cache_remove(c, c->tail);
    return e;
}

void
mpt_cache_free(ncache *c)
{
    for (cent *e = c->head, *nx; e; e = nx) {
        nx = e->next;
        free(e);
    }
    free(c->b);
    memset(c, 0, sizeof(*c));
}
