/* SPDX-License-Identifier: Apache-2.0 */
/*
 * changeset.c -- the public batch (qmdb_batch_*) and its conversion into per-shard,
 * deduplicated, ordered operation lists (see changeset.h). Thread: the caller's.
 */
#include "changeset.h"

#include "entry.h"
#include "hash.h"

#include <stdlib.h>

int
qmdb_batch_new(qmdb_batch **out)
{
    *out = calloc(1, sizeof(qmdb_batch));
    return *out ? 0 : -ENOMEM;
}

void
qmdb_batch_free(qmdb_batch *b)
{
    if (!b)
        return;
    free(b->arena);
    free(b->ops);
    free(b);
}

void
qmdb_batch_reset(qmdb_batch *b)
{
    b->alen = 0;
    b->nops = 0;
    b->tx = 0;
    b->tx0_named = false;
}

int
qmdb_batch_tx(qmdb_batch *b)
{
    if (b->nops == 0 && b->tx == 0 && !b->tx0_named) {
        b->tx0_named = true;
        return 0;
    }
    if (b->tx + 1 >= QMDB_MAX_TXS_PER_BLOCK)
        return QMDB_TOO_MANY;
    b->tx++;
    return 0;
}

size_t
qmdb_batch_ops(const qmdb_batch *b)
{
    return b->nops;
}

size_t
qmdb_batch_txs(const qmdb_batch *b)
{
    return (size_t)b->tx + 1;
}

static int
batch_add(qmdb_batch *b, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (klen == 0 || klen > QMDB_MAX_KEY_LEN || (key == NULL))
        return QMDB_INVALID;
    if (vlen > QMDB_MAX_VALUE_LEN || (vlen > 0 && val == NULL))
        return QMDB_INVALID;
    size_t need = b->alen + klen + vlen;
    if (need > b->acap) {
        size_t cap = QM_MAX(need, b->acap * 2 + 4096);
        u8 *p = realloc(b->arena, cap);
        if (!p)
            return -ENOMEM;
        b->arena = p;
        b->acap = cap;
    }
    if (b->nops == b->ocap) {
        size_t cap = b->ocap * 2 + 64;
        qm_bop *p = realloc(b->ops, cap * sizeof(qm_bop));
        if (!p)
            return -ENOMEM;
        b->ops = p;
        b->ocap = cap;
    }
    qm_bop *op = &b->ops[b->nops++];
    op->koff = b->alen;
    memcpy(b->arena + b->alen, key, klen);
    b->alen += klen;
    op->voff = b->alen;
    if (vlen)
        memcpy(b->arena + b->alen, val, vlen);
    b->alen += vlen;
    op->klen = (u32)klen;
    op->vlen = (u32)vlen;
    op->tx = b->tx;
    return 0;
}

int
qmdb_batch_put(qmdb_batch *b, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (vlen == 0)
        return QMDB_INVALID; /* empty values are reserved for sentries */
    return batch_add(b, key, klen, val, vlen);
}

int
qmdb_batch_del(qmdb_batch *b, const void *key, size_t klen)
{
    return batch_add(b, key, klen, NULL, 0);
}

void
qm_changeset_init(qm_changeset *cs)
{
    memset(cs, 0, sizeof(*cs));
}

void
qm_changeset_free(qm_changeset *cs)
{
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        free(cs->ops[s]);
    memset(cs, 0, sizeof(*cs));
}

static int
op_cmp(const void *a, const void *b)
{
    const qm_op *x = a, *y = b;
    if (x->tx != y->tx)
        return x->tx < y->tx ? -1 : 1;
    int c = memcmp(x->kh, y->kh, 32);
    if (c)
        return c;
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

int
qm_changeset_build(qm_changeset *cs, const qmdb_batch *b)
{
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        cs->n[s] = 0;
    for (size_t i = 0; i < b->nops; i++) {
        const qm_bop *bo = &b->ops[i];
        qm_op op;
        op.key = b->arena + bo->koff;
        op.klen = bo->klen;
        op.val = b->arena + bo->voff;
        op.vlen = bo->vlen;
        op.tx = bo->tx;
        op.seq = (u32)i;
        qm_sha256(op.key, op.klen, op.kh);
        unsigned s = qm_shard_of(op.kh);
        if (cs->n[s] == cs->cap[s]) {
            size_t cap = cs->cap[s] * 2 + 64;
            qm_op *p = realloc(cs->ops[s], cap * sizeof(qm_op));
            if (!p)
                return -ENOMEM;
            cs->ops[s] = p;
            cs->cap[s] = cap;
        }
        cs->ops[s][cs->n[s]++] = op;
    }
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++) {
        qm_op *ops = cs->ops[s];
        size_t n = cs->n[s];
        if (n > 1)
            qsort(ops, n, sizeof(qm_op), op_cmp);
        /* Last op wins per (tx, key): keep the last of each run of equal (tx, key). */
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            bool same_next = i + 1 < n && ops[i + 1].tx == ops[i].tx &&
                             memcmp(ops[i + 1].kh, ops[i].kh, 32) == 0 &&
                             ops[i + 1].klen == ops[i].klen &&
                             memcmp(ops[i + 1].key, ops[i].key, ops[i].klen) == 0;
            if (!same_next)
                ops[m++] = ops[i];
        }
        cs->n[s] = m;
    }
    return 0;
}
