/* SPDX-License-Identifier: Apache-2.0 */
/* test_pool.c -- the parallel-for pool: every index runs exactly once per run, results come
 * back in index order, runs can repeat many times, and a NULL pool runs sequentially. */
#include "../test.h"
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct job {
    atomic_int hits[64];
    int fail_at;
} job;

static int
work(void *arg, size_t i)
{
    job *j = arg;
    atomic_fetch_add(&j->hits[i], 1);
    /* A little work so threads overlap. */
    volatile unsigned x = 0;
    for (unsigned k = 0; k < 1000 * (unsigned)(i % 5); k++)
        x += k;
    return (int)i == j->fail_at ? -(int)i - 1 : 0;
}

int
main(void)
{
    qm_pool *p;
    CHECK_OK(qm_pool_new(3, &p));
    for (int round = 0; round < 2000; round++) {
        job j;
        for (int i = 0; i < 64; i++)
            atomic_init(&j.hits[i], 0);
        size_t n = 1 + (size_t)(round % 20);
        j.fail_at = (round % 7 == 0) ? (int)(n / 2) : -1;
        int rc = qm_pool_run(p, n, work, &j);
        for (size_t i = 0; i < 64; i++) {
            if (j.fail_at < 0 || (int)i <= j.fail_at - 2 || i >= n)
                CHECK_EQ_U64(atomic_load(&j.hits[i]), i < n ? 1 : 0);
            else
                CHECK(atomic_load(&j.hits[i]) <= 1); /* may be skipped after the failure */
        }
        /* The first failure in index order is reported. */
        CHECK_EQ_U64((uint64_t)(int64_t)rc,
                     (uint64_t)(int64_t)(j.fail_at >= 0 ? -j.fail_at - 1 : 0));
    }
    qm_pool_free(p);
    job j;
    for (int i = 0; i < 64; i++)
        atomic_init(&j.hits[i], 0);
    j.fail_at = -1;
    CHECK_OK(qm_pool_run(NULL, 16, work, &j));
    CHECK_EQ_U64(atomic_load(&j.hits[15]), 1);
    j.fail_at = 3; /* sequential runs stop at the failure */
    CHECK_RC(qm_pool_run(NULL, 16, work, &j), -4);
    CHECK_EQ_U64(atomic_load(&j.hits[3]), 2);
    CHECK_EQ_U64(atomic_load(&j.hits[4]), 1);
    j.fail_at = -1;
    CHECK_OK(qm_pool_new(0, &p));
    CHECK_OK(qm_pool_run(p, 16, work, &j));
    CHECK_EQ_U64(atomic_load(&j.hits[15]), 2);
    qm_pool_free(p);
    return test_report("test_pool");
}
