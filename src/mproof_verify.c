/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mproof_verify.c -- the multi-key proof verifier (qmdb_proof_verify_many): a pure function of
 * (proof bytes, key list, trusted state root). No I/O and no global state; it allocates one
 * scratch array (one slot per entry record) and frees it before returning. Like
 * proof_verify.c it compiles and links alone with hash.c, hash_portable.c and hash_shani.c.
 * The format is in proof_fmt.h and docs/PROOFS.md §9.
 *
 * The node stream is consumed by one depth-first, left-first walk of the global tree from the
 * state root: a subtree that holds no entry of the proof (no ActiveBits page of the proof,
 * inside a twig's ActiveBits) is the next 32-byte item of the stream; a subtree that does is
 * hashed from its two halves; an entry's leaf is SHA256 of its payload; a page the proof
 * needs (the page holding a main entry that must be active) is the next stream item itself.
 *
 * Thread: any; reentrant.
 */
#include "codec.h"
#include "hash.h"
#include "proof_fmt.h"

#include <stdlib.h>

#define WHY(msg)               \
    do {                       \
        if (m->why)            \
            *m->why = (msg);   \
        return QMDB_BAD_PROOF; \
    } while (0)

/* One entry record. */
typedef struct mv_ent {
    const u8 *payload;
    u32 len, klen, vlen, ndsn;
    const u8 *key, *val, *nkh, *dsn;
    const u8 *page; /* its ActiveBits page from the stream, when the proof needs it */
    i64 version;
    u64 sn;
    unsigned shard;
    bool need_page; /* a main entry that must be active */
    bool used;      /* some key record names it */
    u8 kh[32];
} mv_ent;

typedef struct mv {
    const u8 *s; /* node stream */
    size_t n, off;
    const u8 *ubytes; /* one U per distinct shard */
    size_t nu, ui;
    mv_ent *e;
    u32 ne, cur; /* entries; next one the walk has not placed */
    unsigned U;  /* of the shard being walked */
    const char **why;
} mv;

static int
mv_take(mv *m, u8 out[32])
{
    if (m->n - m->off < 32)
        WHY("node stream is too short");
    memcpy(out, m->s + m->off, 32);
    m->off += 32;
    return 0;
}

static bool
mv_in_twig(const mv *m, unsigned shard, u64 twig)
{
    return m->cur < m->ne && m->e[m->cur].shard == shard &&
           (m->e[m->cur].sn >> QM_TWIG_SHIFT) == twig;
}

/* Left tree of a twig: node (l, n) covering positions [n << l, (n + 1) << l). */
static int
mv_left(mv *m, unsigned shard, u64 twig, unsigned l, unsigned n, u8 out[32])
{
    if (!mv_in_twig(m, shard, twig) || ((m->e[m->cur].sn & QM_TWIG_MASK) >> l) != n)
        return mv_take(m, out);
    if (l == 0) {
        const mv_ent *e = &m->e[m->cur++];
        qm_sha256(e->payload, e->len, out);
        return 0;
    }
    u8 a[32], b[32];
    QM_RET(mv_left(m, shard, twig, l - 1, 2 * n, a));
    QM_RET(mv_left(m, shard, twig, l - 1, 2 * n + 1, b));
    qm_h2((u8)(l - 1), a, b, out);
    return 0;
}

/* ActiveBits of a twig: node (l, n) over pages [n << l, (n + 1) << l); mask = pages needed. */
static int
mv_bits(mv *m, u32 first, u32 end, unsigned mask, unsigned l, unsigned n, u8 out[32])
{
    unsigned span = ((1u << (1u << l)) - 1u) << (n << l);
    if (!(mask & span))
        return mv_take(m, out);
    if (l == 0) {
        QM_RET(mv_take(m, out));
        for (u32 i = first; i < end; i++)
            if (m->e[i].need_page && ((m->e[i].sn & QM_TWIG_MASK) >> 8) == n)
                m->e[i].page = m->s + m->off - 32;
        return 0;
    }
    u8 a[32], b[32];
    QM_RET(mv_bits(m, first, end, mask, l - 1, 2 * n, a));
    QM_RET(mv_bits(m, first, end, mask, l - 1, 2 * n + 1, b));
    qm_h2((u8)(8 + l - 1), a, b, out);
    return 0;
}

static int
mv_twig(mv *m, unsigned shard, u64 twig, u8 out[32])
{
    u32 first = m->cur, end = first;
    unsigned mask = 0;
    for (; end < m->ne && m->e[end].shard == shard && (m->e[end].sn >> QM_TWIG_SHIFT) == twig;
         end++)
        if (m->e[end].need_page)
            mask |= 1u << ((m->e[end].sn & QM_TWIG_MASK) >> 8);
    u8 left[32], bits[32];
    QM_RET(mv_left(m, shard, twig, 11, 0, left));
    QM_RET(mv_bits(m, first, end, mask, 3, 0, bits));
    qm_h2(11, left, bits, out);
    return 0;
}

/* Upper tree of a shard: node (i, n) over twigs [n << i, (n + 1) << i). */
static int
mv_upper(mv *m, unsigned shard, unsigned i, u64 n, u8 out[32])
{
    if (m->cur >= m->ne || m->e[m->cur].shard != shard ||
        ((m->e[m->cur].sn >> QM_TWIG_SHIFT) >> i) != n)
        return mv_take(m, out);
    if (i == 0)
        return mv_twig(m, shard, n, out);
    u8 a[32], b[32];
    QM_RET(mv_upper(m, shard, i - 1, 2 * n, a));
    QM_RET(mv_upper(m, shard, i - 1, 2 * n + 1, b));
    qm_h2((u8)(12 + i - 1), a, b, out);
    return 0;
}

/* Global tree: node (l, n) over shards [n << l, (n + 1) << l); l = 4 is the state root. */
static int
mv_global(mv *m, unsigned l, unsigned n, u8 out[32])
{
    if (m->cur >= m->ne || (m->e[m->cur].shard >> l) != n)
        return mv_take(m, out);
    if (l == 0) {
        if (m->ui >= m->nu)
            WHY("missing upper-tree depth of a shard");
        unsigned U = m->ubytes[m->ui++];
        if (U < 1 || U > QM_PROOF_MAX_U)
            WHY("upper-tree depth out of range");
        if ((m->e[m->cur].sn >> QM_TWIG_SHIFT) >> U != 0)
            WHY("serial number lies outside the shard tree");
        QM_RET(mv_upper(m, n, U, 0, out));
        if (m->cur < m->ne && m->e[m->cur].shard == n)
            WHY("serial number lies outside the shard tree");
        return 0;
    }
    u8 a[32], b[32];
    QM_RET(mv_global(m, l - 1, 2 * n, a));
    QM_RET(mv_global(m, l - 1, 2 * n + 1, b));
    qm_h2((u8)(64 + l - 1), a, b, out);
    return 0;
}

/* Parses entry record i at *off. */
static int
mv_entry(mv *m, const u8 *p, size_t len, size_t *off, mv_ent *e)
{
    size_t o = *off;
    if (len - o < 4)
        WHY("truncated entry record");
    u32 n = qm_get_u32le(p + o);
    o += 4;
    if (n < QM_PROOF_ENTRY_MIN || n > len - o)
        WHY("entry payload length out of range");
    const u8 *q = p + o;
    u32 k = q[0], v = (u32)q[1] | ((u32)q[2] << 8) | ((u32)q[3] << 16), nd = q[4];
    if (k == 0)
        WHY("entry has an empty key");
    if ((u64)QM_PROOF_ENTRY_MIN + k + v + 8ull * nd != n)
        WHY("entry length fields disagree with the payload length");
    memset(e, 0, sizeof(*e));
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
    e->dsn = e->nkh + 48;
    if (v == 0) { /* sentry key hash */
        e->kh[0] = e->key[0];
        e->kh[1] = k > 1 ? e->key[1] : 0;
    } else {
        qm_sha256(e->key, k, e->kh);
    }
    e->shard = e->kh[0] >> 4;
    *off = o + n;
    return 0;
}

static bool
mv_active(const mv_ent *e)
{
    unsigned pos = (unsigned)(e->sn & QM_TWIG_MASK);
    return (e->page[(pos >> 3) & 31] >> (pos & 7)) & 1;
}

/* Checks the answer of key record r for key (kh) and fills *a. */
static int
mv_answer(mv *m, const u8 *rec, const u8 *key, size_t klen, const u8 kh[32], u64 h,
          qmdb_proof_answer *a)
{
    unsigned flags = rec[0];
    const mv_ent *e = &m->e[qm_get_u32le(rec + 1)];
    if (flags & QM_MPROOF_ABSENT) {
        if (e->shard != (unsigned)(kh[0] >> 4))
            WHY("predecessor lies in another shard than the key");
        if (memcmp(e->kh, kh, 32) >= 0)
            WHY("predecessor's key hash is not below the key's");
        if (memcmp(kh, e->nkh, 32) >= 0)
            WHY("predecessor's gap does not cover the key's hash");
        a->present = 0;
        a->value = NULL;
        a->vlen = 0;
    } else {
        if (e->vlen == 0)
            WHY("entry is a sentry, not a user key");
        if (e->klen != klen || memcmp(e->key, key, klen) != 0)
            WHY("entry holds a different key");
        a->present = 1;
        a->value = e->val;
        a->vlen = e->vlen;
    }
    if (e->version < 0 || ((u64)e->version >> 24) > h)
        WHY("entry's version is newer than the proven height");
    if (!(flags & QM_MPROOF_DEACT)) {
        if (!e->page || !mv_active(e))
            WHY("entry's active bit is not set");
        return 0;
    }
    const mv_ent *d = &m->e[qm_get_u32le(rec + 5)];
    if (d->shard != e->shard)
        WHY("deactivating entry lies in another shard");
    bool found = false;
    for (u32 i = 0; i < d->ndsn && !found; i++)
        found = qm_get_u64le(d->dsn + 8 * i) == e->sn;
    if (!found)
        WHY("second entry does not deactivate the main entry");
    if (d->version < 0 || ((u64)d->version >> 24) <= h)
        WHY("deactivating entry is not newer than the proven height");
    return 0;
}

static int
mv_run(mv *m, const u8 *p, size_t len, const u8 root[32], const void *const *keys,
       const size_t *klens, size_t nkeys, u64 height, u64 *proved, qmdb_proof_answer *answers)
{
    if (len < QM_MPROOF_HDR)
        WHY("proof is shorter than its header");
    if (memcmp(p, QM_MPROOF_MAGIC, 4) != 0)
        WHY("bad magic (not a qmdb multi-key proof)");
    if (p[4] != QM_MPROOF_VERSION)
        WHY("unsupported multi-key proof format version");
    u64 h = qm_get_u64le(p + 5);
    u32 nk = qm_get_u32le(p + 13), ne = qm_get_u32le(p + 17);
    if (nk != nkeys)
        WHY("proof is for a different number of keys");
    if (height != UINT64_MAX && height != h)
        WHY("proof is for a different height");
    if (ne < 1 || ne > 2ull * nk)
        WHY("entry count out of range");
    /* Key records. */
    size_t off = QM_MPROOF_HDR, krec = off;
    for (u32 i = 0; i < nk; i++) {
        if (len - off < 5)
            WHY("truncated key record");
        unsigned flags = p[off];
        if (flags & ~(unsigned)(QM_MPROOF_ABSENT | QM_MPROOF_DEACT))
            WHY("unknown answer flags");
        if ((flags & QM_MPROOF_DEACT) && height == UINT64_MAX)
            WHY("a historical proof needs the claimed height");
        size_t rl = (flags & QM_MPROOF_DEACT) ? 9 : 5;
        if (len - off < rl)
            WHY("truncated key record");
        if (qm_get_u32le(p + off + 1) >= ne || (rl == 9 && qm_get_u32le(p + off + 5) >= ne))
            WHY("key record names an entry that does not exist");
        if (rl == 9 && qm_get_u32le(p + off + 1) == qm_get_u32le(p + off + 5))
            WHY("an entry cannot deactivate itself");
        off += rl;
    }
    /* Entry records. */
    m->ne = ne;
    m->e = calloc(ne, sizeof(mv_ent));
    if (!m->e)
        return -ENOMEM;
    size_t nshards = 0;
    for (u32 i = 0; i < ne; i++) {
        QM_RET(mv_entry(m, p, len, &off, &m->e[i]));
        if (i > 0) {
            const mv_ent *a = &m->e[i - 1], *b = &m->e[i];
            if (a->shard > b->shard || (a->shard == b->shard && a->sn >= b->sn))
                WHY("entry records are not in ascending (shard, serial number) order");
        }
        if (i == 0 || m->e[i - 1].shard != m->e[i].shard)
            nshards++;
    }
    for (size_t i = 0, o = krec; i < nk; i++) {
        unsigned flags = p[o];
        m->e[qm_get_u32le(p + o + 1)].used = true;
        if (!(flags & QM_MPROOF_DEACT))
            m->e[qm_get_u32le(p + o + 1)].need_page = true;
        else
            m->e[qm_get_u32le(p + o + 5)].used = true;
        o += (flags & QM_MPROOF_DEACT) ? 9 : 5;
    }
    for (u32 i = 0; i < ne; i++)
        if (!m->e[i].used)
            WHY("an entry record answers no key");
    if (len - off < nshards)
        WHY("truncated upper-tree depths");
    m->ubytes = p + off;
    m->nu = nshards;
    off += nshards;
    m->s = p + off;
    m->n = len - off;
    u8 node[32];
    QM_RET(mv_global(m, 4, 0, node));
    if (m->cur != m->ne)
        WHY("serial number lies outside the shard tree");
    if (m->off != m->n)
        WHY("trailing bytes after the node stream");
    if (memcmp(node, root, 32) != 0)
        WHY("proof does not hash to the trusted state root");
    /* Every key's answer. */
    for (size_t i = 0, o = krec; i < nk; i++) {
        u8 kh[32];
        qm_sha256(keys[i], klens[i], kh);
        QM_RET(mv_answer(m, p + o, keys[i], klens[i], kh, h, &answers[i]));
        o += (p[o] & QM_MPROOF_DEACT) ? 9 : 5;
    }
    if (proved)
        *proved = h;
    if (m->why)
        *m->why = "valid";
    return 0;
}

int
qmdb_proof_verify_many(const uint8_t *proof, size_t len, const uint8_t root[32],
                       const void *const *keys, const size_t *klens, size_t nkeys, uint64_t height,
                       uint64_t *proved_height_out, qmdb_proof_answer *answers, const char **why)
{
    if (why)
        *why = "";
    bool ok =
        proof && root && keys && klens && answers && nkeys >= 1 && nkeys <= QMDB_MPROOF_MAX_KEYS;
    for (size_t i = 0; ok && i < nkeys; i++)
        ok = keys[i] && klens[i] >= 1 && klens[i] <= QMDB_MAX_KEY_LEN;
    if (!ok) {
        if (why)
            *why = "malformed claim (1..2^20 keys, each 1..255 bytes, an answer array)";
        return QMDB_INVALID;
    }
    mv m;
    memset(&m, 0, sizeof(m));
    m.why = why;
    int rc = mv_run(&m, proof, len, root, keys, klens, nkeys, height, proved_height_out, answers);
    free(m.e);
    if (rc == -ENOMEM && why)
        *why = "out of memory";
    return rc;
}
