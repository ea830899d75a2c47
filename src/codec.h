/* SPDX-License-Identifier: Apache-2.0 */
/*
 * codec.h -- little-endian and big-endian fixed-width encoders/decoders, and CRC-32C.
 * Pure functions; any thread.
 */
#ifndef QM_CODEC_H
#define QM_CODEC_H

#include "qm_internal.h"

static inline void
qm_put_u16le(u8 *p, u16 v)
{
    p[0] = (u8)v;
    p[1] = (u8)(v >> 8);
}
static inline void
qm_put_u24le(u8 *p, u32 v)
{
    p[0] = (u8)v;
    p[1] = (u8)(v >> 8);
    p[2] = (u8)(v >> 16);
}
static inline void
qm_put_u32le(u8 *p, u32 v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (u8)(v >> (8 * i));
}
static inline void
qm_put_u64le(u8 *p, u64 v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (u8)(v >> (8 * i));
}
static inline u16
qm_get_u16le(const u8 *p)
{
    return (u16)(p[0] | (p[1] << 8));
}
static inline u32
qm_get_u24le(const u8 *p)
{
    return (u32)p[0] | ((u32)p[1] << 8) | ((u32)p[2] << 16);
}
static inline u32
qm_get_u32le(const u8 *p)
{
    return (u32)p[0] | ((u32)p[1] << 8) | ((u32)p[2] << 16) | ((u32)p[3] << 24);
}
static inline u64
qm_get_u64le(const u8 *p)
{
    u64 v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static inline u64
qm_get_u48be(const u8 *p)
{
    u64 v = 0;
    for (int i = 0; i < 6; i++)
        v = (v << 8) | p[i];
    return v;
}
static inline void
qm_put_u48be(u8 *p, u64 v)
{
    for (int i = 5; i >= 0; i--) {
        p[i] = (u8)v;
        v >>= 8;
    }
}

/* CRC-32C (Castagnoli), as used by iSCSI/ext4. crc is the running value (start with 0). */
QM_HIDDEN u32 qm_crc32c(u32 crc, const void *data, size_t len);

#endif /* QM_CODEC_H */
