/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_run.c -- runs the QMDB-harness phases against one engine and prints the phase lines.
 *
 * Owns: the run order (populate block by block; every hover interval and at the end an update
 * and a read phase; at the end inserts, deletes, read-miss and the transaction mix), the
 * timing of each phase, the progress lines on stderr, and the per-phase output lines
 * (`<phase>@<entries> entries: ...`, TEST_REPORT, MEM, SSD, CPU).
 * Threads: the main thread of qmdb-bench (engines may run their own background threads).
 */
#include "bench.h"
#include "pagecache.h"
#include "workload.h"

#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROGRESS_NS (2000000000ull)

typedef struct run {
    const bench_cfg *c;
    bench_engine e;
    engine_rec *rec;
    wl_gen g;
    uint64_t height;
    uint8_t *key, *val, *rbuf;
    size_t rcap;
    /* a block's read-modify-write reads, batched (--read-batch) */
    uint64_t *bidx;         /* the block's workload indices, in op order */
    uint8_t *bkeys, *bvals; /* read_batch keys / value buffers of rcap bytes */
    size_t *bvlens;
    int *brcs;
    size_t bcap;                 /* bidx capacity */
    uint64_t hc0, br0, ip0, cp0; /* qmdb counters at phase start */
    uint64_t pt0, im0, cb0;      /* background-work counters at phase start */
    bench_readers *readers;      /* --reader-threads, during update phases */
    /* current phase */
    phase_rec *p;
    lat_hist *lat, *clat;
    timeline tl;
    uint64_t t0, last_progress, planned;
    uint64_t disk_rd0, disk_wr0, disk_rio0;
    double cu0, cs0;
    /* running totals per phase name, for the "total:" field */
    struct {
        char name[16];
        uint64_t ops;
        double secs;
    } tot[16];
    int n_tot;
} run;

enum wkind { W_CREATE, W_UPDATE, W_DELETE };

static phase_rec *
new_phase(run *r, const char *name)
{
    engine_rec *er = r->rec;
    if (er->n_phases == er->cap_phases) {
        size_t nc = er->cap_phases ? er->cap_phases * 2 : 16;
        phase_rec *p = realloc(er->phases, nc * sizeof(*p));
        if (!p)
            return NULL;
        er->phases = p;
        er->cap_phases = nc;
    }
    phase_rec *p = &er->phases[er->n_phases++];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    return p;
}

static int
phase_begin(run *r, const char *name, uint64_t planned)
{
    r->p = new_phase(r, name);
    if (!r->p) {
        snprintf(r->e.err, sizeof(r->e.err), "out of memory");
        return -1;
    }
    r->p->entries = wl_live(&r->g);
    r->planned = planned;
    hist_reset(r->lat);
    hist_reset(r->clat);
    bench_engine_stats es;
    if (r->e.stats(&r->e, &es) == 0) {
        r->hc0 = es.hash_compressions;
        r->br0 = es.batched_reads;
        r->ip0 = es.index_page_reads;
        r->cp0 = es.compactions;
        r->pt0 = es.pruned_twigs;
        r->im0 = es.index_merges;
        r->cb0 = es.compaction_bytes;
    }
    disk_sample(bench_disk, &r->disk_rd0, &r->disk_wr0, &r->disk_rio0);
    cpu_times(&r->cu0, &r->cs0);
    r->t0 = r->last_progress = now_ns();
    tl_start(&r->tl, r->t0);
    return 0;
}

static void
progress(run *r, uint64_t now)
{
    if (now - r->last_progress < PROGRESS_NS)
        return;
    r->last_progress = now;
    double s = (double)(now - r->t0) / 1e9;
    fprintf(stderr, "  [%s] %s: %" PRIu64 "/%" PRIu64 " in %.1fs (%.0f/s)\n", r->e.name, r->p->name,
            r->p->ops, r->planned, s, s > 0 ? (double)r->p->ops / s : 0.0);
}

static const char *
human(uint64_t b, char *buf, size_t n)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    snprintf(buf, n, "%.1f %s", v, u[i]);
    return buf;
}

/* Closes the phase's measurements: time, disk, CPU, latency summaries, timeline, memory,
 * SSD and the engine's counters. */
static void
phase_measure(run *r)
{
    phase_rec *p = r->p;
    /* A pipelined engine's last block becomes durable here; the phase's time includes it. */
    if (r->e.sync && r->e.sync(&r->e) != 0)
        fprintf(stderr, "%s: %s\n", r->e.name, r->e.err);
    uint64_t t1 = now_ns();
    p->secs = (double)(t1 - r->t0) / 1e9;
    p->entries_end = wl_live(&r->g);
    uint64_t rd1, wr1, rio1;
    double cu1, cs1;
    disk_sample(bench_disk, &rd1, &wr1, &rio1);
    p->disk_rd_ios = rio1 - r->disk_rio0;
    cpu_times(&cu1, &cs1);
    p->disk_rd = rd1 - r->disk_rd0;
    p->disk_wr = wr1 - r->disk_wr0;
    p->cpu_user = cu1 - r->cu0;
    p->cpu_sys = cs1 - r->cs0;
    lat_summarize(r->lat, &p->lat);
    lat_summarize(r->clat, &p->commit_lat);
    p->timeline = r->tl.sec;
    p->timeline_n = r->tl.n;
    r->tl.sec = NULL;
    r->tl.n = r->tl.cap = 0;
    p->rss = proc_status_bytes("VmRSS");
    p->rss_growth = p->rss > r->rec->rss_at_open ? p->rss - r->rec->rss_at_open : 0;
    p->cg_bytes = memcap_usage(&bench_memcap);
    p->ssd = du_bytes(r->rec->dir, &p->ssd_apparent);
    p->have_es = r->e.stats(&r->e, &p->es) == 0;
    if (p->have_es)
        p->compactions = strncmp(r->e.name, "qmdb", 4) == 0 && p->es.compactions >= r->cp0
                             ? p->es.compactions - r->cp0
                             : p->es.compactions;
    if (p->have_es) {
        p->pruned_twigs = p->es.pruned_twigs >= r->pt0 ? p->es.pruned_twigs - r->pt0 : 0;
        p->index_merges = p->es.index_merges >= r->im0 ? p->es.index_merges - r->im0 : 0;
        p->compaction_bytes =
            p->es.compaction_bytes >= r->cb0 ? p->es.compaction_bytes - r->cb0 : 0;
    }
    if (p->have_es && p->es.hash_compressions) {
        p->hash_compressions = p->es.hash_compressions - r->hc0;
        p->batched_reads = p->es.batched_reads - r->br0;
        p->index_page_reads = p->es.index_page_reads - r->ip0;
    }
}

/* Adds the phase to the totals of its name (at most 16 names); *tops and *tsecs get the
 * totals (the phase alone past 16 names). */
static void
phase_totals(run *r, const phase_rec *p, uint64_t *tops, double *tsecs)
{
    int ti = 0;
    while (ti < r->n_tot && strcmp(r->tot[ti].name, p->name) != 0)
        ti++;
    if (ti == r->n_tot && r->n_tot < 16) {
        snprintf(r->tot[ti].name, sizeof(r->tot[ti].name), "%s", p->name);
        r->tot[ti].ops = 0;
        r->tot[ti].secs = 0;
        r->n_tot++;
    }
    *tops = p->ops;
    *tsecs = p->secs;
    if (ti < 16) {
        r->tot[ti].ops += p->ops;
        r->tot[ti].secs += p->secs;
        *tops = r->tot[ti].ops;
        *tsecs = r->tot[ti].secs;
    }
}

/* The phase's rate, TEST_REPORT, disk, latency and per-op lines. */
static void
print_phase_lines(const phase_rec *p, uint64_t tops, double tsecs)
{
    double rate = p->secs > 0 ? (double)p->ops / p->secs : 0;
    printf("%s@%" PRIu64 " entries: %" PRIu64 " in %.3fs (%.0f/s), total: %" PRIu64
           " in %.3fs (%.0f/s)\n",
           p->name, strcmp(p->name, "populate") == 0 ? p->entries_end : p->entries, p->ops, p->secs,
           rate, tops, tsecs, tsecs > 0 ? (double)tops / tsecs : 0.0);
    printf("TEST_REPORT: Phase=%s | Ops=%" PRIu64 "\n", bench_artifact_phase(p->name), p->ops);
    printf("> OS Physical Write = %" PRIu64 " bytes\n", p->disk_wr);
    printf("> OS Physical Read = %" PRIu64 " bytes\n", p->disk_rd);
    if (p->op_latency)
        printf("> Latency per op: p50=%.1fus p90=%.1fus p99=%.1fus p99.9=%.1fus max=%.1fus\n",
               p->lat.p50 / 1e3, p->lat.p90 / 1e3, p->lat.p99 / 1e3, p->lat.p999 / 1e3,
               p->lat.max / 1e3);
    else
        printf("> Latency per block: p50=%.2fms p99=%.2fms max=%.2fms (commit call p50=%.2fms "
               "p99=%.2fms)\n",
               p->lat.p50 / 1e6, p->lat.p99 / 1e6, p->lat.max / 1e6, p->commit_lat.p50 / 1e6,
               p->commit_lat.p99 / 1e6);
    if (p->logical_wr)
        printf("> Write amplification = %.2f (device bytes written / key+value bytes "
               "written)\n",
               (double)p->disk_wr / (double)p->logical_wr);
    if (p->errors)
        printf("> ERRORS = %" PRIu64 " (wrong read results)\n", p->errors);
    if (p->kv_ops)
        printf("> Device reads per op = %.3f (%.0f bytes per op), %.0f read IOPS\n",
               (double)p->disk_rd_ios / (double)p->kv_ops, (double)p->disk_rd / (double)p->kv_ops,
               p->secs > 0 ? (double)p->disk_rd_ios / p->secs : 0.0);
    if (p->hash_compressions && p->kv_ops)
        printf("> SHA-256 compressions per op = %.2f, "
               "batched reads per op (entries and index pages) = %.3f\n",
               (double)p->hash_compressions / (double)p->kv_ops,
               (double)p->batched_reads / (double)p->kv_ops);
    if (p->reader_threads)
        printf("> Readers beside the writer: %d threads, %" PRIu64 " gets in %.3fs (%.0f/s), "
               "p50=%.1fus p99=%.1fus p99.9=%.1fus max=%.1fus, errors=%" PRIu64 "\n",
               p->reader_threads, p->reader_ops, p->reader_secs,
               p->reader_secs > 0 ? (double)p->reader_ops / p->reader_secs : 0.0,
               p->reader_lat.p50 / 1e3, p->reader_lat.p99 / 1e3, p->reader_lat.p999 / 1e3,
               p->reader_lat.max / 1e3, p->reader_errors);
    if (p->index_page_reads && p->kv_ops)
        printf("> Index page reads per op = %.3f (hybrid indexer lookups; page cache or SSD)\n",
               (double)p->index_page_reads / (double)p->kv_ops);
}

/* The phase's MEM, SSD and CPU lines. */
static void
print_resource_lines(const phase_rec *p)
{
    uint64_t ent = p->entries_end ? p->entries_end : 1;
    char h1[32];
    uint64_t mem = bench_memcap.active ? p->cg_bytes : p->rss;
    printf("MEM(entries=%" PRIu64 ") %s=%s, physical/entry=%.1fbytes, RSS growth since open="
           "%" PRIu64 " bytes (%.1f bytes/entry)",
           p->entries_end, bench_memcap.active ? "cgroup memory" : "RSS",
           human(mem, h1, sizeof(h1)), (double)mem / (double)ent, p->rss_growth,
           (double)p->rss_growth / (double)ent);
    if (p->have_es && p->es.has_dram) {
        uint64_t d = p->es.index_dram_bytes + p->es.tree_dram_bytes;
        printf(", engine DRAM=%" PRIu64 " bytes (%.1f bytes/entry)", d, (double)d / (double)ent);
    }
    if (p->have_es && p->es.note[0])
        printf(" [%s]", p->es.note);
    printf("\n");
    printf("SSD(entries=%" PRIu64 ") Usage: %s (%" PRIu64 " bytes, apparent %" PRIu64
           "), %.1f bytes/entry\n",
           p->entries_end, human(p->ssd, h1, sizeof(h1)), p->ssd, p->ssd_apparent,
           (double)p->ssd / (double)ent);
    double cpu = p->cpu_user + p->cpu_sys;
    printf("CPU(entries=%" PRIu64 ") user=%.3fs sys=%.3fs total=%.3fs, %.2f us CPU/op, "
           "%.0f%% of one core\n",
           p->entries_end, p->cpu_user, p->cpu_sys, cpu, p->ops ? cpu * 1e6 / (double)p->ops : 0.0,
           p->secs > 0 ? 100.0 * cpu / p->secs : 0);
}

static void
phase_end(run *r)
{
    uint64_t tops;
    double tsecs;
    phase_measure(r);
    if (r->readers) {
        readers_stop(r->readers, r->p);
        r->readers = NULL;
        r->p->errors += r->p->reader_errors;
    }
    phase_totals(r, r->p, &tops, &tsecs);
    print_phase_lines(r->p, tops, tsecs);
    print_resource_lines(r->p);
    fflush(stdout);
    r->p = NULL;
}

/* Grows the per-block scratch to n operations. */
static int
block_scratch(run *r, uint64_t n)
{
    const bench_cfg *c = r->c;
    if (n <= r->bcap)
        return 0;
    size_t rb = (size_t)(c->read_batch < n ? c->read_batch : n);
    free(r->bidx);
    free(r->bkeys);
    free(r->bvals);
    free(r->bvlens);
    free(r->brcs);
    r->bidx = malloc(n * sizeof(*r->bidx));
    r->bkeys = malloc(rb * c->key_size);
    r->bvals = malloc(rb * r->rcap);
    r->bvlens = malloc(rb * sizeof(*r->bvlens));
    r->brcs = malloc(rb * sizeof(*r->brcs));
    r->bcap = n;
    if (!r->bidx || !r->bkeys || !r->bvals || !r->bvlens || !r->brcs) {
        r->bcap = 0;
        snprintf(r->e.err, sizeof(r->e.err), "out of memory");
        return -1;
    }
    return 0;
}

/*
 * The reads of a block's read-modify-writes, as a block executor does them for every engine:
 * read the current value of each key (absent for a create), read_batch keys per engine batch
 * read. All reads precede the block's writes, so they see the last committed state (a key may
 * be written twice in one block, so only presence is checked, not the value).
 */
static int
rmw_reads(run *r, enum wkind kind, uint64_t n)
{
    const bench_cfg *c = r->c;
    for (uint64_t j0 = 0; j0 < n; j0 += c->read_batch) {
        size_t m = (size_t)(n - j0 < c->read_batch ? n - j0 : c->read_batch);
        if (m > 1 && r->e.get_many) {
            for (size_t j = 0; j < m; j++)
                wl_key(&r->g, r->bidx[j0 + j], r->bkeys + j * c->key_size);
            if (r->e.get_many(&r->e, m, r->bkeys, c->key_size, r->bvals, r->rcap, r->bvlens,
                              r->brcs))
                return -1;
        } else {
            for (size_t j = 0; j < m; j++) {
                wl_key(&r->g, r->bidx[j0 + j], r->key);
                int rc = r->e.get(&r->e, r->key, c->key_size, r->rbuf, r->rcap, &r->bvlens[j]);
                if (rc < 0)
                    return -1;
                r->brcs[j] = rc;
            }
        }
        for (size_t j = 0; j < m; j++)
            if ((r->brcs[j] == 0) != (kind != W_CREATE))
                r->p->errors++;
    }
    return 0;
}

/* One write block of `n` operations of one kind. */
static int
write_block(run *r, enum wkind kind, uint64_t n)
{
    const bench_cfg *c = r->c;
    wl_gen *g = &r->g;
    uint64_t tb = now_ns();
    if (block_scratch(r, n) || r->e.begin_block(&r->e, r->height + 1))
        return -1;
    for (uint64_t j = 0; j < n; j++) {
        if (kind == W_CREATE)
            r->bidx[j] = g->hi++;
        else if (kind == W_DELETE)
            r->bidx[j] = g->lo++;
        else
            r->bidx[j] = wl_pick(g, g->lo, wl_live(g));
    }
    if (!c->blind_writes && rmw_reads(r, kind, n))
        return -1;
    for (uint64_t j = 0; j < n; j++) {
        if (j > 0 && j % c->ops_per_tx == 0 && r->e.tx(&r->e))
            return -1;
        uint64_t i = r->bidx[j];
        wl_key(g, i, r->key);
        if (kind == W_DELETE) {
            if (r->e.del(&r->e, r->key, c->key_size))
                return -1;
        } else {
            wl_value(g, i, ++g->version, r->val);
            if (r->e.put(&r->e, r->key, c->key_size, r->val, c->value_size))
                return -1;
        }
    }
    uint64_t tc = now_ns();
    if (r->e.commit_block(&r->e))
        return -1;
    uint64_t te = now_ns();
    r->height++;
    hist_add(r->lat, te - tb);
    hist_add(r->clat, te - tc);
    tl_add(&r->tl, te, n);
    r->p->ops += n;
    r->p->kv_ops += n;
    r->p->blocks++;
    r->p->logical_wr += n * (c->key_size + (kind == W_DELETE ? 0 : c->value_size));
    progress(r, te);
    return 0;
}

static int
write_phase(run *r, const char *name, enum wkind kind, uint64_t blocks)
{
    if (phase_begin(r, name, blocks * r->c->ops_per_block))
        return -1;
    if (kind == W_UPDATE && r->c->reader_threads > 0) {
        r->readers = readers_start(&r->e, &r->g, r->c->reader_threads, r->rcap);
        if (!r->readers && !r->e.reader_get)
            fprintf(stderr, "  [%s] no readers beside the writer: the engine has no reader_get\n",
                    r->e.name);
    }
    for (uint64_t b = 0; b < blocks; b++) {
        if (bench_stop) {
            snprintf(r->e.err, sizeof(r->e.err), "interrupted");
            return -1;
        }
        if (write_block(r, kind, r->c->ops_per_block))
            return -1;
    }
    phase_end(r);
    return 0;
}

/* One timed get; returns the engine rc (0 found, 1 absent, <0 error). */
static int
timed_get(run *r, uint64_t i, int want_found)
{
    const bench_cfg *c = r->c;
    size_t vlen = 0;
    wl_key(&r->g, i, r->key);
    uint64_t t = now_ns();
    int rc = r->e.get(&r->e, r->key, c->key_size, r->rbuf, r->rcap, &vlen);
    uint64_t t2 = now_ns();
    if (rc < 0)
        return rc;
    hist_add(r->lat, t2 - t);
    if (want_found) {
        if (rc != 0 || !wl_value_check(&r->g, i, r->rbuf, vlen))
            r->p->errors++;
    } else if (rc == 0) {
        r->p->errors++;
    }
    return rc;
}

static int
read_phase(run *r, const char *name, uint64_t n, int miss)
{
    wl_gen *g = &r->g;
    if (phase_begin(r, name, n))
        return -1;
    r->p->op_latency = 1;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i;
        if (!miss)
            i = wl_pick(g, g->lo, wl_live(g));
        else if ((k & 1) == 0 && g->lo > 0)
            i = wl_below(g, g->lo); /* a deleted key */
        else
            i = WL_ABSENT_BIT | wl_next(g); /* a key never created */
        if (timed_get(r, i, !miss) < 0)
            return -1;
        r->p->ops++;
        r->p->kv_ops++;
        if ((k & 1023) == 1023) {
            uint64_t now = now_ns();
            tl_add(&r->tl, now, 1024);
            progress(r, now);
            if (bench_stop) {
                snprintf(r->e.err, sizeof(r->e.err), "interrupted");
                return -1;
            }
        }
    }
    if (n & 1023)
        tl_add(&r->tl, now_ns(), n & 1023);
    phase_end(r);
    return 0;
}

/* QMDB transaction mix: per tx 15 reads (via get, of keys no tx in this block deletes),
 * 9 updates, 1 create, 1 delete. ops_per_block / 26 transactions per block. */
static int
txmix_phase(run *r, uint64_t blocks)
{
    const bench_cfg *c = r->c;
    wl_gen *g = &r->g;
    uint64_t ntx = c->ops_per_block / TX_OPS ? c->ops_per_block / TX_OPS : 1;
    if (wl_live(g) <= ntx + 1) {
        snprintf(r->e.err, sizeof(r->e.err), "txmix needs more than %" PRIu64 " live keys",
                 ntx + 1);
        return -1;
    }
    if (phase_begin(r, "txmix", blocks * ntx))
        return -1;
    for (uint64_t b = 0; b < blocks; b++) {
        if (bench_stop) {
            snprintf(r->e.err, sizeof(r->e.err), "interrupted");
            return -1;
        }
        uint64_t base = g->lo + ntx, n = g->hi - base;
        uint64_t tb = now_ns();
        if (block_scratch(r, ntx * (TX_READS + TX_UPDATES)) ||
            r->e.begin_block(&r->e, r->height + 1))
            return -1;
        /* Picks in transaction order: each transaction's reads, then its updates. */
        uint64_t *rix = r->bidx, *uix = r->bidx + ntx * TX_READS;
        for (uint64_t t = 0; t < ntx; t++) {
            for (int k = 0; k < TX_READS; k++)
                rix[t * TX_READS + k] = wl_pick(g, base, n);
            for (int k = 0; k < TX_UPDATES; k++)
                uix[t * TX_UPDATES + k] = wl_pick(g, base, n);
        }
        /* The block's reads (committed state, before any of its writes), batched like the
         * read-modify-write reads (--read-batch). */
        uint64_t nr = ntx * TX_READS;
        for (uint64_t j0 = 0; j0 < nr; j0 += c->read_batch) {
            size_t m = (size_t)(nr - j0 < c->read_batch ? nr - j0 : c->read_batch);
            if (m > 1 && r->e.get_many) {
                for (size_t j = 0; j < m; j++)
                    wl_key(g, rix[j0 + j], r->bkeys + j * c->key_size);
                if (r->e.get_many(&r->e, m, r->bkeys, c->key_size, r->bvals, r->rcap, r->bvlens,
                                  r->brcs))
                    return -1;
                for (size_t j = 0; j < m; j++)
                    if (r->brcs[j] != 0 ||
                        !wl_value_check(g, rix[j0 + j], r->bvals + j * r->rcap, r->bvlens[j]))
                        r->p->errors++;
                continue;
            }
            for (size_t j = 0; j < m; j++) {
                size_t vlen = 0;
                wl_key(g, rix[j0 + j], r->key);
                int rc = r->e.get(&r->e, r->key, c->key_size, r->rbuf, r->rcap, &vlen);
                if (rc < 0)
                    return -1;
                if (rc != 0 || !wl_value_check(g, rix[j0 + j], r->rbuf, vlen))
                    r->p->errors++;
            }
        }
        for (uint64_t t = 0; t < ntx; t++) {
            if (t > 0 && r->e.tx(&r->e))
                return -1;
            for (int k = 0; k < TX_UPDATES + 1; k++) {
                uint64_t i = k < TX_UPDATES ? uix[t * TX_UPDATES + k] : g->hi++;
                wl_key(g, i, r->key);
                wl_value(g, i, ++g->version, r->val);
                if (r->e.put(&r->e, r->key, c->key_size, r->val, c->value_size))
                    return -1;
            }
            wl_key(g, g->lo++, r->key);
            if (r->e.del(&r->e, r->key, c->key_size))
                return -1;
        }
        uint64_t tc = now_ns();
        if (r->e.commit_block(&r->e))
            return -1;
        uint64_t te = now_ns();
        r->height++;
        hist_add(r->lat, te - tb);
        hist_add(r->clat, te - tc);
        tl_add(&r->tl, te, ntx);
        r->p->ops += ntx;
        r->p->kv_ops += ntx * TX_OPS;
        r->p->blocks++;
        r->p->logical_wr +=
            ntx * ((TX_UPDATES + 2) * c->key_size + (TX_UPDATES + 1) * c->value_size);
        progress(r, te);
    }
    phase_end(r);
    return 0;
}

static int
hover(run *r)
{
    const bench_cfg *c = r->c;
    if (write_phase(r, "update", W_UPDATE, c->hover_write_block))
        return -1;
    return read_phase(r, "read", c->hover_write_block * c->ops_per_block, 0);
}

static int
run_phases(run *r)
{
    const bench_cfg *c = r->c;
    uint64_t nblocks = c->entry_count / c->ops_per_block;
    uint64_t b = 0;
    while (b < nblocks) {
        uint64_t seg = nblocks - b;
        if (c->hover_interval) {
            uint64_t next = (b / c->hover_interval + 1) * c->hover_interval;
            if (next < nblocks)
                seg = next - b;
        }
        if (write_phase(r, "populate", W_CREATE, seg))
            return -1;
        b += seg;
        if (b < nblocks && hover(r))
            return -1;
    }
    if (hover(r))
        return -1;
    if (write_phase(r, "insert", W_CREATE, c->hover_recreate_block))
        return -1;
    if (write_phase(r, "delete", W_DELETE, c->hover_recreate_block))
        return -1;
    if (read_phase(r, "read-miss", c->hover_write_block * c->ops_per_block, 1))
        return -1;
    return txmix_phase(r, c->hover_write_block);
}

static void
drop_caches(engine_rec *rec)
{
    int rc = bench_drop_page_cache(0);
    if (rc >= 0) /* drop_caches not opened: the flag keeps its value */
        rec->dropped_caches = rc;
    if (!rec->dropped_caches)
        fprintf(stderr, "warning: could not drop the page cache (needs root)\n");
}

/* The adapter configuration of engine for this run. */
static bench_engine_cfg
engine_cfg(const bench_cfg *c, const char *engine)
{
    bench_engine_cfg ec = {.durable = c->durable,
                           .mem_cap = c->mem_cap,
                           .entry_count = c->entry_count,
                           .key_size = c->key_size,
                           .value_size = c->value_size,
                           .tuned = strcmp(engine, "rocksdb") == 0 ||
                                    strcmp(engine, "rocksdb-blob") == 0,
                           .blob = strcmp(engine, "rocksdb-blob") == 0,
                           .qmdb_compact_thres = c->qmdb_compact_thres,
                           .qmdb_util_ratio = c->qmdb_util_ratio,
                           .qmdb_util_div = c->qmdb_util_div,
                           .qmdb_history_blocks = c->qmdb_history_blocks,
                           .qmdb_segment_bytes = c->qmdb_segment_bytes,
                           .qmdb_pipeline = strcmp(engine, "qmdb-seq") != 0,
                           .qmdb_direct_io = c->qmdb_direct_io,
                           .qmdb_hybrid = strcmp(engine, "qmdb-hybrid") == 0};
    return ec;
}

/* --reopen: the time a restart takes, a fast open (no entry hashing) from a cold cache (with
 * --drop-caches), then close. Returns 0 or -1 with rec->error set. */
static int
time_reopen(run *r, bench_engine_cfg *ec, const char *engine)
{
    engine_rec *rec = r->rec;
    int ret = 0;
    if (r->c->drop_caches)
        drop_caches(rec);
    ec->fast_open = 1;
    uint64_t t0 = now_ns();
    if (r->e.open(&r->e, rec->dir, ec) != 0) {
        snprintf(rec->error, sizeof(rec->error), "reopen: %s", r->e.err);
        ret = -1;
    }
    rec->reopen_secs = (double)(now_ns() - t0) / 1e9;
    bench_engine_stats es;
    if (ret == 0 && r->e.stats && r->e.stats(&r->e, &es) == 0)
        printf("REOPEN %s: %.2f s (%s)\n", engine, rec->reopen_secs, es.note);
    else if (ret == 0)
        printf("REOPEN %s: %.2f s\n", engine, rec->reopen_secs);
    if (r->e.close(&r->e) != 0 && ret == 0) {
        snprintf(rec->error, sizeof(rec->error), "%s", r->e.err);
        ret = -1;
    }
    return ret;
}

/* Frees the run's buffers and the run itself. */
/* Stops readers left running by a phase that failed (before the engine closes). */
static void
readers_abandon(run *r)
{
    if (r->readers) {
        phase_rec scratch;
        memset(&scratch, 0, sizeof(scratch));
        readers_stop(r->readers, &scratch);
        r->readers = NULL;
    }
}

static void
run_free(run *r)
{
    readers_abandon(r);
    tl_free(&r->tl);
    free(r->lat);
    free(r->clat);
    free(r->key);
    free(r->val);
    free(r->rbuf);
    free(r->bidx);
    free(r->bkeys);
    free(r->bvals);
    free(r->bvlens);
    free(r->brcs);
    free(r);
}

int
bench_run_engine(const bench_cfg *c, const char *engine, engine_rec *rec)
{
    run *r = calloc(1, sizeof(*r));
    int ret = 0;
    if (!r)
        return -1;
    r->c = c;
    r->rec = rec;
    snprintf(rec->name, sizeof(rec->name), "%s", engine);
    snprintf(rec->dir, sizeof(rec->dir), "%s/%s", c->db_dir, engine);
    rec->durability = strncmp(engine, "qmdb", 4) == 0 ? "D1 (qmdb commits are always durable)"
                      : c->durable                    ? "D1"
                                                      : "D0";
    if (engine_lookup(engine, &r->e) != 0) {
        snprintf(rec->error, sizeof(rec->error), "%s", r->e.err);
        free(r);
        return -1;
    }
    r->lat = malloc(sizeof(*r->lat));
    r->clat = malloc(sizeof(*r->clat));
    r->key = malloc(c->key_size);
    r->val = malloc(c->value_size);
    r->rcap = c->value_size + 64;
    r->rbuf = malloc(r->rcap);
    if (!r->lat || !r->clat || !r->key || !r->val || !r->rbuf) {
        snprintf(rec->error, sizeof(rec->error), "out of memory");
        ret = -1;
        goto out;
    }
    wl_init(&r->g, c->master_seed, c->key_size, c->value_size, c->zipf_theta);

    if (rm_rf(rec->dir) != 0 || mkdir_p(rec->dir) != 0) {
        snprintf(rec->error, sizeof(rec->error), "cannot prepare %s", rec->dir);
        ret = -1;
        goto out;
    }
    if (c->drop_caches)
        drop_caches(rec);
    malloc_trim(0);
    rec->rss_at_open = proc_status_bytes("VmRSS");
    printf("=== engine %s: dir %s, durability %s, process RSS at open %.1f MiB ===\n", engine,
           rec->dir, rec->durability, (double)rec->rss_at_open / 1048576.0);
    fflush(stdout);

    bench_engine_cfg ec = engine_cfg(c, engine);
    uint64_t t0 = now_ns();
    if (r->e.open(&r->e, rec->dir, &ec) != 0) {
        snprintf(rec->error, sizeof(rec->error), "%s", r->e.err);
        r->e.close(&r->e);
        ret = -1;
        goto out;
    }
    rec->open_secs = (double)(now_ns() - t0) / 1e9;

    int prc = run_phases(r);
    readers_abandon(r);
    if (prc != 0) {
        snprintf(rec->error, sizeof(rec->error), "%s", r->e.err);
        fprintf(stderr, "error: engine %s: %s\n", engine, r->e.err);
        if (r->p) { /* drop the unfinished phase record */
            tl_free(&r->tl);
            rec->n_phases--;
        }
        ret = -1;
    }
    r->e.describe(&r->e, rec->describe, sizeof(rec->describe));
    printf("FINAL %s: %s\n", engine, rec->describe);
    t0 = now_ns();
    if (r->e.close(&r->e) != 0 && ret == 0) {
        snprintf(rec->error, sizeof(rec->error), "%s", r->e.err);
        ret = -1;
    }
    rec->close_secs = (double)(now_ns() - t0) / 1e9;
    if (ret == 0 && c->reopen)
        ret = time_reopen(r, &ec, engine);
    if (ret == 0) {
        rec->ok = 1;
        for (size_t i = 0; i < rec->n_phases; i++)
            if (rec->phases[i].errors)
                ret = 1;
    }
    if (!c->keep && rm_rf(rec->dir) != 0)
        fprintf(stderr, "warning: could not remove %s\n", rec->dir);
out:
    run_free(r);
    malloc_trim(0);
    return ret;
}
