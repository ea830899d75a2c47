/* SPDX-License-Identifier: Apache-2.0 */
/*
 * posset.c -- a set of 64-bit positions (posset.h).
 *
 * Thread: the owner's.
 */
#include "posset.h"

#include <stdlib.h>

/* A position a 4-byte slot can hold: a multiple of 8 below 32 GiB (slot value < 2^32 - 1). */
static inline bool
fits32(u64 pos)
{
    return (pos & 7) == 0 && (pos >> 3) < UINT32_MAX;
}

static inline u64
home(u64 pos, u64 cap)
{
    return qm_posset_hash(pos) >> 20 & (cap - 1);
}

bool
qm_posset_has(const qm_posset *s, u64 pos)
{
    if (s->n == 0)
        return false;
    u64 m = s->cap - 1;
    if (!s->wide) {
        if (!fits32(pos))
            return false;
        const u32 *sl = s->slot;
        u32 v = (u32)(pos >> 3) + 1;
        for (u64 i = home(pos, s->cap);; i = (i + 1) & m) {
            if (sl[i] == v)
                return true;
            if (sl[i] == 0)
                return false;
        }
    }
    const u64 *sl = s->slot;
    for (u64 i = home(pos, s->cap);; i = (i + 1) & m) {
        if (sl[i] == pos + 1)
            return true;
        if (sl[i] == 0)
            return false;
    }
}

/* The position slot i holds (slot i not empty). */
static inline u64
slot_pos(const qm_posset *s, u64 i)
{
    return s->wide ? ((const u64 *)s->slot)[i] - 1 : (u64)(((const u32 *)s->slot)[i] - 1) << 3;
}

static inline bool
slot_used(const qm_posset *s, u64 i)
{
    return s->wide ? ((const u64 *)s->slot)[i] != 0 : ((const u32 *)s->slot)[i] != 0;
}

/* 4-byte slots to 8-byte ones, each at its index (its home and probe path do not change). */
static int
widen(qm_posset *s)
{
    if (s->cap) {
        u64 *ns = calloc(s->cap, sizeof(u64));
        if (!ns)
            return -ENOMEM;
        for (u64 i = 0; i < s->cap; i++)
            if (slot_used(s, i))
                ns[i] = slot_pos(s, i) + 1;
        free(s->slot);
        s->slot = ns;
    }
    s->wide = true;
    return 0;
}

int
qm_posset_add(qm_posset *s, u64 pos)
{
    if (!s->wide && !fits32(pos))
        QM_RET(widen(s));
    size_t w = s->wide ? sizeof(u64) : sizeof(u32);
    if ((s->n + 1) * 4 > s->cap * 3) {
        u64 ncap = s->cap ? s->cap * 2 : 1024;
        void *ns = calloc(ncap, w);
        if (!ns)
            return -ENOMEM;
        for (u64 i = 0; i < s->cap; i++) {
            if (!slot_used(s, i))
                continue;
            u64 j = home(slot_pos(s, i), ncap);
            if (s->wide) {
                u64 *d = ns;
                while (d[j])
                    j = (j + 1) & (ncap - 1);
                d[j] = ((const u64 *)s->slot)[i];
            } else {
                u32 *d = ns;
                while (d[j])
                    j = (j + 1) & (ncap - 1);
                d[j] = ((const u32 *)s->slot)[i];
            }
        }
        free(s->slot);
        s->slot = ns;
        s->cap = ncap;
    }
    u64 m = s->cap - 1, i = home(pos, s->cap);
    if (s->wide) {
        u64 *sl = s->slot;
        while (sl[i] && sl[i] != pos + 1)
            i = (i + 1) & m;
        if (sl[i])
            return 0;
        sl[i] = pos + 1;
    } else {
        u32 *sl = s->slot, v = (u32)(pos >> 3) + 1;
        while (sl[i] && sl[i] != v)
            i = (i + 1) & m;
        if (sl[i])
            return 0;
        sl[i] = v;
    }
    s->n++;
    return 1;
}

void
qm_posset_free(qm_posset *s)
{
    free(s->slot);
    memset(s, 0, sizeof(*s));
}

u64
qm_posset_bytes(const qm_posset *s)
{
    return s->cap * (s->wide ? sizeof(u64) : sizeof(u32));
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
            if (slot_used(sets[k], i)) {
                u64 b = qm_posset_hash(slot_pos(sets[k], i)) >> f->shift;
                f->bits[b / 64] |= 1ull << (b % 64);
            }
}

void
qm_posfilt_free(qm_posfilt *f)
{
    free(f->bits);
    f->bits = NULL;
}
