/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpt_cache.h -- the clean-node cache of the MPT baseline (mpt.c): committed trie nodes by
 * their nibble path -> encoding, an LRU list bounded in bytes over a chained hash table.
 * The key is the fixed-size path key of mpt.c (MPT_CKEY bytes: nibble count, then the
 * packed nibbles zero-padded). The cache is written through at commit (new nodes replace
 * the entry at their path, nodes whose path disappeared are removed), so an entry always
 * holds the committed node at that path.
 * Thread: whoever owns the mpt handle (no locking).
 * Owns: the mpt_cache type and its API.
 */
#ifndef BENCH_MPT_CACHE_H
#define BENCH_MPT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define MPT_CKEY 33

typedef struct cent {
    struct cent *hnext, *prev, *next;
    uint32_t len;
    uint8_t k[MPT_CKEY];
    uint8_t d[];
} cent;

typedef struct ncache {
    cent **b;
    size_t nb, n, bytes, cap;
    cent *head, *tail; /* head = most recently used */
} ncache;

/* Sets up an empty cache with a budget of cap bytes; c->b is NULL on out of memory. */
void mpt_cache_init(ncache *c, size_t cap);
/* Returns the entry for key k (now the most recently used) or NULL. */
cent *mpt_cache_find(ncache *c, const uint8_t k[MPT_CKEY]);
/* Inserts or replaces k -> d and returns the entry (the most recently used); evicts least
 * recently used entries beyond the budget but never this one. NULL on out of memory (the
 * old entry for k, if any, is then gone). */
cent *mpt_cache_put(ncache *c, const uint8_t k[MPT_CKEY], const void *d, size_t len);
/* Removes the entry for k if present. */
void mpt_cache_del(ncache *c, const uint8_t k[MPT_CKEY]);
void mpt_cache_free(ncache *c);
/* A well-mixed 64-bit hash of a path key (also used by mpt.c's per-block tables). */
uint64_t mpt_ckey_hash(const uint8_t k[MPT_CKEY]);

#endif /* BENCH_MPT_CACHE_H */
