/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.h -- measurement and reporting helpers for qmdb-bench.
 *
 * Owns: the monotonic clock, the log-linear latency histogram, the per-second throughput
 * timeline, sampling of /proc/diskstats, /proc/self/status and getrusage, directory size
 * (du) and removal, and a minimal hand-written JSON writer.
 * Also the latency summaries (lat_sum) and their JSON objects, and writing a results file
 * through PATH.tmp and a rename (jw_file_open / jw_file_commit), shared by the main run,
 * `ycsb` and `replay`.
 * Threads: any; each histogram, timeline and writer belongs to one thread (the main thread).
 */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

uint64_t now_ns(void);

/* ---- latency histogram: 32 linear sub-buckets per power of two (about 3% resolution) --- */
#define HIST_SUB_BITS 5
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) << HIST_SUB_BITS)
typedef struct lat_hist {
    uint64_t n, sum, min, max;
    uint64_t b[HIST_BUCKETS];
} lat_hist;

void hist_reset(lat_hist *h);
void hist_add(lat_hist *h, uint64_t ns);
/* Adds src's samples to dst (the reader threads' histograms into one). */
void hist_merge(lat_hist *dst, const lat_hist *src);
/* Value (ns) at quantile q in [0, 1]; 0 if empty. */
uint64_t hist_quantile(const lat_hist *h, double q);

/* Latency summary in nanoseconds. */
typedef struct lat_sum {
    uint64_t n, p50, p90, p99, p999, max, mean;
} lat_sum;

/* Count, p50/p90/p99/p99.9, max and mean of h. */
void lat_summarize(const lat_hist *h, lat_sum *s);

/* ---- per-second timeline: ops completed in each wall-clock second of a phase ----------- */
typedef struct timeline {
    uint64_t t0;
    uint64_t *sec;
    size_t n, cap;
} timeline;

void tl_start(timeline *t, uint64_t t0);
void tl_add(timeline *t, uint64_t now, uint64_t ops);
void tl_free(timeline *t);

/* ---- system sampling -------------------------------------------------------------------- */
/* Finds the block device holding path (diskstats name, e.g. "vda"). Returns 0 or -1. */
int disk_find(const char *path, char *name, size_t n);
/* Cumulative bytes read and written on device `name` from /proc/diskstats. Returns 0/-1. */
int disk_sample(const char *name, uint64_t *rd, uint64_t *wr, uint64_t *rd_ios);
/* A field of /proc/self/status in bytes (e.g. "VmRSS", "VmHWM"); 0 if unavailable. */
uint64_t proc_status_bytes(const char *field);
/* user + system CPU seconds of this process (all threads). */
void cpu_times(double *user, double *sys);
/* Allocated bytes (st_blocks * 512) under dir; *apparent gets the sum of st_size. */
uint64_t du_bytes(const char *dir, uint64_t *apparent);
/* rm -rf dir (no symlinks followed). Returns 0 or -1. */
int rm_rf(const char *dir);
/* mkdir -p. Returns 0 or -1. */
int mkdir_p(const char *dir);

/* ---- JSON writer ------------------------------------------------------------------------ */
#define JW_MAX_DEPTH 32
typedef struct jw {
    FILE *f;
    int depth;
    int count[JW_MAX_DEPTH]; /* members written at each level */
} jw;

void jw_init(jw *w, FILE *f);
/* key is NULL inside arrays and at top level. */
void jw_obj(jw *w, const char *key);
void jw_obj_end(jw *w);
void jw_arr(jw *w, const char *key);
void jw_arr_end(jw *w);
void jw_str(jw *w, const char *key, const char *v);
void jw_u64(jw *w, const char *key, uint64_t v);
void jw_i64(jw *w, const char *key, int64_t v);
void jw_dbl(jw *w, const char *key, double v);
void jw_bool(jw *w, const char *key, int v);
void jw_null(jw *w, const char *key);
/* {"count", "p50_us", "p90_us", "p99_us", "p999_us", "max_us", "mean_us"} of s under key. */
void jw_lat(jw *w, const char *key, const lat_sum *s);

/* A results file is written to PATH.tmp and renamed over PATH when complete, unless PATH is
 * there and is not a regular file (/dev/null, a FIFO): that is written in place.
 * jw_file_open opens PATH.tmp (its name in tmp, tmpn bytes; "" when in place); NULL with
 * "WHO: cannot write ..." on stderr. jw_file_commit checks the stream, closes it and renames
 * tmp to path; 0, or -1 with "WHO: writing PATH failed" on stderr. */
FILE *jw_file_open(const char *path, char *tmp, size_t tmpn, const char *who);
int jw_file_commit(FILE *f, const char *tmp, const char *path, const char *who);

#endif /* BENCH_REPORT_H */
