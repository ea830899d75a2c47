/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_meta.c -- fuzz target for the decoders of src/meta.c:
 *  - qm_meta_decode (one record): the input is decoded as is, then again with its CRC patched
 *    in so the fuzzer reaches the field checks behind the CRC. Property: whatever decodes
 *    re-encodes to a slot that decodes to the same record.
 *  - qm_meta_choose (a whole META file and the damage rule): property: whatever a plain open
 *    accepts, a salvage open accepts with the same record, and the record is the newest
 *    valid slot at the offset its sequence selects.
 *  - qm_roots_decode (ROOTS records, 40 bytes each, at the height of their index): property:
 *    whatever decodes re-encodes to the same bytes.
 */
#include "codec.h"
#include "fuzz.h"
#include "meta.h"

#include <string.h>

static void
roundtrip(const qm_meta *m)
{
    static u8 slot[QM_META_SLOT];
    qm_meta m2;
    qm_meta_encode(m, slot);
    FUZZ_ASSERT(qm_meta_decode(slot, sizeof(slot), &m2) == 0);
    FUZZ_ASSERT(memcmp(m, &m2, sizeof(m2)) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qm_meta m;
    memset(&m, 0, sizeof(m));
    if (qm_meta_decode(data, size, &m) == 0)
        roundtrip(&m);
    if (size < QM_META_LEN)
        return 0;
    u8 *copy = malloc(size);
    FUZZ_ASSERT(copy);
    memcpy(copy, data, size);
    qm_put_u32le(copy + QM_META_LEN - 4, qm_crc32c(0, copy, QM_META_LEN - 4));
    memset(&m, 0, sizeof(m));
    if (qm_meta_decode(copy, size, &m) == 0)
        roundtrip(&m);
    free(copy);
    /* The whole file. */
    qm_meta a, b;
    qm_err err = {{0}};
    if (qm_meta_choose(data, size, false, "META", &a, &err) == 0) {
        FUZZ_ASSERT(qm_meta_choose(data, size, true, "META", &b, &err) == 0);
        FUZZ_ASSERT(memcmp(&a, &b, sizeof(a)) == 0);
        FUZZ_ASSERT(size >= (a.seq & 1) * QM_META_SLOT + QM_META_LEN);
    }
    /* ROOTS records. */
    for (size_t i = 0; i + QM_ROOTS_REC <= size && i < 64 * QM_ROOTS_REC; i += QM_ROOTS_REC) {
        u8 root[32], again[QM_ROOTS_REC];
        if (qm_roots_decode(i / QM_ROOTS_REC, data + i, root) == 0) {
            qm_roots_encode(i / QM_ROOTS_REC, root, again);
            FUZZ_ASSERT(memcmp(again, data + i, QM_ROOTS_REC) == 0);
        }
    }
    return 0;
}
