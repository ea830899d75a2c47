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
 * Historical proofs read the per-shard history cache (pcache.c: per unpruned SN its entry's
 * position, version height and deactivating SN, and all SNs in key-hash order), built on the
 * first historical proof on a shard from the file sXX.hist that a clean close wrote or from a
 * scan of the log, then extended by the log appended since.
 *
 * Thread: the handle's writer (one at a time), through qmdb_prove (db_read.c).
 */
#include "codec.h"
#include "entry.h"
#include "hash.h"
#include "histfile.h"
#include "prover.h"
#include "shard.h"
#include "twigfile.h"

#include <inttypes.h>
#include <stdlib.h>

#define PH_NONE UINT64_MAX

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
    int rc = qm_shard_get_client(s, kh, key, (u32)klen, eb, &f->e, &pos, false);
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
        QM_RET(qm_shard_read_entry_client(s, cand[i], eb, &f->e));
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
    QM_RET(qm_shard_read_entry_client(s, best_pos, eb, &f->e));
    if (memcmp(kh, f->e.next_key_hash, 32) >= 0)
        return QM_CORRUPT(s->err,
                          "shard %u: live predecessor at %" PRIu64 " does not cover the key", s->id,
                          best_pos);
    return 0;
}

/* Reads the entry at SN sn of the cache. */
static int
ph_read(qm_shard *s, const qm_hist_view *v, u64 sn, qm_ebuf *b, qm_entry *e)
{
    u64 pos = qm_hist_pos(v, sn);
    if (qm_hist_bad(v))
        return qm_hist_damaged(s->err, s->id);
    QM_RET(qm_shard_read_entry_client(s, pos, b, e));
    if (e->sn != sn)
        return QM_CORRUPT(s->err, "shard %u: entry at %" PRIu64 " is not SN %" PRIu64, s->id, pos,
                          sn);
    return 0;
}

/* Earlier height h: the entry whose content was live at h (newest such copy), or the
 * predecessor whose gap covered the key at h; and the entry that deactivated it, if any. */
static int
find_hist(const qm_proof_ctx *ctx, qm_shard *s, u64 h, const u8 kh[32], const u8 *key, size_t klen,
          qm_ebuf *eb, qm_ebuf *db, pr_found *f)
{
    qm_hist_view v;
    QM_RET(qm_proof_hist(ctx, s->id, &v));
    u64 k8 = qm_hist_kh8(kh), found = PH_NONE;
    qm_hist_iter it;
    qm_hist_key k;
    /* Present: newest live-at-h entry of the key (its group, SNs downward). */
    qm_hist_seek(&v, k8, &it);
    while (found == PH_NONE && qm_hist_prev(&v, &it, &k) && k.kh8 == k8) {
        if (!qm_hist_live_at(&v, k.sn, h))
            continue;
        QM_RET(ph_read(s, &v, k.sn, eb, &f->e));
        if (entry_is_key(&f->e, key, klen))
            found = k.sn;
    }
    if (found != PH_NONE) {
        f->kind = QM_PROOF_PRESENT;
    } else {
        /* Absent: walk key-hash groups downward from the key's own group; the first group
         * with a live-at-h entry below the key holds the predecessor at h. */
        f->kind = QM_PROOF_ABSENT;
        u8 best[32];
        u64 g = 0;
        qm_hist_seek(&v, k8, &it);
        while (qm_hist_prev(&v, &it, &k)) {
            if (found != PH_NONE && k.kh8 != g)
                break;
            g = k.kh8;
            if (!qm_hist_live_at(&v, k.sn, h))
                continue;
            QM_RET(ph_read(s, &v, k.sn, eb, &f->e));
            u8 pkh[32];
            qm_entry_key_hash(f->e.key, f->e.klen, f->e.vlen, pkh);
            if (memcmp(pkh, kh, 32) < 0 && (found == PH_NONE || memcmp(pkh, best, 32) > 0)) {
                memcpy(best, pkh, 32);
                found = k.sn;
            }
        }
        if (qm_hist_bad(&v))
            return qm_hist_damaged(s->err, s->id);
        if (found == PH_NONE)
            return qm_err_set(s->err, QMDB_PRUNED,
                              "shard %u: no unpruned predecessor of the key at height %" PRIu64,
                              s->id, h);
        QM_RET(ph_read(s, &v, found, eb, &f->e));
        if (memcmp(kh, f->e.next_key_hash, 32) >= 0)
            return qm_err_set(s->err, QMDB_PRUNED,
                              "shard %u: the entries that answer height %" PRIu64 " are pruned",
                              s->id, h);
    }
    u64 d = qm_hist_deact(&v, found);
    if (qm_hist_bad(&v))
        return qm_hist_damaged(s->err, s->id);
    if (d == PH_NONE) {
        f->live = QM_PROOF_ACTIVE;
        return 0;
    }
    f->live = QM_PROOF_DEACTIVATED;
    return ph_read(s, &v, d, db, &f->d);
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
    /* Level 8: the sibling of the page pair holding g; level 9: the sibling of the quad
     * holding it, from its two level-8 nodes. Only these three of the twig's six are hashed. */
    unsigned q = (g >> 1) ^ 1, o = (g >> 2) ^ 1;
    u8 l1[2][32];
    qm_h2(8, bits + 64 * q, bits + 64 * q + 32, out + QM_PATH_RIGHT + 32);
    for (unsigned i = 0; i < 2; i++)
        qm_h2(8, bits + 64 * (2 * o + i), bits + 64 * (2 * o + i) + 32, l1[i]);
    qm_h2(9, l1[0], l1[1], out + QM_PATH_RIGHT + 64);
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
qm_prove_find(const qm_proof_ctx *ctx, const u8 kh[32], const void *key, size_t klen, u64 height,
              qm_proof_pick *f)
{
    unsigned k = qm_shard_of(kh);
    qm_shard *s = &ctx->shards[k];
    f->kind = QM_PROOF_PRESENT;
    f->live = QM_PROOF_ACTIVE;
    if (height == ctx->height)
        return find_latest(s, kh, key, klen, &f->eb, f);
    int rc = find_hist(ctx, s, height, kh, key, klen, &f->eb, &f->db, f);
    if (rc && qm_hist_distrust(ctx, k, rc))
        rc = find_hist(ctx, s, height, kh, key, klen, &f->eb, &f->db, f);
    return rc;
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
    /* Entries of up to 1 KiB are read into the stack (no allocation per proof). */
    u8 ebs[2][1024];
    f.eb = (qm_ebuf){ebs[0], sizeof(ebs[0]), NULL};
    f.db = (qm_ebuf){ebs[1], sizeof(ebs[1]), NULL};
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
    /* Global peers (FORMAT.md §5), cached with the handle until a shard root changes. */
    rc = qm_proof_global_peers(ctx, k, (u8(*)[32])(p + 48));
    if (rc) {
        free(p);
        goto out;
    }
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
