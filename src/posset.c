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

/* What a slot of a set of this width holds for pos; 0 when a narrow slot cannot hold it. */
static inline u64
slot_key(bool wide, u64 pos)
{
    return wide ? pos + 1 : fits32(pos) ? (pos >> 3) + 1 : 0;
}

static inline u64
slot_pos(bool wide, u64 key)
{
    return wide ? key - 1 : (key - 1) << 3;
}

static inline u64
slot_get(const void *slot, bool wide, u64 i)
{
    return wide ? ((const u64 *)slot)[i] : ((const u32 *)slot)[i];
}

static inline void
slot_put(void *slot, bool wide, u64 i, u64 key)
{
    if (wide)
        ((u64 *)slot)[i] = key;
    else
        ((u32 *)slot)[i] = (u32)key;
}

/* The slot of key (for position pos) in slot[cap]: the one holding it, else the empty slot
 * that ends its probe (cap is a power of two, never full). */
static inline u64
slot_find(const void *slot, bool wide, u64 cap, u64 pos, u64 key)
{
    u64 m = cap - 1, i = qm_posset_home(pos, cap);
    for (u64 v; (v = slot_get(slot, wide, i)) != 0 && v != key; i = (i + 1) & m)
        ;
    return i;
}

bool
qm_posset_has(const qm_posset *s, u64 pos)
{
    u64 key = slot_key(s->wide, pos);
    return s->n != 0 && key != 0 &&
           slot_get(s->slot, s->wide, slot_find(s->slot, s->wide, s->cap, pos, key)) != 0;
}

/* Moves every key into a new array of ncap slots of the given width (each slot keeps its home:
 * it depends only on the position). */
static int
rehash(qm_posset *s, u64 ncap, bool wide)
{
    void *ns = calloc(ncap, wide ? sizeof(u64) : sizeof(u32));
    if (!ns)
        return -ENOMEM;
    for (u64 i = 0; i < s->cap; i++) {
        u64 key = slot_get(s->slot, s->wide, i);
        if (!key)
            continue;
        u64 pos = slot_pos(s->wide, key), nkey = slot_key(wide, pos);
        slot_put(ns, wide, slot_find(ns, wide, ncap, pos, nkey), nkey);
    }
    free(s->slot);
    s->slot = ns;
    s->cap = ncap;
    s->wide = wide;
    return 0;
}

int
qm_posset_add(qm_posset *s, u64 pos)
{
    bool wide = s->wide || !fits32(pos);
    if ((s->n + 1) * 4 > s->cap * 3)
        QM_RET(rehash(s, s->cap ? s->cap * 2 : 1024, wide));
    else if (wide != s->wide)
        QM_RET(rehash(s, s->cap, wide));
    u64 key = slot_key(s->wide, pos), i = slot_find(s->slot, s->wide, s->cap, pos, key);
    if (slot_get(s->slot, s->wide, i))
        return 0;
    slot_put(s->slot, s->wide, i, key);
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
        for (u64 i = 0; i < sets[k]->cap; i++) {
            u64 key = slot_get(sets[k]->slot, sets[k]->wide, i);
            if (key) {
                u64 b = qm_posset_hash(slot_pos(sets[k]->wide, key)) >> f->shift;
                f->bits[b / 64] |= 1ull << (b % 64);
            }
        }
}

void
qm_posfilt_free(qm_posfilt *f)
{
    free(f->bits);
    f->bits = NULL;
}
