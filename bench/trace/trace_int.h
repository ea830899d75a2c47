/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_int.h -- internal helpers shared by trace.c (writer) and trace_read.c (reader):
 * little-endian access, varint decoding, record constants. Not used outside the trace code.
 * Owns: the record layout constants and byte helpers of the trace code.
 * Threads: any (pure inline functions).
 */
#ifndef BENCH_TRACE_INT_H
#define BENCH_TRACE_INT_H

#include "trace.h"

#define REC_HDR 28 /* tag[4] payload_len u32, number u64, n_tx u32, n_ops u32, crc32c u32 */
#define N_STATS 13 /* u64 counters in an end record */

void trace_stats_to_arr(const trace_stats *s, uint64_t a[N_STATS]);
void trace_stats_from_arr(trace_stats *s, const uint64_t a[N_STATS]);

static inline void
put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void
put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t
get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t
get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* Reads a varint from [*p, end). Returns 0 or -1 (truncated / too long). */
static inline int
get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t c = *(*p)++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

#endif /* BENCH_TRACE_INT_H */
