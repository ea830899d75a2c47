/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_verify.c -- the snapshot chunk verifier (qmdb_chunk_verify): a pure function of
 * (chunk bytes, trusted state root, height). No I/O and no allocation: the left trees and the
 * upper tree are folded left to right with one pending node per level. It needs hash.c (and
 * its backends), twig.c and entry.c (the null tables). The byte format is in snap_fmt.h and
 * docs/SYNC.md, which also says which header fields the root does not commit to and why they
 * can be trusted.
 *
 * Thread: any; reentrant.
 */
#include "codec.h"
#include "entry.h"
#include "hash.h"
#include "snap_fmt.h"
#include "twig.h"

#define WHY(msg)               \
    do {                       \
        if (why)               \
            *why = (msg);      \
        return QMDB_BAD_PROOF; \
    } while (0)

/* A left-to-right fold of one tree level range: at most one pending left node per level. */
typedef struct sv_fold {
    u8 pend[QM_MAX_LEVEL][32];
    u64 pidx[QM_MAX_LEVEL];
    bool has[QM_MAX_LEVEL];
    unsigned top; /* level of the root */
    u8 root[32];
    bool done;
    /* Upper tree only: the range proof's left siblings per level (NULL: none). */
    const u8 *left[QM_MAX_LEVEL];
} sv_fold;

/* Pushes node idx of level L; returns false if a left sibling is missing (a proof fault). */
static bool
sv_push(sv_fold *f, unsigned L, u64 idx, const u8 h[32])
{
    u8 node[32];
    memcpy(node, h, 32);
    while (L < f->top) {
        if ((idx & 1) == 0) {
            memcpy(f->pend[L], node, 32);
            f->pidx[L] = idx;
            f->has[L] = true;
            return true;
        }
        const u8 *l;
        if (f->has[L] && f->pidx[L] + 1 == idx)
            l = f->pend[L];
        else if (!f->has[L] && f->left[L])
            l = f->left[L];
        else
            return false;
        qm_h2((u8)L, l, node, node);
        f->has[L] = false;
        f->left[L] = NULL; /* used once: the range's first node at L */
        idx >>= 1;
        L++;
    }
    if (f->done)
        return false;
    memcpy(f->root, node, 32);
    f->done = true;
    return true;
}

/* Completes the fold: each pending node takes its right sibling from right(L). */
static bool
sv_flush(sv_fold *f, unsigned from, const u8 *(*right)(const void *, unsigned), const void *arg)
{
    for (unsigned L = from; L < f->top; L++) {
        if (!f->has[L])
            continue;
        u8 node[32];
        qm_h2((u8)L, f->pend[L], right(arg, L), node);
        f->has[L] = false;
        if (!sv_push(f, L + 1, f->pidx[L] >> 1, node))
            return false;
    }
    return f->done;
}

static const u8 *
sv_null_left(const void *arg, unsigned L)
{
    (void)arg;
    return qm_null_left(L);
}

/* The upper tree's right siblings, from the range proof. */
typedef struct sv_right {
    const u8 *node[QM_MAX_LEVEL];
} sv_right;

static const u8 *
sv_upper_right(const void *arg, unsigned L)
{
    const sv_right *r = arg;
    return r->node[L] ? r->node[L] : qm_null_node(L); /* (always carried when needed) */
}

static unsigned
sv_popcount(const u8 *p, size_t n)
{
    unsigned c = 0;
    for (size_t i = 0; i < n; i++)
        c += (unsigned)__builtin_popcount(p[i]);
    return c;
}

/* Parses and hashes one entry at p (avail bytes) expected to hold serial number sn. */
static int
sv_entry(const u8 *p, size_t avail, u64 sn, u32 *stored, u8 leaf[32], const char **why)
{
    if (avail < 5)
        WHY("truncated entry");
    u32 k = p[0], v = (u32)p[1] | ((u32)p[2] << 8) | ((u32)p[3] << 16), n = p[4];
    if (k == 0)
        WHY("entry has an empty key");
    u32 plen = qm_entry_payload_len(k, v, n), slen = qm_entry_stored_len(k, v, n);
    if (slen > avail)
        WHY("truncated entry");
    for (u32 i = plen; i < slen; i++)
        if (p[i] != 0)
            WHY("entry padding is not zero");
    if (qm_get_u64le(p + 45 + k + v) != sn)
        WHY("entry serial number differs from its place in the twig");
    qm_sha256(p, plen, leaf);
    *stored = slen;
    return 0;
}

int
qmdb_chunk_verify(const uint8_t *chunk, size_t len, const uint8_t root[32], uint64_t height,
                  qmdb_chunk_info *info, const char **why)
{
    if (why)
        *why = "";
    if (!root || (info && info->struct_size < sizeof(qmdb_chunk_info))) {
        if (why)
            *why = "no trusted root, or info without struct_size";
        return QMDB_INVALID;
    }
    const u8 *p = chunk;
    if (!p || len < QM_SNAP_HDR)
        WHY("chunk is shorter than its header");
    if (memcmp(p, QM_SNAP_MAGIC, 4) != 0)
        WHY("bad magic (not a qmdb snapshot chunk)");
    if (p[4] != QM_SNAP_VERSION && p[4] != QM_SNAP_VERSION_V1)
        WHY("unsupported chunk format version");
    unsigned shard = p[5], flags = p[6], U = p[7];
    if (shard >= QM_SHARD_COUNT)
        WHY("shard index out of range");
    if ((flags & ~QM_SNAP_TAIL) != 0)
        WHY("unknown chunk flags");
    for (unsigned i = 48; i < 64; i++)
        if (p[i] != 0)
            WHY("reserved header bytes are not zero");
    bool tail = flags & QM_SNAP_TAIL;
    u64 h = qm_get_u64le(p + 8), t0 = qm_get_u64le(p + 16), t1 = qm_get_u64le(p + 24);
    u64 next_sn = qm_get_u64le(p + 32), sn_start = qm_get_u64le(p + 40);
    if (h != height)
        WHY("chunk is for a different height");
    if (U < 1 || U > 51)
        WHY("upper-tree depth out of range");
    u64 y = UINT64_MAX; /* the youngest twig (tail only) */
    if (tail) {
        if (next_sn < 2ull * QM_TWIG_LEAVES || (next_sn >> QM_TWIG_SHIFT) >= (1ull << 51))
            WHY("next serial number out of range");
        y = next_sn >> QM_TWIG_SHIFT;
        if (U != 1u + (unsigned)(63 - __builtin_clzll(y)))
            WHY("upper-tree depth does not match the next serial number");
        if (t1 != y + 1)
            WHY("tail chunk does not end with the youngest twig");
        if (sn_start > next_sn)
            WHY("compaction cursor lies past the next serial number");
    } else if (next_sn != 0 || sn_start != 0) {
        WHY("only the tail chunk states next_sn and the compaction cursor");
    }
    if (t0 >= t1 || t1 > (1ull << U))
        WHY("twig range is empty or outside the shard tree");

    /* The 16 shard roots -> the state root (FORMAT.md §5). */
    const u8 *sroots = p + QM_SNAP_OFF_ROOTS;
    qm_gtree g;
    qm_global_tree((const u8(*)[32])sroots, &g);
    if (memcmp(g.root, root, 32) != 0)
        WHY("shard roots do not hash to the trusted state root");

    /* The range proof: where each level's siblings are. */
    unsigned top = 12u + U;
    sv_fold upf, *up = &upf;
    memset(up, 0, sizeof(*up));
    up->top = top;
    sv_right rs;
    memset(&rs, 0, sizeof(rs));
    size_t off = QM_SNAP_HDR;
    u64 a = t0, b = t1;
    for (unsigned L = 12; L < top; L++) {
        if (a & 1) {
            if (len - off < 32)
                WHY("truncated range proof");
            up->left[L] = p + off;
            off += 32;
        }
        if (b & 1) {
            if (len - off < 32)
                WHY("truncated range proof");
            rs.node[L] = p + off;
            off += 32;
        }
        a >>= 1;
        b = (b + 1) >> 1;
    }

    /* Twig records. */
    u64 entries = 0, live = 0, log_bytes = 0, summaries = 0;
    sv_fold lf;
    for (u64 t = t0; t < t1; t++) {
        u8 left_root[32], troot[32];
        if (len - off < 1)
            WHY("truncated twig record");
        u8 kind = p[off++];
        if (kind == QM_SNAP_SUMMARY) {
            if (len - off < 32)
                WHY("truncated left root");
            memcpy(left_root, p + off, 32);
            off += 32;
            qm_twig_root(left_root, NULL, troot);
            summaries++;
        } else if (kind == QM_SNAP_FULL || (kind == QM_SNAP_SPARSE && p[4] >= 2)) {
            bool sparse = kind == QM_SNAP_SPARSE;
            if (sparse && t == y)
                WHY("sparse record for the youngest twig");
            if (len - off < QM_ACTIVE_BYTES)
                WHY("truncated ActiveBits");
            const u8 *bits = p + off;
            off += QM_ACTIVE_BYTES;
            u64 base = t << QM_TWIG_SHIFT;
            unsigned cnt = t == y ? (unsigned)(next_sn & QM_TWIG_MASK) : QM_TWIG_LEAVES;
            for (unsigned i = 0; i < QM_TWIG_LEAVES; i++) {
                bool on = (bits[i >> 3] >> (i & 7)) & 1;
                if (on && i >= cnt)
                    WHY("active bit set past the youngest entry");
                if (on && tail && base + i < sn_start)
                    WHY("active bit set below the compaction cursor");
            }
            live += sv_popcount(bits, QM_ACTIVE_BYTES);
            memset(&lf, 0, sizeof(lf));
            lf.top = 11;
            for (unsigned i = 0; i < cnt; i++) {
                u8 leaf[32];
                u32 slen;
                if (sparse && !((bits[i >> 3] >> (i & 7)) & 1)) {
                    if (len - off < 32)
                        WHY("truncated leaf hash");
                    memcpy(leaf, p + off, 32); /* a dead entry: its leaf only */
                    off += 32;
                } else {
                    QM_RET(sv_entry(p + off, len - off, base + i, &slen, leaf, why));
                    off += slen;
                    log_bytes += slen;
                    entries++;
                }
                if (!sv_push(&lf, 0, i, leaf))
                    WHY("left tree fold failed");
            }
            if (cnt == 0)
                memcpy(left_root, qm_null_left(11), 32);
            else if (!lf.done && !sv_flush(&lf, 0, sv_null_left, NULL))
                WHY("left tree fold failed");
            else
                memcpy(left_root, lf.root, 32);
            qm_twig_root(left_root, bits, troot);
        } else {
            WHY("unknown twig record kind");
        }
        if (!sv_push(up, 12, t, troot))
            WHY("range proof lacks a left sibling");
    }
    if (off != len)
        WHY("trailing bytes after the last twig");
    if (!up->done && !sv_flush(up, 12, sv_upper_right, &rs))
        WHY("range proof does not reach the shard root");
    if (memcmp(up->root, sroots + 32 * shard, 32) != 0)
        WHY("twigs do not hash to the shard root");

    if (info) {
        memset(info, 0, sizeof(*info));
        info->struct_size = sizeof(*info);
        info->format_version = p[4];
        info->shard = shard;
        info->tail = tail;
        info->height = h;
        info->next_sn = next_sn;
        info->sn_start = sn_start;
        info->twig_begin = t0;
        info->twig_end = t1;
        info->summaries = summaries;
        info->log_bytes = log_bytes;
        info->entries = entries;
        info->live = live;
    }
    if (why)
        *why = "valid";
    return 0;
}
