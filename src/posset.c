/* SPDX-License-Identifier: Apache-2.0 */
/*
 * posset.c -- a set of 64-bit positions (posset.h).
 *
 * Thread: the owner's.
 */
#include "posset.h"

#include <stdlib.h>

/* Positions are usually multiples of 8: their low bits carry nothing. The high bits are
 * folded down so that a tag kept there (prefetch.c keeps the shard) reaches the slot index. */
static inline u64
ps_hash(u64 pos)
{
    u64 x = pos >> 3;
    return (x ^ x >> 31) * 0x9E3779B97F4A7C15ull;
}

bool
qm_posset_has(const qm_posset *s, u64 pos)
{
    if (s->n == 0)
        return false;
    u64 m = s->cap - 1;
    for (u64 i = ps_hash(pos) >> 20 & m;; i = (i + 1) & m) {
        if (s->slot[i] == pos + 1)
            return true;
        if (s->slot[i] == 0)
            return false;
    }
}

int
qm_posset_add(qm_posset *s, u64 pos)
{
    if ((s->n + 1) * 4 > s->cap * 3) {
        u64 ncap = s->cap ? s->cap * 2 : 1024;
        u64 *ns = calloc(ncap, sizeof(u64));
        if (!ns)
            return -ENOMEM;
        for (u64 i = 0; i < s->cap; i++) {
            if (!s->slot[i])
                continue;
            u64 j = ps_hash(s->slot[i] - 1) >> 20 & (ncap - 1);
            while (ns[j])
                j = (j + 1) & (ncap - 1);
            ns[j] = s->slot[i];
        }
        free(s->slot);
        s->slot = ns;
        s->cap = ncap;
    }
    u64 m = s->cap - 1, i = ps_hash(pos) >> 20 & m;
    while (s->slot[i] && s->slot[i] != pos + 1)
        i = (i + 1) & m;
    if (s->slot[i])
        return 0;
    s->slot[i] = pos + 1;
    s->n++;
    return 1;
}

void
qm_posset_free(qm_posset *s)
{
    free(s->slot);
    memset(s, 0, sizeof(*s));
}
