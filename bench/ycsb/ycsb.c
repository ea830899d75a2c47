/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ycsb.c -- the `qmdb-bench ycsb` driver (single thread, the main thread of qmdb-bench).
 *
 * Owns: the ycsb flags, the load-once / restore-per-run method, the operation loop, per-op-type
 * throughput and latency, medians over runs, the side-by-side table and the ycsb JSON file.
 *
 * Method, per engine (the seed methodology of BENCHMARKS.md):
 *   1. load recordcount records into DIR/<engine>.load once (blocks of --ops-per-block puts);
 *   2. for each of --runs runs: copy the load directory to DIR/<engine>.run (`cp -a
 *      --reflink=auto`), drop the page cache if root (recorded), open, drop it again (an
 *      engine's open may read its files, e.g. qmdb's verifying open), run operationcount
 *      operations, close, delete the copy;
 *   3. report each run and the median of each figure over the runs.
 * Operations are grouped in blocks of --ops-per-block operations; a block that holds writes is
 * one begin_block ... commit_block (each write its own transaction), the same for every
 * engine. Inserts become visible to the key chooser when their block commits (YCSB's
 * acknowledged counter). Reads and scans are timed per call; a write's latency runs from its
 * start until its block's commit returns (when it is durable at D1). Workloads with scans are
 * "not applicable" for engines without an ordered scan (qmdb is hash-ordered).
 * Threads: the main thread of qmdb-bench; SIGINT/SIGTERM only set bench_stop.
 */
#include "ycsb.h"

#include "numparse.h"
#include "pagecache.h"
#include "registry.h"
#include "report.h"
#include "ycsb_wl.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define YMAX_RUNS 99
#define PROGRESS_NS 2000000000ull

typedef struct ycfg {
    char engines[BENCH_MAX_ENGINES][32];
    int n_engines;
    const char *db_dir, *output, *wl_path;
    ycsb_props props;
    ycsb_params p;
    int runs, durable, keep, no_drop;
    uint64_t ops_per_block, seed, mem_cap;
} ycfg;

typedef struct op_res {
    uint64_t n;
    double rate, p50, p99, mean, max; /* ops/s over the run; latencies in us */
} op_res;

typedef struct run_res {
    int dropped;
    double copy_secs, secs, rate, cpu;
    uint64_t ops, errors, disk_rd, disk_wr, ssd, blocks;
    op_res op[YOP_N];
    uint64_t *tl;
    size_t tl_n;
    char final[512];
} run_res;

typedef struct eng_res {
    char name[32];
    int applicable, ok;
    char reason[128], error[2400];
    double load_secs, load_rate;
    uint64_t load_ssd;
    run_res runs[YMAX_RUNS];
    int n_runs;
    /* medians over runs */
    double m_rate;
    op_res m_op[YOP_N];
} eng_res;

typedef struct yrun {
    const ycfg *c;
    bench_engine e;
    ycsb_gen y;
    lat_hist *h[YOP_N];
    char key[YCSB_KEY_MAX];
    uint8_t *val, *rbuf;
    size_t vsize, rcap;
    uint64_t *pend_t0; /* writes of the open block: start time and type */
    uint8_t *pend_op;
    size_t n_pend;
    int in_block;
    uint64_t height, version;
} yrun;

static void
on_sig(int s)
{
    (void)s;
    bench_stop = 1;
}

static void
usage(FILE *f)
{
    fprintf(
        f,
        "usage: qmdb-bench ycsb -P FILE [-p key=value ...] [options]\n"
        "  -P FILE                  YCSB workload property file (e.g. "
        "bench/ycsb/workloads/workloada)\n"
        "  -p key=value             override a property (recordcount, operationcount, ...)\n"
        "  --engine LIST            engines, comma-separated (default qmdb,rocksdb,lmdb)\n"
        "  --db-dir DIR             parent of DIR/<engine>.load and .run (default "
        "/tmp/qmdb-ycsb)\n"
        "  --runs N                 runs per engine on a restored load image (default 3); the "
        "median is reported\n"
        "  --ops-per-block N        operations per block, one commit per block with writes "
        "(default 1000)\n"
        "  --durability D0|D1       D1 = fsync-backed commit per block (default); qmdb is always "
        "D1\n"
        "  --seed N                 workload seed (default 1)\n"
        "  --mem-cap BYTES          cap memory with a cgroup (root); K/M/G suffixes\n"
        "  --no-drop-caches         do not drop the page cache before each run\n"
        "  --output FILE            JSON results (default qmdb-ycsb-results.json)\n"
        "  --keep                   keep the load images\n");
}

/* ycsb's numbers take K, M and G suffixes (no T). */
static int
parse_num(const char *s, uint64_t *out)
{
    return bench_parse_u64(s, out, 0);
}

static double
median(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: n <= 99 */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    if (n == 0)
        return 0;
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* cp -a --reflink=auto src dst (dst must not exist). */
static int
copy_dir(const char *src, const char *dst)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execlp("cp", "cp", "-a", "--reflink=auto", src, dst, (char *)NULL);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Root only: 1 = dropped, 0 = not root or the write failed. */
static int
drop_page_cache(void)
{
    return bench_drop_page_cache(1) > 0;
}

/* ---- one engine: load and runs -------------------------------------------------------------- */

static int
yopen(yrun *r, const char *name, const char *dir)
{
    const ycfg *c = r->c;
    if (engine_lookup(name, &r->e) != 0)
        return -1;
    bench_engine_cfg ec = {.durable = c->durable,
                           .mem_cap = c->mem_cap,
                           .entry_count = c->p.recordcount + c->p.operationcount,
                           .key_size = YCSB_KEY_MAX,
                           .value_size = r->vsize,
                           .tuned =
                               strcmp(name, "rocksdb") == 0 || strcmp(name, "rocksdb-blob") == 0,
                           .blob = strcmp(name, "rocksdb-blob") == 0};
    if (r->e.open(&r->e, dir, &ec) != 0)
        return -1;
    r->height = 0;
    r->in_block = 0;
    r->n_pend = 0;
    return 0;
}

static int
write_begin(yrun *r)
{
    if (!r->in_block) {
        if (r->e.begin_block(&r->e, r->height + 1))
            return -1;
        r->in_block = 1;
        return 0;
    }
    return r->e.tx(&r->e);
}

/* Commits the open block (if any); each pending write's latency ends here. */
static int
block_end(yrun *r, timeline *tl, run_res *rr)
{
    if (!r->in_block)
        return 0;
    if (r->e.commit_block(&r->e))
        return -1;
    uint64_t te = now_ns();
    r->in_block = 0;
    r->height++;
    for (size_t i = 0; i < r->n_pend; i++)
        hist_add(r->h[r->pend_op[i]], te - r->pend_t0[i]);
    if (tl)
        tl_add(tl, te, r->n_pend);
    r->n_pend = 0;
    ycsb_ack(&r->y);
    if (rr)
        rr->blocks++;
    return 0;
}

static int
put_item(yrun *r, uint64_t i)
{
    size_t kl = ycsb_key(&r->c->p, i, r->key);
    wl_value(&r->y.g, i, ++r->version, r->val);
    return r->e.put(&r->e, r->key, kl, r->val, r->vsize);
}

static int
load(yrun *r, const char *name, const char *dir, eng_res *er)
{
    const ycfg *c = r->c;
    if (rm_rf(dir) != 0 || mkdir_p(dir) != 0 || yopen(r, name, dir) != 0)
        return -1;
    ycsb_gen_init(&r->y, &c->p, wl_mix64(c->seed));
    r->version = 0;
    uint64_t t0 = now_ns(), last = t0;
    for (uint64_t i = 0; i < c->p.recordcount; i++) {
        if (bench_stop) {
            snprintf(r->e.err, sizeof(r->e.err), "interrupted");
            return -1;
        }
        if (write_begin(r) || put_item(r, i))
            return -1;
        if ((i + 1) % c->ops_per_block == 0 || i + 1 == c->p.recordcount) {
            if (r->e.commit_block(&r->e))
                return -1;
            r->in_block = 0;
            r->height++;
            uint64_t now = now_ns();
            if (now - last > PROGRESS_NS) {
                last = now;
                fprintf(stderr, "  [%s] load: %" PRIu64 "/%" PRIu64 "\n", name, i + 1,
                        c->p.recordcount);
            }
        }
    }
    er->load_secs = (double)(now_ns() - t0) / 1e9;
    er->load_rate = er->load_secs > 0 ? (double)c->p.recordcount / er->load_secs : 0;
    if (r->e.close(&r->e))
        return -1;
    er->load_ssd = du_bytes(dir, NULL);
    printf("%s load: %" PRIu64 " records in %.3fs (%.0f/s), %.1f MiB on disk\n", name,
           c->p.recordcount, er->load_secs, er->load_rate, (double)er->load_ssd / 1048576.0);
    return 0;
}

/* Reads item i (must exist); counts a miss or a bad value as an error. */
static int
read_item(yrun *r, uint64_t i, run_res *rr)
{
    size_t kl = ycsb_key(&r->c->p, i, r->key), vlen = 0;
    int rc = r->e.get(&r->e, r->key, kl, r->rbuf, r->rcap, &vlen);
    if (rc < 0)
        return -1;
    if (rc != 0 || !wl_value_check(&r->y.g, i, r->rbuf, vlen))
        rr->errors++;
    return 0;
}

static int
run_ops(yrun *r, const char *name, int run_no, run_res *rr)
{
    const ycfg *c = r->c;
    const ycsb_params *p = &c->p;
    timeline tl = {0};
    ycsb_gen_init(&r->y, p, wl_mix64(c->seed));
    r->version = p->recordcount; /* as after the load: every run writes the same values */
    for (int k = 0; k < YOP_N; k++)
        hist_reset(r->h[k]);
    uint64_t rd0 = 0, wr0 = 0, rd1 = 0, wr1 = 0;
    double u0, s0, u1, s1;
    disk_sample(bench_disk, &rd0, &wr0, NULL);
    cpu_times(&u0, &s0);
    uint64_t t0 = now_ns(), last = t0;
    tl_start(&tl, t0);
    int ret = 0;
    for (uint64_t k = 0; k < p->operationcount; k++) {
        ycsb_op op = ycsb_next_op(&r->y);
        uint64_t ts = now_ns(), i;
        size_t got = 0, kl;
        switch (op) {
        case YOP_READ:
            if (read_item(r, ycsb_next_key(&r->y), rr))
                goto fail;
            break;
        case YOP_SCAN:
            i = ycsb_next_key(&r->y);
            kl = ycsb_key(p, i, r->key);
            if (r->e.scan(&r->e, r->key, kl, (size_t)ycsb_scan_len(&r->y), &got))
                goto fail;
            if (got == 0) /* the start key exists, so at least one record */
                rr->errors++;
            break;
        case YOP_RMW:
            i = ycsb_next_key(&r->y);
            if (read_item(r, i, rr) || write_begin(r) || put_item(r, i))
                goto fail;
            break;
        case YOP_UPDATE:
            if (write_begin(r) || put_item(r, ycsb_next_key(&r->y)))
                goto fail;
            break;
        case YOP_INSERT:
        default:
            if (write_begin(r) || put_item(r, r->y.next_insert++))
                goto fail;
            break;
        }
        uint64_t te = now_ns();
        if (op == YOP_READ || op == YOP_SCAN) {
            hist_add(r->h[op], te - ts);
            tl_add(&tl, te, 1);
        } else {
            r->pend_t0[r->n_pend] = ts;
            r->pend_op[r->n_pend++] = (uint8_t)op;
        }
        if ((k + 1) % c->ops_per_block == 0 && block_end(r, &tl, rr))
            goto fail;
        if (te - last > PROGRESS_NS) {
            last = te;
            fprintf(stderr, "  [%s] run %d: %" PRIu64 "/%" PRIu64 "\n", name, run_no, k + 1,
                    p->operationcount);
            if (bench_stop) {
                snprintf(r->e.err, sizeof(r->e.err), "interrupted");
                goto fail;
            }
        }
    }
    if (block_end(r, &tl, rr))
        goto fail;
    rr->secs = (double)(now_ns() - t0) / 1e9;
    goto done;
fail:
    ret = -1;
done:
    disk_sample(bench_disk, &rd1, &wr1, NULL);
    cpu_times(&u1, &s1);
    rr->disk_rd = rd1 - rd0;
    rr->disk_wr = wr1 - wr0;
    rr->cpu = (u1 - u0) + (s1 - s0);
    rr->ops = p->operationcount;
    rr->rate = rr->secs > 0 ? (double)rr->ops / rr->secs : 0;
    for (int k = 0; k < YOP_N; k++) {
        const lat_hist *h = r->h[k];
        op_res *o = &rr->op[k];
        o->n = h->n;
        o->rate = rr->secs > 0 ? (double)h->n / rr->secs : 0;
        o->p50 = (double)hist_quantile(h, 0.50) / 1e3;
        o->p99 = (double)hist_quantile(h, 0.99) / 1e3;
        o->mean = h->n ? (double)h->sum / (double)h->n / 1e3 : 0;
        o->max = (double)h->max / 1e3;
    }
    rr->tl = tl.sec;
    rr->tl_n = tl.n;
    return ret;
}

static void
print_run(const char *name, int k, int n, const run_res *rr)
{
    printf("%s run %d/%d: %" PRIu64 " ops in %.3fs (%.0f ops/s), %" PRIu64
           " blocks, cache %s, errors %" PRIu64 "\n",
           name, k, n, rr->ops, rr->secs, rr->rate, rr->blocks,
           rr->dropped ? "dropped" : "not dropped", rr->errors);
    for (int o = 0; o < YOP_N; o++)
        if (rr->op[o].n)
            printf("  %-17s %9" PRIu64 " ops %10.0f/s  p50 %9.1fus  p99 %9.1fus  max %9.1fus\n",
                   ycsb_op_names[o], rr->op[o].n, rr->op[o].rate, rr->op[o].p50, rr->op[o].p99,
                   rr->op[o].max);
}

static void
engine_medians(eng_res *er)
{
    double v[YMAX_RUNS];
    int n = er->n_runs;
    for (int k = 0; k < n; k++)
        v[k] = er->runs[k].rate;
    er->m_rate = median(v, n);
    for (int o = 0; o < YOP_N; o++) {
        op_res *m = &er->m_op[o];
        m->n = n ? er->runs[0].op[o].n : 0;
#define MED(field)                          \
    do {                                    \
        for (int k = 0; k < n; k++)         \
            v[k] = er->runs[k].op[o].field; \
        m->field = median(v, n);            \
    } while (0)
        MED(rate);
        MED(p50);
        MED(p99);
        MED(mean);
        MED(max);
#undef MED
    }
}

/* Run k (from 0) of an engine: restore the load image into run_dir, drop the page cache,
 * open, run the operations, close, measure and delete the copy. Returns -1 on failure
 * (er->error set), 1 if some reads were wrong, else 0. */
static int
one_run(yrun *r, const char *name, int k, const char *load_dir, const char *run_dir, eng_res *er)
{
    const ycfg *c = r->c;
    run_res *rr = &er->runs[k];
    memset(rr, 0, sizeof(*rr));
    uint64_t t0 = now_ns();
    if (rm_rf(run_dir) != 0 || copy_dir(load_dir, run_dir) != 0) {
        snprintf(er->error, sizeof(er->error), "cannot copy %s to %s", load_dir, run_dir);
        return -1;
    }
    rr->copy_secs = (double)(now_ns() - t0) / 1e9;
    rr->dropped = c->no_drop ? 0 : drop_page_cache();
    int rc = yopen(r, name, run_dir);
    /* Again after open: qmdb's verifying open reads its whole log, which would otherwise
     * start qmdb's run with a warm page cache and the others' cold. */
    if (rc == 0 && rr->dropped)
        rr->dropped = drop_page_cache();
    if (rc == 0)
        rc = run_ops(r, name, k + 1, rr);
    if (rc == 0 && r->e.describe)
        r->e.describe(&r->e, rr->final, sizeof(rr->final));
    if (rc != 0)
        snprintf(er->error, sizeof(er->error), "run %d: %s", k + 1, r->e.err);
    if (r->e.h && r->e.close(&r->e) != 0 && rc == 0) {
        snprintf(er->error, sizeof(er->error), "close: %s", r->e.err);
        rc = -1;
    }
    rr->ssd = du_bytes(run_dir, NULL);
    er->n_runs = k + 1;
    if (rc != 0)
        return -1;
    print_run(name, k + 1, c->runs, rr);
    if (rm_rf(run_dir) != 0)
        fprintf(stderr, "warning: could not remove %s\n", run_dir);
    return rr->errors ? 1 : 0;
}

/* Allocates the run's buffers and per-op-type histograms. 0 or -1 (out of memory). */
static int
yrun_alloc(yrun *r)
{
    const ycfg *c = r->c;
    r->vsize = (size_t)(c->p.fieldcount * c->p.fieldlength);
    r->rcap = r->vsize + 64;
    r->val = malloc(r->vsize);
    r->rbuf = malloc(r->rcap);
    r->pend_t0 = malloc(c->ops_per_block * sizeof(*r->pend_t0));
    r->pend_op = malloc(c->ops_per_block);
    for (int o = 0; o < YOP_N; o++)
        r->h[o] = malloc(sizeof(lat_hist));
    for (int o = 0; o < YOP_N; o++)
        if (!r->h[o])
            return -1;
    if (!r->val || !r->rbuf || !r->pend_t0 || !r->pend_op)
        return -1;
    return 0;
}

static void
yrun_free(yrun *r)
{
    for (int o = 0; o < YOP_N; o++)
        free(r->h[o]);
    free(r->val);
    free(r->rbuf);
    free(r->pend_t0);
    free(r->pend_op);
    free(r);
}

static int
run_engine(const ycfg *c, const char *name, eng_res *er)
{
    snprintf(er->name, sizeof(er->name), "%s", name);
    yrun *r = calloc(1, sizeof(*r));
    if (!r)
        return -1;
    r->c = c;
    int ret = 0;
    if (engine_lookup(name, &r->e) != 0) {
        snprintf(er->error, sizeof(er->error), "%s", r->e.err);
        free(r);
        return -1;
    }
    er->applicable = 1;
    if (c->p.prop[YOP_SCAN] > 0 && !r->e.scan) {
        er->applicable = 0;
        er->ok = 1;
        snprintf(er->reason, sizeof(er->reason), "not applicable (%s)",
                 strcmp(name, "qmdb") == 0 ? "hash-ordered store, no scans"
                                           : "engine has no ordered scan");
        printf("=== %s: workload %s %s ===\n", name, c->p.workload_name, er->reason);
        free(r);
        return 0;
    }
    char load_dir[1100], run_dir[1100];
    snprintf(load_dir, sizeof(load_dir), "%s/%s.load", c->db_dir, name);
    snprintf(run_dir, sizeof(run_dir), "%s/%s.run", c->db_dir, name);
    if (yrun_alloc(r) != 0)
        goto oom;
    printf("=== %s: workload %s, load image %s ===\n", name, c->p.workload_name, load_dir);
    if (load(r, name, load_dir, er) != 0) {
        snprintf(er->error, sizeof(er->error), "load: %s", r->e.err);
        if (r->e.h)
            r->e.close(&r->e);
        ret = -1;
        goto out;
    }
    for (int k = 0; k < c->runs && !bench_stop; k++) {
        int rc = one_run(r, name, k, load_dir, run_dir, er);
        if (rc < 0) {
            ret = -1;
            break;
        }
        if (rc > 0)
            ret = 1;
    }
    if (rm_rf(run_dir) != 0)
        fprintf(stderr, "warning: could not remove %s\n", run_dir);
    if (!c->keep && rm_rf(load_dir) != 0)
        fprintf(stderr, "warning: could not remove %s\n", load_dir);
    if (ret == 0 && bench_stop) {
        snprintf(er->error, sizeof(er->error), "interrupted");
        ret = -1;
    }
    er->ok = ret == 0;
    engine_medians(er);
    goto out;
oom:
    snprintf(er->error, sizeof(er->error), "out of memory");
    ret = -1;
out:
    if (ret < 0)
        fprintf(stderr, "engine %s failed: %s\n", name, er->error);
    yrun_free(r);
    return ret;
}

/* ---- reporting ------------------------------------------------------------------------------ */

static const char *
dist_name(ycsb_dist d)
{
    return d == YD_ZIPFIAN ? "zipfian" : d == YD_LATEST ? "latest" : "uniform";
}

/* The fastest rival of qmdb variant s by median ops/s (bench_fastest_rival), -1 if none. */
static int
y_fastest_rival(const eng_res *er, int n, int s)
{
    const char *names[BENCH_MAX_ENGINES];
    double rates[BENCH_MAX_ENGINES];
    for (int i = 0; i < n; i++) {
        names[i] = er[i].name;
        rates[i] = er[i].applicable && er[i].n_runs ? er[i].m_rate : 0;
    }
    return bench_fastest_rival(names, rates, n, s);
}

static int
y_scored(const eng_res *er, int s)
{
    return bench_is_qmdb(er[s].name) && er[s].applicable && er[s].n_runs && er[s].m_rate > 0;
}

static void
table(const ycfg *c, const eng_res *er, int n)
{
    const ycsb_params *p = &c->p;
    int used[YOP_N] = {0};
    for (int o = 0; o < YOP_N; o++)
        used[o] = p->prop[o] > 0;
    int base = -1;
    for (int i = 0; i < n && base < 0; i++)
        if (er[i].ok && er[i].applicable && er[i].n_runs)
            base = i;
    printf("\nYCSB %s: recordcount=%" PRIu64 " operationcount=%" PRIu64 " %s", p->workload_name,
           p->recordcount, p->operationcount, dist_name(p->dist));
    if (p->dist == YD_ZIPFIAN)
        printf(" theta=%g", p->zipf_theta);
    printf(" value=%" PRIu64 "B ops/block=%" PRIu64 " %s; median of %d run(s); "
           "latency in us (writes: until the block commit returns)\n",
           p->fieldcount * p->fieldlength, c->ops_per_block, c->durable ? "D1" : "D0", c->runs);
    printf("%-16s %10s %10s", "engine", "load/s", "ops/s");
    if (base >= 0)
        printf(" %9.9s/x", er[base].name);
    for (int o = 0; o < YOP_N; o++)
        if (used[o])
            printf(" | %-6.6s %9s %9s %9s", o == YOP_RMW ? "rmw" : ycsb_op_names[o], "ops/s", "p50",
                   "p99");
    printf("\n");
    for (int i = 0; i < n; i++) {
        const eng_res *e = &er[i];
        printf("%-16s ", e->name);
        if (!e->applicable) {
            printf("%s\n", e->reason);
            continue;
        }
        if (!e->ok && !e->n_runs) {
            printf("FAILED: %s\n", e->error);
            continue;
        }
        printf("%10.0f %10.0f", e->load_rate, e->m_rate);
        if (base >= 0)
            printf(" %11.2f", e->m_rate > 0 ? er[base].m_rate / e->m_rate : 0.0);
        for (int o = 0; o < YOP_N; o++)
            if (used[o])
                printf(" | %-6s %9.0f %9.1f %9.1f", "", e->m_op[o].rate, e->m_op[o].p50,
                       e->m_op[o].p99);
        printf("%s\n", e->ok ? "" : "  (FAILED)");
    }
    for (int s = 0; s < n; s++) {
        int b = y_scored(er, s) ? y_fastest_rival(er, n, s) : -1;
        if (b >= 0)
            printf("%s / fastest rival: %.2fx vs %s (median ops/s %.0f vs %.0f)\n", er[s].name,
                   er[s].m_rate / er[b].m_rate, er[b].name, er[s].m_rate, er[b].m_rate);
    }
}

static void
j_op(jw *w, const char *key, const op_res *o, int full)
{
    jw_obj(w, key);
    if (full)
        jw_u64(w, "count", o->n);
    jw_dbl(w, "ops_per_sec", o->rate);
    jw_dbl(w, "p50_us", o->p50);
    jw_dbl(w, "p99_us", o->p99);
    jw_dbl(w, "mean_us", o->mean);
    jw_dbl(w, "max_us", o->max);
    jw_obj_end(w);
}

/* "workload": the property file, its properties and the parameters taken from them. */
static void
j_workload(jw *w, const ycfg *c)
{
    const ycsb_params *p = &c->p;
    jw_obj(w, "workload");
    jw_str(w, "file", c->wl_path);
    jw_str(w, "name", p->workload_name);
    jw_obj(w, "properties");
    for (int i = 0; i < c->props.n; i++)
        jw_str(w, c->props.key[i], c->props.val[i]);
    jw_obj_end(w);
    jw_u64(w, "recordcount", p->recordcount);
    jw_u64(w, "operationcount", p->operationcount);
    jw_obj(w, "proportions");
    for (int o = 0; o < YOP_N; o++)
        jw_dbl(w, ycsb_op_names[o], p->prop[o]);
    jw_obj_end(w);
    jw_str(w, "requestdistribution", dist_name(p->dist));
    jw_dbl(w, "zipfianconstant", p->zipf_theta);
    jw_u64(w, "fieldcount", p->fieldcount);
    jw_u64(w, "fieldlength", p->fieldlength);
    jw_u64(w, "value_bytes", p->fieldcount * p->fieldlength);
    jw_u64(w, "maxscanlength", p->maxscanlength);
    jw_str(w, "insertorder", p->hashed ? "hashed" : "ordered");
    jw_obj_end(w);
}

/* "config": the flags of the run and the method. */
static void
j_config(jw *w, const ycfg *c)
{
    jw_obj(w, "config");
    jw_arr(w, "engines");
    for (int i = 0; i < c->n_engines; i++)
        jw_str(w, NULL, c->engines[i]);
    jw_arr_end(w);
    jw_str(w, "db_dir", c->db_dir);
    jw_i64(w, "runs", c->runs);
    jw_u64(w, "ops_per_block", c->ops_per_block);
    jw_str(w, "durability", c->durable ? "D1" : "D0");
    jw_str(w, "durability_note", "qmdb commits are always durable (D1), at either tier");
    jw_u64(w, "seed", c->seed);
    jw_u64(w, "mem_cap", c->mem_cap);
    jw_bool(w, "mem_cap_applied", bench_memcap.active);
    jw_str(w, "db_device", bench_disk);
    jw_str(w, "method",
           "load once; before each run restore (cp -a --reflink=auto) the load "
           "image, drop the page cache if root, open, drop it again; report the "
           "median over runs");
    jw_str(w, "latency_note",
           "reads/scans: the engine call; writes: from the operation's "
           "start until its block's commit returns");
    jw_obj_end(w);
}

/* One element of an engine's "runs". */
static void
j_run(jw *w, const ycsb_params *p, int k, const run_res *rr)
{
    jw_obj(w, NULL);
    jw_i64(w, "run", k + 1);
    jw_bool(w, "dropped_page_cache", rr->dropped);
    jw_dbl(w, "restore_seconds", rr->copy_secs);
    jw_u64(w, "ops", rr->ops);
    jw_u64(w, "blocks", rr->blocks);
    jw_dbl(w, "seconds", rr->secs);
    jw_dbl(w, "ops_per_sec", rr->rate);
    jw_u64(w, "errors", rr->errors);
    jw_u64(w, "disk_bytes_read", rr->disk_rd);
    jw_u64(w, "disk_bytes_written", rr->disk_wr);
    jw_dbl(w, "cpu_seconds", rr->cpu);
    jw_u64(w, "ssd_bytes", rr->ssd);
    jw_str(w, "final", rr->final);
    jw_obj(w, "ops_by_type");
    for (int o = 0; o < YOP_N; o++)
        if (p->prop[o] > 0)
            j_op(w, ycsb_op_names[o], &rr->op[o], 1);
    jw_obj_end(w);
    jw_arr(w, "timeline_ops_per_second");
    for (size_t s = 0; s < rr->tl_n; s++)
        jw_u64(w, NULL, rr->tl[s]);
    jw_arr_end(w);
    jw_obj_end(w);
}

/* One element of "engines": applicability, the load, every run and the medians. */
static void
j_engine(jw *w, const ycsb_params *p, const eng_res *e)
{
    jw_obj(w, NULL);
    jw_str(w, "engine", e->name);
    jw_bool(w, "applicable", e->applicable);
    jw_bool(w, "ok", e->ok);
    if (!e->applicable)
        jw_str(w, "reason", e->reason);
    if (e->error[0])
        jw_str(w, "error", e->error);
    if (e->applicable) {
        jw_obj(w, "load");
        jw_u64(w, "records", p->recordcount);
        jw_dbl(w, "seconds", e->load_secs);
        jw_dbl(w, "ops_per_sec", e->load_rate);
        jw_u64(w, "ssd_bytes", e->load_ssd);
        jw_obj_end(w);
        jw_arr(w, "runs");
        for (int k = 0; k < e->n_runs; k++)
            j_run(w, p, k, &e->runs[k]);
        jw_arr_end(w);
        jw_obj(w, "median");
        jw_i64(w, "runs", e->n_runs);
        jw_dbl(w, "ops_per_sec", e->m_rate);
        jw_obj(w, "ops_by_type");
        for (int o = 0; o < YOP_N; o++)
            if (p->prop[o] > 0)
                j_op(w, ycsb_op_names[o], &e->m_op[o], 0);
        jw_obj_end(w);
        jw_obj_end(w);
    }
    jw_obj_end(w);
}

static int
write_json(const ycfg *c, const eng_res *er, int n, const char *started, int ok)
{
    char tmp[4200];
    FILE *f = jw_file_open(c->output, tmp, sizeof(tmp), "qmdb-bench ycsb");
    if (!f)
        return -1;
    jw w;
    jw_init(&w, f);
    jw_obj(&w, NULL);
    jw_str(&w, "tool", "qmdb-bench");
    jw_str(&w, "mode", "ycsb");
    jw_str(&w, "started", started);
    jw_bool(&w, "ok", ok);
    j_workload(&w, c);
    j_config(&w, c);
    jw_arr(&w, "comparison");
    for (int s = 0; s < n; s++) {
        int b = y_scored(er, s) ? y_fastest_rival(er, n, s) : -1;
        if (b < 0)
            continue;
        jw_obj(&w, NULL);
        jw_str(&w, "engine", er[s].name);
        jw_dbl(&w, "ops_per_sec", er[s].m_rate);
        jw_str(&w, "fastest_rival", er[b].name);
        jw_dbl(&w, "fastest_rival_ops_per_sec", er[b].m_rate);
        jw_dbl(&w, "ratio", er[s].m_rate / er[b].m_rate);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_arr(&w, "engines");
    for (int i = 0; i < n; i++)
        j_engine(&w, &c->p, &er[i]);
    jw_arr_end(&w);
    jw_obj_end(&w);
    return jw_file_commit(f, tmp, c->output, "qmdb-bench ycsb");
}

/* ---- flags and entry point ------------------------------------------------------------------ */

static int
parse_engine_list(ycfg *c, const char *list)
{
    return bench_parse_engine_list(list, c->engines, &c->n_engines, "qmdb-bench ycsb");
}

enum {
    Y_ENGINE = 300,
    Y_DBDIR,
    Y_RUNS,
    Y_OUTPUT,
    Y_DUR,
    Y_OPB,
    Y_SEED,
    Y_MEMCAP,
    Y_KEEP,
    Y_NODROP,
    Y_HELP
};

static int
parse(ycfg *c, int argc, char **argv)
{
    static const struct option opts[] = {{"engine", required_argument, 0, Y_ENGINE},
                                         {"db-dir", required_argument, 0, Y_DBDIR},
                                         {"runs", required_argument, 0, Y_RUNS},
                                         {"output", required_argument, 0, Y_OUTPUT},
                                         {"durability", required_argument, 0, Y_DUR},
                                         {"ops-per-block", required_argument, 0, Y_OPB},
                                         {"seed", required_argument, 0, Y_SEED},
                                         {"mem-cap", required_argument, 0, Y_MEMCAP},
                                         {"keep", no_argument, 0, Y_KEEP},
                                         {"no-drop-caches", no_argument, 0, Y_NODROP},
                                         {"help", no_argument, 0, Y_HELP},
                                         {0, 0, 0, 0}};
    char err[600];
    int o, have_p = 0;
    uint64_t v;
    optind = 1;
    /* -P files first, so -p overrides win whatever the order on the command line. */
    char *sets[64];
    int n_sets = 0;
    while ((o = getopt_long(argc, argv, "P:p:h", opts, NULL)) != -1) {
        const char *a = optarg;
        int bad = 0;
        switch (o) {
        case 'P':
            if (ycsb_props_load(&c->props, a, err, sizeof(err))) {
                fprintf(stderr, "qmdb-bench ycsb: %s\n", err);
                return -1;
            }
            c->wl_path = a;
            have_p = 1;
            break;
        case 'p':
            if (n_sets == 64)
                return -1;
            sets[n_sets++] = optarg;
            break;
        case Y_ENGINE:
            bad = parse_engine_list(c, a);
            break;
        case Y_DBDIR:
            c->db_dir = a;
            break;
        case Y_RUNS:
            bad = parse_num(a, &v) || v < 1 || v > YMAX_RUNS;
            c->runs = (int)v;
            break;
        case Y_OUTPUT:
            c->output = a;
            break;
        case Y_DUR:
            bad = strcmp(a, "D1") != 0 && strcmp(a, "D0") != 0;
            c->durable = strcmp(a, "D1") == 0;
            break;
        case Y_OPB:
            bad = parse_num(a, &c->ops_per_block) || !c->ops_per_block ||
                  c->ops_per_block > (1u << 24);
            break;
        case Y_SEED:
            bad = parse_num(a, &c->seed);
            break;
        case Y_MEMCAP:
            bad = parse_num(a, &c->mem_cap);
            break;
        case Y_KEEP:
            c->keep = 1;
            break;
        case Y_NODROP:
            c->no_drop = 1;
            break;
        case Y_HELP:
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "qmdb-bench ycsb: bad value '%s' for --%s\n", a ? a : "",
                    opts[o - Y_ENGINE].name);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "qmdb-bench ycsb: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (!have_p) {
        fprintf(stderr, "qmdb-bench ycsb: -P FILE is required\n");
        usage(stderr);
        return -1;
    }
    for (int i = 0; i < n_sets; i++)
        if (ycsb_props_set(&c->props, sets[i], err, sizeof(err))) {
            fprintf(stderr, "qmdb-bench ycsb: %s\n", err);
            return -1;
        }
    if (ycsb_params_from(&c->p, &c->props, err, sizeof(err))) {
        fprintf(stderr, "qmdb-bench ycsb: %s\n", err);
        return -1;
    }
    const char *slash = strrchr(c->wl_path, '/');
    snprintf(c->p.workload_name, sizeof(c->p.workload_name), "%s", slash ? slash + 1 : c->wl_path);
    return 0;
}

int
ycsb_main(int argc, char **argv)
{
    ycfg *c = calloc(1, sizeof(*c));
    eng_res *er = NULL;
    if (!c)
        return 2;
    c->db_dir = "/tmp/qmdb-ycsb";
    c->output = "qmdb-ycsb-results.json";
    c->runs = 3;
    c->durable = 1;
    c->ops_per_block = 1000;
    c->seed = 1;
    parse_engine_list(c, "qmdb,rocksdb,lmdb");
    if (parse(c, argc, argv) != 0) {
        free(c);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sig;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    char started[64];
    time_t now = time(NULL);
    strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    if (mkdir_p(c->db_dir) != 0) {
        fprintf(stderr, "qmdb-bench ycsb: cannot create %s: %s\n", c->db_dir, strerror(errno));
        free(c);
        return 2;
    }
    disk_find(c->db_dir, bench_disk, sizeof(bench_disk));
    if (c->mem_cap) {
        if (memcap_apply(&bench_memcap, c->mem_cap) == 0)
            printf("mem-cap: %s\n", bench_memcap.msg);
        else
            fprintf(stderr, "warning: --mem-cap not applied (%s); running uncapped\n",
                    bench_memcap.msg);
    }
    printf("qmdb-bench ycsb: workload %s (%s) records=%" PRIu64 " ops=%" PRIu64
           " runs=%d ops/block=%" PRIu64 " durability=%s%s page-cache drop=%s\n",
           c->p.workload_name, c->wl_path, c->p.recordcount, c->p.operationcount, c->runs,
           c->ops_per_block, c->durable ? "D1" : "D0", c->durable ? "" : " (qmdb stays D1)",
           c->no_drop       ? "off"
           : geteuid() == 0 ? "on (root)"
                            : "not permitted (not root)");
    er = calloc((size_t)c->n_engines, sizeof(*er));
    if (!er) {
        free(c);
        return 2;
    }
    int n = 0, fail = 0;
    for (int i = 0; i < c->n_engines && !bench_stop; i++, n++)
        if (run_engine(c, c->engines[i], &er[i]) != 0)
            fail = 1;
    table(c, er, n);
    memcap_release(&bench_memcap);
    int jrc = write_json(c, er, n, started, !fail && !bench_stop);
    if (jrc == 0)
        printf("results written to %s\n", c->output);
    if (!c->keep)
        rmdir(c->db_dir); /* only if empty */
    for (int i = 0; i < n; i++)
        for (int k = 0; k < er[i].n_runs; k++)
            free(er[i].runs[k].tl);
    free(er);
    free(c);
    return fail || jrc || bench_stop ? 1 : 0;
}
