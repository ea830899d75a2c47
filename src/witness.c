/* SPDX-License-Identifier: Apache-2.0 */
/*
 * witness.c -- block witness construction (qm_witness_build, behind qmdb_witness): for block
 * H, the state of height H - 1 that a verifier without a database needs to re-execute the
 * block (format: proof_fmt.h, docs/PROOFS.md §10; verifier: witness_verify.c).
 *
 * Everything comes from the latest state plus the history cache (proof.c) and the STATES
 * records of H - 1 and H: a shard's entries before the block are the SNs below next_sn(H-1);
 * an SN was active at H - 1 when it lies below next_sn(H-1) and was deactivated by no SN
 * below it (the deactivator's SN is in the cache). Full twigs' left roots and the pruned
 * part's edge nodes have not changed since; the youngest twig of H - 1 is rebuilt from its
 * leaves (positions past next_sn(H-1) & 2047 are null then). The entries the block reads are
 * the DSNs below next_sn(H-1) of the entries it appended, and, when the block's operations
 * are given, each operation key's live entry or covering predecessor at H - 1.
 *
 * Thread: the handle's writer (one at a time), through qmdb_witness (db_read.c).
 */
#include "entry.h"
#include "hash.h"
#include "prover.h"
#include "states.h"
#include "twig.h"
#include "twigfile.h"

#include <inttypes.h>
#include <stdlib.h>

#define WB_NONE UINT64_MAX

typedef struct wb {
    u8 *out;
    size_t len, cap;
} wb;

static int
wb_put(wb *b, const void *p, size_t n)
{
    if (b->cap - b->len < n) {
        size_t cap = QM_MAX(b->cap * 2, b->len + n + 65536);
        u8 *x = realloc(b->out, cap);
        if (!x)
            return -ENOMEM;
        b->out = x;
        b->cap = cap;
    }
    memcpy(b->out + b->len, p, n);
    b->len += n;
    return 0;
}

static bool
live_at(const qm_hist_view *v, u64 sn, u64 ns0)
{
    if (sn < v->base || sn >= ns0)
        return false;
    u64 d = qm_hist_deact(v, sn);
    return d == WB_NONE || d >= ns0;
}

static unsigned
upper_levels(u64 next_sn)
{
    u64 y = next_sn >> QM_TWIG_SHIFT;
    unsigned U = 1;
    while (y >> U)
        U++;
    return U;
}

/* The log position of sn; QMDB_CORRUPT when the cache's file turned out damaged. */
static int
hist_pos(qm_shard *s, const qm_hist_view *v, u64 sn, u64 *pos)
{
    *pos = qm_hist_pos(v, sn);
    if (qm_hist_bad(v))
        return qm_hist_damaged(s->err, s->id);
    return 0;
}

static int
sn_cmp(const void *a, const void *b)
{
    u64 x = *(const u64 *)a, y = *(const u64 *)b;
    return x < y ? -1 : x > y;
}

/* The entry live at H - 1 for key (hash kh): K's own, or the covering predecessor. */
static int
find_at(qm_shard *s, const qm_hist_view *v, u64 ns0, const u8 kh[32], const u8 *key, size_t klen,
        qm_ebuf *eb, u64 *out)
{
    qm_hist_iter it;
    qm_hist_key k;
    qm_hist_seek(v, qm_hist_kh8(kh), &it);
    u64 best = WB_NONE, g = 0; /* walk keys with kh8 <= the key's downward, group by group */
    u8 bkh[32];
    qm_entry e;
    while (qm_hist_prev(v, &it, &k)) {
        if (best != WB_NONE && k.kh8 != g)
            break;
        g = k.kh8;
        u64 sn = k.sn;
        if (!live_at(v, sn, ns0))
            continue;
        u64 pos = qm_hist_pos(v, sn);
        if (qm_hist_bad(v))
            break;
        QM_RET(qm_shard_read_entry(s, pos, eb, &e));
        if (e.sn != sn)
            return QM_CORRUPT(s->err, "shard %u: entry at %" PRIu64 " is not SN %" PRIu64, s->id,
                              pos, sn);
        if (e.vlen > 0 && e.klen == klen && memcmp(e.key, key, klen) == 0) {
            *out = sn;
            return 0;
        }
        u8 pkh[32];
        qm_entry_key_hash(e.key, e.klen, e.vlen, pkh);
        if (memcmp(pkh, kh, 32) < 0 && (best == WB_NONE || memcmp(pkh, bkh, 32) > 0)) {
            memcpy(bkh, pkh, 32);
            best = sn;
        }
    }
    if (qm_hist_bad(v))
        return qm_hist_damaged(s->err, s->id);
    if (best == WB_NONE)
        return qm_err_set(s->err, QMDB_PRUNED, "shard %u: no unpruned predecessor of a key", s->id);
    *out = best;
    return 0;
}

/* The H - 1 ActiveBits of twig id into bits. */
static void
bits_at(const qm_hist_view *v, u64 id, u64 ns0, u8 bits[256])
{
    memset(bits, 0, 256);
    for (unsigned p = 0; p < QM_TWIG_LEAVES; p++)
        if (live_at(v, (id << QM_TWIG_SHIFT) + p, ns0))
            bits[p >> 3] |= (u8)(1u << (p & 7));
}

/* The youngest twig of H - 1 (id y0, c0 leaves) as a 4096-node heap. */
static int
young_heap(qm_shard *s, u64 y0, unsigned c0, u8 (*heap)[32])
{
    qm_tree *t = &s->tree;
    if (y0 == t->ntwigs - 1) {
        memcpy(heap + QM_TWIG_LEAVES, t->ltree + QM_TWIG_LEAVES, 32 * (size_t)QM_TWIG_LEAVES);
    } else {
        QM_RET(qm_hpfile_read(&s->twigs, y0 * QM_TWIG_REC + (u64)(QM_TWIG_LEAVES - 1) * 32,
                              heap + QM_TWIG_LEAVES, 32 * (size_t)QM_TWIG_LEAVES));
    }
    for (unsigned p = c0; p < QM_TWIG_LEAVES; p++)
        memcpy(heap[QM_TWIG_LEAVES + p], qm_null_entry_hash(), 32);
    for (unsigned j = QM_TWIG_LEAVES - 1; j >= 1; j--) {
        unsigned l = 0; /* level of node j's children */
        for (unsigned x = j; x < QM_TWIG_LEAVES / 2; x <<= 1)
            l++;
        qm_h2((u8)l, heap[2 * j], heap[2 * j + 1], heap[j]);
    }
    return 0;
}

/* Shard k's root as of H - 1 (next_sn ns0), from the same data the section carries. */
static int
root_at(const qm_proof_ctx *ctx, unsigned k, u64 ns0, u8 out[32])
{
    qm_shard *s = &ctx->shards[k];
    qm_tree *t = &s->tree;
    u64 F = t->first_twig, y0 = ns0 >> QM_TWIG_SHIFT;
    if (F > y0)
        return qm_err_set(ctx->err, QMDB_PRUNED, "shard %u: twigs of height H - 1 are pruned", k);
    qm_hist_view v;
    QM_RET(qm_proof_hist(ctx, k, &v));
    u64 n = y0 - F + 1;
    u8(*lvl)[32] = malloc(n * 32);
    u8(*heap)[32] = malloc(2 * QM_TWIG_LEAVES * 32);
    int rc = 0;
    if (!lvl || !heap) {
        rc = -ENOMEM;
        goto out;
    }
    QM_TRY(young_heap(s, y0, (unsigned)(ns0 & QM_TWIG_MASK), heap));
    for (u64 i = 0; i < n; i++) {
        u8 bits[256], l1[4][32], l2[2][32], l3[32];
        bits_at(&v, F + i, ns0, bits);
        for (unsigned j = 0; j < 4; j++)
            qm_h2(8, bits + 64 * j, bits + 64 * j + 32, l1[j]);
        qm_h2(9, l1[0], l1[1], l2[0]);
        qm_h2(9, l1[2], l1[3], l2[1]);
        qm_h2(10, l2[0], l2[1], l3);
        qm_h2(11, F + i == y0 ? heap[1] : qm_tree_twig(t, F + i)->left_root, l3, lvl[i]);
    }
    u64 a = F, b = y0;
    unsigned U = upper_levels(ns0);
    for (unsigned i = 0; i < U; i++) {
        u64 pa = a >> 1, pb = b >> 1;
        for (u64 p = pa; p <= pb; p++) {
            u8 tmp[32];
            const u8 *l = 2 * p < a ? qm_tree_node(t, 12 + i, 2 * p) : lvl[2 * p - a];
            const u8 *r = 2 * p + 1 <= b ? lvl[2 * p + 1 - a] : qm_null_node(12 + i);
            qm_h2((u8)(12 + i), l, r, tmp);
            memcpy(lvl[p - pa], tmp, 32);
        }
        a = pa;
        b = pb;
    }
    if (qm_hist_bad(&v))
        rc = qm_hist_damaged(ctx->err, k);
    memcpy(out, lvl[0], 32);
out:
    free(lvl);
    free(heap);
    return rc;
}

static int
shard_section(const qm_proof_ctx *ctx, unsigned k, const qm_states_shard *pre,
              const qm_states_shard *post, const qmdb_block_op *ops, size_t nops, wb *b)
{
    qm_shard *s = &ctx->shards[k];
    qm_tree *t = &s->tree;
    u64 ns0 = pre->next_sn, ns1 = post->next_sn, F = t->first_twig, y0 = ns0 >> QM_TWIG_SHIFT;
    if (F > y0)
        return qm_err_set(ctx->err, QMDB_PRUNED, "shard %u: twigs of the block are pruned", k);
    qm_hist_view v;
    QM_RET(qm_proof_hist(ctx, k, &v));
    if (v.base > (F << QM_TWIG_SHIFT) || v.upto < ns1)
        return QM_CORRUPT(ctx->err, "shard %u: history cache does not cover the block", k);
    /* The SNs the block reads. */
    u64 cap = 64, n = 0;
    u64 *need = malloc(cap * sizeof(u64));
    u8(*heap)[32] = malloc(2 * QM_TWIG_LEAVES * 32);
    qm_ebuf eb = {0};
    int rc = 0;
    if (!need || !heap) {
        rc = -ENOMEM;
        goto out;
    }
    for (u64 sn = ns0; sn < ns1 && !rc; sn++) {
        qm_entry e;
        u64 pos;
        QM_TRY(hist_pos(s, &v, sn, &pos));
        QM_TRY(qm_shard_read_entry(s, pos, &eb, &e));
        for (u32 i = 0; i < e.ndsn; i++) {
            u64 d = qm_entry_dsn_at(&e, i);
            if (d >= ns0)
                continue;
            if (n == cap) {
                u64 *x = realloc(need, 2 * cap * sizeof(u64));
                if (!x) {
                    rc = -ENOMEM;
                    goto out;
                }
                need = x;
                cap *= 2;
            }
            need[n++] = d;
        }
    }
    for (size_t i = 0; i < nops; i++) {
        u8 kh[32];
        qm_sha256(ops[i].key, ops[i].klen, kh);
        if (qm_shard_of(kh) != k)
            continue;
        u64 sn = 0;
        QM_TRY(find_at(s, &v, ns0, kh, ops[i].key, ops[i].klen, &eb, &sn));
        if (n == cap) {
            u64 *x = realloc(need, 2 * cap * sizeof(u64));
            if (!x) {
                rc = -ENOMEM;
                goto out;
            }
            need = x;
            cap *= 2;
        }
        need[n++] = sn;
    }
    qsort(need, n, sizeof(u64), sn_cmp);
    u64 m = 0;
    for (u64 i = 0; i < n; i++)
        if (m == 0 || need[m - 1] != need[i])
            need[m++] = need[i];
    for (u64 i = 0; i < m; i++)
        if (need[i] < (F << QM_TWIG_SHIFT))
            QM_TRY(
                qm_err_set(ctx->err, QMDB_PRUNED, "shard %u: an entry of the block is pruned", k));
    /* Header, edges, twigs. */
    u8 x[32 + 256];
    qm_put_u64le(x, ns0);
    qm_put_u64le(x + 8, pre->sn_start);
    qm_put_u64le(x + 16, F);
    QM_TRY(wb_put(b, x, 24));
    unsigned U = upper_levels(ns0);
    for (unsigned i = 0; i < U; i++)
        if ((F >> i) & 1)
            QM_TRY(wb_put(b, qm_tree_node(t, 12 + i, (F >> i) - 1), 32));
    for (u64 id = F; id < y0; id++) {
        memcpy(x, qm_tree_twig(t, id)->left_root, 32);
        bits_at(&v, id, ns0, x + 32);
        QM_TRY(wb_put(b, x, 288));
    }
    unsigned c0 = (unsigned)(ns0 & QM_TWIG_MASK);
    QM_TRY(young_heap(s, y0, c0, heap));
    for (int l = 10; l >= 0; l--)
        if ((c0 >> l) & 1)
            QM_TRY(wb_put(b, heap[(QM_TWIG_LEAVES >> l) + (c0 >> l) - 1], 32));
    bits_at(&v, y0, ns0, x);
    QM_TRY(wb_put(b, x, 256));
    /* The entry before next_sn (binds next_sn), then the entries the block reads, each with
     * its left-tree path as of H - 1. */
    for (u64 i = 0; i <= m; i++) {
        if (i == 1) {
            qm_put_u32le(x, (u32)m);
            QM_TRY(wb_put(b, x, 4));
        }
        u64 sn = i == 0 ? ns0 - 1 : need[i - 1], tid = sn >> QM_TWIG_SHIFT;
        qm_entry e;
        u64 pos;
        QM_TRY(hist_pos(s, &v, sn, &pos));
        QM_TRY(qm_shard_read_entry(s, pos, &eb, &e));
        if (e.sn != sn)
            QM_TRY(QM_CORRUPT(ctx->err, "shard %u: entry is not SN %" PRIu64, k, sn));
        qm_put_u32le(x, e.payload_len);
        QM_TRY(wb_put(b, x, 4));
        QM_TRY(wb_put(b, eb.p, e.payload_len));
        unsigned j = QM_TWIG_LEAVES + (unsigned)(sn & QM_TWIG_MASK);
        for (unsigned l = 0; l < 11; l++, j >>= 1) {
            if (tid == y0)
                memcpy(x, heap[j ^ 1], 32);
            else
                QM_TRY(
                    qm_hpfile_read(&s->twigs, tid * QM_TWIG_REC + (u64)((j ^ 1) - 1) * 32, x, 32));
            QM_TRY(wb_put(b, x, 32));
        }
    }
    if (m == 0) {
        qm_put_u32le(x, 0);
        QM_TRY(wb_put(b, x, 4));
    }
    if (qm_hist_bad(&v))
        rc = qm_hist_damaged(s->err, k);
out:
    free(need);
    free(heap);
    qm_ebuf_free(&eb);
    return rc;
}

static int
witness_build(const qm_proof_ctx *ctx, u64 height, const qm_states_rec *pre,
              const qm_states_rec *post, const qm_params *par, u64 prune_max, const u8 pre_root[32],
              const qmdb_block_op *ops, size_t nops, u8 **out, size_t *outlen)
{
    if (prune_max > height - 1)
        return qm_err_set(ctx->err, QMDB_PRUNED,
                          "twigs live at height %" PRIu64 " are pruned (pruned up to %" PRIu64 ")",
                          height - 1, prune_max);
    unsigned mask = 0;
    for (unsigned k = 0; k < QM_SHARD_COUNT; k++)
        if (post->sh[k].next_sn > pre->sh[k].next_sn)
            mask |= 1u << k;
    for (size_t i = 0; i < nops; i++) {
        u8 kh[32];
        qm_sha256(ops[i].key, ops[i].klen, kh);
        mask |= 1u << qm_shard_of(kh);
    }
    wb b = {0};
    u8 h[QM_WITNESS_HDR];
    memcpy(h, QM_WITNESS_MAGIC, 4);
    h[4] = QM_WITNESS_VERSION;
    qm_put_u64le(h + 5, height);
    qm_put_u64le(h + 13, par->compact_thres);
    qm_put_u32le(h + 21, par->util_ratio);
    qm_put_u32le(h + 25, par->util_div);
    int rc = 0;
    u8 r[16][32];
    for (unsigned k = 0; k < QM_SHARD_COUNT; k++)
        QM_TRY(root_at(ctx, k, pre->sh[k].next_sn, r[k]));
    qm_gtree g;
    qm_global_tree((const u8(*)[32])r, &g);
    if (memcmp(g.root, pre_root, 32) != 0)
        QM_TRY(QM_CORRUPT(ctx->err,
                          "the state of height %" PRIu64 " rebuilt for the witness does "
                          "not hash to its recorded root",
                          height - 1));
    memcpy(h + 29, r, 512);
    memset(h + QM_WITNESS_DIGEST, 0, 32);
    if (ops)
        QM_TRY(qm_block_digest(ops, nops, h + QM_WITNESS_DIGEST));
    h[QM_WITNESS_MASK] = (u8)mask;
    h[QM_WITNESS_MASK + 1] = (u8)(mask >> 8);
    QM_TRY(wb_put(&b, h, sizeof(h)));
    for (unsigned k = 0; k < QM_SHARD_COUNT; k++)
        if ((mask >> k) & 1)
            QM_TRY(shard_section(ctx, k, &pre->sh[k], &post->sh[k], ops, nops, &b));
    *out = b.out;
    *outlen = b.len;
    return 0;
out:
    free(b.out);
    return rc;
}

int
qm_witness_build(const qm_proof_ctx *ctx, u64 height, const qm_states_rec *pre,
                 const qm_states_rec *post, const qm_params *par, u64 prune_max,
                 const u8 pre_root[32], const qmdb_block_op *ops, size_t nops, u8 **out,
                 size_t *outlen)
{
    int rc =
        witness_build(ctx, height, pre, post, par, prune_max, pre_root, ops, nops, out, outlen);
    bool again = false;
    for (unsigned k = 0; rc == QMDB_CORRUPT && k < QM_SHARD_COUNT; k++)
        again |= qm_hist_distrust(ctx, k, rc);
    if (again) /* a history cache file was damaged: once more, from the log */
        rc =
            witness_build(ctx, height, pre, post, par, prune_max, pre_root, ops, nops, out, outlen);
    return rc;
}
