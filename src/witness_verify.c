/* SPDX-License-Identifier: Apache-2.0 */
/*
 * witness_verify.c -- the block witness verifier (qmdb_witness_verify): from a witness, the
 * trusted root of height H - 1 and the operations of block H, the post-state root, computed
 * the way the engine computes it (FORMAT.md §6-§7: updates, creates and deletes with their
 * predecessor entries, compaction steps) -- or a reason. Pure: no I/O and no global state; it
 * allocates scratch memory and frees it before returning. Like proof_verify.c it compiles and
 * links alone with hash.c, hash_portable.c and hash_shani.c. Format: proof_fmt.h and
 * docs/PROOFS.md §10.
 *
 * Per shard that the block touches, the witness carries the whole Merkle summary of the
 * shard (edge nodes of the pruned part, every unpruned twig's left root and ActiveBits, the
 * youngest twig's left frontier) and the entries the block reads, each with its left-tree
 * path. The summary is checked against the pre-state shard root, which fixes next_sn (the
 * youngest twig's frontier), every active bit, the live count (their sum) and the compaction
 * candidate (the first set bit at or after sn_start). The operations then run on a map of
 * the known live entries; an operation whose entry is not known fails the predecessor-gap
 * check, so a witness that omits an entry cannot pass off a wrong root.
 *
 * Thread: any; reentrant.
 */
#include "codec.h"
#include "hash.h"
#include "proof_fmt.h"

#include <stdlib.h>

#define WHY(msg)               \
    do {                       \
        if (w->why)            \
            *w->why = (msg);   \
        return QMDB_BAD_PROOF; \
    } while (0)

/* An entry: one the witness carries, or one the block appends. */
typedef struct wv_ent {
    const u8 *payload;
    u8 *own; /* appended entries own their payload */
    u32 len, klen, vlen, ndsn;
    const u8 *key, *val, *nkh;
    i64 version;
    u64 sn;
    u8 kh[32];
} wv_ent;

typedef struct wv_twig {
    u8 left[32];
    u8 bits[256];
} wv_twig;

typedef struct wv_shard {
    bool on;
    u64 next_sn, sn_start, first, live, ns0;
    u8 edge[QM_PROOF_MAX_U][32];
    bool has_edge[QM_PROOF_MAX_U];
    wv_twig *tw; /* twig first + i */
    u64 ntw, cap;
    u8 fr[11][32]; /* youngest twig: full left subtrees (bit l of next_sn & 2047) */
    wv_ent *old;   /* the witness's entries, ascending SN */
    u32 nold;
    wv_ent **app; /* appended, SN ns0 + i */
    u64 napp, capp;
} wv_shard;

/* The known live entries by key hash: every key hash the block can meet. */
typedef struct wv_slot {
    u8 kh[32];
    wv_ent *cur;
} wv_slot;

typedef struct wv {
    const char **why;
    u8 nleft[12][32]; /* null left-tree nodes, levels 0..11 */
    u8 nbits[4][32];  /* null ActiveBits nodes: page, L1, L2, L3 */
    u8 nnode[64][32]; /* null upper nodes: nnode[L] for L >= 12 */
    u64 thres;
    u32 ratio, div;
    u64 height;
    wv_shard sh[QM_SHARD_COUNT];
    wv_slot *slot;
    size_t nslot;
    u8 (*okh)[32]; /* key hash of each op */
} wv;

static void
wv_nulls(wv *w)
{
    u8 e[QM_PROOF_ENTRY_MIN];
    memset(e, 0, sizeof(e));
    qm_put_u64le(e + 5 + 32, (u64)(i64)-2);
    qm_put_u64le(e + 5 + 40, UINT64_MAX);
    qm_sha256(e, sizeof(e), w->nleft[0]);
    for (unsigned l = 1; l <= 11; l++)
        qm_h2((u8)(l - 1), w->nleft[l - 1], w->nleft[l - 1], w->nleft[l]);
    memset(w->nbits[0], 0, 32);
    for (unsigned l = 1; l <= 3; l++)
        qm_h2((u8)(8 + l - 1), w->nbits[l - 1], w->nbits[l - 1], w->nbits[l]);
    qm_h2(11, w->nleft[11], w->nbits[3], w->nnode[12]);
    for (unsigned L = 13; L < 64; L++)
        qm_h2((u8)(L - 1), w->nnode[L - 1], w->nnode[L - 1], w->nnode[L]);
}

static unsigned
wv_upper_levels(u64 next_sn)
{
    u64 y = next_sn >> QM_TWIG_SHIFT;
    unsigned U = 1;
    while (y >> U)
        U++;
    return U; /* 1 + floor(log2 y) for y >= 1 */
}

static void
wv_bits_root(const wv_twig *t, u8 out[32])
{
    u8 l1[4][32], l2[2][32];
    for (unsigned i = 0; i < 4; i++)
        qm_h2(8, t->bits + 64 * i, t->bits + 64 * i + 32, l1[i]);
    qm_h2(9, l1[0], l1[1], l2[0]);
    qm_h2(9, l1[2], l1[3], l2[1]);
    qm_h2(10, l2[0], l2[1], out);
}

/* Left root of the youngest twig from its frontier (positions >= c are null). */
static void
wv_young_left(const wv *w, const wv_shard *s, u8 out[32])
{
    unsigned c = (unsigned)(s->next_sn & QM_TWIG_MASK);
    u8 cur[32];
    memcpy(cur, w->nleft[0], 32);
    for (unsigned l = 0; l < 11; l++) {
        if ((c >> l) & 1)
            qm_h2((u8)l, s->fr[l], cur, cur);
        else
            qm_h2((u8)l, cur, w->nleft[l], cur);
    }
    memcpy(out, cur, 32);
}

/* The shard root over twigs first..youngest, edges left of them and nulls right of them. */
static int
wv_shard_root(wv *w, wv_shard *s, u8 out[32])
{
    u64 y = s->next_sn >> QM_TWIG_SHIFT;
    unsigned U = wv_upper_levels(s->next_sn);
    u64 n = y - s->first + 1;
    u8(*lvl)[32] = malloc(n * 32);
    if (!lvl)
        return -ENOMEM;
    for (u64 i = 0; i < n; i++) {
        u8 left[32], bits[32];
        if (s->first + i == y)
            wv_young_left(w, s, left);
        else
            memcpy(left, s->tw[i].left, 32);
        wv_bits_root(&s->tw[i], bits);
        qm_h2(11, left, bits, lvl[i]);
    }
    u64 a = s->first, b = y; /* index range at level i */
    for (unsigned i = 0; i < U; i++) {
        u64 pa = a >> 1, pb = b >> 1;
        for (u64 p = pa; p <= pb; p++) {
            const u8 *l, *r;
            u8 tmp[32];
            if (2 * p < a) {
                if (i >= QM_PROOF_MAX_U || !s->has_edge[i]) {
                    free(lvl);
                    WHY("missing edge node of the pruned twigs");
                }
                l = s->edge[i];
            } else {
                l = lvl[2 * p - a];
            }
            r = 2 * p + 1 <= b ? lvl[2 * p + 1 - a] : w->nnode[12 + i];
            qm_h2((u8)(12 + i), l, r, tmp);
            memcpy(lvl[p - pa], tmp, 32);
        }
        a = pa;
        b = pb;
    }
    memcpy(out, lvl[0], 32);
    free(lvl);
    return 0;
}

/* Decodes an entry payload (checked lengths) into e. */
static int
wv_decode(wv *w, const u8 *q, u32 n, wv_ent *e)
{
    if (n < QM_PROOF_ENTRY_MIN)
        WHY("entry payload length out of range");
    u32 k = q[0], v = (u32)q[1] | ((u32)q[2] << 8) | ((u32)q[3] << 16), nd = q[4];
    if (k == 0)
        WHY("entry has an empty key");
    if ((u64)QM_PROOF_ENTRY_MIN + k + v + 8ull * nd != n)
        WHY("entry length fields disagree with the payload length");
    e->payload = q;
    e->len = n;
    e->klen = k;
    e->vlen = v;
    e->ndsn = nd;
    e->key = q + 5;
    e->val = q + 5 + k;
    e->nkh = q + 5 + k + v;
    e->version = (i64)qm_get_u64le(e->nkh + 32);
    e->sn = qm_get_u64le(e->nkh + 40);
    memset(e->kh, 0, 32);
    if (v == 0) {
        e->kh[0] = e->key[0];
        e->kh[1] = k > 1 ? e->key[1] : 0;
    } else {
        qm_sha256(e->key, k, e->kh);
    }
    return 0;
}

static bool
wv_bit(const wv_shard *s, u64 sn)
{
    if (sn < (s->first << QM_TWIG_SHIFT) || sn >= s->next_sn)
        return false;
    const wv_twig *t = &s->tw[(sn >> QM_TWIG_SHIFT) - s->first];
    unsigned p = (unsigned)(sn & QM_TWIG_MASK);
    return (t->bits[p >> 3] >> (p & 7)) & 1;
}

static void
wv_set_bit(wv_shard *s, u64 sn, bool on)
{
    wv_twig *t = &s->tw[(sn >> QM_TWIG_SHIFT) - s->first];
    unsigned p = (unsigned)(sn & QM_TWIG_MASK);
    if (on)
        t->bits[p >> 3] |= (u8)(1u << (p & 7));
    else
        t->bits[p >> 3] &= (u8) ~(1u << (p & 7));
}

/* Parses an entry record with its left-tree path at *off: the entry must lie in the shard's
 * unpruned entries below next_sn and hash to its twig's left root (yleft: the youngest's). */
static int
wv_path_entry(wv *w, const wv_shard *s, const u8 *p, size_t len, size_t *off, const u8 yleft[32],
              wv_ent *e)
{
    size_t o = *off;
    if (len - o < 4)
        WHY("truncated entry record");
    u32 n = qm_get_u32le(p + o);
    o += 4;
    if (n > len - o || len - o - n < 352)
        WHY("truncated entry record");
    QM_RET(wv_decode(w, p + o, n, e));
    o += n;
    if (e->sn >= s->next_sn || e->sn < (s->first << QM_TWIG_SHIFT))
        WHY("witness entry lies outside the shard's unpruned entries");
    u8 node[32];
    qm_sha256(e->payload, e->len, node);
    unsigned pos = (unsigned)(e->sn & QM_TWIG_MASK);
    for (unsigned l = 0; l < 11; l++) {
        const u8 *peer = p + o + 32 * l;
        if ((pos >> l) & 1)
            qm_h2((u8)l, peer, node, node);
        else
            qm_h2((u8)l, node, peer, node);
    }
    o += 352;
    u64 t = (e->sn >> QM_TWIG_SHIFT) - s->first;
    if (memcmp(node, t == s->ntw - 1 ? yleft : s->tw[t].left, 32) != 0)
        WHY("witness entry does not hash to its twig's left root");
    *off = o;
    return 0;
}

/* Parses shard k's section at *off and checks it against root r. */
static int
wv_section(wv *w, const u8 *p, size_t len, size_t *off, unsigned k, const u8 r[32])
{
    wv_shard *s = &w->sh[k];
    size_t o = *off;
    if (len - o < 24)
        WHY("truncated shard section");
    s->on = true;
    s->next_sn = s->ns0 = qm_get_u64le(p + o);
    s->sn_start = qm_get_u64le(p + o + 8);
    s->first = qm_get_u64le(p + o + 16);
    o += 24;
    u64 y = s->next_sn >> QM_TWIG_SHIFT;
    if (y < 1 || y >= (1ull << QM_PROOF_MAX_U) || s->first > y || s->sn_start > s->next_sn)
        WHY("shard section sizes out of range");
    unsigned U = wv_upper_levels(s->next_sn);
    for (unsigned i = 0; i < U; i++) {
        if (!((s->first >> i) & 1))
            continue;
        if (len - o < 32)
            WHY("truncated edge nodes");
        memcpy(s->edge[i], p + o, 32);
        s->has_edge[i] = true;
        o += 32;
    }
    u64 ntw = y - s->first + 1;
    if ((len - o) / 288 < ntw - 1)
        WHY("truncated twig summaries");
    s->cap = ntw + 16;
    s->tw = calloc(s->cap, sizeof(wv_twig));
    if (!s->tw)
        return -ENOMEM;
    s->ntw = ntw;
    for (u64 i = 0; i + 1 < ntw; i++) {
        memcpy(s->tw[i].left, p + o, 32);
        memcpy(s->tw[i].bits, p + o + 32, 256);
        o += 288;
    }
    unsigned c = (unsigned)(s->next_sn & QM_TWIG_MASK);
    for (int l = 10; l >= 0; l--) {
        if (!((c >> l) & 1))
            continue;
        if (len - o < 32)
            WHY("truncated youngest-twig frontier");
        memcpy(s->fr[l], p + o, 32);
        o += 32;
    }
    if (len - o < 256)
        WHY("truncated youngest-twig ActiveBits");
    memcpy(s->tw[ntw - 1].bits, p + o, 256);
    o += 256;
    /* No bit past next_sn, none below sn_start; count the live entries. */
    for (u64 i = 0; i < ntw; i++)
        for (unsigned b = 0; b < 2048; b++) {
            if (!((s->tw[i].bits[b >> 3] >> (b & 7)) & 1))
                continue;
            u64 sn = ((s->first + i) << QM_TWIG_SHIFT) + b;
            if (sn >= s->next_sn || sn < s->sn_start)
                WHY("active bit outside [sn_start, next_sn)");
            s->live++;
        }
    u8 root[32];
    QM_RET(wv_shard_root(w, s, root));
    if (memcmp(root, r, 32) != 0)
        WHY("shard summary does not hash to its pre-state shard root");
    u8 yleft[32];
    wv_young_left(w, s, yleft);
    /* The entry at next_sn - 1: its leaf is not null, so next_sn is not overstated (the
     * frontier alone could pass null leaves off as filled ones). */
    wv_ent last;
    QM_RET(wv_path_entry(w, s, p, len, &o, yleft, &last));
    if (last.sn != s->next_sn - 1)
        WHY("last entry record is not the entry before next_sn");
    /* Entries, each with its left-tree path to its twig's left root. */
    if (len - o < 4)
        WHY("truncated entry count");
    u32 m = qm_get_u32le(p + o);
    o += 4;
    if (m > (len - o) / (4 + QM_PROOF_ENTRY_MIN + 352))
        WHY("entry count out of range");
    s->old = calloc(m ? m : 1, sizeof(wv_ent));
    if (!s->old)
        return -ENOMEM;
    s->nold = m;
    for (u32 i = 0; i < m; i++) {
        wv_ent *e = &s->old[i];
        QM_RET(wv_path_entry(w, s, p, len, &o, yleft, e));
        if (i > 0 && e->sn <= s->old[i - 1].sn)
            WHY("witness entries are not in ascending SN order");
        if ((unsigned)(e->kh[0] >> 4) != k)
            WHY("witness entry lies in another shard");
        if (!wv_bit(s, e->sn))
            WHY("witness entry is not live before the block");
    }
    *off = o;
    return 0;
}

/* ---- the key-hash map ------------------------------------------------------------------- */

static int
kh_cmp(const void *a, const void *b)
{
    return memcmp(a, b, 32);
}

static wv_slot *
wv_slot_of(wv *w, const u8 kh[32])
{
    size_t lo = 0, hi = w->nslot;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (memcmp(w->slot[mid].kh, kh, 32) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < w->nslot && memcmp(w->slot[lo].kh, kh, 32) == 0 ? &w->slot[lo] : NULL;
}

/* The known live entry with the largest key hash below the slot (same shard), or NULL. */
static wv_ent *
wv_pred(wv *w, const wv_slot *sl)
{
    unsigned shard = sl->kh[0] >> 4;
    for (size_t i = (size_t)(sl - w->slot); i > 0; i--) {
        const wv_slot *q = &w->slot[i - 1];
        if ((unsigned)(q->kh[0] >> 4) != shard)
            return NULL;
        if (q->cur)
            return q->cur;
    }
    return NULL;
}

static int
wv_build_map(wv *w, size_t nops)
{
    size_t n = nops;
    for (unsigned k = 0; k < QM_SHARD_COUNT; k++)
        n += w->sh[k].nold;
    w->slot = calloc(n ? n : 1, sizeof(wv_slot));
    if (!w->slot)
        return -ENOMEM;
    size_t j = 0;
    for (size_t i = 0; i < nops; i++)
        memcpy(w->slot[j++].kh, w->okh[i], 32);
    for (unsigned k = 0; k < QM_SHARD_COUNT; k++)
        for (u32 i = 0; i < w->sh[k].nold; i++)
            memcpy(w->slot[j++].kh, w->sh[k].old[i].kh, 32);
    qsort(w->slot, j, sizeof(wv_slot), kh_cmp);
    size_t u = 0;
    for (size_t i = 0; i < j; i++)
        if (u == 0 || memcmp(w->slot[u - 1].kh, w->slot[i].kh, 32) != 0)
            memcpy(w->slot[u++].kh, w->slot[i].kh, 32);
    w->nslot = u;
    for (unsigned k = 0; k < QM_SHARD_COUNT; k++)
        for (u32 i = 0; i < w->sh[k].nold; i++) {
            wv_ent *e = &w->sh[k].old[i];
            if (!wv_bit(&w->sh[k], e->sn))
                continue;
            wv_slot *sl = wv_slot_of(w, e->kh);
            if (sl->cur)
                WHY("two live witness entries share a key hash");
            sl->cur = e;
        }
    return 0;
}

/* ---- the block -------------------------------------------------------------------------- */

/* Appends an entry to shard s; returns it in *out. */
static int
wv_append(wv *w, wv_shard *s, const u8 *key, u32 klen, const u8 *val, u32 vlen, const u8 nkh[32],
          i64 version, const u64 *dsn, u32 ndsn, wv_ent **out)
{
    u32 n = QM_PROOF_ENTRY_MIN + klen + vlen + 8 * ndsn;
    wv_ent *e = calloc(1, sizeof(wv_ent));
    u8 *b = malloc(n);
    if (!e || !b) {
        free(e);
        free(b);
        return -ENOMEM;
    }
    if (s->napp == s->capp) {
        u64 cap = s->capp ? 2 * s->capp : 64;
        wv_ent **a = realloc(s->app, cap * sizeof(*a));
        if (!a) {
            free(e);
            free(b);
            return -ENOMEM;
        }
        s->app = a;
        s->capp = cap;
    }
    b[0] = (u8)klen;
    b[1] = (u8)vlen;
    b[2] = (u8)(vlen >> 8);
    b[3] = (u8)(vlen >> 16);
    b[4] = (u8)ndsn;
    memcpy(b + 5, key, klen);
    memcpy(b + 5 + klen, val, vlen);
    memcpy(b + 5 + klen + vlen, nkh, 32);
    qm_put_u64le(b + 37 + klen + vlen, (u64)version);
    qm_put_u64le(b + 45 + klen + vlen, s->next_sn);
    for (u32 i = 0; i < ndsn; i++)
        qm_put_u64le(b + 53 + klen + vlen + 8 * i, dsn[i]);
    e->own = b;
    s->app[s->napp++] = e;
    QM_RET(wv_decode(w, b, n, e));
    /* The leaf joins the youngest twig; a full twig closes and a new one starts. */
    u8 carry[32];
    qm_sha256(b, n, carry);
    unsigned c = (unsigned)(s->next_sn & QM_TWIG_MASK);
    for (unsigned l = 0; l < 11; l++) {
        if (!((c >> l) & 1)) {
            memcpy(s->fr[l], carry, 32);
            break;
        }
        qm_h2((u8)l, s->fr[l], carry, carry);
        if (l == 10) /* position 2047: the twig is full, carry is its left root */
            memcpy(s->tw[s->ntw - 1].left, carry, 32);
    }
    wv_set_bit(s, s->next_sn, true);
    s->next_sn++;
    if ((s->next_sn & QM_TWIG_MASK) == 0) {
        if (s->ntw == s->cap) {
            u64 cap = 2 * s->cap;
            wv_twig *t = realloc(s->tw, cap * sizeof(wv_twig));
            if (!t)
                return -ENOMEM;
            s->tw = t;
            s->cap = cap;
        }
        memset(&s->tw[s->ntw++], 0, sizeof(wv_twig));
    }
    for (u32 i = 0; i < ndsn; i++)
        wv_set_bit(s, dsn[i], false);
    *out = e;
    return 0;
}

/* The entry at SN sn: appended in this block or carried by the witness; NULL if neither. */
static wv_ent *
wv_entry_at(wv_shard *s, u64 sn)
{
    if (sn >= s->ns0)
        return sn - s->ns0 < s->napp ? s->app[sn - s->ns0] : NULL;
    u32 lo = 0, hi = s->nold;
    while (lo < hi) {
        u32 mid = lo + (hi - lo) / 2;
        if (s->old[mid].sn < sn)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nold && s->old[lo].sn == sn ? &s->old[lo] : NULL;
}

static bool
wv_compactible(const wv *w, const wv_shard *s)
{
    if (s->live < w->thres)
        return false;
    unsigned __int128 lhs = (unsigned __int128)s->live * w->div;
    unsigned __int128 rhs = (unsigned __int128)(s->next_sn - s->sn_start) * w->ratio;
    return lhs <= rhs;
}

static int
wv_compact_step(wv *w, wv_shard *s)
{
    u64 sn = s->sn_start, min_sn = s->first << QM_TWIG_SHIFT;
    if (sn < min_sn)
        sn = min_sn;
    while (sn < s->next_sn && !wv_bit(s, sn))
        sn++;
    if (sn >= s->next_sn)
        WHY("compaction found no live entry");
    wv_ent *c = wv_entry_at(s, sn);
    if (!c)
        WHY("witness lacks the entry a compaction step re-appends");
    wv_slot *sl = wv_slot_of(w, c->kh);
    if (!sl || sl->cur != c)
        WHY("compaction candidate is not the live entry of its key");
    wv_ent *n;
    QM_RET(wv_append(w, s, c->key, c->klen, c->val, c->vlen, c->nkh, c->version, &sn, 1, &n));
    sl->cur = n;
    s->sn_start = sn + 1;
    return 0;
}

static int
wv_op(wv *w, const qmdb_block_op *op, const u8 kh[32])
{
    wv_shard *s = &w->sh[kh[0] >> 4];
    i64 version = (i64)((w->height << 24) + op->tx);
    wv_slot *sl = wv_slot_of(w, kh);
    wv_ent *e = sl->cur;
    if (e && (e->vlen == 0 || e->klen != op->klen || memcmp(e->key, op->key, op->klen) != 0))
        WHY("live entry of the key hash holds another key");
    wv_ent *p = NULL, *n;
    if (!e || !op->value) {
        p = wv_pred(w, sl);
        if (!p)
            WHY("witness lacks the predecessor entry of a key the block touches");
    }
    if (!e) { /* absent: the predecessor's gap must cover the key */
        if (memcmp(kh, p->nkh, 32) >= 0)
            WHY("witness lacks the entry of a key the block touches (gap does not cover it)");
    } else if (!op->value && memcmp(p->nkh, kh, 32) != 0) {
        WHY("witness lacks the predecessor of a deleted key");
    }
    if (op->value && e) { /* update */
        u64 dsn = e->sn;
        QM_RET(wv_append(w, s, op->key, (u32)op->klen, op->value, (u32)op->vlen, e->nkh, version,
                         &dsn, 1, &n));
        sl->cur = n;
        if (wv_compactible(w, s))
            QM_RET(wv_compact_step(w, s));
    } else if (op->value) { /* create */
        QM_RET(wv_append(w, s, op->key, (u32)op->klen, op->value, (u32)op->vlen, p->nkh, version,
                         NULL, 0, &n));
        sl->cur = n;
        wv_slot *ps = wv_slot_of(w, p->kh);
        u64 dsn = p->sn;
        QM_RET(wv_append(w, s, p->key, p->klen, p->val, p->vlen, kh, version, &dsn, 1, &n));
        ps->cur = n;
        s->live++;
        if (wv_compactible(w, s)) {
            QM_RET(wv_compact_step(w, s));
            QM_RET(wv_compact_step(w, s));
        }
    } else if (e) { /* delete */
        wv_slot *ps = wv_slot_of(w, p->kh);
        u64 dsn[2] = {e->sn, p->sn};
        QM_RET(wv_append(w, s, p->key, p->klen, p->val, p->vlen, e->nkh, version, dsn, 2, &n));
        sl->cur = NULL;
        ps->cur = n;
        s->live--;
    }
    return 0;
}

/* Op order inside one transaction: key hash, then position (the last one wins). */
typedef struct wv_ord {
    const u8 *kh;
    size_t i;
} wv_ord;

static int
ord_cmp(const void *a, const void *b)
{
    const wv_ord *x = a, *y = b;
    int c = memcmp(x->kh, y->kh, 32);
    if (c)
        return c;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int
wv_block(wv *w, const qmdb_block_op *ops, size_t nops)
{
    wv_ord *ord = malloc((nops ? nops : 1) * sizeof(wv_ord));
    if (!ord)
        return -ENOMEM;
    int rc = 0;
    for (size_t a = 0; a < nops && !rc;) {
        size_t b = a;
        while (b < nops && ops[b].tx == ops[a].tx)
            b++;
        for (size_t i = a; i < b; i++)
            ord[i - a] = (wv_ord){w->okh[i], i};
        qsort(ord, b - a, sizeof(wv_ord), ord_cmp);
        for (size_t j = 0; j < b - a && !rc; j++) {
            if (j + 1 < b - a && memcmp(ord[j].kh, ord[j + 1].kh, 32) == 0)
                continue; /* a later operation on the same key wins */
            rc = wv_op(w, &ops[ord[j].i], ord[j].kh);
        }
        a = b;
    }
    free(ord);
    return rc;
}

int
qm_block_digest(const qmdb_block_op *ops, size_t nops, u8 out[32])
{
    size_t n = 0;
    for (size_t i = 0; i < nops; i++)
        n += 9 + ops[i].klen + (ops[i].value ? ops[i].vlen : 0);
    u8 *b = malloc(n ? n : 1), *q = b;
    if (!b)
        return -ENOMEM;
    for (size_t i = 0; i < nops; i++) {
        u32 v = ops[i].value ? (u32)ops[i].vlen : UINT32_MAX;
        for (int j = 0; j < 4; j++)
            *q++ = (u8)(ops[i].tx >> (8 * j));
        *q++ = (u8)ops[i].klen;
        memcpy(q, ops[i].key, ops[i].klen);
        q += ops[i].klen;
        for (int j = 0; j < 4; j++)
            *q++ = (u8)(v >> (8 * j));
        if (ops[i].value) {
            memcpy(q, ops[i].value, ops[i].vlen);
            q += ops[i].vlen;
        }
    }
    qm_sha256(b, n, out);
    free(b);
    return 0;
}

/* ---- top level -------------------------------------------------------------------------- */

static void
wv_global(u8 r[16][32], u8 out[32])
{
    qm_gtree g;
    qm_global_tree((const u8(*)[32])r, &g);
    memcpy(out, g.root, 32);
}

static int
wv_run(wv *w, const u8 *p, size_t len, const u8 pre[32], const qmdb_block_op *ops, size_t nops,
       const qmdb_compaction_params *par, u8 post[32])
{
    if (len < QM_WITNESS_HDR)
        WHY("witness is shorter than its header");
    if (memcmp(p, QM_WITNESS_MAGIC, 4) != 0)
        WHY("bad magic (not a qmdb block witness)");
    if (p[4] != QM_WITNESS_VERSION)
        WHY("unsupported block witness format version");
    if (qm_get_u64le(p + 5) != w->height)
        WHY("witness is for a different height");
    w->thres = qm_get_u64le(p + 13);
    w->ratio = qm_get_u32le(p + 21);
    w->div = qm_get_u32le(p + 25);
    if (w->div == 0)
        WHY("utilization divisor is zero");
    if (par && (par->compact_thres != w->thres || par->utilization_ratio != w->ratio ||
                par->utilization_div != w->div))
        WHY("witness states other compaction parameters than the chain's");
    u8 r[16][32];
    memcpy(r, p + 29, 512);
    u8 g[32];
    wv_global(r, g);
    if (memcmp(g, pre, 32) != 0)
        WHY("witness does not hash to the trusted pre-state root");
    static const u8 zero[32];
    const u8 *dg = p + QM_WITNESS_DIGEST;
    if (memcmp(dg, zero, 32) != 0) {
        u8 d[32];
        QM_RET(qm_block_digest(ops, nops, d));
        if (memcmp(d, dg, 32) != 0)
            WHY("witness is for a different block (operations differ)");
    }
    unsigned mask = (unsigned)p[QM_WITNESS_MASK] | ((unsigned)p[QM_WITNESS_MASK + 1] << 8),
             want = 0;
    for (size_t i = 0; i < nops; i++)
        want |= 1u << (w->okh[i][0] >> 4);
    if (mask != want)
        WHY("witness covers other shards than the block's operations");
    size_t off = QM_WITNESS_HDR;
    for (unsigned k = 0; k < QM_SHARD_COUNT; k++)
        if ((mask >> k) & 1)
            QM_RET(wv_section(w, p, len, &off, k, r[k]));
    if (off != len)
        WHY("trailing bytes after the last shard section");
    QM_RET(wv_build_map(w, nops));
    QM_RET(wv_block(w, ops, nops));
    for (unsigned k = 0; k < QM_SHARD_COUNT; k++)
        if (w->sh[k].on)
            QM_RET(wv_shard_root(w, &w->sh[k], r[k]));
    wv_global(r, post);
    return 0;
}

int
qmdb_witness_verify(const uint8_t *witness, size_t len, const uint8_t pre_root[32], uint64_t height,
                    const qmdb_block_op *ops, size_t nops, const qmdb_compaction_params *params,
                    uint8_t post_root[32], const char **why)
{
    if (why)
        *why = "";
    bool ok = witness && pre_root && post_root && (ops || nops == 0) && height >= 1 &&
              height < (1ull << 39);
    for (size_t i = 0; ok && i < nops; i++)
        ok = ops[i].key && ops[i].klen >= 1 && ops[i].klen <= QMDB_MAX_KEY_LEN &&
             (!ops[i].value || (ops[i].vlen >= 1 && ops[i].vlen <= QMDB_MAX_VALUE_LEN)) &&
             ops[i].tx < (1u << 24) && (i == 0 || ops[i].tx >= ops[i - 1].tx);
    if (!ok) {
        if (why)
            *why = "malformed block (height 1..2^39-1; ops in transaction order; key 1..255 "
                   "bytes; value NULL or 1..2^24-1 bytes)";
        return QMDB_INVALID;
    }
    wv *w = calloc(1, sizeof(wv));
    if (!w)
        return -ENOMEM;
    w->why = why;
    w->height = height;
    int rc = 0;
    w->okh = malloc((nops ? nops : 1) * 32);
    if (!w->okh)
        rc = -ENOMEM;
    for (size_t i = 0; !rc && i < nops; i++)
        qm_sha256(ops[i].key, ops[i].klen, w->okh[i]);
    if (!rc) {
        wv_nulls(w);
        rc = wv_run(w, witness, len, pre_root, ops, nops, params, post_root);
    }
    for (unsigned k = 0; k < QM_SHARD_COUNT; k++) {
        wv_shard *s = &w->sh[k];
        for (u64 i = 0; i < s->napp; i++) {
            free(s->app[i]->own);
            free(s->app[i]);
        }
        free(s->app);
        free(s->old);
        free(s->tw);
    }
    free(w->slot);
    free(w->okh);
    free(w);
    if (rc == -ENOMEM && why)
        *why = "out of memory";
    if (rc == 0 && why)
        *why = "valid";
    return rc;
}
