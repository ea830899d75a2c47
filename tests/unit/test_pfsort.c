/* SPDX-License-Identifier: Apache-2.0 */
/* test_pfsort.c -- the lookup order's radix sort (qm_pf_sort, prefetch.h) against its
 * definition: the output is the input's keys in ascending order, every element exactly once
 * (each idx once, with its own key), and equal keys in their input order. Lengths around the
 * insertion-sort threshold and large ones; keys spread over all 48 bits, keys sharing their
 * top bits (a shard's), keys with many repeats, keys differing in one digit only, and keys
 * that are all equal. */
#include "../test.h"
#include "prefetch.h"

#include <stdlib.h>

enum { SPREAD, SHARD, REPEATS, ONE_DIGIT, EQUAL, KINDS };

static u64
make_key(int kind, uint64_t *rng)
{
    u64 r = test_xorshift(rng) & 0xFFFFFFFFFFFFull;
    switch (kind) {
    case SHARD:
        return 0xA00000000000ull | (r & 0x0FFFFFFFFFFFull);
    case REPEATS:
        return (r % 37) << 20 | 0x123;
    case ONE_DIGIT:
        return 0x5A5A5A000000ull | (r & 0xFFF000);
    case EQUAL:
        return 0xFFFFFFFFFFFFull;
    default:
        return r;
    }
}

static void
check_sort(size_t n, int kind, uint64_t *rng)
{
    qm_pf_op *v = malloc((n + 1) * sizeof(*v)), *in = malloc((n + 1) * sizeof(*in));
    void *scratch = malloc(QM_PF_SORT_SCRATCH(n) + 1);
    u8 *seen = calloc(n + 1, 1);
    REQUIRE(v && in && scratch && seen);
    for (size_t i = 0; i < n; i++)
        in[i] = v[i] = (qm_pf_op){.key = make_key(kind, rng), .idx = (u32)i, .shard = 7};
    qm_pf_sort(v, n, scratch);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].idx >= n || seen[v[i].idx] || v[i].key != in[v[i].idx].key || v[i].shard != 7)
            bad++; /* not a permutation of the input */
        else
            seen[v[i].idx] = 1;
        if (i > 0 &&
            (v[i - 1].key > v[i].key || (v[i - 1].key == v[i].key && v[i - 1].idx > v[i].idx)))
            bad++; /* out of order, or equal keys reordered */
    }
    if (bad)
        fprintf(stderr, "n=%zu kind=%d: %zu misplaced\n", n, kind, bad);
    CHECK(bad == 0);
    free(v);
    free(in);
    free(scratch);
    free(seen);
}

int
main(void)
{
    uint64_t rng = 4242;
    static const size_t lens[] = {0, 1, 2, 3, 63, 64, 65, 100, 4095, 4096, 6250, 10000, 100000};
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
        for (int kind = 0; kind < KINDS; kind++)
            check_sort(lens[l], kind, &rng);
    /* An input already in order, and one in reverse order. */
    size_t n = 5000;
    qm_pf_op *v = malloc(n * sizeof(*v));
    void *scratch = malloc(QM_PF_SORT_SCRATCH(n));
    REQUIRE(v && scratch);
    for (int rev = 0; rev < 2; rev++) {
        for (size_t i = 0; i < n; i++)
            v[i] = (qm_pf_op){.key = (rev ? n - i : i) * 0x10001ull, .idx = (u32)i};
        qm_pf_sort(v, n, scratch);
        for (size_t i = 1; i < n; i++)
            CHECK(v[i - 1].key < v[i].key);
        CHECK(v[0].key == (rev ? 1 : 0) * 0x10001ull);
    }
    free(v);
    free(scratch);
    return test_report("test_pfsort");
}
