/* SPDX-License-Identifier: Apache-2.0 */
/*
 * posset.c -- a set of 64-bit positions (posset.h).
 *
 * Thread: the owner's.
 */
#include "posset.h"

#include <stdlib.h>

bool
qm_posset_has(const qm_posset *s, u64 pos)
{
    if (s->n == 0)
        return false;
    u64 m = s->cap - 1;
    for (u64 i = qm_posset_hash(pos) >> 20 & m;; i = (i + 1) & m) {
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
            u64 j = qm_posset_hash(s->slot[i] - 1) >> 20 & (ncap - 1);
            while (ns[j])
                j = (j + 1) & (ncap - 1);
            ns[j] = s->slot[i];
        }
        free(s->slot);
        s->slot = ns;
        s->cap = ncap;
    }
    u64 m = s->cap - 1, i = qm_posset_hash(pos) >> 20 & m;
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

void
qm_posfilt_build(qm_posfilt *f, const qm_posset *const *sets, unsigned nsets)
{
    u64 n = 0;
    for (unsigned k = 0; k < nsets; k++)
        n += sets[k]->n;
    f->bits = NULL;
    if (n == 0)
        return;
    unsigned lg = 12; /* 4,096 bits at least */
    while (lg < 40 && (1ull << lg) < 16 * n)
        lg++;
    f->shift = 64 - lg;
    f->bits = calloc((1ull << lg) / 64, sizeof(u64));
    if (!f->bits)
        return; /* every answer maybe: slower, not wrong */
    for (unsigned k = 0; k < nsets; k++)
        for (u64 i = 0; i < sets[k]->cap; i++)
            if (sets[k]->slot[i]) {
                u64 b = qm_posset_hash(sets[k]->slot[i] - 1) >> f->shift;
                f->bits[b / 64] |= 1ull << (b % 64);
            }
}

void
qm_posfilt_free(qm_posfilt *f)
{
    free(f->bits);
    f->bits = NULL;
}
