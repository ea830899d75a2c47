/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crc32c.c -- CRC-32C checksum for metadata slots, twig-file records and index run pages.
 * Uses the SSE4.2 crc32 instruction when the CPU has it, a byte-wise table otherwise. Any
 * thread.
 *
 * The instruction takes 3 cycles and can start one per cycle, so one chain of it runs at a
 * third of its rate. Inputs of 3 x CRC_BLK bytes or more are cut into three streams of
 * CRC_BLK bytes, each its own chain, started from the running CRC and from 0, and joined:
 * the CRC register is linear over GF(2), so the register after A||B||C is
 * shift(shift(crc(A)) ^ crc0(B)) ^ crc0(C), where shift is what CRC_BLK zero bytes do to a
 * register (four table lookups, one per byte of it: crc_shift_tab) and crc0 a chain started
 * from 0. A 4 KiB run page is one round of three streams and a 12-byte tail.
 */
#include "codec.h"

#include <pthread.h>

static u32 crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_have_sse42;

#if defined(__x86_64__)
/* Bytes of each of the three streams (a multiple of 8). */
#define CRC_BLK 1360u
/* crc_shift_tab[k][b]: the register after CRC_BLK zero bytes, from the register b << 8k. */
static u32 crc_shift_tab[4][256];

__attribute__((target("sse4.2"))) static void
crc_shift_init(void)
{
    for (unsigned k = 0; k < 4; k++)
        for (u32 b = 0; b < 256; b++) {
            u64 c = (u64)b << (8 * k);
            for (unsigned i = 0; i < CRC_BLK / 8; i++)
                c = __builtin_ia32_crc32di(c, 0);
            crc_shift_tab[k][b] = (u32)c;
        }
}
#endif

static void
crc_init(void)
{
    for (u32 i = 0; i < 256; i++) {
        u32 c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc_have_sse42 = __builtin_cpu_supports("sse4.2");
    if (crc_have_sse42)
        crc_shift_init();
#endif
}

#if defined(__x86_64__)
/* The register after CRC_BLK zero bytes. */
static inline u32
crc_shift(u32 c)
{
    return crc_shift_tab[0][c & 0xff] ^ crc_shift_tab[1][(c >> 8) & 0xff] ^
           crc_shift_tab[2][(c >> 16) & 0xff] ^ crc_shift_tab[3][c >> 24];
}

__attribute__((target("sse4.2"))) static u32
crc_hw(u32 crc, const u8 *p, size_t len)
{
    u64 c = crc;
    for (; len >= 3 * CRC_BLK; p += 3 * CRC_BLK, len -= 3 * CRC_BLK) {
        u64 c1 = 0, c2 = 0;
        for (size_t i = 0; i < CRC_BLK; i += 8) {
            u64 w0, w1, w2;
            memcpy(&w0, p + i, 8);
            memcpy(&w1, p + CRC_BLK + i, 8);
            memcpy(&w2, p + 2 * CRC_BLK + i, 8);
            c = __builtin_ia32_crc32di(c, w0);
            c1 = __builtin_ia32_crc32di(c1, w1);
            c2 = __builtin_ia32_crc32di(c2, w2);
        }
        c = crc_shift(crc_shift((u32)c) ^ (u32)c1) ^ (u32)c2;
    }
    while (len >= 8) {
        u64 w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        len -= 8;
    }
    u32 c32 = (u32)c;
    while (len--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}
#endif

u32
qm_crc32c(u32 crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_init);
    const u8 *p = data;
    crc = ~crc;
#if defined(__x86_64__)
    if (crc_have_sse42)
        return ~crc_hw(crc, p, len);
#endif
    while (len--)
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}
