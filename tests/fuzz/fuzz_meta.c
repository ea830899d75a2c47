/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_meta.c -- fuzz target for the metadata-slot decoder (src/meta.c: qm_meta_decode). The
 * input is decoded as is, then again with its CRC patched in so the fuzzer reaches the field
 * checks behind the CRC. Property: whatever decodes re-encodes to a slot that decodes to the
 * same record.
 */
#include <string.h>

#include "codec.h"
#include "fuzz.h"
#include "meta.h"

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
    return 0;
}
