/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_main.c -- qmdb-bench entry point.
 *
 * Owns: command-line flags and their validation, the seed (--seed and --randsrc-filename),
 * the memory cap, calibration, running each requested engine side by side (each in its own
 * subdirectory of --db-dir) and the JSON results file; the summary after the last engine is
 * bench_summary.c's.
 * Run `qmdb-bench --help`; docs/BENCH.md describes every flag and output line.
 * Threads: the main thread; SIGINT/SIGTERM only set bench_stop (common/registry.c).
 */
#include "bench.h"
#include "numparse.h"
#include "replay.h"
#include "workload.h"
#include "ycsb.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static void
usage(FILE *f)
{
    fprintf(
        f, "usage: qmdb-bench [options]\n"
           "  --engine LIST            "
           "qmdb|qmdb-seq|qmdb-hybrid|rocksdb|rocksdb-default|rocksdb-blob|lmdb|mpt, "
           "comma-separated "
           "(default qmdb)\n"
           "  --db-dir DIR             parent directory of the engines' DBs (default "
           "/tmp/qmdb-bench)\n"
           "  --entry-count N          keys to populate (default 200000); a multiple of "
           "--ops-per-block\n"
           "  --ops-per-block N        operations per block (default 10000, or 100000 when "
           "entry-count >= 10M)\n"
           "  --hover-interval B       blocks between timed update/read phases during populate "
           "(0 = only at the end; default 0)\n"
           "  --hover-write-block B    blocks per update, read, read-miss and txmix phase "
           "(default 10)\n"
           "  --hover-recreate-block B blocks per insert and delete phase (default 5)\n"
           "  --hover-zipf-theta T     key skew for updates and reads: 0 = uniform (default), "
           "else YCSB scrambled zipfian\n"
           "  --key-size N             key bytes, 8..255 (default 52)\n"
           "  --value-size N           value bytes, 1..16777215 (default 32)\n"
           "  --durability D0|D1       D1 = one fsync-backed commit per block (default); D0 = "
           "no per-block sync (qmdb stays D1)\n"
           "  --mem-cap BYTES          cap memory (page cache included) with a cgroup; K/M/G "
           "suffixes; needs root\n"
           "  --seed N                 workload seed (default 1)\n"
           "  --randsrc-filename FILE  random bytes mixed into the seed (created with getrandom "
           "if missing)\n"
           "  --ops-per-tx N           operations per transaction in non-mix blocks (default 1)\n"
           "  --calibrate-secs S       seconds per calibration read test (default 1; 0 = skip)\n"
           "  --drop-caches            sync and drop the page cache before each engine (root)\n"
           "  --output FILE            JSON results file (default qmdb-bench-results.json)\n"
           "  --keep                   keep the DB directories (default: delete after the run)\n"
           "  --blind-writes           write without reading first (default: every update, insert\n"
           "                           and delete reads the key first, for every engine)\n"
           "  --read-batch N           the reads of a block's read-modify-writes go to the engine\n"
           "                           N keys at a time through its batch read (qmdb_get_many,\n"
           "                           RocksDB MultiGet; LMDB and MPT loop over get); 1 = one get\n"
           "                           per op (default 10000)\n"
           "  --qmdb-direct-io         qmdb's batched reads use O_DIRECT, and point reads of\n"
           "                           uncached entries beyond memory (QMDB_OPEN_DIRECT_IO)\n"
           "  --reader-threads N       N threads doing gets of committed state beside the writer\n"
           "                           during every update phase (0..64, default 0)\n"
           "  --reopen                 after the phases, close, drop caches (with --drop-caches)\n"
           "                           and time a reopen (qmdb: QMDB_OPEN_FAST)\n"
           "  --qmdb-compact-thres N   qmdb ablation: compaction threshold (live entries per "
           "shard)\n"
           "  --qmdb-utilization R/D   qmdb ablation: compact while live/total < R/D (e.g. 7/10)\n"
           "  --qmdb-history-blocks N  qmdb ablation: blocks of history kept before pruning\n"
           "  --qmdb-segment-bytes N   qmdb ablation: entry-file segment size (K/M/G suffixes)\n"
           "  --help\n"
           "       qmdb-bench ycsb -P FILE ...   YCSB workloads (qmdb-bench ycsb --help)\n"
           "       qmdb-bench replay --trace T ... trace replay (qmdb-bench replay --help)\n");
}

/* The main run's numbers take K, M, G and T suffixes. */
static int
parse_u64(const char *s, uint64_t *out)
{
    return bench_parse_u64(s, out, 1);
}

static int
parse_engines(bench_cfg *c, const char *list)
{
    return bench_parse_engine_list(list, c->engines, &c->n_engines, "qmdb-bench");
}

/* Digest of the randsrc file (created with getrandom if missing) folded into the seed. */
static int
load_randsrc(bench_cfg *c)
{
    const char *path = c->randsrc;
    int fd = open(path, O_RDONLY);
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd < 0)
            goto fail;
        uint8_t buf[65536];
        for (int k = 0; k < 16; k++) { /* 1 MiB */
            size_t got = 0;
            while (got < sizeof(buf)) {
                ssize_t n = getrandom(buf + got, sizeof(buf) - got, 0);
                if (n < 0 && errno != EINTR)
                    goto fail_close;
                if (n > 0)
                    got += (size_t)n;
            }
            if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
                goto fail_close;
        }
        close(fd);
        fprintf(stderr, "created randsrc file %s (1 MiB from getrandom)\n", path);
        fd = open(path, O_RDONLY);
    }
    if (fd < 0)
        goto fail;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    uint8_t buf[65536];
    ssize_t n;
    uint64_t total = 0;
    while (total < (16u << 20) && (n = read(fd, buf, sizeof(buf))) > 0) {
        EVP_DigestUpdate(ctx, buf, (size_t)n);
        total += (uint64_t)n;
    }
    uint8_t md[32];
    unsigned mdlen = 0;
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    close(fd);
    uint64_t d = 0;
    for (int i = 0; i < 8; i++)
        d |= (uint64_t)md[i] << (8 * i);
    for (int i = 0; i < 32; i++)
        snprintf(c->randsrc_digest + 2 * i, 3, "%02x", md[i]);
    c->master_seed = wl_mix64(c->seed) ^ d;
    return 0;
fail_close:
    close(fd);
fail:
    fprintf(stderr, "qmdb-bench: randsrc %s: %s\n", path, strerror(errno));
    return -1;
}

static void
on_signal(int sig)
{
    (void)sig;
    bench_stop = 1;
}

/* ---- JSON --------------------------------------------------------------------------------- */

static void
j_phase(jw *w, const bench_cfg *c, const phase_rec *p)
{
    jw_obj(w, NULL);
    jw_str(w, "phase", p->name);
    jw_u64(w, "entries", p->entries);
    jw_u64(w, "entries_end", p->entries_end);
    jw_u64(w, "ops", p->ops);
    if (strcmp(p->name, "txmix") == 0)
        jw_str(w, "ops_unit", "transactions (9 updates, 15 reads, 1 create, 1 delete each)");
    jw_u64(w, "kv_ops", p->kv_ops);
    jw_u64(w, "blocks", p->blocks);
    jw_dbl(w, "seconds", p->secs);
    jw_dbl(w, "ops_per_sec", p->secs > 0 ? (double)p->ops / p->secs : 0);
    jw_u64(w, "errors", p->errors);
    jw_u64(w, "sha256_compressions", p->hash_compressions);
    jw_u64(w, "batched_reads", p->batched_reads);
    jw_u64(w, "index_page_reads", p->index_page_reads);
    jw_u64(w, "disk_read_ios", p->disk_rd_ios);
    jw_str(w, "latency_kind", p->op_latency ? "per-op" : "per-block");
    jw_lat(w, "latency", &p->lat);
    if (!p->op_latency)
        jw_lat(w, "commit_latency", &p->commit_lat);
    jw_obj(w, "disk");
    jw_str(w, "device", bench_disk);
    jw_u64(w, "bytes_read", p->disk_rd);
    jw_u64(w, "bytes_written", p->disk_wr);
    jw_dbl(w, "bytes_read_per_op", p->ops ? (double)p->disk_rd / (double)p->ops : 0);
    jw_dbl(w, "bytes_written_per_op", p->ops ? (double)p->disk_wr / (double)p->ops : 0);
    jw_u64(w, "logical_bytes_written", p->logical_wr);
    if (p->logical_wr)
        jw_dbl(w, "write_amplification", (double)p->disk_wr / (double)p->logical_wr);
    jw_obj_end(w);
    uint64_t ent = p->entries_end ? p->entries_end : 1;
    jw_obj(w, "memory");
    jw_u64(w, "rss_bytes", p->rss);
    jw_u64(w, "rss_growth_since_open_bytes", p->rss_growth);
    if (bench_memcap.active)
        jw_u64(w, "cgroup_bytes", p->cg_bytes);
    uint64_t mem = bench_memcap.active ? p->cg_bytes : p->rss;
    jw_dbl(w, "bytes_per_entry", (double)mem / (double)ent);
    if (p->have_es && p->es.has_dram) {
        jw_u64(w, "engine_index_bytes", p->es.index_dram_bytes);
        jw_u64(w, "engine_tree_bytes", p->es.tree_dram_bytes);
        jw_dbl(w, "engine_dram_bytes_per_entry",
               (double)(p->es.index_dram_bytes + p->es.tree_dram_bytes) / (double)ent);
        if (p->es.cache_bytes)
            jw_u64(w, "engine_cache_bytes", p->es.cache_bytes);
    }
    if (p->have_es && p->es.note[0])
        jw_str(w, "engine_note", p->es.note);
    jw_obj_end(w);
    jw_obj(w, "cpu");
    jw_dbl(w, "user_seconds", p->cpu_user);
    jw_dbl(w, "sys_seconds", p->cpu_sys);
    jw_dbl(w, "seconds_per_op", p->ops ? (p->cpu_user + p->cpu_sys) / (double)p->ops : 0);
    jw_obj_end(w);
    jw_obj(w, "ssd");
    jw_u64(w, "bytes", p->ssd);
    jw_u64(w, "apparent_bytes", p->ssd_apparent);
    jw_dbl(w, "bytes_per_entry", (double)p->ssd / (double)ent);
    jw_obj_end(w);
    jw_u64(w, "compactions", p->compactions);
    jw_u64(w, "pruned_twigs", p->pruned_twigs);
    jw_u64(w, "index_merges", p->index_merges);
    jw_u64(w, "compaction_bytes_written", p->compaction_bytes);
    if (p->reader_threads) {
        jw_obj(w, "readers");
        jw_u64(w, "threads", (uint64_t)p->reader_threads);
        jw_u64(w, "ops", p->reader_ops);
        jw_dbl(w, "seconds", p->reader_secs);
        jw_dbl(w, "ops_per_sec", p->reader_secs > 0 ? (double)p->reader_ops / p->reader_secs : 0);
        jw_u64(w, "errors", p->reader_errors);
        jw_lat(w, "latency", &p->reader_lat);
        jw_obj_end(w);
    }
    jw_arr(w, "timeline_ops_per_second");
    for (size_t i = 0; i < p->timeline_n; i++)
        jw_u64(w, NULL, p->timeline[i]);
    jw_arr_end(w);
    (void)c;
    jw_obj_end(w);
}

static void
machine_info(jw *w)
{
    struct utsname u;
    jw_obj(w, "machine");
    if (uname(&u) == 0) {
        jw_str(w, "kernel", u.release);
        jw_str(w, "hostname", u.nodename);
    }
    jw_i64(w, "online_cpus", sysconf(_SC_NPROCESSORS_ONLN));
    jw_u64(w, "mem_total_bytes",
           (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE));
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *v = strchr(line, ':');
            if (v) {
                v[strcspn(v, "\n")] = 0;
                jw_str(w, "cpu_model", v + 2);
            }
            break;
        }
    }
    if (f)
        fclose(f);
    jw_str(w, "db_device", bench_disk);
    jw_obj_end(w);
}

/* "config": the flags of the run. */
static void
j_config(jw *w, const bench_cfg *c)
{
    jw_obj(w, "config");
    jw_arr(w, "engines");
    for (int i = 0; i < c->n_engines; i++)
        jw_str(w, NULL, c->engines[i]);
    jw_arr_end(w);
    jw_str(w, "db_dir", c->db_dir);
    jw_u64(w, "entry_count", c->entry_count);
    jw_u64(w, "ops_per_block", c->ops_per_block);
    jw_u64(w, "ops_per_tx", c->ops_per_tx);
    jw_u64(w, "hover_interval", c->hover_interval);
    jw_u64(w, "hover_write_block", c->hover_write_block);
    jw_u64(w, "hover_recreate_block", c->hover_recreate_block);
    jw_dbl(w, "hover_zipf_theta", c->zipf_theta);
    jw_u64(w, "key_size", c->key_size);
    jw_u64(w, "value_size", c->value_size);
    jw_str(w, "durability", c->durable ? "D1" : "D0");
    jw_str(w, "durability_note", "qmdb commits are always durable (D1), at either tier");
    jw_str(w, "writes", c->blind_writes ? "blind" : "read-modify-write");
    jw_u64(w, "read_batch", c->read_batch);
    jw_u64(w, "qmdb_direct_io", (uint64_t)c->qmdb_direct_io);
    jw_u64(w, "qmdb_compact_thres", c->qmdb_compact_thres);
    jw_u64(w, "qmdb_utilization_ratio", c->qmdb_util_ratio);
    jw_u64(w, "qmdb_utilization_div", c->qmdb_util_div);
    jw_u64(w, "qmdb_history_blocks", c->qmdb_history_blocks);
    jw_u64(w, "qmdb_segment_bytes", c->qmdb_segment_bytes);
    jw_u64(w, "mem_cap", c->mem_cap);
    jw_bool(w, "mem_cap_applied", bench_memcap.active || bench_memcap.limit);
    jw_str(w, "mem_cap_note", c->mem_cap ? bench_memcap.msg : "uncapped");
    jw_u64(w, "seed", c->seed);
    jw_str(w, "randsrc_filename", c->randsrc);
    jw_str(w, "randsrc_sha256", c->randsrc ? c->randsrc_digest : NULL);
    jw_bool(w, "drop_caches", c->drop_caches);
    jw_u64(w, "reader_threads", (uint64_t)c->reader_threads);
    jw_obj_end(w);
}

/* "calibration": the device and SHA-256 figures, or skipped. */
static void
j_calibration(jw *w, const calib *cal)
{
    jw_obj(w, "calibration");
    if (cal->done) {
        jw_bool(w, "o_direct", cal->direct);
        jw_u64(w, "file_bytes", cal->file_bytes);
        jw_dbl(w, "seq_write_1m_mib_per_sec", cal->seq_write_mbps);
        jw_dbl(w, "rand_read_4k_qd1_iops", cal->qd1_iops);
        jw_dbl(w, "rand_read_4k_qd1_p50_us", cal->qd1_p50_us);
        jw_dbl(w, "rand_read_4k_qd1_p99_us", cal->qd1_p99_us);
        jw_dbl(w, "rand_read_4k_qd32_iops", cal->qd32_iops);
        jw_bool(w, "qd32_io_uring", cal->qd32_uring);
        jw_dbl(w, "sha256_mib_per_sec", cal->sha256_mbps);
        jw_str(w, "note", cal->note);
    } else {
        jw_bool(w, "skipped", 1);
    }
    jw_obj_end(w);
}

/* One element of "engines": its open/close figures and every phase. */
static void
j_engine(jw *w, const bench_cfg *c, const engine_rec *er)
{
    jw_obj(w, NULL);
    jw_str(w, "engine", er->name);
    jw_str(w, "dir", er->dir);
    jw_bool(w, "ok", er->ok);
    if (er->error[0])
        jw_str(w, "error", er->error);
    jw_str(w, "durability", er->durability);
    jw_str(w, "final", er->describe);
    jw_dbl(w, "open_seconds", er->open_secs);
    if (er->reopen_secs > 0)
        jw_dbl(w, "reopen_seconds", er->reopen_secs);
    jw_dbl(w, "close_seconds", er->close_secs);
    jw_u64(w, "rss_at_open_bytes", er->rss_at_open);
    jw_bool(w, "dropped_page_cache", er->dropped_caches);
    jw_arr(w, "phases");
    for (size_t k = 0; k < er->n_phases; k++)
        j_phase(w, c, &er->phases[k]);
    jw_arr_end(w);
    jw_obj_end(w);
}

static int
write_json(const bench_cfg *c, const calib *cal, const engine_rec *recs, int n, const char *started,
           int ok)
{
    char tmp[4200];
    FILE *f = jw_file_open(c->output, tmp, sizeof(tmp), "qmdb-bench");
    if (!f)
        return -1;
    jw w;
    jw_init(&w, f);
    jw_obj(&w, NULL);
    jw_str(&w, "tool", "qmdb-bench");
    jw_str(&w, "started", started);
    jw_bool(&w, "ok", ok);
    j_config(&w, c);
    machine_info(&w);
    j_calibration(&w, cal);
    jw_arr(&w, "engines");
    for (int i = 0; i < n; i++)
        j_engine(&w, c, &recs[i]);
    jw_arr_end(&w);
    bench_summary_json(&w, c, recs, n);
    jw_obj_end(&w);
    return jw_file_commit(f, tmp, c->output, "qmdb-bench");
}

enum {
    OPT_ENGINE = 256,
    OPT_DBDIR,
    OPT_ENTRIES,
    OPT_OPB,
    OPT_HI,
    OPT_HWB,
    OPT_HRB,
    OPT_THETA,
    OPT_KS,
    OPT_VS,
    OPT_DUR,
    OPT_MEMCAP,
    OPT_SEED,
    OPT_RANDSRC,
    OPT_OUTPUT,
    OPT_KEEP,
    OPT_OPT,
    OPT_CALS,
    OPT_DROP,
    OPT_HELP,
    OPT_BLIND,
    OPT_RBATCH,
    OPT_QDIRECT,
    OPT_REOPEN,
    OPT_QCT,
    OPT_QUTIL,
    OPT_QHIST,
    OPT_QSEG,
    OPT_READERS
};

static const struct option OPTS[] = {{"engine", required_argument, 0, OPT_ENGINE},
                                     {"db-dir", required_argument, 0, OPT_DBDIR},
                                     {"entry-count", required_argument, 0, OPT_ENTRIES},
                                     {"ops-per-block", required_argument, 0, OPT_OPB},
                                     {"hover-interval", required_argument, 0, OPT_HI},
                                     {"hover-write-block", required_argument, 0, OPT_HWB},
                                     {"hover-recreate-block", required_argument, 0, OPT_HRB},
                                     {"hover-zipf-theta", required_argument, 0, OPT_THETA},
                                     {"key-size", required_argument, 0, OPT_KS},
                                     {"value-size", required_argument, 0, OPT_VS},
                                     {"durability", required_argument, 0, OPT_DUR},
                                     {"mem-cap", required_argument, 0, OPT_MEMCAP},
                                     {"seed", required_argument, 0, OPT_SEED},
                                     {"randsrc-filename", required_argument, 0, OPT_RANDSRC},
                                     {"output", required_argument, 0, OPT_OUTPUT},
                                     {"keep", no_argument, 0, OPT_KEEP},
                                     {"blind-writes", no_argument, 0, OPT_BLIND},
                                     {"read-batch", required_argument, 0, OPT_RBATCH},
                                     {"qmdb-direct-io", no_argument, 0, OPT_QDIRECT},
                                     {"reopen", no_argument, 0, OPT_REOPEN},
                                     {"ops-per-tx", required_argument, 0, OPT_OPT},
                                     {"calibrate-secs", required_argument, 0, OPT_CALS},
                                     {"drop-caches", no_argument, 0, OPT_DROP},
                                     {"help", no_argument, 0, OPT_HELP},
                                     {"qmdb-compact-thres", required_argument, 0, OPT_QCT},
                                     {"qmdb-utilization", required_argument, 0, OPT_QUTIL},
                                     {"qmdb-history-blocks", required_argument, 0, OPT_QHIST},
                                     {"qmdb-segment-bytes", required_argument, 0, OPT_QSEG},
                                     {"reader-threads", required_argument, 0, OPT_READERS},
                                     {0, 0, 0, 0}};

/* Applies option o with argument a to c. Returns nonzero for a bad value, -2 for an unknown
 * option (usage printed); --help exits. */
static int
apply_opt(bench_cfg *c, int o, const char *a)
{
    uint64_t v;
    int bad = 0;
    switch (o) {
    case OPT_ENGINE:
        bad = parse_engines(c, a);
        break;
    case OPT_DBDIR:
        c->db_dir = a;
        break;
    case OPT_ENTRIES:
        bad = parse_u64(a, &c->entry_count);
        break;
    case OPT_OPB:
        bad = parse_u64(a, &c->ops_per_block) || c->ops_per_block == 0;
        c->ops_per_block_given = 1;
        break;
    case OPT_HI:
        bad = parse_u64(a, &c->hover_interval);
        break;
    case OPT_HWB:
        bad = parse_u64(a, &c->hover_write_block) || !c->hover_write_block;
        break;
    case OPT_HRB:
        bad = parse_u64(a, &c->hover_recreate_block) || !c->hover_recreate_block;
        break;
    case OPT_THETA: {
        char *end;
        c->zipf_theta = strtod(a, &end);
        bad = *end || c->zipf_theta < 0 || c->zipf_theta > 10;
        break;
    }
    case OPT_KS:
        bad = parse_u64(a, &v) || v < 8 || v > 255;
        c->key_size = (size_t)v;
        break;
    case OPT_VS:
        bad = parse_u64(a, &v) || v < 1 || v > 16777215;
        c->value_size = (size_t)v;
        break;
    case OPT_DUR:
        if (strcmp(a, "D1") == 0 || strcmp(a, "d1") == 0)
            c->durable = 1;
        else if (strcmp(a, "D0") == 0 || strcmp(a, "d0") == 0)
            c->durable = 0;
        else
            bad = 1;
        break;
    case OPT_MEMCAP:
        bad = parse_u64(a, &c->mem_cap);
        break;
    case OPT_SEED:
        bad = parse_u64(a, &c->seed);
        break;
    case OPT_RANDSRC:
        c->randsrc = a;
        break;
    case OPT_OUTPUT:
        c->output = a;
        break;
    case OPT_KEEP:
        c->keep = 1;
        break;
    case OPT_BLIND:
        c->blind_writes = 1;
        break;
    case OPT_RBATCH:
        bad = parse_u64(a, &c->read_batch) || !c->read_batch;
        break;
    case OPT_QDIRECT:
        c->qmdb_direct_io = 1;
        break;
    case OPT_REOPEN:
        c->reopen = 1;
        break;
    case OPT_QCT:
        bad = parse_u64(a, &c->qmdb_compact_thres) || !c->qmdb_compact_thres;
        break;
    case OPT_QUTIL: {
        unsigned rr = 0, dd = 0;
        char tail;
        bad = sscanf(a, "%u/%u%c", &rr, &dd, &tail) != 2 || !rr || !dd || rr > dd;
        c->qmdb_util_ratio = rr;
        c->qmdb_util_div = dd;
        break;
    }
    case OPT_QHIST:
        bad = parse_u64(a, &c->qmdb_history_blocks) || !c->qmdb_history_blocks;
        break;
    case OPT_QSEG:
        bad = parse_u64(a, &c->qmdb_segment_bytes) || !c->qmdb_segment_bytes;
        break;
    case OPT_READERS:
        bad = parse_u64(a, &v) || v > 64;
        c->reader_threads = (int)v;
        break;
    case OPT_OPT:
        bad = parse_u64(a, &c->ops_per_tx) || !c->ops_per_tx;
        break;
    case OPT_CALS: {
        char *end;
        c->calib_secs = strtod(a, &end);
        bad = *end || c->calib_secs < 0 || c->calib_secs > 600;
        break;
    }
    case OPT_DROP:
        c->drop_caches = 1;
        break;
    case OPT_HELP:
    case 'h':
        usage(stdout);
        exit(0);
    default:
        usage(stderr);
        return -2;
    }
    return bad;
}

/* Checks the flags against each other once all are parsed. 0 or -1 with a message. */
static int
check_cfg(bench_cfg *c)
{
    if (!c->ops_per_block_given)
        c->ops_per_block = c->entry_count >= 10000000 ? 100000 : 10000;
    if (c->entry_count == 0 || c->entry_count % c->ops_per_block != 0) {
        fprintf(stderr,
                "qmdb-bench: --entry-count (%" PRIu64 ") must be a positive multiple of "
                "--ops-per-block (%" PRIu64 ")\n",
                c->entry_count, c->ops_per_block);
        return -1;
    }
    if (c->ops_per_block > (1u << 24) || c->ops_per_tx > c->ops_per_block) {
        fprintf(stderr, "qmdb-bench: --ops-per-block must be <= 16777216 and >= --ops-per-tx\n");
        return -1;
    }
    if (c->hover_recreate_block * c->ops_per_block > c->entry_count) {
        fprintf(stderr, "qmdb-bench: --hover-recreate-block x --ops-per-block exceeds "
                        "--entry-count\n");
        return -1;
    }
    if (c->ops_per_block / TX_OPS + 1 >= c->entry_count) {
        fprintf(stderr, "qmdb-bench: --entry-count too small for the transaction mix\n");
        return -1;
    }
    return 0;
}

static int
parse_args(bench_cfg *c, int argc, char **argv)
{
    int o;
    while ((o = getopt_long(argc, argv, "h", OPTS, NULL)) != -1) {
        const char *a = optarg;
        int bad = apply_opt(c, o, a);
        if (bad == -2)
            return -1;
        if (bad) {
            int oi = 0;
            while (OPTS[oi].name && OPTS[oi].val != o)
                oi++;
            fprintf(stderr, "qmdb-bench: bad value for --%s: '%s'\n",
                    OPTS[oi].name ? OPTS[oi].name : "?", a ? a : "");
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "qmdb-bench: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return check_cfg(c);
}

/* The run's first lines: engines, sizes, seed, device and the durability tier. */
static void
print_header(const bench_cfg *c)
{
    printf("qmdb-bench: engines=");
    for (int i = 0; i < c->n_engines; i++)
        printf("%s%s", i ? "," : "", c->engines[i]);
    printf(" entries=%" PRIu64 " ops/block=%" PRIu64 " key=%zuB value=%zuB theta=%g seed=%" PRIu64
           " durability=%s device=%s\n",
           c->entry_count, c->ops_per_block, c->key_size, c->value_size, c->zipf_theta, c->seed,
           c->durable ? "D1" : "D0", bench_disk[0] ? bench_disk : "?");
    if (c->durable)
        printf("durability: D1 = one fsync-backed commit per block (rocksdb sync=1, lmdb "
               "default sync, qmdb commit)\n");
    else
        printf("durability: D0 = no per-block sync (rocksdb sync=0, lmdb MDB_NOSYNC); qmdb "
               "has no D0 tier and still commits durably (D1) in this run\n");
}

/* --calibrate-secs > 0: the device and SHA-256 calibration, and its line. */
static void
run_calibration(const bench_cfg *c, calib *cal)
{
    memset(cal, 0, sizeof(*cal));
    if (c->calib_secs > 0) {
        if (calibrate_run(cal, c->db_dir, c->calib_mib, c->calib_secs) != 0)
            fprintf(stderr, "warning: calibration incomplete: %s\n", cal->note);
        printf("calibration: seq write 1MiB %.0f MiB/s, 4KiB rand read QD1 %.0f IOPS (p50 "
               "%.1fus), QD32 %.0f IOPS%s, SHA-256 %.0f MiB/s%s%s\n",
               cal->seq_write_mbps, cal->qd1_iops, cal->qd1_p50_us, cal->qd32_iops,
               cal->qd32_uring ? " (io_uring)" : " (io_uring unavailable)", cal->sha256_mbps,
               cal->direct ? "" : " [buffered, no O_DIRECT]", "");
    }
}

/* Runs each engine in turn until a signal stops the run. Returns the number run; *any_fail
 * is set when one failed or read wrong values. */
static int
run_engines(const bench_cfg *c, engine_rec *recs, int *any_fail)
{
    int n_run = 0;
    for (int i = 0; i < c->n_engines && !bench_stop; i++) {
        int rc = bench_run_engine(c, c->engines[i], &recs[i]);
        n_run++;
        if (rc != 0) {
            *any_fail = 1;
            if (rc < 0)
                fprintf(stderr, "engine %s failed: %s\n", c->engines[i], recs[i].error);
            else
                fprintf(stderr, "engine %s: some reads returned wrong results\n", c->engines[i]);
        }
    }
    return n_run;
}

int
main(int argc, char **argv)
{
    bench_cfg c = {.db_dir = "/tmp/qmdb-bench",
                   .entry_count = 200000,
                   .hover_write_block = 10,
                   .hover_recreate_block = 5,
                   .key_size = 52,
                   .value_size = 32,
                   .durable = 1,
                   .seed = 1,
                   .output = "qmdb-bench-results.json",
                   .ops_per_tx = 1,
                   .read_batch = 10000,
                   .calib_secs = 1.0,
                   .calib_mib = 256};
    snprintf(c.engines[0], sizeof(c.engines[0]), "qmdb");
    c.n_engines = 1;
    if (argc > 1 && strcmp(argv[1], "ycsb") == 0) /* subcommand: bench/ycsb.c */
        return ycsb_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "replay") == 0) /* subcommand: bench/replay.c */
        return replay_main(argc - 1, argv + 1);
    if (parse_args(&c, argc, argv) != 0)
        return 2;
    c.master_seed = wl_mix64(c.seed);
    if (c.randsrc && load_randsrc(&c) != 0)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    char started[64];
    time_t now = time(NULL);
    strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    if (mkdir_p(c.db_dir) != 0) {
        fprintf(stderr, "qmdb-bench: cannot create %s: %s\n", c.db_dir, strerror(errno));
        return 2;
    }
    if (disk_find(c.db_dir, bench_disk, sizeof(bench_disk)) != 0)
        fprintf(stderr, "warning: no block device found for %s; disk bytes will be 0\n", c.db_dir);

    print_header(&c);
    if (c.mem_cap) {
        if (memcap_apply(&bench_memcap, c.mem_cap) == 0)
            printf("mem-cap: %s\n", bench_memcap.msg);
        else
            fprintf(stderr, "warning: --mem-cap not applied (%s); running uncapped\n",
                    bench_memcap.msg);
    }
    calib cal;
    run_calibration(&c, &cal);

    engine_rec *recs = calloc((size_t)c.n_engines, sizeof(*recs));
    if (!recs)
        return 2;
    int any_fail = 0;
    int n_run = run_engines(&c, recs, &any_fail);
    bench_summary_print(&c, recs, n_run);
    memcap_release(&bench_memcap);
    int jrc = write_json(&c, &cal, recs, n_run, started, !any_fail && !bench_stop);
    if (jrc == 0)
        printf("results written to %s\n", c.output);
    if (!c.keep)
        rmdir(c.db_dir); /* only if empty */
    for (int i = 0; i < n_run; i++) {
        for (size_t k = 0; k < recs[i].n_phases; k++)
            free(recs[i].phases[k].timeline);
        free(recs[i].phases);
    }
    free(recs);
    return any_fail || jrc || bench_stop ? 1 : 0;
}
