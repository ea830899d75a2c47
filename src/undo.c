/* SPDX-License-Identifier: Apache-2.0 */
/*
 * undo.c -- a block's pre-images (see undo.h): open addressing on the key hash, a table reused
 * from block to block.
 */
#include "undo.h"

#include <stdlib.h>

static size_t
undo_slot(const u8 kh[32], size_t cap)
{
    u64 h;
    memcpy(&h, kh + 8, 8); /* bytes past the shard and unit prefix: well spread */
    return (size_t)h & (cap - 1);
}

void
qm_undo_free(qm_undo *u)
{
    free(u->kh);
    free(u->pos);
    free(u->used);
    memset(u, 0, sizeof(*u));
}

void
qm_undo_clear(qm_undo *u)
{
    if (u->n)
        memset(u->used, 0, u->cap * sizeof(bool));
    u->n = 0;
}

u64
qm_undo_dram_bytes(const qm_undo *u)
{
    return (u64)u->cap * (32 + sizeof(u64) + sizeof(bool));
}

static int
undo_grow(qm_undo *u)
{
    size_t cap = u->cap ? u->cap * 2 : 256;
    qm_undo nu = {0};
    nu.kh = malloc(cap * 32);
    nu.pos = malloc(cap * sizeof(u64));
    nu.used = calloc(cap, sizeof(bool));
    if (!nu.kh || !nu.pos || !nu.used) {
        free(nu.kh);
        free(nu.pos);
        free(nu.used);
        return -ENOMEM;
    }
    for (size_t i = 0; i < u->cap; i++) {
        if (!u->used[i])
            continue;
        size_t j = undo_slot(u->kh[i], cap);
        while (nu.used[j])
            j = (j + 1) & (cap - 1);
        memcpy(nu.kh[j], u->kh[i], 32);
        nu.pos[j] = u->pos[i];
        nu.used[j] = true;
    }
    free(u->kh);
    free(u->pos);
    free(u->used);
    u->kh = nu.kh;
    u->pos = nu.pos;
    u->used = nu.used;
    u->cap = cap;
    return 0;
}

int
qm_undo_put(qm_undo *u, const u8 kh[32], u64 pos)
{
    if ((u->n + 1) * 2 > u->cap)
        QM_RET(undo_grow(u));
    size_t j = undo_slot(kh, u->cap);
    for (; u->used[j]; j = (j + 1) & (u->cap - 1))
        if (memcmp(u->kh[j], kh, 32) == 0)
            return 0; /* the first write of the block keeps the pre-image */
    memcpy(u->kh[j], kh, 32);
    u->pos[j] = pos;
    u->used[j] = true;
    u->n++;
    return 0;
}

int
qm_undo_get(const qm_undo *u, const u8 kh[32], u64 *pos)
{
    *pos = QM_UNDO_ABSENT;
    if (u->n == 0)
        return -1;
    for (size_t j = undo_slot(kh, u->cap); u->used[j]; j = (j + 1) & (u->cap - 1)) {
        if (memcmp(u->kh[j], kh, 32) != 0)
            continue;
        *pos = u->pos[j];
        return *pos == QM_UNDO_ABSENT ? 0 : 1;
    }
    return -1;
}
