/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpt.c -- the MPT-on-RocksDB baseline (see mpt.h for the format and how it differs from
 * go-ethereum). Written here for qmdb-bench; no code taken from go-ethereum.
 *
 * Owns: the in-memory dirty trie (mutable nodes reachable from the root through refs that
 * hold either a pointer to a dirty node or the hash of a stored one), node loading by path
 * through the clean-node cache (mpt_cache.c) and RocksDB, node encoding/decoding, the flat
 * key -> value table and its per-block overlay, and the per-block commit (bottom-up hashing
 * into one RocksDB WriteBatch that overwrites changed node paths, deletes vanished ones,
 * updates the flat table and the root metadata).
 *
 * Path keying relies on one invariant: a stored (not yet loaded) subtrie never changes its
 * absolute path within a block. Splits and collapses only move nodes that were loaded into
 * dirty nodes first (a branch collapsing onto a branch child keeps that child where it is,
 * under a new one-nibble extension). So every stored node whose path may vanish was loaded
 * (or, for a deleted leaf, looked at) and its path recorded in t->old; at commit every
 * dirty node is written at its final path and the recorded paths not rewritten are deleted.
 * Thread: the caller's thread only (one user at a time); RocksDB runs its own threads.
 */
#include "mpt.h"

#include "mpt_cache.h"
#include "rocksdb_tune.h"

#include <openssl/sha.h>
#include <rocksdb/c.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define META_KEY "\0mpt/meta"
#define META_KEY_LEN 9
#define MAX_ENC_FIXED (3 + 16 * 32 + 10)

typedef struct mpt_node mpt_node;

typedef struct mpt_ref {
    mpt_node *n;   /* dirty in-memory node, or NULL */
    uint8_t h[32]; /* hash of the stored node (valid when n == NULL and set) */
    uint8_t set;   /* 0 = empty subtrie */
} mpt_ref;

struct mpt_node {
    uint8_t type;
    uint8_t plen;     /* leaf/extension path length in nibbles */
    uint8_t path[64]; /* one nibble per byte */
    uint32_t vlen;    /* leaf value length */
    uint8_t *val;     /* leaf value (stored after kids[]) */
    mpt_ref kids[];   /* extension: 1, branch: 16, leaf: 0 */
};

/* A per-block open-addressing table of path keys (MPT_CKEY bytes, see mpt_cache.h). Used
 * twice: t->old, the paths of stored nodes loaded or dropped this block (flag = rewritten
 * at commit), and t->pend, this block's flat-table changes keyed by (64, SHA-256(key))
 * (flag = deleted, else v/vlen is the new value). */
typedef struct pent {
    uint8_t k[MPT_CKEY];
    uint8_t used, flag;
    uint32_t vlen;
    uint8_t *v;
} pent;

typedef struct ptab {
    pent *s;
    size_t cap, n; /* cap is a power of two; n <= cap / 2 */
} ptab;

struct mpt {
    rocksdb_t *db;
    rocksdb_options_t *opt;
    rocksdb_block_based_table_options_t *bbt;
    rocksdb_cache_t *bcache;
    rocksdb_writeoptions_t *wo;
    rocksdb_readoptions_t *ro;
    rocksdb_writebatch_t *wb;
    ncache c;
    ptab old, pend;
    mpt_ref root;      /* current (possibly dirty) root */
    uint8_t croot[32]; /* root of the last commit */
    uint64_t height, count;
    uint8_t *eb; /* encode buffer */
    size_t ebcap;
    uint64_t hits, db_reads, gets, flat_reads, nodes_written, bytes_written, nodes_deleted, dirty;
    char err[256];
};

static uint8_t EMPTY_ROOT[32];

static int
fail(mpt *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->err, sizeof(t->err), fmt, ap);
    va_end(ap);
    return -1;
}

/* ---------------------------------------------------------------- per-block tables */

static pent *
ptab_get(const ptab *p, const uint8_t k[MPT_CKEY])
{
    if (!p->n)
        return NULL;
    for (size_t i = (size_t)mpt_ckey_hash(k) & (p->cap - 1);; i = (i + 1) & (p->cap - 1)) {
        pent *e = &p->s[i];
        if (!e->used)
            return NULL;
        if (memcmp(e->k, k, MPT_CKEY) == 0)
            return e;
    }
}

static int
ptab_grow(ptab *p)
{
    size_t cap = p->cap ? p->cap * 2 : 1024;
    pent *s = calloc(cap, sizeof(*s));
    if (!s)
        return -1;
    for (size_t j = 0; j < p->cap; j++)
        if (p->s[j].used) {
            size_t i = (size_t)mpt_ckey_hash(p->s[j].k) & (cap - 1);
            while (s[i].used)
                i = (i + 1) & (cap - 1);
            s[i] = p->s[j];
        }
    free(p->s);
    p->s = s;
    p->cap = cap;
    return 0;
}

/* Returns the entry for k, adding a zeroed one (used = 1) if missing; NULL on OOM. */
static pent *
ptab_add(ptab *p, const uint8_t k[MPT_CKEY])
{
    pent *e = ptab_get(p, k);
    if (e)
        return e;
    if (2 * (p->n + 1) > p->cap && ptab_grow(p) != 0)
        return NULL;
    size_t i = (size_t)mpt_ckey_hash(k) & (p->cap - 1);
    while (p->s[i].used)
        i = (i + 1) & (p->cap - 1);
    e = &p->s[i];
    memcpy(e->k, k, MPT_CKEY);
    e->used = 1;
    p->n++;
    return e;
}

static void
ptab_clear(ptab *p)
{
    if (!p->n)
        return;
    for (size_t i = 0; i < p->cap; i++)
        free(p->s[i].v);
    memset(p->s, 0, p->cap * sizeof(*p->s));
    p->n = 0;
}

static void
ptab_free(ptab *p)
{
    ptab_clear(p);
    free(p->s);
    memset(p, 0, sizeof(*p));
}

/* ---------------------------------------------------------------- encoding */

static uint8_t
nib_at(const uint8_t *packed, int i)
{
    return (uint8_t)((i & 1) ? (packed[i >> 1] & 0x0f) : (packed[i >> 1] >> 4));
}

static size_t
pack_path(uint8_t *out, const uint8_t *nibs, int plen)
{
    size_t nb = (size_t)(plen + 1) / 2;
    memset(out, 0, nb);
    for (int i = 0; i < plen; i++)
        out[i >> 1] |= (uint8_t)((i & 1) ? nibs[i] : (uint8_t)(nibs[i] << 4));
    return nb;
}

/* The path key of the node at nibble path nibs[0..n): n, then the packed nibbles, zero
 * padded to MPT_CKEY bytes. */
static void
make_ckey(uint8_t k[MPT_CKEY], const uint8_t *nibs, int n)
{
    memset(k, 0, MPT_CKEY);
    k[0] = (uint8_t)n;
    pack_path(k + 1, nibs, n);
}

/* The RocksDB key of a node: 'n', nibble count, packed nibbles; returns its length. */
static size_t
node_dbkey(char out[1 + MPT_CKEY], const uint8_t k[MPT_CKEY])
{
    out[0] = 'n';
    size_t len = 1 + (size_t)(k[0] + 1) / 2;
    memcpy(out + 1, k, len);
    return 1 + len;
}

static void
flat_dbkey(char out[33], const uint8_t path[32])
{
    out[0] = 'f';
    memcpy(out + 1, path, 32);
}

static size_t
put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

/* Returns bytes consumed, 0 on malformed input. */
static size_t
get_varint(const uint8_t *p, size_t avail, uint64_t *v)
{
    uint64_t x = 0;
    for (size_t i = 0; i < avail && i < 10; i++) {
        x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *v = x;
            return i + 1;
        }
    }
    return 0;
}

static int
eb_reserve(mpt *t, size_t n)
{
    if (n <= t->ebcap)
        return 0;
    size_t cap = t->ebcap ? t->ebcap : 1024;
    while (cap < n)
        cap *= 2;
    uint8_t *b = realloc(t->eb, cap);
    if (!b)
        return fail(t, "out of memory");
    t->eb = b;
    t->ebcap = cap;
    return 0;
}

/* Encodes n (whose children are all hashed) into t->eb; returns the length or 0. */
static size_t
encode(mpt *t, const mpt_node *n)
{
    if (eb_reserve(t, MAX_ENC_FIXED + 40 + (size_t)n->vlen) != 0)
        return 0;
    uint8_t *o = t->eb;
    size_t len = 0;
    o[len++] = n->type;
    if (n->type == MPT_BRANCH) {
        uint16_t bm = 0;
        for (int i = 0; i < 16; i++)
            if (n->kids[i].set)
                bm |= (uint16_t)(1u << i);
        o[len++] = (uint8_t)(bm & 0xff);
        o[len++] = (uint8_t)(bm >> 8);
        for (int i = 0; i < 16; i++)
            if (n->kids[i].set) {
                memcpy(o + len, n->kids[i].h, 32);
                len += 32;
            }
        o[len++] = 0; /* empty branch value */
        return len;
    }
    o[len++] = n->plen;
    len += pack_path(o + len, n->path, n->plen);
    if (n->type == MPT_EXT) {
        memcpy(o + len, n->kids[0].h, 32);
        return len + 32;
    }
    len += put_varint(o + len, n->vlen);
    memcpy(o + len, n->val, n->vlen);
    return len + n->vlen;
}

static mpt_node *
node_new(mpt *t, uint8_t type, size_t vlen)
{
    int nk = type == MPT_BRANCH ? 16 : type == MPT_EXT ? 1 : 0;
    size_t sz = sizeof(mpt_node) + (size_t)nk * sizeof(mpt_ref) + vlen;
    mpt_node *n = calloc(1, sz);
    if (!n) {
        fail(t, "out of memory");
        return NULL;
    }
    n->type = type;
    n->vlen = (uint32_t)vlen;
    n->val = (uint8_t *)&n->kids[nk];
    t->dirty++;
    return n;
}

static void
node_free(mpt *t, mpt_node *n)
{
    if (!n)
        return;
    free(n);
    t->dirty--;
}

static mpt_node *
leaf_new(mpt *t, const uint8_t *nibs, int plen, const void *v, size_t vl)
{
    mpt_node *n = node_new(t, MPT_LEAF, vl);
    if (!n)
        return NULL;
    n->plen = (uint8_t)plen;
    memcpy(n->path, nibs, (size_t)plen);
    if (vl)
        memcpy(n->val, v, vl);
    return n;
}

static int
bad_node(mpt *t, const uint8_t h[32])
{
    return fail(t, "corrupt trie node %02x%02x%02x%02x...", h[0], h[1], h[2], h[3]);
}

/* Decodes a stored node into a fresh dirty node. */
static mpt_node *
decode(mpt *t, const uint8_t h[32], const uint8_t *e, size_t len)
{
    mpt_node *n = NULL;
    if (len < 2)
        goto bad;
    if (e[0] == MPT_BRANCH) {
        if (len < 4)
            goto bad;
        unsigned bm = (unsigned)e[1] | ((unsigned)e[2] << 8);
        size_t need = 3 + 32 * (size_t)__builtin_popcount(bm) + 1;
        if (len != need || e[len - 1] != 0)
            goto bad;
        if (!(n = node_new(t, MPT_BRANCH, 0)))
            return NULL;
        size_t off = 3;
        for (int i = 0; i < 16; i++)
            if (bm & (1u << i)) {
                n->kids[i].set = 1;
                memcpy(n->kids[i].h, e + off, 32);
                off += 32;
            }
        return n;
    }
    if (e[0] != MPT_LEAF && e[0] != MPT_EXT)
        goto bad;
    int plen = e[1];
    size_t pb = (size_t)(plen + 1) / 2;
    if (plen > 64 || len < 2 + pb)
        goto bad;
    if (e[0] == MPT_EXT) {
        if (plen == 0 || len != 2 + pb + 32)
            goto bad;
        if (!(n = node_new(t, MPT_EXT, 0)))
            return NULL;
        n->kids[0].set = 1;
        memcpy(n->kids[0].h, e + 2 + pb, 32);
    } else {
        uint64_t vl;
        size_t vb = get_varint(e + 2 + pb, len - 2 - pb, &vl);
        if (!vb || vl != len - 2 - pb - vb)
            goto bad;
        if (!(n = node_new(t, MPT_LEAF, (size_t)vl)))
            return NULL;
        memcpy(n->val, e + 2 + pb + vb, (size_t)vl);
    }
    n->plen = (uint8_t)plen;
    for (int i = 0; i < plen; i++)
        n->path[i] = nib_at(e + 2, i);
    return n;
bad:
    bad_node(t, h);
    return NULL;
}

/* Fetches the encoding of the committed node at path key k, whose hash must be h. The
 * pointer stays valid until the next cache insertion. A node read from RocksDB is checked
 * against h (as is a cache hit in builds without NDEBUG). */
static int
load(mpt *t, const uint8_t h[32], const uint8_t k[MPT_CKEY], const uint8_t **enc, size_t *len)
{
    uint8_t got[32];
    cent *e = mpt_cache_find(&t->c, k);
    if (e) {
        t->hits++;
#ifndef NDEBUG
        SHA256(e->d, e->len, got);
        if (memcmp(got, h, 32) != 0)
            return fail(t, "cached trie node at depth %d does not match its hash", k[0]);
#endif
    } else {
        char key[1 + MPT_CKEY];
        size_t kl = node_dbkey(key, k);
        char *rerr = NULL;
        rocksdb_pinnableslice_t *ps = rocksdb_get_pinned(t->db, t->ro, key, kl, &rerr);
        if (rerr) {
            fail(t, "rocksdb get: %s", rerr);
            rocksdb_free(rerr);
            return -1;
        }
        size_t n = 0;
        const char *v = ps ? rocksdb_pinnableslice_value(ps, &n) : NULL;
        if (!v) {
            rocksdb_pinnableslice_destroy(ps);
            return fail(t, "trie node at depth %d (hash %02x%02x%02x%02x...) missing from RocksDB",
                        k[0], h[0], h[1], h[2], h[3]);
        }
        SHA256((const uint8_t *)v, n, got);
        if (memcmp(got, h, 32) != 0) {
            rocksdb_pinnableslice_destroy(ps);
            return fail(t, "trie node at depth %d in RocksDB does not match its hash", k[0]);
        }
        e = mpt_cache_put(&t->c, k, v, n);
        rocksdb_pinnableslice_destroy(ps);
        if (!e)
            return fail(t, "out of memory");
        t->db_reads++;
    }
    *enc = e->d;
    *len = e->len;
    return 0;
}

/* Records that the stored node at path key k may vanish at commit. */
static int
note_old(mpt *t, const uint8_t k[MPT_CKEY])
{
    return ptab_add(&t->old, k) ? 0 : fail(t, "out of memory");
}

/* Makes r (which must be set), the node at nibble path nibs[0..depth), point at a mutable
 * in-memory node. */
static mpt_node *
mut(mpt *t, mpt_ref *r, const uint8_t *nibs, int depth)
{
    if (r->n)
        return r->n;
    uint8_t k[MPT_CKEY];
    make_ckey(k, nibs, depth);
    const uint8_t *enc = NULL;
    size_t len = 0;
    if (load(t, r->h, k, &enc, &len) != 0)
        return NULL;
    mpt_node *n = decode(t, r->h, enc, len);
    if (!n)
        return NULL;
    if (note_old(t, k) != 0) {
        node_free(t, n);
        return NULL;
    }
    r->n = n;
    return n;
}

static void
ref_node(mpt_ref *r, mpt_node *n)
{
    r->n = n;
    r->set = 1;
}

static void
free_tree(mpt *t, mpt_node *n)
{
    if (!n)
        return;
    int nk = n->type == MPT_BRANCH ? 16 : n->type == MPT_EXT ? 1 : 0;
    for (int i = 0; i < nk; i++)
        free_tree(t, n->kids[i].n);
    node_free(t, n);
}

static int
common_prefix(const uint8_t *a, int al, const uint8_t *b, int bl)
{
    int i = 0;
    while (i < al && i < bl && a[i] == b[i])
        i++;
    return i;
}

/* ---------------------------------------------------------------- flat table */

static void
flat_ckey(uint8_t k[MPT_CKEY], const uint8_t path[32])
{
    k[0] = 64;
    memcpy(k + 1, path, 32);
}

/* The current value of path: this block's overlay, else one RocksDB get in the flat
 * table. 0 = found, 1 = absent, -1 = error. */
static int
flat_get(mpt *t, const uint8_t path[32], void *buf, size_t cap, size_t *vlen)
{
    uint8_t k[MPT_CKEY];
    flat_ckey(k, path);
    pent *e = ptab_get(&t->pend, k);
    if (e) {
        if (e->flag)
            return 1;
        *vlen = e->vlen;
        if (e->vlen && cap)
            memcpy(buf, e->v, e->vlen < cap ? e->vlen : cap);
        return 0;
    }
    char key[33];
    flat_dbkey(key, path);
    char *rerr = NULL;
    t->flat_reads++;
    rocksdb_pinnableslice_t *ps = rocksdb_get_pinned(t->db, t->ro, key, sizeof(key), &rerr);
    if (rerr) {
        fail(t, "rocksdb get: %s", rerr);
        rocksdb_free(rerr);
        return -1;
    }
    size_t n = 0;
    const char *v = ps ? rocksdb_pinnableslice_value(ps, &n) : NULL;
    int rc = 1;
    if (v) {
        *vlen = n;
        if (n && cap)
            memcpy(buf, v, n < cap ? n : cap);
        rc = 0;
    }
    rocksdb_pinnableslice_destroy(ps);
    return rc;
}

/* Records this block's new value (v != NULL) or deletion of path. */
static int
flat_set(mpt *t, const uint8_t path[32], const void *v, size_t vl)
{
    uint8_t k[MPT_CKEY];
    flat_ckey(k, path);
    pent *e = ptab_add(&t->pend, k);
    if (!e)
        return fail(t, "out of memory");
    if (!v) {
        e->flag = 1;
        return 0;
    }
    if (!e->v || e->vlen < vl) {
        uint8_t *b = realloc(e->v, vl ? vl : 1);
        if (!b)
            return fail(t, "out of memory");
        e->v = b;
    }
    if (vl)
        memcpy(e->v, v, vl);
    e->vlen = (uint32_t)vl;
    e->flag = 0;
    return 0;
}

int
mpt_get_path(mpt *t, const uint8_t path[32], void *buf, size_t cap, size_t *vlen)
{
    t->gets++;
    return flat_get(t, path, buf, cap, vlen);
}

/* ---------------------------------------------------------------- insert / delete */

/* Inserts full (64 nibbles) under r, the node at path full[0..d). */
static int
ins(mpt *t, mpt_ref *r, const uint8_t *full, int d, const void *v, size_t vl)
{
    const uint8_t *p = full + d;
    int pl = 64 - d;
    if (!r->set) {
        mpt_node *l = leaf_new(t, p, pl, v, vl);
        if (!l)
            return -1;
        ref_node(r, l);
        t->count++;
        return 0;
    }
    mpt_node *n = mut(t, r, full, d);
    if (!n)
        return -1;
    if (n->type == MPT_BRANCH) {
        if (pl == 0)
            return fail(t, "trie deeper than the path");
        return ins(t, &n->kids[p[0]], full, d + 1, v, vl);
    }
    int c = common_prefix(n->path, n->plen, p, pl);
    if (n->type == MPT_EXT && c == n->plen)
        return ins(t, &n->kids[0], full, d + c, v, vl);
    if (n->type == MPT_LEAF && c == n->plen && c == pl) { /* same key: new value */
        if (n->vlen == vl) {
            if (vl)
                memcpy(n->val, v, vl);
            return 0;
        }
        mpt_node *l = leaf_new(t, p, pl, v, vl);
        if (!l)
            return -1;
        node_free(t, n);
        ref_node(r, l);
        return 0;
    }
    if (c >= n->plen || c >= pl)
        return fail(t, "paths of different lengths in the trie");
    /* Split at nibble c: a branch holding the old node's rest and a new leaf, plus an
     * extension below the branch (old extension with a longer path) or above it (shared
     * prefix of a split leaf). Everything is allocated before anything is changed. The old
     * extension's child keeps its absolute path (d + old plen). */
    int rest = n->plen - c - 1;
    int need_low = n->type == MPT_EXT && rest > 0;
    int need_top = n->type == MPT_LEAF && c > 0;
    mpt_node *b = node_new(t, MPT_BRANCH, 0);
    mpt_node *l = leaf_new(t, p + c + 1, pl - c - 1, v, vl);
    mpt_node *lo = need_low ? node_new(t, MPT_EXT, 0) : NULL;
    mpt_node *top = need_top ? node_new(t, MPT_EXT, 0) : NULL;
    if (!b || !l || (need_low && !lo) || (need_top && !top)) {
        node_free(t, b);
        node_free(t, l);
        node_free(t, lo);
        node_free(t, top);
        return -1;
    }
    uint8_t oi = n->path[c];
    if (n->type == MPT_LEAF) {
        memmove(n->path, n->path + c + 1, (size_t)rest);
        n->plen = (uint8_t)rest;
        ref_node(&b->kids[oi], n);
    } else if (need_low) {
        lo->plen = (uint8_t)rest;
        memcpy(lo->path, n->path + c + 1, (size_t)rest);
        lo->kids[0] = n->kids[0];
        ref_node(&b->kids[oi], lo);
    } else {
        b->kids[oi] = n->kids[0];
    }
    ref_node(&b->kids[p[c]], l);
    t->count++;
    if (n->type == MPT_EXT) {
        if (c == 0) {
            node_free(t, n);
            ref_node(r, b);
        } else { /* keep n as the shortened extension */
            n->plen = (uint8_t)c;
            ref_node(&n->kids[0], b);
        }
    } else if (need_top) {
        top->plen = (uint8_t)c;
        memcpy(top->path, p, (size_t)c);
        ref_node(&top->kids[0], b);
        ref_node(r, top);
    } else {
        ref_node(r, b);
    }
    return 0;
}

/* Deletes the key full (64 nibbles), which must exist under r, the node at full[0..d). */
static int
del(mpt *t, mpt_ref *r, const uint8_t *full, int d)
{
    if (!r->n) { /* a stored leaf is dropped without decoding it */
        uint8_t k[MPT_CKEY];
        make_ckey(k, full, d);
        const uint8_t *e = NULL;
        size_t len = 0;
        if (load(t, r->h, k, &e, &len) != 0)
            return -1;
        if (len >= 2 && e[0] == MPT_LEAF) {
            if (note_old(t, k) != 0)
                return -1;
            memset(r, 0, sizeof(*r));
            t->count--;
            return 0;
        }
    }
    mpt_node *n = mut(t, r, full, d);
    if (!n)
        return -1;
    if (n->type == MPT_LEAF) {
        node_free(t, n);
        memset(r, 0, sizeof(*r));
        t->count--;
        return 0;
    }
    if (n->type == MPT_EXT) {
        if (del(t, &n->kids[0], full, d + n->plen) != 0)
            return -1;
        mpt_node *c = n->kids[0].n;
        if (!n->kids[0].set || !c)
            return fail(t, "extension lost its child");
        if (c->type == MPT_BRANCH)
            return 0;
        if (n->plen + c->plen > 64)
            return fail(t, "merged path too long");
        /* The child collapsed into an extension or a leaf: absorb our path into it. */
        memmove(c->path + n->plen, c->path, c->plen);
        memcpy(c->path, n->path, n->plen);
        c->plen = (uint8_t)(c->plen + n->plen);
        node_free(t, n);
        ref_node(r, c);
        return 0;
    }
    if (d >= 64)
        return fail(t, "trie deeper than the path");
    if (del(t, &n->kids[full[d]], full, d + 1) != 0)
        return -1;
    int cnt = 0, only = -1;
    for (int i = 0; i < 16; i++)
        if (n->kids[i].set) {
            cnt++;
            only = i;
        }
    if (cnt >= 2)
        return 0;
    if (cnt == 0)
        return fail(t, "branch with a single child found");
    /* One child left: the branch collapses. The child sits at path full[0..d) + only. */
    uint8_t kp[64];
    memcpy(kp, full, (size_t)d);
    kp[d] = (uint8_t)only;
    mpt_ref *k = &n->kids[only];
    uint8_t ktype;
    if (k->n) {
        ktype = k->n->type;
    } else {
        uint8_t ck[MPT_CKEY];
        make_ckey(ck, kp, d + 1);
        const uint8_t *e = NULL;
        size_t len = 0;
        if (load(t, k->h, ck, &e, &len) != 0)
            return -1;
        if (len < 2)
            return bad_node(t, k->h);
        ktype = e[0];
    }
    if (ktype == MPT_BRANCH) { /* branch child stays where it is, under a 1-nibble extension */
        mpt_node *e = node_new(t, MPT_EXT, 0);
        if (!e)
            return -1;
        e->plen = 1;
        e->path[0] = (uint8_t)only;
        e->kids[0] = *k;
        node_free(t, n);
        ref_node(r, e);
        return 0;
    }
    mpt_node *c = mut(t, k, kp, d + 1); /* moves up to path d: its old path is recorded */
    if (!c)
        return -1;
    if (c->plen >= 64)
        return fail(t, "merged path too long");
    memmove(c->path + 1, c->path, c->plen);
    c->path[0] = (uint8_t)only;
    c->plen++;
    node_free(t, n);
    ref_node(r, c);
    return 0;
}

static void
to_nibbles(const uint8_t path[32], uint8_t p[64])
{
    for (int i = 0; i < 32; i++) {
        p[2 * i] = path[i] >> 4;
        p[2 * i + 1] = path[i] & 0x0f;
    }
}

int
mpt_put_path(mpt *t, const uint8_t path[32], const void *v, size_t vl)
{
    if (vl > 0xffffffffu)
        return fail(t, "value too large");
    uint8_t p[64];
    to_nibbles(path, p);
    if (ins(t, &t->root, p, 0, v, vl) != 0)
        return -1;
    return flat_set(t, path, v ? v : "", vl);
}

int
mpt_del_path(mpt *t, const uint8_t path[32])
{
    uint8_t tmp[1];
    size_t vl;
    int rc = flat_get(t, path, tmp, 0, &vl);
    if (rc != 0)
        return rc; /* absent (1) or error */
    uint8_t p[64];
    to_nibbles(path, p);
    if (del(t, &t->root, p, 0) != 0)
        return -1;
    return flat_set(t, path, NULL, 0);
}

void
mpt_key_path(const void *k, size_t kl, uint8_t path[32])
{
    SHA256(k, kl, path);
}

int
mpt_put(mpt *t, const void *k, size_t kl, const void *v, size_t vl)
{
    uint8_t path[32];
    mpt_key_path(k, kl, path);
    return mpt_put_path(t, path, v, vl);
}

int
mpt_del(mpt *t, const void *k, size_t kl)
{
    uint8_t path[32];
    mpt_key_path(k, kl, path);
    return mpt_del_path(t, path);
}

int
mpt_get(mpt *t, const void *k, size_t kl, void *buf, size_t cap, size_t *vlen)
{
    uint8_t path[32];
    mpt_key_path(k, kl, path);
    return mpt_get_path(t, path, buf, cap, vlen);
}

/* ---------------------------------------------------------------- commit */

/* Hashes the dirty subtrie at r, the node at nibs[0..depth), bottom-up and puts every dirty
 * node into the WriteBatch (and the cache) under its path. nibs has room for 64 nibbles. */
static int
hash_ref(mpt *t, mpt_ref *r, uint8_t *nibs, int depth)
{
    mpt_node *n = r->n;
    if (!n)
        return 0;
    if (n->type == MPT_BRANCH) {
        if (depth >= 64)
            return fail(t, "trie deeper than the path");
        for (int i = 0; i < 16; i++)
            if (n->kids[i].n) {
                nibs[depth] = (uint8_t)i;
                if (hash_ref(t, &n->kids[i], nibs, depth + 1) != 0)
                    return -1;
            }
    } else if (n->type == MPT_EXT) {
        if (depth + n->plen > 64)
            return fail(t, "trie deeper than the path");
        memcpy(nibs + depth, n->path, n->plen);
        if (hash_ref(t, &n->kids[0], nibs, depth + n->plen) != 0)
            return -1;
    }
    size_t len = encode(t, n);
    if (!len)
        return -1;
    SHA256(t->eb, len, r->h);
    uint8_t k[MPT_CKEY];
    make_ckey(k, nibs, depth);
    char key[1 + MPT_CKEY];
    size_t kl = node_dbkey(key, k);
    rocksdb_writebatch_put(t->wb, key, kl, (const char *)t->eb, len);
    if (!mpt_cache_put(&t->c, k, t->eb, len))
        return fail(t, "out of memory");
    pent *o = ptab_get(&t->old, k);
    if (o)
        o->flag = 1; /* overwritten: no delete */
    t->nodes_written++;
    t->bytes_written += len;
    node_free(t, n);
    r->n = NULL;
    return 0;
}

static void
put_u64(uint8_t *o, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        o[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

int
mpt_commit(mpt *t, uint64_t height, uint8_t root[32])
{
    rocksdb_writebatch_clear(t->wb);
    uint8_t nibs[64];
    if (hash_ref(t, &t->root, nibs, 0) != 0)
        return -1;
    char key[1 + MPT_CKEY];
    for (size_t i = 0; i < t->old.cap; i++) { /* vanished paths */
        pent *o = &t->old.s[i];
        if (!o->used || o->flag)
            continue;
        size_t kl = node_dbkey(key, o->k);
        rocksdb_writebatch_delete(t->wb, key, kl);
        mpt_cache_del(&t->c, o->k);
        t->nodes_deleted++;
    }
    for (size_t i = 0; i < t->pend.cap; i++) { /* the flat table */
        pent *f = &t->pend.s[i];
        if (!f->used)
            continue;
        flat_dbkey(key, f->k + 1);
        if (f->flag)
            rocksdb_writebatch_delete(t->wb, key, 33);
        else
            rocksdb_writebatch_put(t->wb, key, 33, (const char *)f->v, f->vlen);
    }
    uint8_t meta[49];
    meta[0] = t->root.set;
    memcpy(meta + 1, t->root.set ? t->root.h : EMPTY_ROOT, 32);
    put_u64(meta + 33, height);
    put_u64(meta + 41, t->count);
    rocksdb_writebatch_put(t->wb, META_KEY, META_KEY_LEN, (const char *)meta, sizeof(meta));
    char *rerr = NULL;
    rocksdb_write(t->db, t->wo, t->wb, &rerr);
    rocksdb_writebatch_clear(t->wb);
    ptab_clear(&t->old);
    ptab_clear(&t->pend);
    if (rerr) {
        fail(t, "rocksdb write: %s", rerr);
        rocksdb_free(rerr);
        return -1;
    }
    memcpy(t->croot, meta + 1, 32);
    t->height = height;
    if (root)
        memcpy(root, t->croot, 32);
    return 0;
}

void
mpt_root(const mpt *t, uint8_t root[32])
{
    memcpy(root, t->croot, 32);
}

int
mpt_scan(mpt *t, char prefix,
         int (*cb)(void *ctx, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl), void *ctx)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator(t->db, t->ro);
    int rc = 0;
    for (rocksdb_iter_seek(it, &prefix, 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl = 0, vl = 0;
        const char *k = rocksdb_iter_key(it, &kl);
        if (kl < 1 || k[0] != prefix)
            break;
        const char *v = rocksdb_iter_value(it, &vl);
        if ((rc = cb(ctx, (const uint8_t *)k + 1, kl - 1, (const uint8_t *)v, vl)) != 0)
            break;
    }
    char *rerr = NULL;
    rocksdb_iter_get_error(it, &rerr);
    rocksdb_iter_destroy(it);
    if (rerr) {
        fail(t, "rocksdb iterator: %s", rerr);
        rocksdb_free(rerr);
        return -1;
    }
    return rc;
}

/* ---------------------------------------------------------------- open / close / stats */

int
mpt_open(mpt **out, const char *dir, const mpt_opts *o, char *err, size_t errlen)
{
    *out = NULL;
    SHA256((const uint8_t *)"", 0, EMPTY_ROOT);
    mpt *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    mpt_cache_init(&t->c, o->node_cache_bytes);
    t->opt = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(t->opt, 1);
    /* The tuned options of the rocksdb engine (BENCHMARKS.md rule 5). */
    t->bcache = rocksdb_cache_create_lru(o->block_cache_bytes ? o->block_cache_bytes : 1);
    t->bbt = bench_rocksdb_tune(t->opt, t->bcache, o->memtable_bytes);
    t->wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(t->wo, o->durable ? 1 : 0);
    t->ro = rocksdb_readoptions_create();
    t->wb = rocksdb_writebatch_create();
    memcpy(t->croot, EMPTY_ROOT, 32);
    if (!t->c.b) { /* mpt_cache_init failed */
        snprintf(err, errlen, "out of memory");
        goto bad;
    }
    char *rerr = NULL;
    t->db = rocksdb_open(t->opt, dir, &rerr);
    if (rerr) {
        snprintf(err, errlen, "rocksdb open %s: %s", dir, rerr);
        rocksdb_free(rerr);
        goto bad;
    }
    size_t n = 0;
    char *m = rocksdb_get(t->db, t->ro, META_KEY, META_KEY_LEN, &n, &rerr);
    if (rerr) {
        snprintf(err, errlen, "rocksdb get meta: %s", rerr);
        rocksdb_free(rerr);
        goto bad;
    }
    if (m) {
        if (n != 49 || (uint8_t)m[0] > 1) {
            snprintf(err, errlen, "bad MPT metadata record (%zu bytes)", n);
            rocksdb_free(m);
            goto bad;
        }
        const uint8_t *u = (const uint8_t *)m;
        t->root.set = u[0];
        memcpy(t->root.h, u + 1, 32);
        memcpy(t->croot, u + 1, 32);
        t->height = get_u64(u + 33);
        t->count = get_u64(u + 41);
        rocksdb_free(m);
    }
    *out = t;
    return 0;
bad:
    mpt_close(t);
    return -1;
}

void
mpt_close(mpt *t)
{
    if (!t)
        return;
    free_tree(t, t->root.n);
    if (t->db)
        rocksdb_close(t->db);
    if (t->wb)
        rocksdb_writebatch_destroy(t->wb);
    if (t->wo)
        rocksdb_writeoptions_destroy(t->wo);
    if (t->ro)
        rocksdb_readoptions_destroy(t->ro);
    if (t->opt)
        rocksdb_options_destroy(t->opt);
    if (t->bbt)
        rocksdb_block_based_options_destroy(t->bbt);
    if (t->bcache)
        rocksdb_cache_destroy(t->bcache);
    mpt_cache_free(&t->c);
    ptab_free(&t->old);
    ptab_free(&t->pend);
    free(t->eb);
    free(t);
}

const char *
mpt_error(const mpt *t)
{
    return t->err;
}

void
mpt_get_stats(const mpt *t, mpt_stats *s)
{
    memset(s, 0, sizeof(*s));
    s->count = t->count;
    s->height = t->height;
    s->node_cache_bytes = t->c.bytes;
    s->node_cache_entries = t->c.n;
    s->cache_hits = t->hits;
    s->db_reads = t->db_reads;
    s->gets = t->gets;
    s->flat_reads = t->flat_reads;
    s->nodes_written = t->nodes_written;
    s->nodes_deleted = t->nodes_deleted;
    s->bytes_written = t->bytes_written;
    s->dirty_nodes = t->dirty;
}

uint64_t
mpt_db_property(mpt *t, const char *name)
{
    char *s = rocksdb_property_value(t->db, name);
    uint64_t v = s ? strtoull(s, NULL, 10) : 0;
    rocksdb_free(s);
    return v;
}

uint64_t
mpt_block_cache_usage(const mpt *t)
{
    return rocksdb_cache_get_usage(t->bcache);
}
