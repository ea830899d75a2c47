/* SPDX-License-Identifier: Apache-2.0 */
/*
 * entry.c -- entry encoding, decoding with validation, leaf and key hashes, sentries and the
 * null entry (layout in entry.h). Pure; any thread.
 */
#include "entry.h"

#include "codec.h"
#include "hash.h"

#include <pthread.h>

u32
qm_entry_encode(u8 *out, const u8 *key, u32 klen, const u8 *val, u32 vlen,
                const u8 next_key_hash[32], i64 version, u64 sn, const u64 *dsn, u32 ndsn)
{
    QM_ASSERT(klen <= 255 && vlen <= QMDB_MAX_VALUE_LEN && ndsn <= QM_ENTRY_MAX_DSN);
    out[0] = (u8)klen;
    qm_put_u24le(out + 1, vlen);
    out[4] = (u8)ndsn;
    u8 *p = out + 5;
    if (klen)
        memcpy(p, key, klen);
    p += klen;
    if (vlen)
        memcpy(p, val, vlen);
    p += vlen;
    memcpy(p, next_key_hash, 32);
    p += 32;
    qm_put_u64le(p, (u64)version);
    p += 8;
    qm_put_u64le(p, sn);
    p += 8;
    for (u32 i = 0; i < ndsn; i++, p += 8)
        qm_put_u64le(p, dsn[i]);
    u32 stored = qm_entry_stored_len(klen, vlen, ndsn);
    memset(p, 0, (size_t)(out + stored - p));
    return stored;
}

int
qm_entry_decode(const u8 *buf, size_t len, qm_entry *e)
{
    if (len < QM_ENTRY_FIXED + 3)
        return QMDB_CORRUPT;
    u32 k = buf[0], v = qm_get_u24le(buf + 1), n = buf[4];
    u32 stored = qm_entry_stored_len(k, v, n);
    if (k == 0 || stored > len)
        return QMDB_CORRUPT;
    const u8 *p = buf + 5;
    e->klen = k;
    e->vlen = v;
    e->key = p;
    e->value = p + k;
    p += k + v;
    memcpy(e->next_key_hash, p, 32);
    e->version = (i64)qm_get_u64le(p + 32);
    e->sn = qm_get_u64le(p + 40);
    p += 48;
    e->ndsn = n;
    e->dsn_raw = p;
    for (u32 i = 0; i < n && i < 2; i++)
        e->dsn[i] = qm_get_u64le(p + 8 * i);
    p += 8 * n;
    e->payload_len = qm_entry_payload_len(k, v, n);
    e->stored_len = stored;
    for (const u8 *q = p; q < buf + stored; q++)
        if (*q != 0)
            return QMDB_CORRUPT;
    return 0;
}

void
qm_stub_encode(u8 *out, u64 sn, const u8 leaf[32])
{
    memset(out, 0, QM_STUB_LEN);
    qm_put_u64le(out + 8, sn);
    memcpy(out + 16, leaf, 32);
}

int
qm_stub_decode(const u8 *buf, size_t len, u64 *sn, u8 leaf[32])
{
    if (len < QM_STUB_LEN)
        return QMDB_CORRUPT;
    for (unsigned i = 0; i < 8; i++)
        if (buf[i] != 0 || buf[48 + i] != 0)
            return QMDB_CORRUPT;
    *sn = qm_get_u64le(buf + 8);
    memcpy(leaf, buf + 16, 32);
    return 0;
}

void
qm_entry_hash(const u8 *buf, u8 out[32])
{
    u32 k = buf[0], v = qm_get_u24le(buf + 1), n = buf[4];
    qm_sha256(buf, qm_entry_payload_len(k, v, n), out);
}

void
qm_entry_key_hash(const u8 *key, u32 klen, u32 vlen, u8 out[32])
{
    if (vlen == 0) {
        memset(out, 0, 32);
        out[0] = klen > 0 ? key[0] : 0;
        out[1] = klen > 1 ? key[1] : 0;
        return;
    }
    qm_sha256(key, klen, out);
}

u32
qm_sentry_encode(unsigned shard, unsigned i, u8 *out)
{
    unsigned p = shard * QM_SENTRIES_PER_SHARD + i;
    u8 key[32] = {0}, next[32] = {0};
    key[0] = (u8)(p >> 8);
    key[1] = (u8)p;
    if (p == 0xFFFF) {
        memset(next, 0xFF, 32);
    } else {
        next[0] = (u8)((p + 1) >> 8);
        next[1] = (u8)(p + 1);
    }
    return qm_entry_encode(out, key, 32, NULL, 0, next, 0, i, NULL, 0);
}

static u8 null_hash[32];
static pthread_once_t null_once = PTHREAD_ONCE_INIT;

static void
null_init(void)
{
    u8 buf[64];
    u8 zero[32] = {0};
    qm_entry_encode(buf, NULL, 0, NULL, 0, zero, -2, UINT64_MAX, NULL, 0);
    qm_entry_hash(buf, null_hash);
}

const u8 *
qm_null_entry_hash(void)
{
    pthread_once(&null_once, null_init);
    return null_hash;
}
