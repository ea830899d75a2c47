/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_dpos.c -- fuzz target for the deactivation-position decoders (src/dpos.c): the record
 * check and the header check. Input byte 0 selects the kind; the rest is the bytes. Each is
 * checked as is; then a record is re-encoded from the pairs it holds and must check with the
 * same height and count, and fail once any one byte is changed; a header with its CRC patched
 * in checks iff magic and version are right.
 */
#include "codec.h"
#include "dpos.h"
#include "fuzz.h"

#include <string.h>

static void
fuzz_rec(const uint8_t *data, size_t size)
{
    u64 h = 0;
    u32 n = 0;
    if (qm_dpos_rec_check(data, size, &h, &n) == 0)
        FUZZ_ASSERT(size == QM_DPOS_REC_FIXED + 16 * (size_t)n && h == qm_get_u64le(data));
    /* Re-encode: the height from the first 8 bytes, pairs from the rest. */
    u64 height = size >= 8 ? qm_get_u64le(data) : 0;
    u32 np = size > 8 ? (u32)((size - 8) / 16) : 0;
    if (np > 64)
        np = 64;
    u64 pairs[128];
    for (u32 i = 0; i < 2 * np; i++)
        pairs[i] = qm_get_u64le(data + 8 + 8 * i);
    u8 rec[QM_DPOS_REC_FIXED + 16 * 64];
    size_t len = QM_DPOS_REC_FIXED + 16 * (size_t)np;
    qm_dpos_rec_encode(rec, height, pairs, np);
    FUZZ_ASSERT(qm_dpos_rec_check(rec, len, &h, &n) == 0 && h == height && n == np);
    FUZZ_ASSERT(
        qm_dpos_rec_check(rec, len - 16 >= QM_DPOS_REC_FIXED ? len - 16 : len - 1, &h, &n) != 0);
    size_t at = size ? data[size - 1] % len : 0;
    rec[at] ^= 0x01;
    FUZZ_ASSERT(qm_dpos_rec_check(rec, len, &h, &n) != 0);
}

static void
fuzz_hdr(const uint8_t *data, size_t size)
{
    u8 h[QM_DPOS_HDR] = {0};
    memcpy(h, data, size < sizeof(h) ? size : sizeof(h));
    unsigned shard = qm_get_u32le(h + 12);
    u64 gen = 0, first = 0;
    (void)qm_dpos_hdr_check(h, shard, &gen, &first);
    qm_put_u32le(h + 32, qm_crc32c(0, h, 32));
    bool good = memcmp(h, "QMDBDPOS", 8) == 0 && qm_get_u32le(h + 8) == 1;
    FUZZ_ASSERT((qm_dpos_hdr_check(h, shard, &gen, &first) == 0) == good);
    if (good) {
        FUZZ_ASSERT(gen == qm_get_u64le(h + 16) && first == qm_get_u64le(h + 24));
        FUZZ_ASSERT(qm_dpos_hdr_check(h, shard ^ 1, &gen, &first) != 0);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        fuzz_hdr(data + 1, size - 1);
    else
        fuzz_rec(data + 1, size - 1);
    return 0;
}
