/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_histfile.c -- fuzz target for the history cache file sXX.hist (src/histfile.c): the
 * input is a whole file. Its header goes through qm_hist_hdr_decode and, when the size fits,
 * its body through qm_hist_body_accept; then again with both CRCs patched in, so the fuzzer
 * reaches the field and structure checks behind them. Properties: a decoded header re-encodes
 * to the same 128 bytes; an accepted body holds what the format promises (positions strictly
 * increasing below scan_pos, deactivators after their SN and below upto, keys strictly sorted
 * and naming every SN of the range once).
 */
#include "codec.h"
#include "fuzz.h"
#include "histfile.h"

#include <string.h>

static void
check_body(const qm_hist_hdr *h, const qm_hist_arrays *a)
{
    u64 n = h->upto - h->base;
    u64 sum = 0, want = 0;
    for (u64 i = 0; i < n; i++) {
        FUZZ_ASSERT(a->pos[i] < h->scan_pos && (i == 0 || a->pos[i] > a->pos[i - 1]));
        FUZZ_ASSERT(a->deact[i] == QM_HIST_NONE ||
                    (a->deact[i] > h->base + i && a->deact[i] < h->upto));
        FUZZ_ASSERT(a->keys[i].sn >= h->base && a->keys[i].sn < h->upto);
        if (i > 0)
            FUZZ_ASSERT(
                a->keys[i - 1].kh8 < a->keys[i].kh8 ||
                (a->keys[i - 1].kh8 == a->keys[i].kh8 && a->keys[i - 1].sn < a->keys[i].sn));
        sum += a->keys[i].sn - h->base;
        want += i;
    }
    FUZZ_ASSERT(sum == want); /* with uniqueness (checked by accept): every SN once */
}

/* Decodes the file image d; returns 1 if the body was accepted. */
static int
try_file(const u8 *d, size_t size)
{
    qm_hist_hdr h;
    if (qm_hist_hdr_decode(d, size, &h) != 0)
        return 0;
    u8 again[QM_HIST_HDR];
    qm_hist_hdr_encode(&h, again);
    FUZZ_ASSERT(memcmp(again, d, QM_HIST_HDR) == 0);
    u64 n = h.upto - h.base;
    if (size != QM_HIST_HDR + n * QM_HIST_PER_SN)
        return 0;
    qm_hist_arrays a = {malloc(n * 8 + 1), malloc(n * 8 + 1), malloc(n * 8 + 1),
                        malloc(n * 16 + 1)};
    FUZZ_ASSERT(a.pos && a.verh && a.deact && a.keys);
    const u8 *b = d + QM_HIST_HDR;
    memcpy(a.pos, b, n * 8);
    memcpy(a.verh, b + n * 8, n * 8);
    memcpy(a.deact, b + n * 16, n * 8);
    memcpy(a.keys, b + n * 24, n * 16);
    int ok = qm_hist_body_accept(&h, &a) == 0;
    if (ok)
        check_body(&h, &a);
    free(a.pos);
    free(a.verh);
    free(a.deact);
    free(a.keys);
    return ok;
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
    qm_put_u32le(copy + 96, qm_crc32c(0, copy + QM_HIST_HDR, size - QM_HIST_HDR));
    qm_put_u32le(copy + 124, qm_crc32c(0, copy, 124));
    try_file(copy, size);
    free(copy);
    return 0;
}
