/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_hixj.c -- fuzz target for the hybrid index journal's record decoders (src/hixj.c):
 * qm_hixj_next, qm_hixj_item_get, qm_hixj_undo_from and qm_hixj_trusted, which picks the
 * prefix of a chain of records that leads to a committed height. Input: bytes 0-7 the
 * height asked for (low byte only, so that it often occurs), byte 8 the chain's first
 * height, then the records. Properties: the walk never reads past the input; items never
 * overrun their record; a prefix qm_hixj_trusted accepts ends on a record boundary, and its
 * last record reaches the height asked for (its height), or it is empty and the chain starts
 * right above that height; no undo record after it goes below that height.
 */
#include "codec.h"
#include "fuzz.h"
#include "hixj.h"

#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 9)
        return 0;
    u64 h = data[0], first = (u64)data[8] + 1;
    const u8 *recs = data + 9;
    size_t len = size - 9;
    /* Every record boundary, and each record's items. */
    size_t at = 0, step, nb = 0, bounds[4096];
    qm_hixj_blk b;
    const u8 *items;
    size_t ilen;
    while ((step = qm_hixj_next(recs + at, len - at, &b, &items, &ilen)) != 0) {
        FUZZ_ASSERT(step >= QM_HIXJ_REC_HDR && step <= len - at);
        FUZZ_ASSERT(items == recs + at + QM_HIXJ_REC_HDR && ilen == step - QM_HIXJ_REC_HDR);
        qm_hixj_item it;
        size_t n;
        while ((n = qm_hixj_item_get(items, ilen, &it)) != 0) {
            FUZZ_ASSERT(n <= ilen);
            items += n;
            ilen -= n;
        }
        at += step;
        if (nb < 4096)
            bounds[nb++] = at;
    }
    size_t plen = 0;
    if (!qm_hixj_trusted(recs, len, first, h, &plen) || nb >= 4096)
        return 0;
    FUZZ_ASSERT(plen <= at);
    if (plen == 0) {
        FUZZ_ASSERT(first - 1 == h);
    } else {
        bool boundary = false;
        size_t prev = 0;
        for (size_t i = 0; i < nb && !boundary; i++) {
            boundary = bounds[i] == plen;
            if (!boundary)
                prev = bounds[i];
        }
        FUZZ_ASSERT(boundary);
        FUZZ_ASSERT(qm_hixj_next(recs + prev, len - prev, &b, &items, &ilen) == plen - prev);
        FUZZ_ASSERT(b.height == h);
    }
    /* No undo record after the prefix goes below h. */
    at = plen;
    while ((step = qm_hixj_next(recs + at, len - at, &b, &items, &ilen)) != 0) {
        u64 from;
        if (qm_hixj_undo_from(items, ilen, &from))
            FUZZ_ASSERT(b.height >= h);
        at += step;
    }
    return 0;
}
