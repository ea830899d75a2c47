/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_summary.c -- what qmdb-bench prints and writes after the last engine.
 *
 * Owns: the phase table (BENCH_PHASES, the artifact's phase names, phase_rate), the scoring of
 * every phase against the fastest rival (qmdb's rate over the rate of whichever other engine
 * is fastest in that phase, naming it; qmdb-seq and qmdb-hybrid are variants of qmdb, not
 * rivals), the side-by-side table, the artifact's per-engine `Results summary` blocks, the
 * per-engine figures (latency percentiles, DRAM, SSD and device bytes written per update),
 * the background-job report (worst one-second dip and commit latency tail per phase), the
 * page-cache warning, and their JSON members (summary, comparison, engine_summary,
 * background, page_cache).
 * Threads: the main thread of qmdb-bench, after every engine has run.
 */
#include "bench.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const BENCH_PHASES[BENCH_N_PHASES] = {"populate", "update",    "read", "insert",
                                                  "delete",   "read-miss", "txmix"};

const char *
bench_artifact_phase(const char *name)
{
    if (strcmp(name, "update") == 0)
        return "updates";
    if (strcmp(name, "read") == 0)
        return "reads";
    if (strcmp(name, "insert") == 0)
        return "inserts";
    if (strcmp(name, "delete") == 0)
        return "deletes";
    return name;
}

int
phase_rate(const engine_rec *er, const char *name, double *rate, double *secs, uint64_t *ops)
{
    int found = 0;
    *ops = 0;
    *secs = 0;
    for (size_t i = 0; i < er->n_phases; i++) {
        const phase_rec *p = &er->phases[i];
        if (strcmp(p->name, name) != 0)
            continue;
        if (strcmp(name, "populate") == 0) {
            *ops += p->ops;
            *secs += p->secs;
        } else {
            *ops = p->ops;
            *secs = p->secs;
        }
        found = 1;
    }
    *rate = *secs > 0 ? (double)*ops / *secs : 0;
    return found;
}

static double
rate_of(const engine_rec *er, const char *phase, int *found)
{
    double r, s;
    uint64_t o;
    *found = phase_rate(er, phase, &r, &s, &o);
    return r;
}

static int
any_qmdb(const engine_rec *recs, int n)
{
    for (int i = 0; i < n; i++)
        if (bench_is_qmdb(recs[i].name))
            return 1;
    return 0;
}

/* The engines scored: every qmdb variant, or the first engine when no qmdb ran. */
static int
is_subject(const engine_rec *recs, int n, int i)
{
    return any_qmdb(recs, n) ? bench_is_qmdb(recs[i].name) : i == 0;
}

/* The fastest rival of subject s in phase (bench_fastest_rival), its rate in *rr; -1 if none
 * ran the phase. */
static int
fastest_rival(const engine_rec *recs, int n, int s, const char *phase, double *rr)
{
    const char *names[BENCH_MAX_ENGINES];
    double rates[BENCH_MAX_ENGINES];
    for (int i = 0; i < n; i++) {
        int found;
        names[i] = recs[i].name;
        rates[i] = rate_of(&recs[i], phase, &found);
        if (!found)
            rates[i] = 0;
    }
    int b = bench_fastest_rival(names, rates, n, s);
    *rr = b >= 0 ? rates[b] : 0;
    return b;
}

/* The last instance of a phase (NULL if it did not run). */
static const phase_rec *
last_phase(const engine_rec *er, const char *name)
{
    const phase_rec *p = NULL;
    for (size_t i = 0; i < er->n_phases; i++)
        if (strcmp(er->phases[i].name, name) == 0)
            p = &er->phases[i];
    return p;
}

/* The longest instance of a phase: the one whose timeline best shows background work. */
static const phase_rec *
longest_phase(const engine_rec *er, const char *name)
{
    const phase_rec *p = NULL;
    for (size_t i = 0; i < er->n_phases; i++)
        if (strcmp(er->phases[i].name, name) == 0 && (!p || er->phases[i].secs > p->secs))
            p = &er->phases[i];
    return p;
}

/* ---- the side-by-side table and the artifact's blocks --------------------------------- */

static void
print_side_by_side(const engine_rec *recs, int n)
{
    printf("\nSide by side (ops/s; txmix in transactions/s), each qmdb phase scored against the "
           "fastest rival in that phase\n");
    for (int i = 0; i < n; i++)
        if (!recs[i].ok)
            printf("%s FAILED: %s\n", recs[i].name, recs[i].error);
    printf("%-10s", "phase");
    for (int i = 0; i < n; i++)
        printf(" %15.15s", recs[i].name);
    for (int i = 0; i < n; i++)
        if (is_subject(recs, n, i)) {
            char h[64];
            snprintf(h, sizeof(h), "%s / fastest rival", recs[i].name);
            printf("  %-32s", h);
        }
    printf("\n");
    for (size_t k = 0; k < BENCH_N_PHASES; k++) {
        const char *ph = BENCH_PHASES[k];
        int any = 0, found;
        for (int i = 0; i < n; i++) {
            rate_of(&recs[i], ph, &found);
            any |= found;
        }
        if (!any)
            continue;
        printf("%-10s", ph);
        for (int i = 0; i < n; i++) {
            double r = rate_of(&recs[i], ph, &found);
            if (found)
                printf(" %15.0f", r);
            else
                printf(" %15s", "-");
        }
        for (int s = 0; s < n; s++) {
            if (!is_subject(recs, n, s))
                continue;
            double rr, sr = rate_of(&recs[s], ph, &found);
            int b = fastest_rival(recs, n, s, ph, &rr);
            char cell[96];
            if (found && b >= 0)
                snprintf(cell, sizeof(cell), "%.2fx vs %s", sr / rr, recs[b].name);
            else
                snprintf(cell, sizeof(cell), "-");
            printf("  %-32s", cell);
        }
        printf("\n");
    }
}

/* The artifact's per-engine block: "Results summary", the engine, "updates: X/s", ... */
static void
print_artifact_blocks(const engine_rec *recs, int n)
{
    for (int i = 0; i < n; i++) {
        printf("\nResults summary\nengine: %s\n", recs[i].name);
        for (size_t k = 0; k < BENCH_N_PHASES; k++) {
            int found;
            double r = rate_of(&recs[i], BENCH_PHASES[k], &found);
            if (found)
                printf("%s: %.0f/s\n", bench_artifact_phase(BENCH_PHASES[k]), r);
        }
    }
}

/* ---- per-engine figures ---------------------------------------------------------------- */

typedef struct eng_fig {
    int have_upd, have_read, have_dram;
    double upd_p50_ms, upd_p99_ms, read_p50_us, read_p99_us;
    double dram_pe, mem_pe, ssd_pe, wr_per_update;
} eng_fig;

static void
engine_figures(const engine_rec *er, eng_fig *f)
{
    memset(f, 0, sizeof(*f));
    const phase_rec *u = last_phase(er, "update"), *rd = last_phase(er, "read");
    if (u && u->ops) {
        f->have_upd = 1;
        f->upd_p50_ms = (double)u->lat.p50 / 1e6;
        f->upd_p99_ms = (double)u->lat.p99 / 1e6;
        f->wr_per_update = (double)u->disk_wr / (double)u->ops;
    }
    if (rd && rd->ops) {
        f->have_read = 1;
        f->read_p50_us = (double)rd->lat.p50 / 1e3;
        f->read_p99_us = (double)rd->lat.p99 / 1e3;
    }
    if (er->n_phases) {
        const phase_rec *p = &er->phases[er->n_phases - 1];
        double ent = (double)(p->entries_end ? p->entries_end : 1);
        f->have_dram = p->have_es && p->es.has_dram;
        if (f->have_dram)
            f->dram_pe = (double)(p->es.index_dram_bytes + p->es.tree_dram_bytes) / ent;
        f->mem_pe = (double)(bench_memcap.active ? p->cg_bytes : p->rss) / ent;
        f->ssd_pe = (double)p->ssd / ent;
    }
}

static void
print_engine_figures(const engine_rec *recs, int n)
{
    printf("\nPer engine (update: per-block latency of the last update phase, its device bytes "
           "written per update; read: per-get latency of the last read phase; bytes per entry "
           "after the last phase)\n");
    printf("%-16s %12s %12s %11s %11s %13s %12s %12s %14s\n", "engine", "upd p50 ms", "upd p99 ms",
           "read p50 us", "read p99 us", "DRAM B/entry", "RSS B/entry", "SSD B/entry",
           "dev B/update");
    for (int i = 0; i < n; i++) {
        eng_fig f;
        engine_figures(&recs[i], &f);
        printf("%-16s", recs[i].name);
        if (f.have_upd)
            printf(" %12.2f %12.2f", f.upd_p50_ms, f.upd_p99_ms);
        else
            printf(" %12s %12s", "-", "-");
        if (f.have_read)
            printf(" %11.1f %11.1f", f.read_p50_us, f.read_p99_us);
        else
            printf(" %11s %11s", "-", "-");
        if (f.have_dram)
            printf(" %13.1f", f.dram_pe);
        else
            printf(" %13s", "-");
        printf(" %12.1f %12.1f", f.mem_pe, f.ssd_pe);
        if (f.have_upd)
            printf(" %14.0f\n", f.wr_per_update);
        else
            printf(" %14s\n", "-");
    }
}

/* The largest on-disk size any engine reached, and whether it fits in the page cache: in RAM
 * when uncapped, in the cap when capped. */
static int
fits_in_cache(const bench_cfg *c, const engine_rec *recs, int n, uint64_t *largest, uint64_t *room)
{
    *largest = 0;
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < recs[i].n_phases; k++)
            if (recs[i].phases[k].ssd > *largest)
                *largest = recs[i].phases[k].ssd;
    /* The group is released before the summary: what counts is that the cap was applied. */
    *room = (bench_memcap.active || bench_memcap.limit) && c->mem_cap
                ? c->mem_cap
                : (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    return n > 0 && *largest < *room;
}

/* ---- background jobs --------------------------------------------------------------------- */

typedef struct dip {
    int ok;          /* at least 3 full seconds */
    size_t full, at; /* full seconds; the worst one */
    uint64_t worst, median;
} dip;

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The worst full second of the phase's timeline (the last second is partial) and the
 * median second. */
static void
timeline_dip(const phase_rec *p, dip *d)
{
    memset(d, 0, sizeof(*d));
    d->full = p->timeline_n > 0 ? p->timeline_n - 1 : 0;
    if (d->full < 3)
        return;
    uint64_t *v = malloc(d->full * sizeof(*v));
    if (!v)
        return;
    d->worst = p->timeline[0];
    for (size_t i = 0; i < d->full; i++) {
        v[i] = p->timeline[i];
        if (p->timeline[i] < d->worst) {
            d->worst = p->timeline[i];
            d->at = i;
        }
    }
    qsort(v, d->full, sizeof(*v), cmp_u64);
    d->median = v[d->full / 2];
    free(v);
    d->ok = 1;
}

/* What the engine's background jobs did during the phase, as text. */
static void
background_work(const engine_rec *er, const phase_rec *p, char *buf, size_t n)
{
    if (bench_is_qmdb(er->name))
        snprintf(buf, n, "compactions=%" PRIu64 " pruned-twigs=%" PRIu64, p->compactions,
                 p->pruned_twigs);
    else if (strncmp(er->name, "rocksdb", 7) == 0)
        snprintf(buf, n, "flush+compaction writes=%.0f MiB, compactions running at end=%" PRIu64,
                 (double)p->compaction_bytes / 1048576.0, p->compactions);
    else
        snprintf(buf, n, "-");
    if (strcmp(er->name, "qmdb-hybrid") == 0) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, " index-merges=%" PRIu64, p->index_merges);
    }
}

static void
print_background(const engine_rec *recs, int n)
{
    printf("\nBackground jobs: the worst one-second dip of each phase's timeline (its longest "
           "instance; full seconds only) and the commit-call latency tail of write phases\n");
    printf("%-16s %-10s %8s %14s %14s %9s %13s %9s  %s\n", "engine", "phase", "secs",
           "worst second", "median second", "worst/med", "commit p99 ms", "p99.9 ms",
           "background work during the phase");
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < BENCH_N_PHASES; k++) {
            const phase_rec *p = longest_phase(&recs[i], BENCH_PHASES[k]);
            if (!p)
                continue;
            dip d;
            timeline_dip(p, &d);
            printf("%-16s %-10s %8.2f", recs[i].name, p->name, p->secs);
            if (d.ok) {
                char w[40];
                snprintf(w, sizeof(w), "%" PRIu64 " @%zus", d.worst, d.at);
                printf(" %14s %14" PRIu64 " %9.2f", w, d.median,
                       d.median ? (double)d.worst / (double)d.median : 0.0);
            } else {
                printf(" %14s %14s %9s", "(< 3 s)", "-", "-");
            }
            if (!p->op_latency)
                printf(" %13.2f %9.2f", (double)p->commit_lat.p99 / 1e6,
                       (double)p->commit_lat.p999 / 1e6);
            else
                printf(" %13s %9s", "-", "-");
            char bg[96];
            background_work(&recs[i], p, bg, sizeof(bg));
            printf("  %s\n", bg);
        }
    for (int i = 0; i < n; i++)
        printf("%s: open %.2f s, close %.2f s%s\n", recs[i].name, recs[i].open_secs,
               recs[i].close_secs,
               strcmp(recs[i].name, "qmdb-hybrid") == 0 ? " (the close writes the index "
                                                          "checkpoint)"
                                                        : "");
}

void
bench_summary_print(const bench_cfg *c, const engine_rec *recs, int n)
{
    print_side_by_side(recs, n);
    print_artifact_blocks(recs, n);
    print_engine_figures(recs, n);
    print_background(recs, n);
    uint64_t largest, room;
    if (fits_in_cache(c, recs, n, &largest, &room))
        printf("\nwarning: the largest database (%.1f MiB on disk) fits in the page cache (%s of "
               "%.1f MiB): reads are served from memory, not the device. Use --mem-cap well "
               "below the data size for the beyond-DRAM regime.\n",
               (double)largest / 1048576.0,
               (bench_memcap.active || bench_memcap.limit) && c->mem_cap ? "the memory cap" : "RAM",
               (double)room / 1048576.0);
}

/* ---- JSON ----------------------------------------------------------------------------------- */

static void
j_comparison(jw *w, const engine_rec *recs, int n)
{
    jw_arr(w, "comparison");
    for (int s = 0; s < n; s++) {
        if (!is_subject(recs, n, s))
            continue;
        for (size_t k = 0; k < BENCH_N_PHASES; k++) {
            const char *ph = BENCH_PHASES[k];
            int found;
            double rr, sr = rate_of(&recs[s], ph, &found);
            int b = fastest_rival(recs, n, s, ph, &rr);
            if (!found || b < 0)
                continue;
            jw_obj(w, NULL);
            jw_str(w, "phase", ph);
            jw_str(w, "engine", recs[s].name);
            jw_dbl(w, "ops_per_sec", sr);
            jw_str(w, "fastest_rival", recs[b].name);
            jw_dbl(w, "fastest_rival_ops_per_sec", rr);
            jw_dbl(w, "ratio", sr / rr);
            jw_obj(w, "rivals_ops_per_sec");
            for (int i = 0; i < n; i++) {
                double r = rate_of(&recs[i], ph, &found);
                if (i != s && found && (!any_qmdb(recs, n) || !bench_is_qmdb(recs[i].name)))
                    jw_dbl(w, recs[i].name, r);
            }
            jw_obj_end(w);
            jw_obj_end(w);
        }
    }
    jw_arr_end(w);
}

static void
j_engine_summary(jw *w, const engine_rec *recs, int n)
{
    jw_arr(w, "engine_summary");
    for (int i = 0; i < n; i++) {
        eng_fig f;
        engine_figures(&recs[i], &f);
        jw_obj(w, NULL);
        jw_str(w, "engine", recs[i].name);
        if (f.have_upd) {
            jw_dbl(w, "update_block_p50_ms", f.upd_p50_ms);
            jw_dbl(w, "update_block_p99_ms", f.upd_p99_ms);
            jw_dbl(w, "device_bytes_written_per_update", f.wr_per_update);
        }
        if (f.have_read) {
            jw_dbl(w, "read_p50_us", f.read_p50_us);
            jw_dbl(w, "read_p99_us", f.read_p99_us);
        }
        if (f.have_dram)
            jw_dbl(w, "engine_dram_bytes_per_entry", f.dram_pe);
        jw_dbl(w, "memory_bytes_per_entry", f.mem_pe);
        jw_dbl(w, "ssd_bytes_per_entry", f.ssd_pe);
        jw_obj_end(w);
    }
    jw_arr_end(w);
}

static void
j_background(jw *w, const engine_rec *recs, int n)
{
    jw_arr(w, "background");
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < BENCH_N_PHASES; k++) {
            const phase_rec *p = longest_phase(&recs[i], BENCH_PHASES[k]);
            if (!p)
                continue;
            dip d;
            timeline_dip(p, &d);
            jw_obj(w, NULL);
            jw_str(w, "engine", recs[i].name);
            jw_str(w, "phase", p->name);
            jw_dbl(w, "seconds", p->secs);
            jw_u64(w, "full_seconds", d.full);
            if (d.ok) {
                jw_u64(w, "worst_second", d.at);
                jw_u64(w, "worst_second_ops", d.worst);
                jw_u64(w, "median_second_ops", d.median);
                jw_dbl(w, "worst_over_median", d.median ? (double)d.worst / (double)d.median : 0.0);
            }
            if (!p->op_latency) {
                jw_dbl(w, "commit_p99_ms", (double)p->commit_lat.p99 / 1e6);
                jw_dbl(w, "commit_p999_ms", (double)p->commit_lat.p999 / 1e6);
            }
            jw_u64(w, "compactions", p->compactions);
            jw_u64(w, "pruned_twigs", p->pruned_twigs);
            jw_u64(w, "index_merges", p->index_merges);
            jw_u64(w, "compaction_bytes_written", p->compaction_bytes);
            jw_obj_end(w);
        }
    jw_arr_end(w);
}

void
bench_summary_json(jw *w, const bench_cfg *c, const engine_rec *recs, int n)
{
    jw_arr(w, "summary");
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < BENCH_N_PHASES; k++) {
            double rate, secs;
            uint64_t ops;
            if (!phase_rate(&recs[i], BENCH_PHASES[k], &rate, &secs, &ops))
                continue;
            jw_obj(w, NULL);
            jw_str(w, "engine", recs[i].name);
            jw_str(w, "phase", BENCH_PHASES[k]);
            jw_u64(w, "ops", ops);
            jw_dbl(w, "seconds", secs);
            jw_dbl(w, "ops_per_sec", rate);
            jw_obj_end(w);
        }
    jw_arr_end(w);
    j_comparison(w, recs, n);
    j_engine_summary(w, recs, n);
    j_background(w, recs, n);
    uint64_t largest, room;
    int fits = fits_in_cache(c, recs, n, &largest, &room);
    jw_obj(w, "page_cache");
    jw_u64(w, "largest_db_bytes", largest);
    jw_u64(w, "room_bytes", room);
    jw_bool(w, "fits", fits);
    jw_obj_end(w);
}
