/* SPDX-License-Identifier: Apache-2.0 */
/*
 * refmodel.c -- naive reference model of QMDB roots (FORMAT.md §1-§7). See refmodel.h.
 *
 * Deliberately simple: every entry ever appended is kept serialized in memory with its
 * leaf hash; active flags are one byte per SN; the live index is a sorted array of
 * (key_hash, sn); the root is recomputed from the leaves on every call. Written from the
 * spec only, independent of src/, hashing with OpenSSL's libcrypto SHA-256.
 *
 * Hashing goes through EVP with the SHA256 algorithm fetched once and a reused context:
 * OpenSSL 3's one-shot SHA256() re-fetches the algorithm on every call and was 5x slower,
 * which dominated the run time of the differential test. Not thread-safe (tests only).
 */
#include "refmodel.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------ */
/* primitives                                                                            */

static void
sha256_parts(const uint8_t *a, size_t al, const uint8_t *b, size_t bl, const uint8_t *c, size_t cl,
             uint8_t out[32])
{
    static EVP_MD *md;
    static EVP_MD_CTX *ctx;
    if (md == NULL) {
        md = EVP_MD_fetch(NULL, "SHA256", NULL);
        ctx = EVP_MD_CTX_new();
        if (md == NULL || ctx == NULL) {
            fprintf(stderr, "refmodel: OpenSSL SHA256 unavailable\n");
            abort();
        }
    }
    unsigned int n = 0;
    if (EVP_DigestInit_ex2(ctx, md, NULL) != 1 || (al && EVP_DigestUpdate(ctx, a, al) != 1) ||
        (bl && EVP_DigestUpdate(ctx, b, bl) != 1) || (cl && EVP_DigestUpdate(ctx, c, cl) != 1) ||
        EVP_DigestFinal_ex(ctx, out, &n) != 1 || n != 32) {
        fprintf(stderr, "refmodel: SHA256 failed\n");
        abort();
    }
}

static void
sha256(const uint8_t *p, size_t n, uint8_t out[32])
{
    sha256_parts(p, n, NULL, 0, NULL, 0, out);
}

void
rm_hash_tagged(uint8_t tag, const uint8_t *l, size_t ll, const uint8_t *r, size_t rl,
               uint8_t out[32])
{
    sha256_parts(&tag, 1, l, ll, r, rl, out);
}

void
rm_h2(uint8_t tag, const uint8_t l[32], const uint8_t r[32], uint8_t out[32])
{
    uint8_t buf[65];
    buf[0] = tag;
    memcpy(buf + 1, l, 32);
    memcpy(buf + 33, r, 32);
    sha256(buf, sizeof buf, out);
}

static void
put_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static size_t
roundup8(size_t x)
{
    return (x + 7) & ~(size_t)7;
}

size_t
rm_encode_entry(const uint8_t *key, size_t kl, const uint8_t *val, size_t vl, const uint8_t nkh[32],
                int64_t version, uint64_t sn, const uint64_t *dsn, size_t ndsn, uint8_t *out,
                uint8_t hash_out[32])
{
    size_t payload = 53 + kl + vl + 8 * ndsn;
    size_t stored = roundup8(53 + kl + vl) + 8 * ndsn;
    uint8_t *b = out;
    uint8_t *tmp = NULL;
    if (b == NULL && hash_out == NULL)
        return stored;
    if (b == NULL) {
        tmp = malloc(stored);
        if (tmp == NULL)
            abort();
        b = tmp;
    }
    memset(b, 0, stored);
    b[0] = (uint8_t)kl;
    put_le(b + 1, vl, 3);
    b[4] = (uint8_t)ndsn;
    if (kl)
        memcpy(b + 5, key, kl);
    if (vl)
        memcpy(b + 5 + kl, val, vl);
    uint8_t *p = b + 5 + kl + vl;
    memcpy(p, nkh, 32);
    put_le(p + 32, (uint64_t)version, 8);
    put_le(p + 40, sn, 8);
    for (size_t i = 0; i < ndsn; i++)
        put_le(p + 48 + 8 * i, dsn[i], 8);
    if (hash_out)
        sha256(b, payload, hash_out);
    free(tmp);
    return stored;
}

void
rm_null_leaf(uint8_t out[32])
{
    uint8_t zero[32] = {0};
    rm_encode_entry(NULL, 0, NULL, 0, zero, -2, UINT64_MAX, NULL, 0, NULL, out);
}

void
rm_null_left_level(unsigned level, uint8_t out[32])
{
    rm_null_leaf(out);
    for (unsigned l = 1; l <= level; l++)
        rm_h2((uint8_t)(l - 1), out, out, out);
}

void
rm_active_bits_hash(const uint8_t bits[256], uint8_t l1[4][32], uint8_t l2[2][32], uint8_t l3[32])
{
    for (int i = 0; i < 4; i++)
        rm_h2(8, bits + 64 * i, bits + 64 * i + 32, l1[i]);
    for (int i = 0; i < 2; i++)
        rm_h2(9, l1[2 * i], l1[2 * i + 1], l2[i]);
    rm_h2(10, l2[0], l2[1], l3);
}

void
rm_twig_root_from(const uint8_t left_root[32], const uint8_t bits[256], uint8_t out[32])
{
    uint8_t l1[4][32], l2[2][32], l3[32];
    rm_active_bits_hash(bits, l1, l2, l3);
    rm_h2(11, left_root, l3, out);
}

void
rm_null_node(unsigned level, uint8_t out[32])
{
    uint8_t left[32], bits[256] = {0};
    rm_null_left_level(11, left);
    rm_twig_root_from(left, bits, out);
    for (unsigned l = 13; l <= level; l++)
        rm_h2((uint8_t)(l - 1), out, out, out);
}

void
rm_sentry(unsigned shard, unsigned i, uint8_t key[32], uint8_t nkh[32])
{
    unsigned p = shard * 4096 + i;
    memset(key, 0, 32);
    memset(nkh, 0, 32);
    key[0] = (uint8_t)(p >> 8);
    key[1] = (uint8_t)p;
    if (p == 0xFFFF) {
        memset(nkh, 0xFF, 32);
    } else {
        nkh[0] = (uint8_t)((p + 1) >> 8);
        nkh[1] = (uint8_t)(p + 1);
    }
}

void
rm_key_hash(const uint8_t *key, size_t kl, int is_sentry, uint8_t out[32])
{
    if (is_sentry) {
        memset(out, 0, 32);
        out[0] = key[0];
        out[1] = key[1];
    } else {
        sha256(key, kl, out);
    }
}

/* ------------------------------------------------------------------------------------ */
/* model state                                                                           */

typedef struct {
    uint8_t *buf;     /* serialized (stored length) */
    uint32_t len;     /* stored length */
    uint8_t hash[32]; /* SHA256(payload) */
    uint64_t height;  /* block height when appended (trace only) */
    uint64_t pos;     /* file position (trace only) */
    const char *kind; /* trace only */
} rm_entry;

typedef struct {
    uint8_t kh[32];
    uint64_t sn;
} rm_live_t;

typedef struct {
    rm_entry *ents;
    size_t n, cap; /* n == next_sn */
    uint8_t *active;
    rm_live_t *live;
    size_t nlive, caplive;
    uint64_t sn_start;
    uint64_t file_pos;
    uint64_t block_start_sn;
    /* memo of left roots of FULL twigs only (their 2048 leaves never change again) */
    uint8_t (*left_memo)[32];
    uint8_t *left_memo_ok;
    size_t nmemo;
} rm_shard_t;

typedef struct {
    uint8_t *key;
    size_t kl;
    uint8_t *val; /* NULL for delete */
    size_t vl;
    uint8_t kh[32];
} rm_op;

struct rm {
    rm_shard_t sh[RM_SHARDS];
    uint64_t thres;
    uint32_t ratio, div;
    uint64_t height; /* last committed */
    int in_block;
    uint64_t cur_height; /* block being built */
    uint64_t tx;         /* current tx index */
    rm_op *ops;
    size_t nops, capops;
    uint64_t compactions;
    FILE *trace;
    int scratch; /* 1: never use the full-twig left-root memo */
};

/* entry field accessors */
static unsigned
e_klen(const rm_entry *e)
{
    return e->buf[0];
}
static size_t
e_vlen(const rm_entry *e)
{
    return (size_t)get_le(e->buf + 1, 3);
}
static const uint8_t *
e_key(const rm_entry *e)
{
    return e->buf + 5;
}
static const uint8_t *
e_val(const rm_entry *e)
{
    return e->buf + 5 + e_klen(e);
}
static const uint8_t *
e_nkh(const rm_entry *e)
{
    return e->buf + 5 + e_klen(e) + e_vlen(e);
}
static int64_t
e_version(const rm_entry *e)
{
    return (int64_t)get_le(e_nkh(e) + 32, 8);
}
static void
e_kh(const rm_entry *e, uint8_t out[32])
{
    rm_key_hash(e_key(e), e_klen(e), e_vlen(e) == 0, out);
}

static void *
xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (q == NULL) {
        fprintf(stderr, "refmodel: out of memory\n");
        abort();
    }
    return q;
}

static void
print_hex(FILE *f, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", p[i]);
}

static void
trace_entry(FILE *f, unsigned shard, uint64_t sn, const rm_entry *e)
{
    fprintf(f, "%llu %u %llu %s %llu ", (unsigned long long)e->height, shard,
            (unsigned long long)sn, e->kind, (unsigned long long)e->pos);
    print_hex(f, e->hash, 32);
    fputc(' ', f);
    print_hex(f, e->buf, e->len);
    fputc('\n', f);
}

/* Appends an entry to shard s; sets its active flag and clears those of its DSNs.
 * Returns its SN. */
static uint64_t
append(rm *m, unsigned s, const uint8_t *key, size_t kl, const uint8_t *val, size_t vl,
       const uint8_t nkh[32], int64_t version, const uint64_t *dsn, size_t ndsn, const char *kind)
{
    rm_shard_t *sh = &m->sh[s];
    if (sh->n == sh->cap) {
        sh->cap = sh->cap ? sh->cap * 2 : 8192;
        sh->ents = xrealloc(sh->ents, sh->cap * sizeof *sh->ents);
        sh->active = xrealloc(sh->active, sh->cap);
    }
    uint64_t sn = sh->n;
    rm_entry *e = &sh->ents[sn];
    size_t len = rm_encode_entry(key, kl, val, vl, nkh, version, sn, dsn, ndsn, NULL, NULL);
    e->buf = xrealloc(NULL, len);
    e->len = (uint32_t)len;
    rm_encode_entry(key, kl, val, vl, nkh, version, sn, dsn, ndsn, e->buf, e->hash);
    e->height = m->in_block ? m->cur_height : 0;
    e->pos = sh->file_pos;
    e->kind = kind;
    sh->file_pos += len;
    sh->n++;
    sh->active[sn] = 1;
    for (size_t i = 0; i < ndsn; i++) {
        if (dsn[i] >= sn || !sh->active[dsn[i]]) {
            fprintf(stderr, "refmodel: internal error: DSN %llu not active\n",
                    (unsigned long long)dsn[i]);
            abort();
        }
        sh->active[dsn[i]] = 0;
    }
    if (m->trace && kind[0] != 's')
        trace_entry(m->trace, s, sn, e);
    return sn;
}

/* lower bound of kh in the live index */
static size_t
live_lb(const rm_shard_t *sh, const uint8_t kh[32])
{
    size_t lo = 0, hi = sh->nlive;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (memcmp(sh->live[mid].kh, kh, 32) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void
live_insert(rm_shard_t *sh, size_t at, const uint8_t kh[32], uint64_t sn)
{
    if (sh->nlive == sh->caplive) {
        sh->caplive = sh->caplive ? sh->caplive * 2 : 8192;
        sh->live = xrealloc(sh->live, sh->caplive * sizeof *sh->live);
    }
    memmove(&sh->live[at + 1], &sh->live[at], (sh->nlive - at) * sizeof *sh->live);
    memcpy(sh->live[at].kh, kh, 32);
    sh->live[at].sn = sn;
    sh->nlive++;
}

static void
live_remove(rm_shard_t *sh, size_t at)
{
    memmove(&sh->live[at], &sh->live[at + 1], (sh->nlive - at - 1) * sizeof *sh->live);
    sh->nlive--;
}

rm *
rm_new(uint64_t compact_thres, uint32_t utilization_ratio, uint32_t utilization_div)
{
    if (utilization_div == 0)
        return NULL;
    rm *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    m->thres = compact_thres;
    m->ratio = utilization_ratio;
    m->div = utilization_div;
    for (unsigned s = 0; s < RM_SHARDS; s++) {
        for (unsigned i = 0; i < RM_SENTRIES_PER_SHARD; i++) {
            uint8_t key[32], nkh[32], kh[32];
            rm_sentry(s, i, key, nkh);
            uint64_t sn = append(m, s, key, 32, NULL, 0, nkh, 0, NULL, 0, "sentry");
            rm_key_hash(key, 32, 1, kh);
            live_insert(&m->sh[s], m->sh[s].nlive, kh, sn);
        }
    }
    return m;
}

void
rm_free(rm *m)
{
    if (m == NULL)
        return;
    for (unsigned s = 0; s < RM_SHARDS; s++) {
        rm_shard_t *sh = &m->sh[s];
        for (size_t i = 0; i < sh->n; i++)
            free(sh->ents[i].buf);
        free(sh->ents);
        free(sh->active);
        free(sh->live);
        free(sh->left_memo);
        free(sh->left_memo_ok);
    }
    for (size_t i = 0; i < m->nops; i++) {
        free(m->ops[i].key);
        free(m->ops[i].val);
    }
    free(m->ops);
    free(m);
}

void
rm_set_trace(rm *m, FILE *f)
{
    m->trace = f;
}

void
rm_set_scratch(rm *m, int scratch)
{
    m->scratch = scratch;
}

/* ------------------------------------------------------------------------------------ */
/* operations                                                                            */

static int
compactible(const rm *m, const rm_shard_t *sh)
{
    uint64_t live = sh->nlive;
    uint64_t span = sh->n - sh->sn_start;
    return live >= m->thres && live * m->div <= span * m->ratio;
}

static void
compact_step(rm *m, unsigned s)
{
    rm_shard_t *sh = &m->sh[s];
    uint64_t c = sh->sn_start;
    while (c < sh->n && !sh->active[c])
        c++;
    if (c >= sh->n) {
        fprintf(stderr, "refmodel: internal error: no live entry to compact\n");
        abort();
    }
    /* copy the fields first: append() may move sh->ents */
    rm_entry *e = &sh->ents[c];
    size_t kl = e_klen(e), vl = e_vlen(e);
    uint8_t key[255], nkh[32], kh[32];
    memcpy(key, e_key(e), kl);
    uint8_t *val = xrealloc(NULL, vl ? vl : 1);
    memcpy(val, e_val(e), vl);
    memcpy(nkh, e_nkh(e), 32);
    int64_t ver = e_version(e);
    e_kh(e, kh);
    uint64_t dsn[1] = {c};
    uint64_t nsn = append(m, s, key, kl, val, vl, nkh, ver, dsn, 1, "compact");
    free(val);
    size_t at = live_lb(sh, kh);
    if (at >= sh->nlive || memcmp(sh->live[at].kh, kh, 32) != 0 || sh->live[at].sn != c) {
        fprintf(stderr, "refmodel: internal error: compacted entry not in index\n");
        abort();
    }
    sh->live[at].sn = nsn;
    sh->sn_start = c + 1;
    m->compactions++;
}

/* Applies one surviving operation of transaction `version` to shard s. */
static void
apply_op(rm *m, unsigned s, const rm_op *op, int64_t version)
{
    rm_shard_t *sh = &m->sh[s];
    size_t at = live_lb(sh, op->kh);
    int exists = at < sh->nlive && memcmp(sh->live[at].kh, op->kh, 32) == 0;
    if (op->val != NULL && exists) {
        /* update */
        const rm_entry *e = &sh->ents[sh->live[at].sn];
        uint8_t nkh[32];
        memcpy(nkh, e_nkh(e), 32);
        uint64_t dsn[1] = {sh->live[at].sn};
        uint64_t nsn =
            append(m, s, op->key, op->kl, op->val, op->vl, nkh, version, dsn, 1, "update");
        sh->live[at].sn = nsn;
        if (compactible(m, sh))
            compact_step(m, s);
    } else if (op->val != NULL) {
        /* create */
        if (at == 0) {
            fprintf(stderr, "refmodel: internal error: no predecessor\n");
            abort();
        }
        uint64_t psn = sh->live[at - 1].sn;
        const rm_entry *p = &sh->ents[psn];
        uint8_t pnkh[32];
        memcpy(pnkh, e_nkh(p), 32);
        uint64_t nsn =
            append(m, s, op->key, op->kl, op->val, op->vl, pnkh, version, NULL, 0, "create");
        p = &sh->ents[psn]; /* append may have moved the array */
        size_t pkl = e_klen(p), pvl = e_vlen(p);
        uint8_t pkey[255];
        memcpy(pkey, e_key(p), pkl);
        uint8_t *pval = xrealloc(NULL, pvl ? pvl : 1);
        memcpy(pval, e_val(p), pvl);
        uint64_t dsn[1] = {psn};
        uint64_t npsn = append(m, s, pkey, pkl, pval, pvl, op->kh, version, dsn, 1, "create-pred");
        free(pval);
        sh->live[at - 1].sn = npsn;
        live_insert(sh, at, op->kh, nsn);
        if (compactible(m, sh)) {
            compact_step(m, s);
            compact_step(m, s);
        }
    } else if (exists) {
        /* delete */
        uint64_t dsn_d = sh->live[at].sn, psn = sh->live[at - 1].sn;
        uint8_t dnkh[32];
        memcpy(dnkh, e_nkh(&sh->ents[dsn_d]), 32);
        const rm_entry *p = &sh->ents[psn];
        size_t pkl = e_klen(p), pvl = e_vlen(p);
        uint8_t pkey[255];
        memcpy(pkey, e_key(p), pkl);
        uint8_t *pval = xrealloc(NULL, pvl ? pvl : 1);
        memcpy(pval, e_val(p), pvl);
        uint64_t dsn[2] = {dsn_d, psn};
        uint64_t npsn = append(m, s, pkey, pkl, pval, pvl, dnkh, version, dsn, 2, "delete-pred");
        free(pval);
        sh->live[at - 1].sn = npsn;
        live_remove(sh, at);
    }
    /* delete of an absent key: nothing */
}

static int
op_cmp(const void *a, const void *b)
{
    const rm_op *x = a, *y = b;
    return memcmp(x->kh, y->kh, 32);
}

/* Applies the queued ops of the current transaction and clears the queue. */
static void
flush_tx(rm *m)
{
    int64_t version = (int64_t)((m->cur_height << 24) + m->tx);
    /* last op wins: keep, for each key, only its last occurrence (O(n^2) on purpose) */
    rm_op *keep = xrealloc(NULL, (m->nops ? m->nops : 1) * sizeof *keep);
    size_t nkeep = 0;
    for (size_t i = 0; i < m->nops; i++) {
        int later = 0;
        for (size_t j = i + 1; j < m->nops && !later; j++)
            later = m->ops[j].kl == m->ops[i].kl &&
                    memcmp(m->ops[j].key, m->ops[i].key, m->ops[i].kl) == 0;
        if (!later)
            keep[nkeep++] = m->ops[i];
    }
    /* keys are unique now, so (key_hash, op type) order is key_hash order */
    qsort(keep, nkeep, sizeof *keep, op_cmp);
    for (size_t i = 0; i < nkeep; i++)
        apply_op(m, keep[i].kh[0] >> 4, &keep[i], version);
    free(keep);
    for (size_t i = 0; i < m->nops; i++) {
        free(m->ops[i].key);
        free(m->ops[i].val);
    }
    m->nops = 0;
}

int
rm_begin_block(rm *m, uint64_t height)
{
    if (m->in_block || height != m->height + 1)
        return -1;
    m->in_block = 1;
    m->cur_height = height;
    m->tx = 0;
    for (unsigned s = 0; s < RM_SHARDS; s++)
        m->sh[s].block_start_sn = m->sh[s].n;
    return 0;
}

void
rm_tx(rm *m)
{
    if (!m->in_block)
        return;
    flush_tx(m);
    m->tx++;
}

static int
queue(rm *m, const void *key, size_t kl, const void *val, size_t vl, int is_put)
{
    if (!m->in_block || kl == 0 || kl > 255)
        return -1;
    if (is_put && (vl == 0 || vl > 0xFFFFFF))
        return -1;
    if (m->nops == m->capops) {
        m->capops = m->capops ? m->capops * 2 : 64;
        m->ops = xrealloc(m->ops, m->capops * sizeof *m->ops);
    }
    rm_op *op = &m->ops[m->nops++];
    op->key = xrealloc(NULL, kl);
    memcpy(op->key, key, kl);
    op->kl = kl;
    op->val = NULL;
    op->vl = 0;
    if (is_put) {
        op->val = xrealloc(NULL, vl);
        memcpy(op->val, val, vl);
        op->vl = vl;
    }
    sha256(op->key, kl, op->kh);
    return 0;
}

int
rm_put(rm *m, const void *key, size_t kl, const void *val, size_t vl)
{
    return queue(m, key, kl, val, vl, 1);
}

int
rm_del(rm *m, const void *key, size_t kl)
{
    return queue(m, key, kl, NULL, 0, 0);
}

int
rm_commit(rm *m, uint8_t root[32])
{
    if (!m->in_block)
        return -1;
    flush_tx(m);
    m->in_block = 0;
    m->height = m->cur_height;
    if (root)
        rm_state_root(m, root);
    return 0;
}

uint64_t
rm_height(const rm *m)
{
    return m->height;
}

int
rm_get(const rm *m, const void *key, size_t kl, const uint8_t **val, size_t *vlen)
{
    uint8_t kh[32];
    if (kl == 0)
        return 0;
    sha256(key, kl, kh);
    const rm_shard_t *sh = &m->sh[kh[0] >> 4];
    size_t at = live_lb(sh, kh);
    if (at >= sh->nlive || memcmp(sh->live[at].kh, kh, 32) != 0)
        return 0;
    const rm_entry *e = &sh->ents[sh->live[at].sn];
    if (e_klen(e) != kl || memcmp(e_key(e), key, kl) != 0) {
        fprintf(stderr, "refmodel: internal error: key mismatch in index\n");
        abort();
    }
    if (val)
        *val = e_val(e);
    if (vlen)
        *vlen = e_vlen(e);
    return 1;
}

/* ------------------------------------------------------------------------------------ */
/* roots, from scratch                                                                   */

/* Left root of twig t of shard sh: 11-level tree over 2048 leaves (null-padded). */
static void
left_root(const rm_shard_t *sh, uint64_t t, const uint8_t null_leaf[32], uint8_t out[32])
{
    static uint8_t nodes[RM_TWIG_LEAVES][32];
    uint64_t base = t << RM_TWIG_BITS;
    for (unsigned i = 0; i < RM_TWIG_LEAVES; i++) {
        uint64_t sn = base + i;
        memcpy(nodes[i], sn < sh->n ? sh->ents[sn].hash : null_leaf, 32);
    }
    /* level L node j = H2(L-1, node(L-1, 2j), node(L-1, 2j+1)), in place */
    for (unsigned level = 1, width = RM_TWIG_LEAVES / 2; level <= 11; level++, width /= 2)
        for (unsigned j = 0; j < width; j++)
            rm_h2((uint8_t)(level - 1), nodes[2 * j], nodes[2 * j + 1], nodes[j]);
    memcpy(out, nodes[0], 32);
}

/* Root of twig t of shard sh: left root + ActiveBits as they stand now. */
static void
twig_root(rm *m, rm_shard_t *sh, uint64_t t, const uint8_t null_leaf[32], uint8_t out[32])
{
    uint8_t bits[256] = {0}, left[32];
    uint64_t base = t << RM_TWIG_BITS;
    for (unsigned i = 0; i < RM_TWIG_LEAVES; i++) {
        uint64_t sn = base + i;
        if (sn < sh->n && sh->active[sn])
            bits[i >> 3] |= (uint8_t)(1u << (i & 7));
    }
    int full = base + RM_TWIG_LEAVES <= sh->n;
    if (full && !m->scratch) {
        if (t >= sh->nmemo) {
            size_t nn = (size_t)t + 16;
            sh->left_memo = xrealloc(sh->left_memo, nn * 32);
            sh->left_memo_ok = xrealloc(sh->left_memo_ok, nn);
            memset(sh->left_memo_ok + sh->nmemo, 0, nn - sh->nmemo);
            sh->nmemo = nn;
        }
        if (!sh->left_memo_ok[t]) {
            left_root(sh, t, null_leaf, sh->left_memo[t]);
            sh->left_memo_ok[t] = 1;
        }
        memcpy(left, sh->left_memo[t], 32);
    } else {
        left_root(sh, t, null_leaf, left);
    }
    rm_twig_root_from(left, bits, out);
}

void
rm_shard_root(rm *m, unsigned shard, uint8_t out[32])
{
    rm_shard_t *sh = &m->sh[shard];
    uint64_t y = sh->n >> RM_TWIG_BITS; /* youngest twig id, >= 2 thanks to the sentries */
    unsigned lg = 0;
    while ((y >> (lg + 1)) != 0)
        lg++;
    unsigned max_level = 13 + lg;
    size_t slots = (size_t)1 << (max_level - 12);
    uint8_t null_leaf[32], null_twig[32];
    rm_null_leaf(null_leaf);
    rm_null_node(12, null_twig);
    uint8_t(*lvl)[32] = xrealloc(NULL, slots * 32);
    for (size_t t = 0; t < slots; t++) {
        if ((t << RM_TWIG_BITS) < sh->n)
            twig_root(m, sh, t, null_leaf, lvl[t]);
        else
            memcpy(lvl[t], null_twig, 32);
    }
    for (unsigned level = 13; level <= max_level; level++) {
        slots /= 2;
        for (size_t j = 0; j < slots; j++)
            rm_h2((uint8_t)(level - 1), lvl[2 * j], lvl[2 * j + 1], lvl[j]);
    }
    memcpy(out, lvl[0], 32);
    free(lvl);
}

void
rm_state_root(rm *m, uint8_t out[32])
{
    uint8_t r[RM_SHARDS][32];
    for (unsigned s = 0; s < RM_SHARDS; s++)
        rm_shard_root(m, s, r[s]);
    unsigned n = RM_SHARDS;
    for (uint8_t tag = 64; n > 1; tag++) {
        n /= 2;
        for (unsigned i = 0; i < n; i++)
            rm_h2(tag, r[2 * i], r[2 * i + 1], r[i]);
    }
    memcpy(out, r[0], 32);
}

uint64_t
rm_compactions(const rm *m)
{
    return m->compactions;
}
uint64_t
rm_next_sn(const rm *m, unsigned shard)
{
    return m->sh[shard].n;
}
uint64_t
rm_live(const rm *m, unsigned shard)
{
    return m->sh[shard].nlive;
}
uint64_t
rm_sn_start(const rm *m, unsigned shard)
{
    return m->sh[shard].sn_start;
}
uint64_t
rm_block_start_sn(const rm *m, unsigned shard)
{
    return m->sh[shard].block_start_sn;
}

void
rm_dump_entries(const rm *m, unsigned shard, uint64_t from_sn, FILE *f)
{
    const rm_shard_t *sh = &m->sh[shard];
    for (uint64_t sn = from_sn; sn < sh->n; sn++) {
        trace_entry(f, shard, sn, &sh->ents[sn]);
        fprintf(f, "    active=%d\n", sh->active[sn]);
    }
}
