/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mproof.c -- multi-key proof construction (qm_prove_many, behind qmdb_prove_many): one proof
 * for a list of keys at one height, in the format of proof_fmt.h / docs/PROOFS.md §9. Which
 * entries answer each key comes from proof.c (qm_prove_find: the live entry, the covering
 * predecessor, or at an earlier height the entry live then and the one that deactivated it).
 * The entries are sorted and deduplicated, and the node stream is written by the same
 * depth-first walk of the global tree that the verifier (mproof_verify.c) performs, emitting
 * each subtree that holds no entry of the proof as its hash:
 *  - global nodes from the 16 shard roots; upper-tree nodes from qm_tree_node;
 *  - left-tree nodes of full twigs from the twig file, of the youngest twig from tree.ltree;
 *  - ActiveBits pages and their L1/L2/L3 hashes from the twig's ActiveBits in DRAM.
 *
 * Thread: the handle's writer (one at a time), through qmdb_prove_many (db_read.c).
 */
#include "hash.h"
#include "prover.h"
#include "twigfile.h"

#include <inttypes.h>
#include <stdlib.h>

typedef struct mp_ent {
    unsigned shard;
    u64 sn;
    u8 *payload;
    u32 len;
    bool need_page; /* a main entry shown active: its page goes into the stream */
} mp_ent;

typedef struct mp_key {
    u8 flags; /* QM_MPROOF_ABSENT | QM_MPROOF_DEACT */
    unsigned shard;
    u64 esn, dsn; /* main entry, deactivating entry */
    u32 ei, di;   /* their indices after sorting */
} mp_key;

typedef struct mp {
    const qm_proof_ctx *ctx;
    mp_ent *e;
    size_t ne, cur;
    u8 g[5][16][32]; /* global tree: level 0 = shard roots .. level 4 = state root */
    u8 *out;
    size_t len, cap;
} mp;

static int
mp_put(mp *m, const void *p, size_t n)
{
    if (m->cap - m->len < n) {
        size_t cap = QM_MAX(m->cap * 2, m->len + n + 4096);
        u8 *b = realloc(m->out, cap);
        if (!b)
            return -ENOMEM;
        m->out = b;
        m->cap = cap;
    }
    memcpy(m->out + m->len, p, n);
    m->len += n;
    return 0;
}

static bool
mp_in_twig(const mp *m, unsigned shard, u64 twig)
{
    return m->cur < m->ne && m->e[m->cur].shard == shard &&
           (m->e[m->cur].sn >> QM_TWIG_SHIFT) == twig;
}

static int
mp_left(mp *m, qm_shard *s, u64 twig, unsigned l, unsigned n)
{
    if (!mp_in_twig(m, s->id, twig) || ((m->e[m->cur].sn & QM_TWIG_MASK) >> l) != n) {
        unsigned j = (QM_TWIG_LEAVES >> l) + n; /* heap index */
        qm_tree *t = &s->tree;
        if (twig == t->ntwigs - 1)
            return mp_put(m, t->ltree[j], 32);
        u8 node[32];
        QM_RET(qm_hpfile_read(&s->twigs, twig * QM_TWIG_REC + (u64)(j - 1) * 32, node, 32));
        return mp_put(m, node, 32);
    }
    if (l == 0) {
        m->cur++;
        return 0;
    }
    QM_RET(mp_left(m, s, twig, l - 1, 2 * n));
    return mp_left(m, s, twig, l - 1, 2 * n + 1);
}

/* ActiveBits node (l, n): l = 0 pages, 1 L1, 2 L2, 3 L3. */
static int
mp_bits(mp *m, const u8 *bits, unsigned mask, unsigned l, unsigned n)
{
    unsigned span = ((1u << (1u << l)) - 1u) << (n << l);
    if (l == 0)
        return mp_put(m, bits + 32 * n, 32);
    if (!(mask & span)) {
        u8 a[32], b[32], node[32];
        if (l == 1) {
            qm_h2(8, bits + 64 * n, bits + 64 * n + 32, node);
        } else if (l == 2) {
            qm_h2(8, bits + 128 * n, bits + 128 * n + 32, a);
            qm_h2(8, bits + 128 * n + 64, bits + 128 * n + 96, b);
            qm_h2(9, a, b, node);
        } else {
            u8 l1[4][32], l2[2][32];
            for (unsigned i = 0; i < 4; i++)
                qm_h2(8, bits + 64 * i, bits + 64 * i + 32, l1[i]);
            qm_h2(9, l1[0], l1[1], l2[0]);
            qm_h2(9, l1[2], l1[3], l2[1]);
            qm_h2(10, l2[0], l2[1], node);
        }
        return mp_put(m, node, 32);
    }
    QM_RET(mp_bits(m, bits, mask, l - 1, 2 * n));
    return mp_bits(m, bits, mask, l - 1, 2 * n + 1);
}

static int
mp_twig(mp *m, qm_shard *s, u64 twig)
{
    unsigned mask = 0;
    for (size_t i = m->cur;
         i < m->ne && m->e[i].shard == s->id && (m->e[i].sn >> QM_TWIG_SHIFT) == twig; i++)
        if (m->e[i].need_page)
            mask |= 1u << ((m->e[i].sn & QM_TWIG_MASK) >> 8);
    QM_RET(mp_left(m, s, twig, 11, 0));
    return mp_bits(m, qm_tree_twig(&s->tree, twig)->active, mask, 3, 0);
}

static int
mp_upper(mp *m, qm_shard *s, unsigned i, u64 n)
{
    if (m->cur >= m->ne || m->e[m->cur].shard != s->id ||
        ((m->e[m->cur].sn >> QM_TWIG_SHIFT) >> i) != n)
        return mp_put(m, qm_tree_node(&s->tree, 12 + i, n), 32);
    if (i == 0)
        return mp_twig(m, s, n);
    QM_RET(mp_upper(m, s, i - 1, 2 * n));
    return mp_upper(m, s, i - 1, 2 * n + 1);
}

static int
mp_global(mp *m, unsigned l, unsigned n)
{
    if (m->cur >= m->ne || (m->e[m->cur].shard >> l) != n)
        return mp_put(m, m->g[l][n], 32);
    if (l == 0)
        return mp_upper(m, &m->ctx->shards[n], m->ctx->shards[n].tree.max_level - 12, 0);
    QM_RET(mp_global(m, l - 1, 2 * n));
    return mp_global(m, l - 1, 2 * n + 1);
}

static int
ent_cmp(const void *a, const void *b)
{
    const mp_ent *x = a, *y = b;
    if (x->shard != y->shard)
        return x->shard < y->shard ? -1 : 1;
    return x->sn < y->sn ? -1 : x->sn > y->sn;
}

/* Index of (shard, sn) in the sorted, deduplicated entries. */
static u32
mp_find(const mp *m, unsigned shard, u64 sn)
{
    size_t lo = 0, hi = m->ne;
    mp_ent k = {.shard = shard, .sn = sn};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ent_cmp(&m->e[mid], &k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    QM_ASSERT(lo < m->ne && ent_cmp(&m->e[lo], &k) == 0);
    return (u32)lo;
}

static int
mp_add(mp *m, unsigned shard, const qm_entry *e, const u8 *payload)
{
    mp_ent *x = &m->e[m->ne];
    x->payload = malloc(e->payload_len);
    if (!x->payload)
        return -ENOMEM;
    memcpy(x->payload, payload, e->payload_len);
    x->len = e->payload_len;
    x->shard = shard;
    x->sn = e->sn;
    x->need_page = false;
    m->ne++;
    return 0;
}

/* The entries' twigs must be unpruned (their ActiveBits held) for the walk. */
static int
mp_check_twigs(const mp *m)
{
    for (size_t i = 0; i < m->ne; i++) {
        qm_shard *s = &m->ctx->shards[m->e[i].shard];
        u64 tid = m->e[i].sn >> QM_TWIG_SHIFT;
        if (m->e[i].sn >= s->tree.next_sn)
            return QM_CORRUPT(s->err, "shard %u: SN %" PRIu64 " is not appended", s->id,
                              m->e[i].sn);
        if (tid < s->tree.first_twig || !qm_tree_twig(&s->tree, tid)->active)
            return qm_err_set(s->err, QMDB_PRUNED, "shard %u: twig %" PRIu64 " is pruned", s->id,
                              tid);
    }
    return 0;
}

static int
mp_assemble(mp *m, mp_key *k, size_t nkeys, u64 height)
{
    /* Sort and deduplicate the entries; resolve the key records' indices. */
    qsort(m->e, m->ne, sizeof(mp_ent), ent_cmp);
    size_t w = 0;
    for (size_t i = 0; i < m->ne; i++) {
        if (w > 0 && ent_cmp(&m->e[w - 1], &m->e[i]) == 0) {
            free(m->e[i].payload);
            continue;
        }
        m->e[w++] = m->e[i];
    }
    m->ne = w;
    QM_RET(mp_check_twigs(m));
    for (size_t i = 0; i < nkeys; i++) {
        k[i].ei = mp_find(m, k[i].shard, k[i].esn);
        if (k[i].flags & QM_MPROOF_DEACT)
            k[i].di = mp_find(m, k[i].shard, k[i].dsn);
        else
            m->e[k[i].ei].need_page = true;
    }
    u8 hdr[QM_MPROOF_HDR];
    memcpy(hdr, QM_MPROOF_MAGIC, 4);
    hdr[4] = QM_MPROOF_VERSION;
    qm_put_u64le(hdr + 5, height);
    qm_put_u32le(hdr + 13, (u32)nkeys);
    qm_put_u32le(hdr + 17, (u32)m->ne);
    QM_RET(mp_put(m, hdr, sizeof(hdr)));
    for (size_t i = 0; i < nkeys; i++) {
        u8 rec[9];
        rec[0] = k[i].flags;
        qm_put_u32le(rec + 1, k[i].ei);
        qm_put_u32le(rec + 5, k[i].di);
        QM_RET(mp_put(m, rec, (k[i].flags & QM_MPROOF_DEACT) ? 9 : 5));
    }
    for (size_t i = 0; i < m->ne; i++) {
        u8 n[4];
        qm_put_u32le(n, m->e[i].len);
        QM_RET(mp_put(m, n, 4));
        QM_RET(mp_put(m, m->e[i].payload, m->e[i].len));
    }
    for (size_t i = 0; i < m->ne; i++)
        if (i == 0 || m->e[i - 1].shard != m->e[i].shard) {
            u8 U = (u8)(m->ctx->shards[m->e[i].shard].tree.max_level - 12);
            QM_RET(mp_put(m, &U, 1));
        }
    /* Global tree from the shard roots (FORMAT.md §5). */
    for (unsigned i = 0; i < 16; i++)
        memcpy(m->g[0][i], m->ctx->shards[i].tree.root, 32);
    for (unsigned l = 1; l <= 4; l++)
        for (unsigned i = 0; i < (16u >> l); i++)
            qm_h2((u8)(64 + l - 1), m->g[l - 1][2 * i], m->g[l - 1][2 * i + 1], m->g[l][i]);
    m->cur = 0;
    return mp_global(m, 4, 0);
}

int
qm_prove_many(const qm_proof_ctx *ctx, const void *const *keys, const size_t *klens, size_t nkeys,
              u64 height, u8 **out, size_t *outlen)
{
    if (height == UINT64_MAX)
        height = ctx->height;
    if (height > ctx->height)
        return qm_err_set(ctx->err, QMDB_NOTFOUND,
                          "height %" PRIu64 " is above the latest committed height %" PRIu64,
                          height, ctx->height);
    mp m;
    memset(&m, 0, sizeof(m));
    m.ctx = ctx;
    mp_key *k = calloc(nkeys, sizeof(mp_key));
    m.e = calloc(2 * nkeys, sizeof(mp_ent));
    int rc = 0;
    if (!k || !m.e) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < nkeys && !rc; i++) {
        u8 kh[32];
        qm_sha256(keys[i], klens[i], kh);
        qm_proof_pick f;
        memset(&f, 0, sizeof(f));
        rc = qm_prove_find(ctx, kh, keys[i], klens[i], height, &f);
        if (!rc) {
            unsigned shard = qm_shard_of(kh);
            k[i].shard = shard;
            k[i].esn = f.e.sn;
            k[i].flags = (u8)((f.kind == QM_PROOF_ABSENT ? QM_MPROOF_ABSENT : 0) |
                              (f.live == QM_PROOF_DEACTIVATED ? QM_MPROOF_DEACT : 0));
            rc = mp_add(&m, shard, &f.e, f.eb.p);
            if (!rc && f.live == QM_PROOF_DEACTIVATED) {
                k[i].dsn = f.d.sn;
                rc = mp_add(&m, shard, &f.d, f.db.p);
            }
        }
        qm_ebuf_free(&f.eb);
        qm_ebuf_free(&f.db);
    }
    if (!rc)
        rc = mp_assemble(&m, k, nkeys, height);
    if (!rc) {
        *out = m.out;
        *outlen = m.len;
        m.out = NULL;
    }
out:
    for (size_t i = 0; m.e && i < m.ne; i++)
        free(m.e[i].payload);
    free(m.e);
    free(k);
    free(m.out);
    return rc;
}
