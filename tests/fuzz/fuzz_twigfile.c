/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_twigfile.c -- fuzz target for the twig-file and twig-meta record decoders
 * (src/twigfile.c). Input byte 0 selects the record kind; the rest is the record (a twig
 * record is zero-padded to its 131072 bytes). Each record is checked as is, then with its CRC
 * patched in. Properties: a patched record with the right id always validates and one with a
 * wrong id never does; a decoded twig-meta record re-encodes to the same bytes.
 */
#include "codec.h"
#include "fuzz.h"
#include "twigfile.h"

#include <string.h>

static void
fuzz_twigrec(const uint8_t *data, size_t size)
{
    static u8 rec[QM_TWIG_REC];
    memset(rec, 0, sizeof(rec));
    memcpy(rec, data, size < sizeof(rec) ? size : sizeof(rec));
    u64 id = qm_get_u64le(rec + 131040);
    (void)qm_twigrec_check(rec, size, id);
    (void)qm_twigrec_check(rec, sizeof(rec), id);
    qm_put_u32le(rec + 131048, qm_crc32c(0, rec, 131048));
    FUZZ_ASSERT(qm_twigrec_check(rec, sizeof(rec), id) == 0);
    FUZZ_ASSERT(qm_twigrec_check(rec, sizeof(rec), id + 1) != 0);
    FUZZ_ASSERT(qm_twigrec_check(rec, sizeof(rec) - 1, id) != 0);
}

static void
fuzz_tmeta(const uint8_t *data, size_t size)
{
    u8 rec[QM_TMETA_REC + 8] = {0};
    size_t n = size < sizeof(rec) ? size : sizeof(rec);
    memcpy(rec, data, n);
    u64 id = qm_get_u64le(rec + QM_TMETA_REC); /* the 8 bytes after the record */
    u8 root[32];
    u64 pos = 0;
    if (qm_tmeta_decode(rec, n < QM_TMETA_REC ? n : QM_TMETA_REC, id, root, &pos) == 0) {
        u8 again[QM_TMETA_REC];
        qm_tmeta_encode(again, id, root, pos);
        FUZZ_ASSERT(memcmp(again, rec, QM_TMETA_REC) == 0);
        FUZZ_ASSERT(pos % 8 == 0);
        FUZZ_ASSERT(qm_tmeta_decode(rec, QM_TMETA_REC, id ^ 1, root, &pos) != 0);
    }
    /* Patch the CRC in (as the encoder would): it must then decode iff the offset is aligned. */
    u8 patched[QM_TMETA_REC];
    u64 want_pos = qm_get_u64le(rec + 32);
    qm_tmeta_encode(patched, id, rec, want_pos);
    int rc = qm_tmeta_decode(patched, sizeof(patched), id, root, &pos);
    FUZZ_ASSERT((rc == 0) == (want_pos % 8 == 0));
    if (rc == 0)
        FUZZ_ASSERT(pos == want_pos && memcmp(root, rec, 32) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        fuzz_twigrec(data + 1, size - 1);
    else
        fuzz_tmeta(data + 1, size - 1);
    return 0;
}
