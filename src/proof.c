/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proof.c -- proof construction (qm_prove, behind qmdb_prove): inclusion, exclusion and historical
 * proofs against the latest committed state root, in the format of proof_fmt.h / docs/PROOFS.md.
 *
 * Sources of proof data once qmdb_commit has returned (everything is hashed then):
 *  - left-tree siblings of full twigs: the twig file (12 reads of 32 bytes: leaf + 11 peers);
 *    of the youngest twig: the in-DRAM heap tree.ltree;
 *  - ActiveBits pages and right-side peers: qm_tree_twig(tree, id)->active (NULL once pruned);
 *  - upper-tree peers: qm_tree_node(tree, L, n) (the null node past the right edge); the
 *    tree keeps every sibling that the path of an unpruned twig needs (merkle.h);
 *  - global peers: the 16 shard roots.
 *
 * Historical proofs use a per-shard history cache, built lazily on the first historical
 * proof and extended incrementally (only the new log tail is scanned) when later commits
 * added entries; rebuilt when twigs were pruned. Per unpruned SN it keeps the entry's file
 * position, version height, and the SN that deactivated it; plus all SNs sorted by the first
 * 8 key-hash bytes. 40 bytes per unpruned entry of the shards that served historical proofs.
 *
 * Thread: the handle's writer (one at a time), through qmdb_prove (db_read.c).
 */
#include "codec.h"
#include "entry.h"
#include "hash.h"
#include "prover.h"
#include "shard.h"
#include "twigfile.h"

#include <inttypes.h>
#include <stdlib.h>

#define PH_NONE UINT64_MAX

/* ---- History cache ---------------------------------------------------------------------- */

typedef qm_hist_key ph_key;

typedef struct ph_shard {
    bool built;
    u64 first_twig; /* tree.first_twig when (re)built */
    u64 base;       /* first SN covered */
    u64 upto;       /* SNs [base, upto) are scanned */
    u64 scan_pos;   /* entry-log offset of SN upto */
    u64 cap;
    u64 *pos, *verh, *deact; /* index sn - base */
    ph_key *keys;            /* sorted by (kh8, sn) */
} ph_shard;

struct qm_proof_cache {
    ph_shard sh[QM_SHARD_COUNT];
};

void
qm_proof_cache_free(qm_proof_cache *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++) {
        free(c->sh[i].pos);
        free(c->sh[i].verh);
        free(c->sh[i].deact);
        free(c->sh[i].keys);
    }
    free(c);
}

static u64
kh8_of(const u8 kh[32])
{
    u64 v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | kh[i];
    return v;
}

static int
key_cmp(const void *a, const void *b)
{
    const ph_key *x = a, *y = b;
    if (x->kh8 != y->kh8)
        return x->kh8 < y->kh8 ? -1 : 1;
    return x->sn < y->sn ? -1 : x->sn > y->sn;
}

static int
ph_reserve(ph_shard *ph, u64 n)
{
    if (n <= ph->cap)
        return 0;
    u64 cap = QM_MAX(n, ph->cap + ph->cap / 2 + 1024);
    u64 *p = realloc(ph->pos, cap * sizeof(u64));
    if (!p)
        return -ENOMEM;
    ph->pos = p;
    p = realloc(ph->verh, cap * sizeof(u64));
    if (!p)
        return -ENOMEM;
    ph->verh = p;
    p = realloc(ph->deact, cap * sizeof(u64));
    if (!p)
        return -ENOMEM;
    ph->deact = p;
    ph_key *k = realloc(ph->keys, cap * sizeof(ph_key));
    if (!k)
        return -ENOMEM;
    ph->keys = k;
    ph->cap = cap;
    return 0;
}

/* Brings the cache of shard s up to its latest committed entries. */
static int
ph_update(qm_shard *s, ph_shard *ph)
{
    qm_tree *t = &s->tree;
    if (!ph->built || ph->first_twig != t->first_twig) {
        ph->built = true;
        ph->first_twig = t->first_twig;
        ph->base = ph->upto = t->first_twig << QM_TWIG_SHIFT;
        ph->scan_pos = s->entry_head;
    }
    if (ph->upto == t->next_sn)
        return 0;
    u64 base = ph->base, old = ph->upto - base, n = t->next_sn - base;
    QM_RET(ph_reserve(ph, n));
    qm_scan sc;
    QM_RET(qm_scan_init(&sc, &s->entries, 1 << 20));
    int rc = 0;
    u64 pos = ph->scan_pos;
    for (u64 sn = ph->upto; sn < t->next_sn; sn++) {
        const u8 *p;
        QM_TRY(qm_scan_get(&sc, pos, QM_ENTRY_FIXED + 3, &p));
        u32 len = qm_entry_len_from_header(p);
        QM_TRY(qm_scan_get(&sc, pos, len, &p));
        qm_entry e;
        u64 i = sn - base, ssn;
        u8 leaf[32];
        if (qm_entry_is_stub(p) && sn < s->stub_end && qm_stub_decode(p, len, &ssn, leaf) == 0 &&
            ssn == sn) {
            /* A stub of a restored database: dead at every height the cache answers (all
             * from the restore height on), so never read; its leaf spreads it over the keys. */
            ph->pos[i] = pos;
            ph->verh[i] = UINT64_MAX;
            ph->deact[i] = PH_NONE;
            ph->keys[i] = (ph_key){kh8_of(leaf), sn};
            pos += len;
            continue;
        }
        if (qm_entry_decode(p, len, &e) != 0 || e.sn != sn) {
            rc = QM_CORRUPT(s->err,
                            "shard %u entry log: bad entry at offset %" PRIu64
                            " (expected SN %" PRIu64 ")",
                            s->id, pos, sn);
            goto out;
        }
        ph->pos[i] = pos;
        ph->verh[i] = e.version > 0 ? (u64)e.version >> 24 : 0;
        ph->deact[i] = PH_NONE;
        for (u32 k = 0; k < e.ndsn; k++) {
            u64 d = qm_entry_dsn_at(&e, k);
            if (d >= base && d < sn)
                ph->deact[d - base] = sn;
        }
        u8 kh[32];
        qm_entry_key_hash(e.key, e.klen, e.vlen, kh);
        ph->keys[i] = (ph_key){kh8_of(kh), sn};
        pos += len;
    }
    /* Sort the new keys, then merge them with the sorted old ones from the back. */
    qsort(ph->keys + old, n - old, sizeof(ph_key), key_cmp);
    if (old > 0) {
        ph_key *tmp = malloc((n - old) * sizeof(ph_key));
        if (!tmp) {
            rc = -ENOMEM;
            goto out;
        }
        memcpy(tmp, ph->keys + old, (n - old) * sizeof(ph_key));
        u64 a = old, b = n - old, w = n;
        while (b > 0) {
            if (a > 0 && key_cmp(&ph->keys[a - 1], &tmp[b - 1]) > 0)
                ph->keys[--w] = ph->keys[--a];
            else
                ph->keys[--w] = tmp[--b];
        }
        free(tmp);
    }
    ph->upto = t->next_sn;
    ph->scan_pos = pos;
out:
    qm_scan_free(&sc);
    if (rc)
        ph->built = false; /* rebuild from scratch next time */
    return rc;
}

/* Was the content of SN sn live after block h? (See docs/PROOFS.md, "liveness at h".) */
static bool
ph_live_at(const ph_shard *ph, u64 sn, u64 h)
{
    u64 i = sn - ph->base;
    if (ph->verh[i] > h)
        return false;
    u64 d = ph->deact[i];
    return d == PH_NONE || ph->verh[d - ph->base] > h;
}

/* First index in keys with kh8 >= v. */
static u64
ph_lower(const ph_shard *ph, u64 v)
{
    u64 lo = 0, hi = ph->upto - ph->base;
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        if (ph->keys[mid].kh8 < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ---- Finding the entries ---------------------------------------------------------------- */

typedef qm_proof_pick pr_found;

static bool
entry_is_key(const qm_entry *e, const u8 *key, size_t klen)
{
    return e->vlen > 0 && e->klen == klen && memcmp(e->key, key, klen) == 0;
}

/* Latest height: the live entry of the key, or its live predecessor (through the indexer). */
static int
find_latest(qm_shard *s, const u8 kh[32], const u8 *key, size_t klen, qm_ebuf *eb, pr_found *f)
{
    u64 pos;
    f->live = QM_PROOF_ACTIVE;
    int rc = qm_shard_get(s, kh, key, (u32)klen, eb, &f->e, &pos);
    if (rc != QMDB_NOTFOUND) {
        f->kind = QM_PROOF_PRESENT;
        return rc;
    }
    f->kind = QM_PROOF_ABSENT;
    u64 cand[16];
    size_t n;
    QM_RET(qm_ix_pred(&s->index, kh, cand, QM_ARRAY_LEN(cand), &n));
    if (n == 0 || n > QM_ARRAY_LEN(cand))
        return QM_CORRUPT(s->err, "shard %u: no usable predecessor candidates (%zu)", s->id, n);
    u8 best[32];
    u64 best_pos = 0;
    bool have = false;
    for (size_t i = 0; i < n; i++) {
        QM_RET(qm_shard_read_entry(s, cand[i], eb, &f->e));
        u8 pkh[32];
        qm_entry_key_hash(f->e.key, f->e.klen, f->e.vlen, pkh);
        if (memcmp(pkh, kh, 32) < 0 && (!have || memcmp(pkh, best, 32) > 0)) {
            memcpy(best, pkh, 32);
            best_pos = cand[i];
            have = true;
        }
    }
    if (!have)
        return QM_CORRUPT(s->err, "shard %u: no live predecessor in the index", s->id);
    QM_RET(qm_shard_read_entry(s, best_pos, eb, &f->e));
    if (memcmp(kh, f->e.next_key_hash, 32) >= 0)
        return QM_CORRUPT(s->err,
                          "shard %u: live predecessor at %" PRIu64 " does not cover the key", s->id,
                          best_pos);
    return 0;
}

/* Reads the entry at SN sn of the cache. */
static int
ph_read(qm_shard *s, const ph_shard *ph, u64 sn, qm_ebuf *b, qm_entry *e)
{
    QM_RET(qm_shard_read_entry(s, ph->pos[sn - ph->base], b, e));
    if (e->sn != sn)
        return QM_CORRUPT(s->err, "shard %u: entry at %" PRIu64 " is not SN %" PRIu64, s->id,
                          ph->pos[sn - ph->base], sn);
    return 0;
}

/* Earlier height h: the entry whose content was live at h (newest such copy), or the
 * predecessor whose gap covered the key at h; and the entry that deactivated it, if any. */
static int
find_hist(qm_shard *s, ph_shard *ph, u64 h, const u8 kh[32], const u8 *key, size_t klen,
          qm_ebuf *eb, qm_ebuf *db, pr_found *f)
{
    QM_RET(ph_update(s, ph));
    u64 n = ph->upto - ph->base, k8 = kh8_of(kh);
    u64 lo = ph_lower(ph, k8), hi = lo;
    while (hi < n && ph->keys[hi].kh8 == k8)
        hi++;
    u64 found = PH_NONE;
    /* Present: newest live-at-h entry of the key. */
    for (u64 i = hi; i > lo && found == PH_NONE; i--) {
        u64 sn = ph->keys[i - 1].sn;
        if (!ph_live_at(ph, sn, h))
            continue;
        QM_RET(ph_read(s, ph, sn, eb, &f->e));
        if (entry_is_key(&f->e, key, klen))
            found = sn;
    }
    if (found != PH_NONE) {
        f->kind = QM_PROOF_PRESENT;
    } else {
        /* Absent: walk key-hash groups downward from the key's own group; the first group
         * with a live-at-h entry below the key holds the predecessor at h. */
        f->kind = QM_PROOF_ABSENT;
        u8 best[32];
        u64 i = hi;
        while (i > 0 && found == PH_NONE) {
            u64 g = ph->keys[i - 1].kh8;
            for (; i > 0 && ph->keys[i - 1].kh8 == g; i--) {
                u64 sn = ph->keys[i - 1].sn;
                if (!ph_live_at(ph, sn, h))
                    continue;
                QM_RET(ph_read(s, ph, sn, eb, &f->e));
                u8 pkh[32];
                qm_entry_key_hash(f->e.key, f->e.klen, f->e.vlen, pkh);
                if (memcmp(pkh, kh, 32) < 0 && (found == PH_NONE || memcmp(pkh, best, 32) > 0)) {
                    memcpy(best, pkh, 32);
                    found = sn;
                }
            }
        }
        if (found == PH_NONE)
            return qm_err_set(s->err, QMDB_PRUNED,
                              "shard %u: no unpruned predecessor of the key at height %" PRIu64,
                              s->id, h);
        QM_RET(ph_read(s, ph, found, eb, &f->e));
        if (memcmp(kh, f->e.next_key_hash, 32) >= 0)
            return qm_err_set(s->err, QMDB_PRUNED,
                              "shard %u: the entries that answer height %" PRIu64 " are pruned",
                              s->id, h);
    }
    u64 d = ph->deact[found - ph->base];
    if (d == PH_NONE) {
        f->live = QM_PROOF_ACTIVE;
        return 0;
    }
    f->live = QM_PROOF_DEACTIVATED;
    return ph_read(s, ph, d, db, &f->d);
}

/* ---- Paths and assembly ----------------------------------------------------------------- */

/* Writes the upstream shard path of SN sn (leaf = its entry hash) into out. */
static int
build_path(qm_shard *s, u64 sn, const u8 leaf[32], u8 *out)
{
    qm_tree *t = &s->tree;
    u64 tid = sn >> QM_TWIG_SHIFT, youngest = t->ntwigs - 1;
    unsigned p = (unsigned)(sn & QM_TWIG_MASK), U = t->max_level - 12;
    if (sn >= t->next_sn)
        return QM_CORRUPT(s->err, "shard %u: SN %" PRIu64 " is not appended", s->id, sn);
    if (tid < t->first_twig || !qm_tree_twig(t, tid)->active)
        return qm_err_set(s->err, QMDB_PRUNED, "shard %u: twig %" PRIu64 " is pruned", s->id, tid);
    qm_put_u64le(out + QM_PATH_SN, sn);
    memcpy(out + QM_PATH_LEAF, leaf, 32);
    unsigned j = QM_TWIG_LEAVES + p;
    if (tid == youngest) {
        if (memcmp(t->ltree[j], leaf, 32) != 0)
            return QM_CORRUPT(s->err, "shard %u: youngest twig leaf %u differs from its entry",
                              s->id, p);
        for (unsigned l = 0; l < 11; l++, j >>= 1)
            memcpy(out + QM_PATH_LEFT + 32 * l, t->ltree[j ^ 1], 32);
    } else {
        /* The twig's record, from the twig file's read mapping when it can serve it (one
         * lookup instead of twelve 32-byte preads), else node by node through pread. */
        u64 rec = tid * QM_TWIG_REC;
        const u8 *rv = qm_hpfile_view(&s->twigs, rec, QM_TWIG_REC);
        u8 node[32];
        if (rv)
            memcpy(node, rv + (size_t)(j - 1) * 32, 32);
        else
            QM_RET(qm_hpfile_read(&s->twigs, rec + (u64)(j - 1) * 32, node, 32));
        if (memcmp(node, leaf, 32) != 0)
            return QM_CORRUPT(
                s->err, "shard %u twig file: leaf %u of twig %" PRIu64 " differs from its entry",
                s->id, p, tid);
        for (unsigned l = 0; l < 11; l++, j >>= 1) {
            u8 *o = out + QM_PATH_LEFT + 32 * l;
            if (rv)
                memcpy(o, rv + (size_t)((j ^ 1) - 1) * 32, 32);
            else
                QM_RET(qm_hpfile_read(&s->twigs, rec + (u64)((j ^ 1) - 1) * 32, o, 32));
        }
    }
    const u8 *bits = qm_tree_twig(t, tid)->active;
    unsigned g = p >> 8;
    memcpy(out + QM_PATH_PAGE, bits + 32 * g, 32);
    memcpy(out + QM_PATH_RIGHT, bits + 32 * (g ^ 1), 32);
    u8 l1[4][32], l2[2][32];
    for (unsigned i = 0; i < 4; i++)
        qm_h2(8, bits + 64 * i, bits + 64 * i + 32, l1[i]);
    for (unsigned i = 0; i < 2; i++)
        qm_h2(9, l1[2 * i], l1[2 * i + 1], l2[i]);
    memcpy(out + QM_PATH_RIGHT + 32, l1[(g >> 1) ^ 1], 32);
    memcpy(out + QM_PATH_RIGHT + 64, l2[(g >> 2) ^ 1], 32);
    for (unsigned i = 0; i < U; i++) {
        unsigned L = 12 + i;
        memcpy(out + QM_PATH_UPPER + 32 * i, qm_tree_node(t, L, (tid >> i) ^ 1), 32);
    }
    memcpy(out + QM_PATH_UPPER + 32 * U, t->root, 32);
    return 0;
}

/* Appends one entry record (payload, U, path) at out; returns its length via *used. */
static int
put_record(qm_shard *s, const qm_entry *e, const u8 *payload, u8 *out, size_t *used)
{
    unsigned U = s->tree.max_level - 12;
    qm_put_u32le(out, e->payload_len);
    memcpy(out + 4, payload, e->payload_len);
    out[4 + e->payload_len] = (u8)U;
    u8 leaf[32];
    qm_sha256(payload, e->payload_len, leaf);
    QM_RET(build_path(s, e->sn, leaf, out + 5 + e->payload_len));
    *used = 5 + e->payload_len + QM_PROOF_PATH_LEN(U);
    return 0;
}

static size_t
record_len(const qm_shard *s, const qm_entry *e)
{
    return 5 + (size_t)e->payload_len + QM_PROOF_PATH_LEN(s->tree.max_level - 12);
}

int
qm_proof_hist(const qm_proof_ctx *ctx, unsigned shard, qm_hist_view *v)
{
    if (!*ctx->cache) {
        *ctx->cache = calloc(1, sizeof(qm_proof_cache));
        if (!*ctx->cache)
            return -ENOMEM;
    }
    ph_shard *ph = &(*ctx->cache)->sh[shard];
    QM_RET(ph_update(&ctx->shards[shard], ph));
    v->base = ph->base;
    v->upto = ph->upto;
    v->pos = ph->pos;
    v->deact = ph->deact;
    v->keys = ph->keys;
    return 0;
}

int
qm_prove_find(const qm_proof_ctx *ctx, const u8 kh[32], const void *key, size_t klen, u64 height,
              qm_proof_pick *f)
{
    qm_shard *s = &ctx->shards[qm_shard_of(kh)];
    f->kind = QM_PROOF_PRESENT;
    f->live = QM_PROOF_ACTIVE;
    if (height == ctx->height)
        return find_latest(s, kh, key, klen, &f->eb, f);
    if (!*ctx->cache) {
        *ctx->cache = calloc(1, sizeof(qm_proof_cache));
        if (!*ctx->cache)
            return -ENOMEM;
    }
    return find_hist(s, &(*ctx->cache)->sh[qm_shard_of(kh)], height, kh, key, klen, &f->eb, &f->db,
                     f);
}

int
qm_prove(const qm_proof_ctx *ctx, const void *key, size_t klen, u64 height, u8 **out,
         size_t *outlen)
{
    if (height == UINT64_MAX)
        height = ctx->height;
    if (height > ctx->height)
        return qm_err_set(ctx->err, QMDB_NOTFOUND,
                          "height %" PRIu64 " is above the latest committed height %" PRIu64,
                          height, ctx->height);
    u8 kh[32];
    qm_sha256(key, klen, kh);
    unsigned k = qm_shard_of(kh);
    qm_shard *s = &ctx->shards[k];
    pr_found f;
    memset(&f, 0, sizeof(f));
    int rc;
    QM_TRY(qm_prove_find(ctx, kh, key, klen, height, &f));
    size_t len = QM_PROOF_HDR + record_len(s, &f.e);
    if (f.live == QM_PROOF_DEACTIVATED)
        len += record_len(s, &f.d);
    u8 *p = malloc(len);
    if (!p) {
        rc = -ENOMEM;
        goto out;
    }
    memcpy(p, QM_PROOF_MAGIC, 4);
    p[4] = QM_PROOF_VERSION;
    p[5] = (u8)f.kind;
    p[6] = (u8)f.live;
    p[7] = (u8)k;
    qm_put_u64le(p + 8, height);
    memcpy(p + 16, kh, 32);
    /* Global peers (FORMAT.md §5). */
    u8 r[16][32], g1[8][32], g2[4][32], g3[2][32];
    for (unsigned i = 0; i < 16; i++)
        memcpy(r[i], ctx->shards[i].tree.root, 32);
    for (unsigned i = 0; i < 8; i++)
        qm_h2(64, r[2 * i], r[2 * i + 1], g1[i]);
    for (unsigned i = 0; i < 4; i++)
        qm_h2(65, g1[2 * i], g1[2 * i + 1], g2[i]);
    for (unsigned i = 0; i < 2; i++)
        qm_h2(66, g2[2 * i], g2[2 * i + 1], g3[i]);
    memcpy(p + 48, r[k ^ 1], 32);
    memcpy(p + 80, g1[(k >> 1) ^ 1], 32);
    memcpy(p + 112, g2[(k >> 2) ^ 1], 32);
    memcpy(p + 144, g3[(k >> 3) ^ 1], 32);
    size_t off = QM_PROOF_HDR, used;
    rc = put_record(s, &f.e, f.eb.p, p + off, &used);
    off += used;
    if (!rc && f.live == QM_PROOF_DEACTIVATED) {
        rc = put_record(s, &f.d, f.db.p, p + off, &used);
        off += used;
    }
    if (rc) {
        free(p);
        goto out;
    }
    QM_ASSERT(off == len);
    *out = p;
    *outlen = len;
out:
    qm_ebuf_free(&f.eb);
    qm_ebuf_free(&f.db);
    return rc;
}

void
qmdb_proof_free(uint8_t *proof)
{
    free(proof);
}
