/* SPDX-License-Identifier: Apache-2.0 */
/*
 * twigfile.c -- encoders and validating decoders for twig-file and twig-meta records (format in
 * twigfile.h). Pure; any thread.
 */
#include "twigfile.h"

#include "codec.h"

void
qm_twigrec_encode(u8 *rec, u64 twig_id, const u8 (*nodes)[32])
{
    memcpy(rec, nodes[1], 4095 * 32);
    qm_put_u64le(rec + 131040, twig_id);
    qm_put_u32le(rec + 131048, qm_crc32c(0, rec, 131048));
    memset(rec + 131052, 0, 20);
}

int
qm_twigrec_check(const u8 *rec, size_t len, u64 twig_id)
{
    if (len < QM_TWIG_REC || qm_get_u64le(rec + 131040) != twig_id ||
        qm_get_u32le(rec + 131048) != qm_crc32c(0, rec, 131048))
        return QMDB_CORRUPT;
    return 0;
}

static u32
tmeta_crc(const u8 *rec, u64 twig_id)
{
    u8 id[8];
    qm_put_u64le(id, twig_id);
    return qm_crc32c(qm_crc32c(0, rec, 40), id, 8);
}

void
qm_tmeta_encode(u8 *rec, u64 twig_id, const u8 left_root[32], u64 first_pos)
{
    memcpy(rec, left_root, 32);
    qm_put_u64le(rec + 32, first_pos);
    qm_put_u32le(rec + 40, tmeta_crc(rec, twig_id));
    memset(rec + 44, 0, 4);
}

int
qm_tmeta_decode(const u8 *rec, size_t len, u64 twig_id, u8 left_root[32], u64 *first_pos)
{
    if (len < QM_TMETA_REC || qm_get_u32le(rec + 40) != tmeta_crc(rec, twig_id) ||
        qm_get_u32le(rec + 44) != 0)
        return QMDB_CORRUPT;
    memcpy(left_root, rec, 32);
    *first_pos = qm_get_u64le(rec + 32);
    if (*first_pos % 8 != 0)
        return QMDB_CORRUPT;
    return 0;
}
