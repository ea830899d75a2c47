/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.c -- clock, latency histogram, timeline, /proc and getrusage sampling, du/rm -rf and
 * the JSON writer used by qmdb-bench. See report.h.
 * Owns: the implementations listed in report.h, plus lat_summarize, jw_lat and the results
 * files written through PATH.tmp, or in place when PATH is a device or a pipe (jw_file_open /
 * jw_file_commit).
 * Threads: the thread that runs the engine (the main thread); nothing here is shared.
 */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

uint64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- histogram ---------------------------------------------------------------------------- */

static unsigned
hist_index(uint64_t v)
{
    if (v < (1u << HIST_SUB_BITS))
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= HIST_SUB_BITS */
    unsigned sub = (unsigned)(v >> (e - HIST_SUB_BITS)) & ((1u << HIST_SUB_BITS) - 1);
    return ((e - HIST_SUB_BITS + 1) << HIST_SUB_BITS) + sub;
}

/* Midpoint of bucket i. */
static uint64_t
hist_value(unsigned i)
{
    if (i < (1u << HIST_SUB_BITS))
        return i;
    unsigned e = (i >> HIST_SUB_BITS) + HIST_SUB_BITS - 1;
    uint64_t sub = i & ((1u << HIST_SUB_BITS) - 1);
    uint64_t lo = ((uint64_t)(1u << HIST_SUB_BITS) + sub) << (e - HIST_SUB_BITS);
    uint64_t width = (uint64_t)1 << (e - HIST_SUB_BITS);
    return lo + width / 2;
}

void
hist_reset(lat_hist *h)
{
    memset(h, 0, sizeof(*h));
}

void
hist_merge(lat_hist *dst, const lat_hist *src)
{
    if (src->n == 0)
        return;
    if (dst->n == 0 || src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
    dst->n += src->n;
    dst->sum += src->sum;
    for (size_t i = 0; i < HIST_BUCKETS; i++)
        dst->b[i] += src->b[i];
}

void
hist_add(lat_hist *h, uint64_t ns)
{
    if (h->n == 0 || ns < h->min)
        h->min = ns;
    if (ns > h->max)
        h->max = ns;
    h->n++;
    h->sum += ns;
    h->b[hist_index(ns)]++;
}

uint64_t
hist_quantile(const lat_hist *h, double q)
{
    if (h->n == 0)
        return 0;
    uint64_t rank = (uint64_t)ceil(q * (double)h->n);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t v = hist_value(i);
            if (v > h->max)
                v = h->max;
            if (v < h->min)
                v = h->min;
            return v;
        }
    }
    return h->max;
}

void
lat_summarize(const lat_hist *h, lat_sum *s)
{
    s->n = h->n;
    s->p50 = hist_quantile(h, 0.50);
    s->p90 = hist_quantile(h, 0.90);
    s->p99 = hist_quantile(h, 0.99);
    s->p999 = hist_quantile(h, 0.999);
    s->max = h->max;
    s->mean = h->n ? h->sum / h->n : 0;
}

/* ---- timeline ----------------------------------------------------------------------------- */

void
tl_start(timeline *t, uint64_t t0)
{
    t->t0 = t0;
    t->n = 0;
}

void
tl_add(timeline *t, uint64_t now, uint64_t ops)
{
    size_t s = (size_t)((now - t->t0) / 1000000000u);
    if (s >= t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        while (nc <= s)
            nc *= 2;
        uint64_t *p = realloc(t->sec, nc * sizeof(*p));
        if (!p)
            return; /* timeline is best effort */
        memset(p + t->cap, 0, (nc - t->cap) * sizeof(*p));
        t->sec = p;
        t->cap = nc;
    }
    if (s >= t->n) {
        for (size_t i = t->n; i <= s; i++)
            t->sec[i] = 0;
        t->n = s + 1;
    }
    t->sec[s] += ops;
}

void
tl_free(timeline *t)
{
    free(t->sec);
    memset(t, 0, sizeof(*t));
}

/* ---- system sampling ---------------------------------------------------------------------- */

/* Device from the mount table: the source of the longest mount point that prefixes path. */
static int
disk_from_mountinfo(const char *path, char *name, size_t n)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return -1;
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f)
        return -1;
    char line[4096], best_src[PATH_MAX] = "";
    size_t best_len = 0;
    while (fgets(line, sizeof(line), f)) {
        char mnt[PATH_MAX], src[PATH_MAX];
        char *sep = strstr(line, " - ");
        if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
            sscanf(sep + 3, "%*s %4095s", src) != 1)
            continue;
        size_t ml = strlen(mnt);
        int prefix = strncmp(real, mnt, ml) == 0 &&
                     (real[ml] == '/' || real[ml] == 0 || (ml == 1 && mnt[0] == '/'));
        if (prefix && ml >= best_len && strncmp(src, "/dev/", 5) == 0) {
            best_len = ml;
            snprintf(best_src, sizeof(best_src), "%s", src);
        }
    }
    fclose(f);
    if (!best_src[0])
        return -1;
    char dev[PATH_MAX];
    if (!realpath(best_src, dev))
        snprintf(dev, sizeof(dev), "%s", best_src);
    const char *b = strrchr(dev, '/');
    snprintf(name, n, "%s", b ? b + 1 : dev);
    return 0;
}

int
disk_find(const char *path, char *name, size_t n)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    char sys[64], link[PATH_MAX];
    snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
    ssize_t l = readlink(sys, link, sizeof(link) - 1);
    if (l > 0) {
        link[l] = 0;
        const char *b = strrchr(link, '/');
        snprintf(name, n, "%s", b ? b + 1 : link);
        return 0;
    }
    return disk_from_mountinfo(path, name, n);
}

int
disk_sample(const char *name, uint64_t *rd, uint64_t *wr, uint64_t *rd_ios)
{
    *rd = *wr = 0;
    if (rd_ios)
        *rd_ios = 0;
    if (!name || !name[0])
        return -1;
    FILE *f = fopen("/proc/diskstats", "r");
    if (!f)
        return -1;
    char line[512], dev[128];
    int found = -1;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long f1, f2, sect_rd, f4, f5, f6, sect_wr;
        if (sscanf(line, "%*u %*u %127s %llu %llu %llu %llu %llu %llu %llu", dev, &f1, &f2,
                   &sect_rd, &f4, &f5, &f6, &sect_wr) == 8 &&
            strcmp(dev, name) == 0) {
            *rd = (uint64_t)sect_rd * 512u;
            *wr = (uint64_t)sect_wr * 512u;
            if (rd_ios)
                *rd_ios = (uint64_t)f1;
            found = 0;
            break;
        }
    }
    fclose(f);
    return found;
}

uint64_t
proc_status_bytes(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    size_t fl = strlen(field);
    uint64_t v = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
            v = strtoull(line + fl + 1, NULL, 10) * 1024u; /* kB */
            break;
        }
    }
    fclose(f);
    return v;
}

void
cpu_times(double *user, double *sys)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    *sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static uint64_t du_alloc, du_apparent;

static int
du_cb(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
    (void)p;
    (void)ftw;
    if (type == FTW_F) {
        du_alloc += (uint64_t)st->st_blocks * 512u;
        du_apparent += (uint64_t)st->st_size;
    }
    return 0;
}

uint64_t
du_bytes(const char *dir, uint64_t *apparent)
{
    du_alloc = du_apparent = 0;
    nftw(dir, du_cb, 32, FTW_PHYS);
    if (apparent)
        *apparent = du_apparent;
    return du_alloc;
}

static int
rm_cb(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (type == FTW_DP ? rmdir(p) : unlink(p)) == 0 || errno == ENOENT ? 0 : -1;
}

int
rm_rf(const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    return nftw(dir, rm_cb, 32, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

int
mkdir_p(const char *dir)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof(buf), "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* ---- JSON writer -------------------------------------------------------------------------- */

void
jw_init(jw *w, FILE *f)
{
    memset(w, 0, sizeof(*w));
    w->f = f;
}

static void
jw_escape(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

static void
jw_member(jw *w, const char *key)
{
    if (w->depth > 0 && w->count[w->depth - 1]++ > 0)
        fputc(',', w->f);
    if (w->depth > 0) {
        fputc('\n', w->f);
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    if (key) {
        jw_escape(w->f, key);
        fputs(": ", w->f);
    }
}

static void
jw_open(jw *w, const char *key, char c)
{
    jw_member(w, key);
    fputc(c, w->f);
    if (w->depth < JW_MAX_DEPTH)
        w->count[w->depth] = 0;
    w->depth++;
}

static void
jw_close(jw *w, char c)
{
    w->depth--;
    if (w->depth < JW_MAX_DEPTH && w->count[w->depth] > 0) {
        fputc('\n', w->f);
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    fputc(c, w->f);
    if (w->depth == 0)
        fputc('\n', w->f);
}

void
jw_obj(jw *w, const char *key)
{
    jw_open(w, key, '{');
}
void
jw_obj_end(jw *w)
{
    jw_close(w, '}');
}
void
jw_arr(jw *w, const char *key)
{
    jw_open(w, key, '[');
}
void
jw_arr_end(jw *w)
{
    jw_close(w, ']');
}

void
jw_str(jw *w, const char *key, const char *v)
{
    jw_member(w, key);
    if (v)
        jw_escape(w->f, v);
    else
        fputs("null", w->f);
}

void
jw_u64(jw *w, const char *key, uint64_t v)
{
    jw_member(w, key);
    fprintf(w->f, "%llu", (unsigned long long)v);
}

void
jw_i64(jw *w, const char *key, int64_t v)
{
    jw_member(w, key);
    fprintf(w->f, "%lld", (long long)v);
}

void
jw_dbl(jw *w, const char *key, double v)
{
    jw_member(w, key);
    if (isfinite(v))
        fprintf(w->f, "%.10g", v);
    else
        fputs("null", w->f);
}

void
jw_bool(jw *w, const char *key, int v)
{
    jw_member(w, key);
    fputs(v ? "true" : "false", w->f);
}

void
jw_null(jw *w, const char *key)
{
    jw_member(w, key);
    fputs("null", w->f);
}

void
jw_lat(jw *w, const char *key, const lat_sum *s)
{
    jw_obj(w, key);
    jw_u64(w, "count", s->n);
    jw_dbl(w, "p50_us", (double)s->p50 / 1e3);
    jw_dbl(w, "p90_us", (double)s->p90 / 1e3);
    jw_dbl(w, "p99_us", (double)s->p99 / 1e3);
    jw_dbl(w, "p999_us", (double)s->p999 / 1e3);
    jw_dbl(w, "max_us", (double)s->max / 1e3);
    jw_dbl(w, "mean_us", (double)s->mean / 1e3);
    jw_obj_end(w);
}

FILE *
jw_file_open(const char *path, char *tmp, size_t tmpn, const char *who)
{
    /* A path that is there and not a regular file (/dev/null, /dev/stdout, a FIFO) is written
     * in place: a file renamed over it would take its place. tmp "" records that. */
    struct stat st;
    bool in_place = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
    if (in_place)
        tmp[0] = '\0';
    else
        snprintf(tmp, tmpn, "%s.tmp", path);
    FILE *f = fopen(in_place ? path : tmp, "w");
    if (!f)
        fprintf(stderr, "%s: cannot write %s: %s\n", who, in_place ? path : tmp, strerror(errno));
    return f;
}

int
jw_file_commit(FILE *f, const char *tmp, const char *path, const char *who)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || (tmp[0] && rename(tmp, path) != 0)) {
        fprintf(stderr, "%s: writing %s failed\n", who, path);
        return -1;
    }
    return 0;
}
