/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool.c -- fixed worker-thread pool for parallel-for jobs (see pool.h).
 *
 * Synchronisation: one mutex guards the job description and counters; workers sleep on
 * `work` and the caller on `done`. Job indices are claimed under the mutex (jobs are coarse:
 * one shard each), so no atomics are needed.
 */
#include "pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define POOL_MAX_JOBS 64

struct qm_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    pthread_t *threads;
    unsigned nthreads;
    bool stop;
    u64 generation;            /* guarded by mu: bumped per qm_pool_run */
    int (*fn)(void *, size_t); /* guarded by mu */
    void *arg;
    size_t n, next, finished; /* guarded by mu */
    bool failed;              /* guarded by mu: a job of this run failed */
    int rcs[POOL_MAX_JOBS];
};

/* Claims and runs jobs until none are left. Called with mu held; returns with it held. */
static void
pool_drain(qm_pool *p)
{
    while (p->next < p->n) {
        if (p->failed) { /* after a failure, the jobs not yet started are skipped */
            size_t skip = p->n - p->next;
            p->next = p->n;
            p->finished += skip;
            if (p->finished == p->n)
                pthread_cond_broadcast(&p->done);
            break;
        }
        size_t i = p->next++;
        int (*fn)(void *, size_t) = p->fn;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->mu);
        int rc = fn(arg, i);
        pthread_mutex_lock(&p->mu);
        p->rcs[i] = rc;
        if (rc)
            p->failed = true;
        if (++p->finished == p->n)
            pthread_cond_broadcast(&p->done);
    }
}

static void *
pool_main(void *vp)
{
    qm_pool *p = vp;
    u64 seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && (p->generation == seen || p->next >= p->n))
            pthread_cond_wait(&p->work, &p->mu);
        if (p->stop)
            break;
        seen = p->generation;
        pool_drain(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

unsigned
qm_pool_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 2)
        return 0;
    return (unsigned)QM_MIN(n - 1, 15);
}

int
qm_pool_new(unsigned threads, qm_pool **out)
{
    *out = NULL;
    qm_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = calloc(threads ? threads : 1, sizeof(pthread_t));
    if (!p->threads) {
        qm_pool_free(p);
        return -ENOMEM;
    }
    for (unsigned i = 0; i < threads; i++) {
        int rc = pthread_create(&p->threads[i], NULL, pool_main, p);
        if (rc) {
            qm_pool_free(p);
            return -rc;
        }
        p->nthreads++;
        char name[16];
        snprintf(name, sizeof(name), "qmdb-pool-%u", i % 1000u);
        pthread_setname_np(p->threads[i], name);
    }
    *out = p;
    return 0;
}

void
qm_pool_free(qm_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}

int
qm_pool_run(qm_pool *p, size_t n, int (*fn)(void *arg, size_t i), void *arg)
{
    if (!p || p->nthreads == 0 || n <= 1 || n > POOL_MAX_JOBS) {
        for (size_t i = 0; i < n; i++) {
            int rc = fn(arg, i);
            if (rc)
                return rc;
        }
        return 0;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->next = 0;
    p->finished = 0;
    p->failed = false;
    for (size_t i = 0; i < n; i++)
        p->rcs[i] = 0;
    p->generation++;
    pthread_cond_broadcast(&p->work);
    pool_drain(p);
    while (p->finished < p->n)
        pthread_cond_wait(&p->done, &p->mu);
    int first = 0;
    for (size_t i = 0; i < n && !first; i++)
        first = p->rcs[i];
    p->n = 0;
    pthread_mutex_unlock(&p->mu);
    return first;
}
