/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crc32c.c -- CRC-32C checksum for metadata slots and twig-file records. Uses the SSE4.2
 * crc32 instruction when the CPU has it, a byte-wise table otherwise. Any thread.
 */
#include "codec.h"

#include <pthread.h>

static u32 crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_have_sse42;

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
#endif
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static u32
crc_hw(u32 crc, const u8 *p, size_t len)
{
    u64 c = crc;
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
