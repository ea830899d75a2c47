/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pcache.c -- the prover's caches (prover.h): the per-shard history cache that historical
 * proofs, multi-key proofs and witnesses read (qm_hist_*), its file sXX.hist (histfile.h),
 * and the global tree's nodes that every proof carries.
 *
 * History cache of a shard: per unpruned SN its entry's log offset, version height and the SN
 * that deactivated it, plus every SN sorted by the first 8 key-hash bytes (40 bytes per SN).
 * Built lazily on the first historical proof on the shard, extended by scanning only the log
 * appended since (the new SNs' DSN lists carry the deactivations of older SNs), cut at the
 * front when twigs are pruned. Its SNs come in two parts:
 *  - [fbase, tbase): the file sXX.hist that a clean close wrote, mapped read-only; each 64 KiB
 *    chunk's CRC is checked when it is first read, so using the file costs no up-front read;
 *    deactivations of these SNs found after the file are in `dov` (sorted by SN);
 *  - [tbase, upto): DRAM arrays (all SNs when there is no file), keys sorted separately.
 * The file is used only when it matches the database: its height is committed and ROOTS holds
 * its root there, it covers no SN past next_sn and starts at or below the first unpruned
 * twig, its header and chunk table hold, its scan_pos lies in the log, and the entry at its
 * end is its last SN. A value that fails a check later (a chunk's CRC, a position past the
 * file's log end, a deactivator out of range, an entry that is not the SN the file says)
 * marks the shard bad: the operation fails with QMDB_CORRUPT, and qm_hist_distrust drops the
 * file for the rest of the handle's life so that a retry rebuilds the cache by the scan.
 *
 * Thread: the handle's writer (one at a time), through qmdb_prove / _many / qmdb_witness and
 * qmdb_close.
 */
#include "codec.h"
#include "entry.h"
#include "hash.h"
#include "histfile.h"
#include "io.h"
#include "prover.h"
#include "shard.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define PH_NONE QM_HIST_NONE

typedef qm_hist_key ph_key;

typedef struct ph_dov {
    u64 sn, d;
} ph_dov;

struct ph_shard {
    bool built;
    bool from_file; /* SNs [fbase, tbase) come from sXX.hist */
    bool no_file;   /* sXX.hist failed a check after it was mapped: scan from now on */
    bool bad;       /* a value read from the file failed a check */
    u64 first_twig; /* tree.first_twig when (re)built or cut */
    u64 base;       /* first SN covered */
    u64 upto;       /* SNs [base, upto) are covered */
    u64 scan_pos;   /* entry-log offset of SN upto */
    u64 height;     /* a committed height whose next_sn is upto */
    u64 file_upto, file_first_twig; /* what sXX.hist holds (from_file) */
    qm_hist_map map;                /* from_file */
    u64 fbase, tbase;
    u64 cap;
    u64 *pos, *verh, *deact; /* index sn - tbase */
    ph_key *keys;            /* SNs [tbase, upto), sorted by (kh8, sn) */
    ph_dov *dov;             /* deactivations of SNs [fbase, tbase) after the file */
    u64 ndov, capdov;
};

struct qm_proof_cache {
    struct ph_shard sh[QM_SHARD_COUNT];
    u64 loaded, ignored, scanned; /* files used, files ignored, entries scanned */
    /* The global tree's levels 1..3 (FORMAT.md §5) over the shard roots `gr` they were
     * computed from: every proof needs four of its nodes, and they change only with a root. */
    bool g_valid;
    u8 gr[QM_SHARD_COUNT][32];
    qm_gtree g;
};

typedef struct ph_shard ph_shard;

static void
ph_drop_file(ph_shard *ph)
{
    qm_hist_map_close(&ph->map);
    ph->from_file = ph->bad = false;
    ph->ndov = 0;
}

void
qm_proof_cache_free(qm_proof_cache *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++) {
        ph_shard *ph = &c->sh[i];
        qm_hist_map_close(&ph->map);
        free(ph->pos);
        free(ph->verh);
        free(ph->deact);
        free(ph->keys);
        free(ph->dov);
    }
    free(c);
}

qm_proof_cache *
qm_proof_cache_get(const qm_proof_ctx *ctx)
{
    if (!*ctx->cache)
        *ctx->cache = calloc(1, sizeof(qm_proof_cache));
    return *ctx->cache;
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
dov_cmp(const void *a, const void *b)
{
    const ph_dov *x = a, *y = b;
    return x->sn < y->sn ? -1 : x->sn > y->sn;
}

/* ---- Values of an SN (either part) ---------------------------------------------------- */

/* Value i of file section sect (0 pos, 1 verh, 2 deact); PH_NONE and bad if unreadable. */
static u64
ph_fval(ph_shard *ph, unsigned sect, u64 i)
{
    const u8 *p = qm_hist_body(&ph->map, (sect * ph->map.n + i) * 8, 8);
    if (!p) {
        ph->bad = true;
        return PH_NONE;
    }
    return qm_get_u64le(p);
}

static u64
ph_pos(ph_shard *ph, u64 sn)
{
    if (sn >= ph->tbase)
        return ph->pos[sn - ph->tbase];
    u64 v = ph_fval(ph, 0, sn - ph->fbase);
    if (v >= ph->map.h.scan_pos)
        ph->bad = true;
    return v;
}

static u64
ph_verh(ph_shard *ph, u64 sn)
{
    return sn >= ph->tbase ? ph->verh[sn - ph->tbase] : ph_fval(ph, 1, sn - ph->fbase);
}

static u64
ph_deact(ph_shard *ph, u64 sn)
{
    if (sn >= ph->tbase)
        return ph->deact[sn - ph->tbase];
    u64 lo = 0, hi = ph->ndov;
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        if (ph->dov[mid].sn < sn)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < ph->ndov && ph->dov[lo].sn == sn)
        return ph->dov[lo].d;
    u64 d = ph_fval(ph, 2, sn - ph->fbase);
    if (d != PH_NONE && (d <= sn || d >= ph->tbase)) {
        ph->bad = true;
        return PH_NONE;
    }
    return d;
}

/* Key i of the file part; false (and bad) if unreadable. */
static bool
ph_fkey(ph_shard *ph, u64 i, ph_key *k)
{
    const u8 *p = qm_hist_body(&ph->map, 24 * ph->map.n + 16 * i, 16);
    if (!p) {
        ph->bad = true;
        return false;
    }
    k->kh8 = qm_get_u64le(p);
    k->sn = qm_get_u64le(p + 8);
    if (k->sn < ph->fbase || k->sn >= ph->tbase) {
        ph->bad = true;
        return false;
    }
    return true;
}

u64
qm_hist_pos(const qm_hist_view *v, u64 sn)
{
    return ph_pos(v->ph, sn);
}

u64
qm_hist_deact(const qm_hist_view *v, u64 sn)
{
    return ph_deact(v->ph, sn);
}

bool
qm_hist_live_at(const qm_hist_view *v, u64 sn, u64 h)
{
    ph_shard *ph = v->ph;
    if (ph_verh(ph, sn) > h)
        return false;
    u64 d = ph_deact(ph, sn);
    return d == PH_NONE || ph_verh(ph, d) > h;
}

bool
qm_hist_bad(const qm_hist_view *v)
{
    return v->ph->bad;
}

void
qm_hist_seek(const qm_hist_view *v, u64 k8, qm_hist_iter *it)
{
    ph_shard *ph = v->ph;
    u64 lo = 0, hi = ph->from_file ? ph->map.n : 0;
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        ph_key k;
        if (!ph_fkey(ph, mid, &k)) {
            lo = hi = 0;
            break;
        }
        if (k.kh8 <= k8)
            lo = mid + 1;
        else
            hi = mid;
    }
    it->i = lo;
    lo = 0;
    hi = ph->upto - ph->tbase;
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        if (ph->keys[mid].kh8 <= k8)
            lo = mid + 1;
        else
            hi = mid;
    }
    it->j = lo;
}

bool
qm_hist_prev(const qm_hist_view *v, qm_hist_iter *it, qm_hist_key *out)
{
    ph_shard *ph = v->ph;
    for (;;) {
        ph_key a;
        bool ha = false;
        if (it->i > 0) {
            if (!ph_fkey(ph, it->i - 1, &a)) {
                it->i = it->j = 0;
                return false;
            }
            ha = true;
        }
        if (ha && (it->j == 0 || key_cmp(&a, &ph->keys[it->j - 1]) > 0)) {
            it->i--;
            if (a.sn < ph->base)
                continue; /* in a twig pruned after the file was written */
            *out = a;
            return true;
        }
        if (it->j == 0)
            return false;
        *out = ph->keys[--it->j];
        return true;
    }
}

/* ---- Building and extending ------------------------------------------------------------- */

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

static int
ph_dov_add(ph_shard *ph, u64 sn, u64 d)
{
    if (ph->ndov == ph->capdov) {
        u64 cap = ph->capdov ? 2 * ph->capdov : 256;
        ph_dov *x = realloc(ph->dov, cap * sizeof(ph_dov));
        if (!x)
            return -ENOMEM;
        ph->dov = x;
        ph->capdov = cap;
    }
    ph->dov[ph->ndov++] = (ph_dov){sn, d};
    return 0;
}

/* Drops the SNs below twig ft (pruned since the cache was built) from the front. */
static void
ph_cut_front(ph_shard *ph, u64 ft)
{
    u64 nb = ft << QM_TWIG_SHIFT;
    if (ft < ph->first_twig || nb >= ph->upto || (ph->from_file && nb > ph->tbase)) {
        ph->built = false; /* nothing left, or past the file: rebuild */
        return;
    }
    if (!ph->from_file) {
        u64 k = nb - ph->tbase, n = ph->upto - nb;
        memmove(ph->pos, ph->pos + k, n * sizeof(u64));
        memmove(ph->verh, ph->verh + k, n * sizeof(u64));
        memmove(ph->deact, ph->deact + k, n * sizeof(u64));
        u64 w = 0;
        for (u64 i = 0; i < n + k; i++)
            if (ph->keys[i].sn >= nb)
                ph->keys[w++] = ph->keys[i];
        QM_ASSERT(w == n);
        ph->tbase = nb;
    }
    ph->base = nb; /* the file's SNs below it are skipped */
    ph->first_twig = ft;
}

/* Maps the shard's sXX.hist into the empty cache when it matches the database (see the top
 * of this file); false when there is none or it was ignored. */
static bool
ph_load(const qm_proof_ctx *ctx, qm_proof_cache *c, qm_shard *s, ph_shard *ph)
{
    if (!ctx->dir || ph->no_file)
        return false;
    int rc = qm_hist_map_open(ctx->dir, s->id, &ph->map);
    if (rc == -ENOENT)
        return false;
    const qm_hist_hdr *h = &ph->map.h;
    qm_tree *t = &s->tree;
    u8 root[32];
    bool ok = !rc && h->first_twig <= t->first_twig && h->upto > (t->first_twig << QM_TWIG_SHIFT) &&
              h->upto <= t->next_sn && h->height <= ctx->height && h->scan_pos >= s->entry_head &&
              h->scan_pos <= s->entries.size &&
              (h->upto < t->next_sn || h->scan_pos == s->entries.size) && ctx->root_at &&
              ctx->root_at(ctx->root_arg, h->height, root) == 0 && memcmp(root, h->root, 32) == 0;
    if (ok) {
        ph->built = ph->from_file = true;
        ph->bad = false;
        ph->first_twig = ph->file_first_twig = h->first_twig;
        ph->base = ph->fbase = h->base;
        ph->upto = ph->tbase = ph->file_upto = h->upto;
        ph->scan_pos = h->scan_pos;
        ph->height = h->height;
        ph->ndov = 0;
        if (h->first_twig < t->first_twig)
            ph_cut_front(ph, t->first_twig);
        /* The entry at the file's end must be its last SN (a file of another log layout). */
        qm_ebuf eb = {0};
        qm_entry e;
        u64 last = ph->upto - 1, pos = ph_pos(ph, last);
        ok = ph->built && !ph->bad && qm_shard_read_entry(s, pos, &eb, &e) == 0 && e.sn == last;
        qm_ebuf_free(&eb);
    }
    if (!ok) {
        ph->built = false;
        ph_drop_file(ph);
        if (rc != -ENOMEM)
            c->ignored++;
        return false;
    }
    c->loaded++;
    return true;
}

/* Brings the cache of shard s up to its latest committed entries: from sXX.hist or the scan
 * of the whole unpruned log the first time, then the log appended since. */
static int
ph_update(const qm_proof_ctx *ctx, qm_proof_cache *c, qm_shard *s, ph_shard *ph)
{
    qm_tree *t = &s->tree;
    if (ph->built && ph->first_twig != t->first_twig)
        ph_cut_front(ph, t->first_twig);
    if (!ph->built) {
        ph_drop_file(ph);
        if (!ph_load(ctx, c, s, ph)) {
            ph->built = true;
            ph->first_twig = t->first_twig;
            ph->base = ph->fbase = ph->tbase = ph->upto = t->first_twig << QM_TWIG_SHIFT;
            ph->scan_pos = s->entry_head;
        }
    }
    if (ph->upto == t->next_sn) {
        ph->height = ctx->height;
        return 0;
    }
    u64 tb = ph->tbase, old = ph->upto - tb, n = t->next_sn - tb, ndov0 = ph->ndov;
    QM_RET(ph_reserve(ph, n));
    qm_scan sc;
    QM_RET(qm_scan_init(&sc, &s->entries, 1 << 20));
    int rc = 0;
    u64 pos = ph->scan_pos;
    for (u64 sn = ph->upto; sn < t->next_sn; sn++) {
        const u8 *p;
        u32 len;
        qm_entry e;
        u64 i = sn - tb;
        u8 leaf[32];
        rc = qm_shard_scan_rec(s, &sc, pos, sn, &p, &len, &e, leaf);
        if (rc < 0)
            goto out;
        if (rc == 1) {
            /* A stub of a restored database: dead at every height the cache answers (all
             * from the restore height on), so never read; its leaf spreads it over the keys. */
            rc = 0;
            ph->pos[i] = pos;
            ph->verh[i] = UINT64_MAX;
            ph->deact[i] = PH_NONE;
            ph->keys[i] = (ph_key){qm_hist_kh8(leaf), sn};
            pos += len;
            continue;
        }
        ph->pos[i] = pos;
        ph->verh[i] = e.version > 0 ? (u64)e.version >> 24 : 0;
        ph->deact[i] = PH_NONE;
        for (u32 k = 0; k < e.ndsn; k++) {
            u64 d = qm_entry_dsn_at(&e, k);
            if (d >= tb && d < sn)
                ph->deact[d - tb] = sn;
            else if (d >= ph->base && d < tb)
                QM_TRY(ph_dov_add(ph, d, sn));
        }
        u8 kh[32];
        qm_entry_key_hash(e.key, e.klen, e.vlen, kh);
        ph->keys[i] = (ph_key){qm_hist_kh8(kh), sn};
        pos += len;
    }
    if (ph->ndov > ndov0)
        qsort(ph->dov, ph->ndov, sizeof(ph_dov), dov_cmp);
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
    c->scanned += t->next_sn - ph->upto;
    ph->upto = t->next_sn;
    ph->scan_pos = pos;
    ph->height = ctx->height;
out:
    qm_scan_free(&sc);
    if (rc)
        ph->built = false; /* rebuild from scratch next time */
    return rc;
}

int
qm_proof_hist(const qm_proof_ctx *ctx, unsigned shard, qm_hist_view *v)
{
    qm_proof_cache *c = qm_proof_cache_get(ctx);
    if (!c)
        return -ENOMEM;
    ph_shard *ph = &c->sh[shard];
    int rc = ph_update(ctx, c, &ctx->shards[shard], ph);
    if (rc && qm_hist_distrust(ctx, shard, rc))
        rc = ph_update(ctx, c, &ctx->shards[shard], ph);
    QM_RET(rc);
    v->ph = ph;
    v->base = ph->base;
    v->upto = ph->upto;
    return 0;
}

int
qm_hist_damaged(qm_err *err, unsigned shard)
{
    return QM_CORRUPT(err, "shard %u: history cache file s%02x.hist is damaged", shard, shard);
}

bool
qm_hist_distrust(const qm_proof_ctx *ctx, unsigned shard, int rc)
{
    qm_proof_cache *c = *ctx->cache;
    ph_shard *ph = c ? &c->sh[shard] : NULL;
    if (rc != QMDB_CORRUPT || !ph || !ph->from_file)
        return false;
    ph_drop_file(ph);
    ph->built = false;
    ph->no_file = true;
    c->ignored++;
    return true;
}

/* ---- The file ------------------------------------------------------------------------- */

/* Writes the cache of ph (current) as sXX.hist. */
static int
ph_save(const qm_proof_ctx *ctx, unsigned shard, ph_shard *ph)
{
    qm_hist_hdr h = {.shard = shard,
                     .height = ph->height,
                     .first_twig = ph->first_twig,
                     .base = ph->base,
                     .upto = ph->upto,
                     .scan_pos = ph->scan_pos};
    QM_RET(ctx->root_at(ctx->root_arg, ph->height, h.root));
    qm_hist_writer *w = malloc(sizeof(*w));
    if (!w)
        return -ENOMEM;
    int rc = qm_hist_writer_open(w, ctx->dir, shard);
    if (rc) {
        free(w);
        return rc;
    }
    for (u64 sn = ph->base; sn < ph->upto && !rc; sn++)
        rc = qm_hist_writer_put(w, ph_pos(ph, sn));
    for (u64 sn = ph->base; sn < ph->upto && !rc; sn++)
        rc = qm_hist_writer_put(w, ph_verh(ph, sn));
    for (u64 sn = ph->base; sn < ph->upto && !rc; sn++)
        rc = qm_hist_writer_put(w, ph_deact(ph, sn));
    /* Keys: the file's (those still covered) and the DRAM ones, merged ascending. */
    u64 i = 0, nf = ph->from_file ? ph->map.n : 0, j = 0, nt = ph->upto - ph->tbase;
    ph_key a = {0, 0};
    bool ha = false;
    while (!rc && !ph->bad) {
        if (!ha && i < nf) {
            if (!ph_fkey(ph, i++, &a))
                break;
            if (a.sn < ph->base)
                continue;
            ha = true;
        }
        ph_key k;
        if (ha && (j == nt || key_cmp(&a, &ph->keys[j]) < 0)) {
            k = a;
            ha = false;
        } else if (j < nt) {
            k = ph->keys[j++];
        } else {
            break;
        }
        rc = qm_hist_writer_put(w, k.kh8);
        if (!rc)
            rc = qm_hist_writer_put(w, k.sn);
    }
    rc = qm_hist_writer_finish(w, &h, ctx->dir, !rc && !ph->bad, ctx->err);
    free(w);
    return rc;
}

int
qm_proof_cache_save(const qm_proof_ctx *ctx)
{
    qm_proof_cache *c = *ctx->cache;
    if (!c || !ctx->dir || !ctx->root_at)
        return 0;
    int first = 0;
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++) {
        ph_shard *ph = &c->sh[i];
        if (!ph->built || ph_update(ctx, c, &ctx->shards[i], ph) != 0 || ph->upto == ph->base)
            continue;
        if (ph->from_file && ph->file_upto == ph->upto && ph->file_first_twig == ph->first_twig)
            continue; /* the file holds exactly this */
        int rc = ph_save(ctx, i, ph);
        if (ph->bad) { /* the old file is damaged: never read it again */
            char path[4096];
            snprintf(path, sizeof(path), "%s/s%02x.hist", ctx->dir, i);
            (void)qm_io_get()->unlink(path);
        }
        if (rc && !first)
            first = rc;
    }
    return first;
}

void
qm_proof_cache_counts(const qm_proof_cache *c, u64 *loaded, u64 *ignored, u64 *scanned)
{
    *loaded = c ? c->loaded : 0;
    *ignored = c ? c->ignored : 0;
    *scanned = c ? c->scanned : 0;
}

/* ---- Global peers ----------------------------------------------------------------------- */

int
qm_proof_global_peers(const qm_proof_ctx *ctx, unsigned k, u8 out[4][32])
{
    qm_proof_cache *c = qm_proof_cache_get(ctx);
    if (!c)
        return -ENOMEM;
    bool same = c->g_valid;
    for (unsigned i = 0; i < QM_SHARD_COUNT && same; i++)
        same = memcmp(c->gr[i], ctx->shards[i].tree.root, 32) == 0;
    if (!same) {
        for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
            memcpy(c->gr[i], ctx->shards[i].tree.root, 32);
        qm_global_tree((const u8(*)[32])c->gr, &c->g);
        c->g_valid = true;
    }
    memcpy(out[0], c->gr[k ^ 1], 32);
    memcpy(out[1], c->g.n1[(k >> 1) ^ 1], 32);
    memcpy(out[2], c->g.n2[(k >> 2) ^ 1], 32);
    memcpy(out[3], c->g.n3[(k >> 3) ^ 1], 32);
    return 0;
}
