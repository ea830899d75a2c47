/* SPDX-License-Identifier: Apache-2.0 */
/*
 * entry.h -- the entry: QMDB's unit of the append-only log and a Merkle leaf.
 *
 * Serialized layout (FORMAT.md §1; all integers little-endian):
 *   OFFSET      SIZE  FIELD
 *   0           1     key length k (1..255; 0 only for the null entry)
 *   1           3     value length v (24-bit; 0 only for sentries and the null entry)
 *   4           1     number of deactivated serial numbers n (0..255)
 *   5           k     key
 *   5+k         v     value
 *   5+k+v       32    next_key_hash
 *   37+k+v      8     version (i64)
 *   45+k+v      8     serial number (u64)
 *   53+k+v      8n    DSNs (u64 each)
 *   53+k+v+8n   0..7  zero padding to a multiple of 8
 * Payload length = 53+k+v+8n; stored length = roundup8(53+k+v)+8n. The leaf hash is
 * SHA256(payload), padding excluded.
 *
 * A stub (restored databases only, docs/FORMAT.md "Entry log"; docs/SYNC.md) stands for a
 * dead entry whose bytes a snapshot did not carry: 56 bytes, the header of an entry with
 * k = v = n = 0 (so qm_entry_len_from_header steps over it; k = 0 is never a real entry):
 *   0  5  zero (k = 0, v = 0, n = 0)
 *   5  3  zero
 *   8  8  serial number (u64)
 *   16 32 the dead entry's leaf hash
 *   48 8  zero
 * qm_entry_decode refuses a stub (key length 0): it is never served as an entry.
 *
 * Pure functions; any thread.
 */
#ifndef QM_ENTRY_H
#define QM_ENTRY_H

#include "codec.h"
#include "qm_internal.h"

#define QM_ENTRY_FIXED 53u
#define QM_ENTRY_MAX_DSN 255u

/* A decoded entry. key/value point into the buffer it was decoded from. */
typedef struct qm_entry {
    const u8 *key;
    const u8 *value;
    u32 klen, vlen;
    u8 next_key_hash[32];
    i64 version;
    u64 sn;
    u32 ndsn;
    u64 dsn[2];        /* the first two DSNs (the engine writes at most two) */
    const u8 *dsn_raw; /* all ndsn DSNs, 8 bytes LE each */
    u32 stored_len;
    u32 payload_len;
} qm_entry;

/* DSN i (i < ndsn) of a decoded entry. */
static inline u64
qm_entry_dsn_at(const qm_entry *e, u32 i)
{
    return qm_get_u64le(e->dsn_raw + 8 * (size_t)i);
}

static inline u32
qm_entry_payload_len(u32 klen, u32 vlen, u32 ndsn)
{
    return QM_ENTRY_FIXED + klen + vlen + 8 * ndsn;
}
static inline u32
qm_entry_stored_len(u32 klen, u32 vlen, u32 ndsn)
{
    return (u32)qm_round8(QM_ENTRY_FIXED + klen + vlen) + 8 * ndsn;
}

/* Serializes into out (which must hold qm_entry_stored_len bytes); returns the stored length. */
QM_HIDDEN u32 qm_entry_encode(u8 *out, const u8 *key, u32 klen, const u8 *val, u32 vlen,
                              const u8 next_key_hash[32], i64 version, u64 sn, const u64 *dsn,
                              u32 ndsn);

/* Length of the entry starting at p given at least its first 5 bytes. */
static inline u32
qm_entry_len_from_header(const u8 *p)
{
    u32 k = p[0], v = (u32)p[1] | ((u32)p[2] << 8) | ((u32)p[3] << 16), n = p[4];
    return qm_entry_stored_len(k, v, n);
}

/*
 * Decodes and validates an entry from buf[0..len). Returns 0, or QMDB_CORRUPT if the bytes are
 * not a well-formed entry (length fields past len, nonzero padding, key length 0).
 */
QM_HIDDEN int qm_entry_decode(const u8 *buf, size_t len, qm_entry *e);

#define QM_STUB_LEN 56u

/* Whether the record at p (at least 1 byte) is a stub rather than an entry. */
static inline bool
qm_entry_is_stub(const u8 *p)
{
    return p[0] == 0;
}

/* Writes a stub (QM_STUB_LEN bytes) for serial number sn with leaf hash leaf. */
QM_HIDDEN void qm_stub_encode(u8 *out, u64 sn, const u8 leaf[32]);

/* Decodes a stub from buf[0..len): its SN and leaf hash. 0, or QMDB_CORRUPT if the bytes are
 * not a well-formed stub (short, or a nonzero byte where zeros belong). */
QM_HIDDEN int qm_stub_decode(const u8 *buf, size_t len, u64 *sn, u8 leaf[32]);

/* Leaf hash of an encoded entry (payload bytes only). */
QM_HIDDEN void qm_entry_hash(const u8 *buf, u8 out[32]);

/* Key hash: SHA256(key) for user entries; key[0..2] || 30 zero bytes for sentries (vlen 0). */
QM_HIDDEN void qm_entry_key_hash(const u8 *key, u32 klen, u32 vlen, u8 out[32]);

/* Shard of a key hash. */
static inline unsigned
qm_shard_of(const u8 *key_hash)
{
    return key_hash[0] >> 4;
}

/* Encodes sentry i (0..4095) of shard s into out (88 bytes); returns the stored length. */
QM_HIDDEN u32 qm_sentry_encode(unsigned shard, unsigned i, u8 *out);

/* The null entry's hash (FORMAT.md §3). */
QM_HIDDEN const u8 *qm_null_entry_hash(void);

#endif /* QM_ENTRY_H */
