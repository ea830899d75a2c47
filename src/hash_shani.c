/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hash_shani.c -- SHA-256 compression with the x86 SHA extensions (SHA-NI). Compiled with a
 * per-function target attribute so the rest of the library needs no special flags; hash.c
 * calls it only when cpuid reports SHA support. Pure; any thread.
 *
 * Register layout: the eight working variables live in two vectors, ABEF and CDGH, which is
 * the form sha256rnds2 consumes. Each group of four rounds adds the round constants to four
 * message words and runs sha256rnds2 twice (two rounds each).
 */
#include "hash_backend.h"

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("sha,sse4.1,ssse3"))) void
qm_sha256_compress_shani(u32 state[8], const u8 *p, size_t nblocks)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i t = _mm_loadu_si128((const __m128i *)&state[0]);  /* a b c d */
    __m128i s1 = _mm_loadu_si128((const __m128i *)&state[4]); /* e f g h */
    t = _mm_shuffle_epi32(t, 0xB1);
    s1 = _mm_shuffle_epi32(s1, 0x1B);
    __m128i s0 = _mm_alignr_epi8(t, s1, 8); /* ABEF */
    s1 = _mm_blend_epi16(s1, t, 0xF0);      /* CDGH */

    while (nblocks--) {
        const __m128i save0 = s0, save1 = s1;
        __m128i w[4];
        for (int g = 0; g < 16; g++) {
            __m128i wg;
            if (g < 4) {
                wg = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
            } else {
                __m128i x = _mm_sha256msg1_epu32(w[(g - 4) & 3], w[(g - 3) & 3]);
                x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g - 1) & 3], w[(g - 2) & 3], 4));
                wg = _mm_sha256msg2_epu32(x, w[(g - 1) & 3]);
            }
            w[g & 3] = wg;
            __m128i m = _mm_add_epi32(wg, _mm_load_si128((const __m128i *)&qm_sha256_k[4 * g]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, m);
            m = _mm_shuffle_epi32(m, 0x0E);
            s0 = _mm_sha256rnds2_epu32(s0, s1, m);
        }
        s0 = _mm_add_epi32(s0, save0);
        s1 = _mm_add_epi32(s1, save1);
        p += 64;
    }

    t = _mm_shuffle_epi32(s0, 0x1B);   /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);  /* DCHG */
    s0 = _mm_blend_epi16(t, s1, 0xF0); /* DCBA */
    s1 = _mm_alignr_epi8(s1, t, 8);    /* HGFE */
    _mm_storeu_si128((__m128i *)&state[0], s0);
    _mm_storeu_si128((__m128i *)&state[4], s1);
}

int
qm_sha256_shani_supported(void)
{
    unsigned a, b, c, d;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("sse4.1") || !__builtin_cpu_supports("ssse3"))
        return 0;
    /* CPUID leaf 7, subleaf 0: EBX bit 29 = SHA. */
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    return (b >> 29) & 1;
}
#else
void
qm_sha256_compress_shani(u32 state[8], const u8 *p, size_t nblocks)
{
    qm_sha256_compress_portable(state, p, nblocks);
}
int
qm_sha256_shani_supported(void)
{
    return 0;
}
#endif
