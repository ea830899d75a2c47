/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_readers.c -- readers beside the writer (--reader-threads N): N threads doing timed
 * gets of random live keys through the engine's reader_get (a committed state) while the
 * driver's thread writes and commits the update phase's blocks.
 *
 * Owns: the reader threads, their per-thread histograms and counters, and the figures they
 * add to the phase record (reader ops, errors, latency percentiles). Every read must find its
 * key with a value that passes wl_value_check (the update phase changes values, not the live
 * key set, so this holds at any committed state).
 * Threads: readers_start and readers_stop run on the main thread; each reader runs on its own
 * thread, sharing only the engine handle (whose reader_get is thread-safe), the read-only
 * workload generator and the stop flag.
 */
#include "bench.h"
#include "workload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct reader {
    struct bench_readers *rs;
    pthread_t th;
    int started;
    wl_gen g; /* a copy with its own PRNG state */
    lat_hist hist;
    uint64_t ops, errors;
} reader;

struct bench_readers {
    bench_engine *e;
    atomic_int stop;
    uint64_t lo, n; /* live key range (fixed during the update phase) */
    size_t rcap;
    int nthreads;
    uint64_t t0;
    reader r[];
};

static void *
reader_main(void *arg)
{
    reader *rd = arg;
    struct bench_readers *rs = rd->rs;
    bench_engine *e = rs->e;
    void *st = NULL;
    uint8_t *key = malloc(rd->g.key_size), *buf = malloc(rs->rcap);
    if (!key || !buf || e->reader_open(e, &st) != 0) {
        rd->errors++;
        free(key);
        free(buf);
        return NULL;
    }
    while (!atomic_load_explicit(&rs->stop, memory_order_relaxed)) {
        uint64_t i = wl_pick(&rd->g, rs->lo, rs->n);
        size_t vlen = 0;
        wl_key(&rd->g, i, key);
        uint64_t t0 = now_ns();
        int rc = e->reader_get(e, st, key, rd->g.key_size, buf, rs->rcap, &vlen);
        uint64_t t1 = now_ns();
        hist_add(&rd->hist, t1 - t0);
        rd->ops++;
        if (rc != 0 || !wl_value_check(&rd->g, i, buf, vlen))
            rd->errors++;
    }
    e->reader_close(e, st);
    free(key);
    free(buf);
    return NULL;
}

bench_readers *
readers_start(bench_engine *e, const wl_gen *g, int nthreads, size_t rcap)
{
    if (nthreads <= 0 || !e->reader_get || wl_live(g) == 0)
        return NULL;
    bench_readers *rs = calloc(1, sizeof(*rs) + (size_t)nthreads * sizeof(reader));
    if (!rs)
        return NULL;
    rs->e = e;
    rs->lo = g->lo;
    rs->n = wl_live(g);
    rs->rcap = rcap;
    rs->nthreads = nthreads;
    atomic_init(&rs->stop, 0);
    rs->t0 = now_ns();
    for (int t = 0; t < nthreads; t++) {
        reader *rd = &rs->r[t];
        rd->rs = rs;
        rd->g = *g;
        uint64_t seed = wl_mix64(g->seed_key ^ (0x9e3779b97f4a7c15ull * (uint64_t)(t + 1)));
        for (int k = 0; k < 4; k++)
            rd->g.s[k] = seed = wl_mix64(seed + (uint64_t)k + 1);
        hist_reset(&rd->hist);
        rd->started = pthread_create(&rd->th, NULL, reader_main, rd) == 0;
        if (!rd->started)
            rd->errors++;
    }
    return rs;
}

void
readers_stop(bench_readers *rs, phase_rec *p)
{
    if (!rs)
        return;
    atomic_store(&rs->stop, 1);
    p->reader_secs = (double)(now_ns() - rs->t0) / 1e9;
    lat_hist *all = malloc(sizeof(*all));
    if (all)
        hist_reset(all);
    p->reader_threads = rs->nthreads;
    for (int t = 0; t < rs->nthreads; t++) {
        reader *rd = &rs->r[t];
        if (rd->started)
            pthread_join(rd->th, NULL);
        p->reader_ops += rd->ops;
        p->reader_errors += rd->errors;
        if (all)
            hist_merge(all, &rd->hist);
    }
    if (all)
        lat_summarize(all, &p->reader_lat);
    free(all);
    free(rs);
}
