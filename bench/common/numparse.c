/* SPDX-License-Identifier: Apache-2.0 */
/*
 * numparse.c -- bench_parse_u64, the one number parser of the qmdb-bench flags (see
 * numparse.h). Threads: any (pure function).
 * Owns: bench_parse_u64.
 */
#include "numparse.h"

#include <errno.h>
#include <stdlib.h>

int
bench_parse_u64(const char *s, uint64_t *out, int allow_tera)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return -1;
    unsigned sh = 0;
    switch (*end) {
    case 0:
        break;
    case 'k':
    case 'K':
        sh = 10;
        break;
    case 'm':
    case 'M':
        sh = 20;
        break;
    case 'g':
    case 'G':
        sh = 30;
        break;
    case 't':
    case 'T':
        if (!allow_tera)
            return -1;
        sh = 40;
        break;
    default:
        return -1;
    }
    if (sh) {
        end++;
        if (*end == 'i' || *end == 'I')
            end++;
        if (*end == 'b' || *end == 'B')
            end++;
    }
    if (*end || (sh && v > (UINT64_MAX >> sh)))
        return -1;
    *out = (uint64_t)v << sh;
    return 0;
}
