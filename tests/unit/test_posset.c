/* SPDX-License-Identifier: Apache-2.0 */
/* test_posset.c -- the position set against a sorted-array model: random positions (multiples
 * of 8, as log positions are), first untagged, which keep the set in 4-byte slots, then with a
 * 4-bit tag in the top bits (as prefetch.c keeps the shard), which widen it in place; repeats,
 * growth through many capacities, the 32 GiB edge of the narrow slots, and lookups of absent
 * values; the filter
 * of positions built from two sets: never "no" for a member of either, rarely "maybe" for
 * others, and "maybe" for everything when it has no bits. */
#include "../test.h"
#include "posset.h"

#include <stdlib.h>

#define N 200000

static int
cmp_u64(const void *a, const void *b)
{
    u64 x = *(const u64 *)a, y = *(const u64 *)b;
    return x < y ? -1 : x > y;
}

static bool
model_has(const u64 *v, size_t n, u64 x)
{
    return bsearch(&x, v, n, sizeof(u64), cmp_u64) != NULL;
}

int
main(void)
{
    static u64 vals[N], sorted[N];
    uint64_t rng = 77;
    qm_posset s = {0};
    CHECK(!qm_posset_has(&s, 0));
    CHECK(!qm_posset_has(&s, 4096));
    size_t distinct = 0;
    for (size_t i = 0; i < N; i++) {
        u64 r = test_xorshift(&rng);
        /* a small range of positions, so that values repeat and tags share positions; the
         * first half untagged */
        u64 v = (r % 50000) * 8 | (i < N / 2 ? 0 : (r >> 40 & 15) << 60);
        vals[i] = v;
        bool had = qm_posset_has(&s, v);
        CHECK_RC(qm_posset_add(&s, v), had ? 0 : 1);
        CHECK(qm_posset_has(&s, v));
        distinct += !had;
        if (i % 4096 == 0)
            CHECK_EQ_U64(s.n, distinct);
        if (i + 1 == N / 2) { /* untagged so far: narrow slots, every position still found */
            CHECK(!s.wide);
            CHECK_EQ_U64(qm_posset_bytes(&s), s.cap * 4);
            for (size_t k = 0; k <= i; k++)
                CHECK(qm_posset_has(&s, vals[k]));
            CHECK(!qm_posset_has(&s, vals[0] | 1ull << 60) && !qm_posset_has(&s, vals[0] + 4));
        }
    }
    CHECK(s.wide);
    CHECK_EQ_U64(qm_posset_bytes(&s), s.cap * 8);
    for (size_t k = 0; k < N; k++) /* widened in place: nothing lost */
        CHECK(qm_posset_has(&s, vals[k]));
    CHECK_EQ_U64(s.n, distinct);
    CHECK(s.cap * 3 >= s.n * 4);
    memcpy(sorted, vals, sizeof(vals));
    qsort(sorted, N, sizeof(u64), cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < N; i++)
        if (m == 0 || sorted[m - 1] != sorted[i])
            sorted[m++] = sorted[i];
    CHECK_EQ_U64(m, distinct);
    long wrong = 0;
    for (size_t i = 0; i < 400000; i++) { /* present and absent values, tags included */
        u64 r = test_xorshift(&rng);
        u64 v = (r % 60000) * 8 | (r >> 40 & 15) << 60;
        wrong += qm_posset_has(&s, v) != model_has(sorted, m, v);
        wrong += qm_posset_has(&s, v + 1) != model_has(sorted, m, v + 1); /* not multiples */
    }
    CHECK_EQ_U64(wrong, 0);

    /* The 32 GiB edge: position / 8 of UINT32_MAX - 1 is the last a narrow slot holds. */
    qm_posset e = {0};
    u64 last = (u64)(UINT32_MAX - 1) << 3, past = (u64)UINT32_MAX << 3;
    CHECK_RC(qm_posset_add(&e, 0), 1);
    CHECK_RC(qm_posset_add(&e, last), 1);
    CHECK(!e.wide && qm_posset_has(&e, last) && qm_posset_has(&e, 0) && !qm_posset_has(&e, past));
    CHECK_RC(qm_posset_add(&e, past), 1);
    CHECK(e.wide && qm_posset_has(&e, last) && qm_posset_has(&e, past) && qm_posset_has(&e, 0));
    CHECK_RC(qm_posset_add(&e, last), 0);
    CHECK_EQ_U64(e.n, 3);
    qm_posset_free(&e);
    CHECK(!e.wide && e.slot == NULL);

    /* The filter of s (wide) and a second set of other positions (narrow). */
    static u64 s2v[30000];
    qm_posset s2 = {0};
    for (size_t i = 0; i < 30000; i++) {
        s2v[i] = (1000000 + test_xorshift(&rng) % 1000000) * 8;
        CHECK(qm_posset_add(&s2, s2v[i]) >= 0);
    }
    CHECK(!s2.wide);
    const qm_posset *both[2] = {&s, &s2};
    qm_posfilt f;
    qm_posfilt_build(&f, both, 2);
    CHECK(f.bits != NULL);
    u64 nbits = 1ull << (64 - f.shift), npos = s.n + s2.n; /* the power of two >= 16 per position */
    CHECK(nbits >= 16 * npos && nbits / 2 < 16 * npos);
    long missed = 0, maybe = 0, absent = 0;
    for (size_t i = 0; i < m; i++)
        missed += !qm_posfilt_maybe(&f, sorted[i]);
    for (size_t i = 0; i < 30000; i++)
        missed += !qm_posfilt_maybe(&f, s2v[i]);
    for (size_t i = 0; i < 200000; i++) {
        u64 v = (3000000 + test_xorshift(&rng) % 1000000) * 8; /* in neither set */
        absent++;
        maybe += qm_posfilt_maybe(&f, v);
    }
    CHECK_EQ_U64(missed, 0);
    CHECK(maybe > 0 && maybe * 100 < absent * 10); /* about 1 - e^(-1/16), 6% */
    qm_posfilt_free(&f);
    CHECK(f.bits == NULL && qm_posfilt_maybe(&f, sorted[0]) && qm_posfilt_maybe(&f, 8));
    qm_posset empty = {0};
    const qm_posset *none[1] = {&empty};
    qm_posfilt_build(&f, none, 1);
    CHECK(f.bits == NULL && qm_posfilt_maybe(&f, 8));
    qm_posfilt_build(&f, none, 0);
    CHECK(f.bits == NULL);
    qm_posset_free(&s2);

    qm_posset_free(&s);
    CHECK(s.slot == NULL && s.n == 0 && s.cap == 0);
    CHECK(!qm_posset_has(&s, vals[0]));
    return test_report("test_posset");
}
