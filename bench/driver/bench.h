/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench.h -- shared types of the qmdb-bench driver: the run configuration and the per-engine
 * and per-phase result records that bench_run.c fills and bench_main.c writes as JSON.
 * Owns: bench_cfg, phase_rec, engine_rec and bench_run_engine's contract; the engine registry
 * and globals are in common/registry.h. Threads: the main thread of qmdb-bench.
 */
#ifndef BENCH_BENCH_H
#define BENCH_BENCH_H

#include "calibrate.h"
#include "engine.h"
#include "memcap.h"
#include "registry.h"
#include "report.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define TX_UPDATES 9
#define TX_READS 15
#define TX_OPS (TX_UPDATES + TX_READS + 2) /* + 1 create + 1 delete */

typedef struct bench_cfg {
    char engines[BENCH_MAX_ENGINES][32];
    int n_engines;
    const char *db_dir;
    uint64_t entry_count;
    uint64_t ops_per_block;
    int ops_per_block_given;
    uint64_t hover_interval;       /* blocks; 0 = only at the end */
    uint64_t hover_write_block;    /* blocks per update / read / read-miss / txmix phase */
    uint64_t hover_recreate_block; /* blocks per insert / delete phase */
    double zipf_theta;             /* 0 = uniform */
    size_t key_size, value_size;
    int durable; /* 1 = D1, 0 = D0 */
    uint64_t mem_cap;
    uint64_t seed;
    const char *randsrc;
    char randsrc_digest[65];
    uint64_t master_seed;
    const char *output;
    int keep;
    uint64_t ops_per_tx; /* ops per transaction in non-mix blocks (qmdb) */
    double calib_secs;   /* 0 = skip calibration */
    uint64_t calib_mib;
    int drop_caches;
    int blind_writes;    /* 1 = writes without the read that precedes them */
    uint64_t read_batch; /* RMW reads per engine batch read (get_many); 1 = get */
    int qmdb_direct_io;  /* --qmdb-direct-io */
    int reopen;          /* --reopen: time a reopen after the phases */
    int reader_threads;  /* --reader-threads: readers beside the writer in update phases */
    /* qmdb create-time ablation options (--qmdb-*), 0 = default; copied to bench_engine_cfg */
    uint64_t qmdb_compact_thres, qmdb_history_blocks, qmdb_segment_bytes;
    uint32_t qmdb_util_ratio, qmdb_util_div;
} bench_cfg;

typedef struct phase_rec {
    char name[16];
    uint64_t entries; /* live entries when the phase started */
    uint64_t entries_end;
    uint64_t ops;    /* for txmix: transactions */
    uint64_t kv_ops; /* individual operations (txmix: 26 per transaction) */
    uint64_t blocks;
    double secs;
    uint64_t errors;            /* misses on existing keys, hits on absent keys, bad values */
    int op_latency;             /* 1 = lat is per get; 0 = per block */
    uint64_t hash_compressions; /* qmdb: SHA-256 compressions during the phase */
    uint64_t disk_rd_ios;       /* read requests completed by the DB's device */
    uint64_t batched_reads;     /* qmdb: batched reads (entries, index pages) in the phase */
    uint64_t index_page_reads;  /* qmdb-hybrid: index run pages read during the phase */
    lat_sum lat;                /* per-op (reads) or per-block (writes) */
    lat_sum commit_lat;         /* commit_block call alone (write phases) */
    uint64_t disk_rd, disk_wr;
    uint64_t logical_wr; /* bytes of keys + values written by the phase */
    double cpu_user, cpu_sys;
    uint64_t rss, rss_growth, cg_bytes;
    uint64_t ssd, ssd_apparent;
    bench_engine_stats es;
    int have_es;
    uint64_t *timeline; /* ops completed in each second of the phase (owned) */
    size_t timeline_n;
    uint64_t compactions; /* qmdb: compactions during the phase; rocksdb: running at its end */
    uint64_t pruned_twigs, index_merges, compaction_bytes; /* during the phase */
    /* --reader-threads: the readers beside the writer (update phases) */
    int reader_threads;
    uint64_t reader_ops, reader_errors;
    double reader_secs;
    lat_sum reader_lat;
} phase_rec;

typedef struct engine_rec {
    char name[32];
    char dir[1024];
    int ok;
    char error[1200];
    char describe[512];
    const char *durability;
    double open_secs, close_secs;
    double reopen_secs; /* --reopen */
    uint64_t rss_at_open;
    int dropped_caches;
    phase_rec *phases;
    size_t n_phases, cap_phases;
} engine_rec;

/* The harness's phase names in their run order, and the artifact's name of a phase in
 * TEST_REPORT lines and the per-engine Results summary (update -> updates, read -> reads,
 * insert -> inserts, delete -> deletes; the others keep their names). */
extern const char *const BENCH_PHASES[];
#define BENCH_N_PHASES 7
const char *bench_artifact_phase(const char *name);

/* The rate of the last instance of a phase of er (populate: its segments summed). 1 if the
 * phase ran, else 0. */
int phase_rate(const engine_rec *er, const char *name, double *rate, double *secs, uint64_t *ops);

/* bench_summary.c: after the last engine, the side-by-side table scored against the fastest
 * rival, the artifact's per-engine Results summary blocks, the per-engine figures, the
 * background-job report and the page-cache warning (stdout); and their JSON members. */
void bench_summary_print(const bench_cfg *c, const engine_rec *recs, int n);
void bench_summary_json(jw *w, const bench_cfg *c, const engine_rec *recs, int n);

/* bench_readers.c: --reader-threads. readers_start starts n reader threads on e over g's live
 * keys (NULL if n is 0 or the engine has no reader_get); readers_stop stops and joins them and
 * adds their figures to p. */
typedef struct bench_readers bench_readers;
struct wl_gen;
bench_readers *readers_start(bench_engine *e, const struct wl_gen *g, int n, size_t rcap);
void readers_stop(bench_readers *rs, phase_rec *p);

/* Runs every phase for one engine. Fills rec; returns 0 on success, -1 on engine failure,
 * 1 if the run finished but some reads were wrong. */
int bench_run_engine(const bench_cfg *c, const char *engine, engine_rec *rec);

#endif /* BENCH_BENCH_H */
