/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proof_verify.c -- the proof verifier (qmdb_proof_verify, qmdb_proof_info_get): a pure
 * function of (proof bytes, claim, trusted state root). No I/O, no allocation, no dependency
 * on the rest of the engine: it compiles and links alone with hash.c, hash_portable.c and
 * hash_shani.c, so a light client can take just these four files (plus qmdb.h, qm_internal.h,
 * hash.h, proof_fmt.h). The format and the rules checked are in proof_fmt.h and docs/PROOFS.md.
 *
 * Thread: any; reentrant.
 */
#include "codec.h"
#include "hash.h"
#include "proof_fmt.h"

/* Reasons (static strings). */
#define WHY(msg)               \
    do {                       \
        if (why)               \
            *why = (msg);      \
        return QMDB_BAD_PROOF; \
    } while (0)

/* One decoded entry record. */
typedef struct pv_entry {
    const u8 *payload;
    u32 len;
    u32 klen, vlen, ndsn;
    const u8 *key, *val, *nkh, *dsn;
    i64 version;
    u64 sn;
    const u8 *path; /* upstream shard path */
    unsigned U;
    u8 kh[32]; /* key hash (sentry rule for empty values) */
} pv_entry;

/* Parses the header; returns 0 or QMDB_BAD_PROOF with *why. */
static int
pv_header(const u8 *p, size_t len, const char **why)
{
    if (!p || len < QM_PROOF_HDR)
        WHY("proof is shorter than its header");
    if (memcmp(p, QM_PROOF_MAGIC, 4) != 0)
        WHY("bad magic (not a qmdb proof)");
    if (p[4] != QM_PROOF_VERSION)
        WHY("unsupported proof format version");
    if (p[5] > QM_PROOF_ABSENT)
        WHY("unknown proof kind");
    if (p[6] > QM_PROOF_DEACTIVATED)
        WHY("unknown liveness mode");
    if (p[7] >= QM_SHARD_COUNT)
        WHY("shard index out of range");
    return 0;
}

/* Splits the next entry record at *off. */
static int
pv_record(const u8 *p, size_t len, size_t *off, pv_entry *e, const char **why)
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
    o += n;
    if (len - o < 1)
        WHY("truncated shard path");
    unsigned U = p[o++];
    if (U < 1 || U > QM_PROOF_MAX_U)
        WHY("upper-tree depth out of range");
    if (len - o < QM_PROOF_PATH_LEN(U))
        WHY("truncated shard path");
    e->U = U;
    e->path = p + o;
    o += QM_PROOF_PATH_LEN(U);
    if (k > 0 && v == 0) { /* sentry key hash */
        memset(e->kh, 0, 32);
        e->kh[0] = e->key[0];
        e->kh[1] = k > 1 ? e->key[1] : 0;
    } else {
        qm_sha256(e->key, k, e->kh);
    }
    *off = o;
    return 0;
}

/* Hashes an entry's path up to its shard root and checks it against the root in the path. */
static int
pv_path(const pv_entry *e, const char **why)
{
    const u8 *path = e->path;
    u64 sn = qm_get_u64le(path + QM_PATH_SN);
    if (sn != e->sn)
        WHY("entry serial number differs from its path position");
    u8 node[32];
    qm_sha256(e->payload, e->len, node);
    if (memcmp(node, path + QM_PATH_LEAF, 32) != 0)
        WHY("entry hash differs from the path's leaf");
    u64 twig = sn >> QM_TWIG_SHIFT;
    if ((twig >> e->U) != 0)
        WHY("serial number lies outside the shard tree");
    unsigned pos = (unsigned)(sn & QM_TWIG_MASK);
    for (unsigned l = 0; l < 11; l++) {
        const u8 *peer = path + QM_PATH_LEFT + 32 * l;
        if ((pos >> l) & 1)
            qm_h2((u8)l, peer, node, node);
        else
            qm_h2((u8)l, node, peer, node);
    }
    u8 left_root[32];
    memcpy(left_root, node, 32);
    unsigned page = pos >> 8; /* 0..7 */
    memcpy(node, path + QM_PATH_PAGE, 32);
    for (unsigned i = 0; i < 3; i++) {
        const u8 *peer = path + QM_PATH_RIGHT + 32 * i;
        if ((page >> i) & 1)
            qm_h2((u8)(8 + i), peer, node, node);
        else
            qm_h2((u8)(8 + i), node, peer, node);
    }
    qm_h2(11, left_root, node, node); /* twig root, level 12 */
    for (unsigned i = 0; i < e->U; i++) {
        const u8 *peer = path + QM_PATH_UPPER + 32 * i;
        if ((twig >> i) & 1)
            qm_h2((u8)(12 + i), peer, node, node);
        else
            qm_h2((u8)(12 + i), node, peer, node);
    }
    if (memcmp(node, path + QM_PATH_UPPER + 32 * e->U, 32) != 0)
        WHY("shard path does not hash to its shard root");
    return 0;
}

static int
pv_active(const pv_entry *e)
{
    unsigned pos = (unsigned)(e->sn & QM_TWIG_MASK);
    const u8 *page = e->path + QM_PATH_PAGE;
    return (page[(pos >> 3) & 31] >> (pos & 7)) & 1;
}

int
qmdb_proof_info_get(const uint8_t *proof, size_t len, qmdb_proof_info *info)
{
    if (!info || info->struct_size < sizeof(qmdb_proof_info))
        return QMDB_INVALID;
    const char *why = NULL;
    QM_RET(pv_header(proof, len, &why));
    size_t off = QM_PROOF_HDR;
    pv_entry e;
    memset(info, 0, sizeof(*info));
    info->struct_size = sizeof(*info);
    info->format_version = proof[4];
    info->absent = proof[5] == QM_PROOF_ABSENT;
    info->deactivated = proof[6] == QM_PROOF_DEACTIVATED;
    info->shard = proof[7];
    info->height = qm_get_u64le(proof + 8);
    info->entries = 1u + proof[6];
    for (unsigned i = 0; i < info->entries; i++) {
        QM_RET(pv_record(proof, len, &off, &e, &why));
        if (i == 0)
            info->upper_levels = e.U;
    }
    return off == len ? 0 : QMDB_BAD_PROOF;
}

int
qmdb_proof_verify(const uint8_t *proof, size_t len, const uint8_t root[32], const void *key,
                  size_t klen, const void *value, size_t vlen, uint64_t height,
                  uint64_t *proved_height_out, const char **why)
{
    if (why)
        *why = "";
    if (!root || !key || klen == 0 || klen > QMDB_MAX_KEY_LEN ||
        (value && (vlen == 0 || vlen > QMDB_MAX_VALUE_LEN))) {
        if (why)
            *why = "malformed claim (key length 1..255, value length 1..2^24-1)";
        return QMDB_INVALID;
    }
    QM_RET(pv_header(proof, len, why));
    unsigned kind = proof[5], live = proof[6], shard = proof[7];
    u64 h = qm_get_u64le(proof + 8);
    u8 kh[32];
    qm_sha256(key, klen, kh);
    if (memcmp(kh, proof + 16, 32) != 0)
        WHY("proof is about a different key");
    if (shard != (unsigned)(kh[0] >> 4))
        WHY("proof names the wrong shard for the key");
    if (value && kind != QM_PROOF_PRESENT)
        WHY("claim is a value but the proof shows absence");
    if (!value && kind != QM_PROOF_ABSENT)
        WHY("claim is absence but the proof shows a value");
    if (height != UINT64_MAX && height != h)
        WHY("proof is for a different height");
    if (height == UINT64_MAX && live != QM_PROOF_ACTIVE)
        WHY("a historical proof needs the claimed height");

    /* Entry records: the main entry E, then (liveness 1) its deactivator D. */
    pv_entry ent[2];
    size_t off = QM_PROOF_HDR;
    unsigned nent = 1u + live;
    for (unsigned i = 0; i < nent; i++) {
        QM_RET(pv_record(proof, len, &off, &ent[i], why));
        QM_RET(pv_path(&ent[i], why));
    }
    if (off != len)
        WHY("trailing bytes after the last record");
    const pv_entry *e = &ent[0];
    const u8 *sroot = e->path + QM_PATH_UPPER + 32 * e->U;
    if (nent > 1 && memcmp(sroot, ent[1].path + QM_PATH_UPPER + 32 * ent[1].U, 32) != 0)
        WHY("entry records name different shard roots");

    /* Shard root -> global state root (FORMAT.md §5). */
    u8 node[32];
    memcpy(node, sroot, 32);
    for (unsigned i = 0; i < 4; i++) {
        const u8 *peer = proof + 48 + 32 * i;
        if ((shard >> i) & 1)
            qm_h2((u8)(64 + i), peer, node, node);
        else
            qm_h2((u8)(64 + i), node, peer, node);
    }
    if (memcmp(node, root, 32) != 0)
        WHY("proof does not hash to the trusted state root");

    /* The main entry answers the claim. */
    if (kind == QM_PROOF_PRESENT) {
        if (e->vlen == 0)
            WHY("entry is a sentry, not a user key");
        if (e->klen != klen || memcmp(e->key, key, klen) != 0)
            WHY("entry holds a different key");
        if (e->vlen != vlen || memcmp(e->val, value, vlen) != 0)
            WHY("entry holds a different value");
    } else {
        if (memcmp(e->kh, kh, 32) >= 0)
            WHY("predecessor's key hash is not below the key's");
        if (memcmp(kh, e->nkh, 32) >= 0)
            WHY("predecessor's gap does not cover the key's hash");
    }
    if (e->version < 0 || ((u64)e->version >> 24) > h)
        WHY("entry's version is newer than the proven height");

    /* E's content was live at h: still active, or deactivated by D appended after h. */
    if (live == QM_PROOF_ACTIVE) {
        if (!pv_active(e))
            WHY("entry's active bit is not set");
    } else {
        const pv_entry *d = &ent[1];
        bool found = false;
        for (u32 i = 0; i < d->ndsn && !found; i++)
            found = qm_get_u64le(d->dsn + 8 * i) == e->sn;
        if (!found)
            WHY("second entry does not deactivate the main entry");
        if (d->version < 0 || ((u64)d->version >> 24) <= h)
            WHY("deactivating entry is not newer than the proven height");
    }
    if (proved_height_out)
        *proved_height_out = h;
    if (why)
        *why = "valid";
    return 0;
}
