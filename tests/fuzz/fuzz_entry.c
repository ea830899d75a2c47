/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_entry.c -- fuzz target for the entry decoder (src/entry.c: qm_entry_decode,
 * qm_entry_len_from_header, qm_entry_hash, qm_entry_key_hash). Properties checked: a decoded
 * entry lies inside the input, its stored length matches the header, and re-encoding the
 * decoded fields gives back exactly the input's bytes (padding included).
 */
#include "entry.h"
#include "fuzz.h"

#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qm_entry e;
    if (qm_entry_decode(data, size, &e) != 0)
        return 0;
    FUZZ_ASSERT(e.klen >= 1 && e.klen <= 255);
    FUZZ_ASSERT(e.stored_len <= size && e.payload_len <= e.stored_len);
    FUZZ_ASSERT(e.stored_len % 8 == 0);
    FUZZ_ASSERT(qm_entry_len_from_header(data) == e.stored_len);
    FUZZ_ASSERT(e.key == data + 5 && e.value == e.key + e.klen);
    u8 leaf[32], kh[32];
    qm_entry_hash(data, leaf);
    qm_entry_key_hash(e.key, e.klen, e.vlen, kh);
    u64 *dsn = malloc((e.ndsn ? e.ndsn : 1) * sizeof(u64));
    u8 *out = malloc(e.stored_len);
    FUZZ_ASSERT(dsn && out);
    for (u32 i = 0; i < e.ndsn; i++) {
        u64 d = 0;
        for (int k = 7; k >= 0; k--)
            d = (d << 8) | e.dsn_raw[8 * i + k];
        dsn[i] = d;
    }
    u32 n = qm_entry_encode(out, e.key, e.klen, e.value, e.vlen, e.next_key_hash, e.version, e.sn,
                            dsn, e.ndsn);
    FUZZ_ASSERT(n == e.stored_len);
    FUZZ_ASSERT(memcmp(out, data, n) == 0);
    u8 leaf2[32];
    qm_entry_hash(out, leaf2);
    FUZZ_ASSERT(memcmp(leaf, leaf2, 32) == 0);
    free(out);
    free(dsn);
    return 0;
}
