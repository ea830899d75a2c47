/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_histfile.c -- fuzz target for the reader of the history cache file sXX.hist
 * (src/histfile.c): the input is a whole file. It goes through qm_hist_map_init (header,
 * size, chunk table) and then every chunk through qm_hist_body (its CRC); then again with
 * the chunk table, the table CRC and the header CRC patched in, so the fuzzer reaches the
 * checks behind them. Properties: a decoded header re-encodes to the same 128 bytes; a body
 * range is only returned inside the file's body, and only when every chunk it touches
 * matches its CRC in the table; after a failed chunk nothing more is returned.
 */
#include "codec.h"
#include "fuzz.h"
#include "histfile.h"

#include <string.h>

static void
try_file(const u8 *d, size_t size)
{
    qm_hist_map m;
    if (qm_hist_map_init(&m, d, size) != 0)
        return;
    u8 again[QM_HIST_HDR];
    qm_hist_hdr_encode(&m.h, again);
    FUZZ_ASSERT(memcmp(again, d, QM_HIST_HDR) == 0);
    u64 blen = m.n * QM_HIST_PER_SN;
    const u8 *tab = d + QM_HIST_HDR + blen;
    bool failed = false;
    for (u64 c = 0; c < m.nchunks; c++) {
        u64 off = c * QM_HIST_CHUNK, len = QM_MIN((u64)QM_HIST_CHUNK, blen - off);
        const u8 *p = qm_hist_body(&m, off, (size_t)len);
        if (!p) {
            failed = true;
            continue;
        }
        FUZZ_ASSERT(!failed);
        FUZZ_ASSERT(p == d + QM_HIST_HDR + off);
        FUZZ_ASSERT(qm_crc32c(0, p, len) == qm_get_u32le(tab + 4 * c));
    }
    /* Ranges past the body are never served. */
    FUZZ_ASSERT(qm_hist_body(&m, blen, 8) == NULL);
    free(m.ok);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try_file(data, size);
    if (size < QM_HIST_HDR)
        return 0;
    u8 *copy = malloc(size);
    FUZZ_ASSERT(copy);
    memcpy(copy, data, size);
    u64 n = (qm_get_u64le(copy + 72) - qm_get_u64le(copy + 64)), blen = n * QM_HIST_PER_SN;
    u64 c = qm_hist_chunks(n);
    if (n < (1u << 24) && QM_HIST_HDR + blen + 4 * c == size) {
        u8 *tab = copy + QM_HIST_HDR + blen;
        for (u64 i = 0; i < c; i++) {
            u64 off = i * QM_HIST_CHUNK;
            qm_put_u32le(tab + 4 * i, qm_crc32c(0, copy + QM_HIST_HDR + off,
                                                QM_MIN((u64)QM_HIST_CHUNK, blen - off)));
        }
        qm_put_u32le(copy + 96, qm_crc32c(0, tab, 4 * c));
    }
    qm_put_u32le(copy + 124, qm_crc32c(0, copy, 124));
    try_file(copy, size);
    free(copy);
    return 0;
}
