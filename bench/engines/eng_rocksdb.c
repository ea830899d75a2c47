/* SPDX-License-Identifier: Apache-2.0 */
/*
 * eng_rocksdb.c -- RocksDB adapters for qmdb-bench ("rocksdb" tuned, "rocksdb-default",
 * "rocksdb-blob").
 *
 * Owns: RocksDB option choices and the block -> WriteBatch mapping.
 *  - rocksdb (tuned, BENCHMARKS.md rule 5): the options of rocksdb_tune.c, its block cache and
 *    memtables sized from --mem-cap there (block cache 1 GiB when uncapped).
 *  - rocksdb-default: rocksdb_options_create() defaults plus create_if_missing.
 *  - rocksdb-blob: the tuned options plus integrated blob files (key-value separation,
 *    bench_rocksdb_blob in rocksdb_tune.c); blobs are cached in the same block cache, so the
 *    memory budget is the tuned engine's.
 * Readers beside the writer (--reader-threads): plain gets, which RocksDB allows from any
 * thread.
 * Both: one WriteBatch per block, written with sync=1 at D1 and sync=0 at D0 (WAL on);
 * ordered scans with one iterator per scan (YCSB workload E).
 * Threads: the driver's thread calls the adapter; RocksDB runs its own flush/compaction
 * threads.
 */
#include "engines.h"
#include "rocksdb_tune.h"

#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rdb {
    rocksdb_t *db;
    rocksdb_column_family_handle_t *cf; /* the default column family, for batched MultiGet */
    rocksdb_options_t *opt;
    /* get_many scratch */
    const char **mkeys;
    size_t *msizes;
    rocksdb_pinnableslice_t **mvals;
    char **merrs;
    size_t mcap;
    rocksdb_block_based_table_options_t *bbt;
    rocksdb_cache_t *cache;
    rocksdb_writeoptions_t *wo;
    rocksdb_readoptions_t *ro;
    rocksdb_writebatch_t *wb;
    int tuned;
    int blob;
} rdb;

static int
fail(bench_engine *e, const char *what, char *rerr)
{
    snprintf(e->err, sizeof(e->err), "rocksdb %s: %s", what, rerr ? rerr : "error");
    rocksdb_free(rerr);
    return -1;
}

static int
r_open(bench_engine *e, const char *dir, const bench_engine_cfg *cfg)
{
    rdb *r = calloc(1, sizeof(*r));
    if (!r) {
        snprintf(e->err, sizeof(e->err), "out of memory");
        return -1;
    }
    e->h = r;
    r->tuned = cfg->tuned || cfg->blob;
    r->blob = cfg->blob;
    r->opt = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(r->opt, 1);
    if (r->tuned) {
        r->cache = rocksdb_cache_create_lru(bench_rocksdb_cache_budget(cfg->mem_cap));
        r->bbt = bench_rocksdb_tune(r->opt, r->cache, bench_rocksdb_memtable_budget(cfg->mem_cap));
    }
    if (r->blob)
        bench_rocksdb_blob(r->opt, r->cache);
    char *rerr = NULL;
    /* Opened through the column-family call only to get the default family's handle, which
     * the batched MultiGet API takes. */
    const char *cfname = "default";
    const rocksdb_options_t *cfopt = r->opt;
    r->db = rocksdb_open_column_families(r->opt, dir, 1, &cfname, &cfopt, &r->cf, &rerr);
    if (rerr)
        return fail(e, "open", rerr);
    r->wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(r->wo, cfg->durable ? 1 : 0);
    r->ro = rocksdb_readoptions_create();
    r->wb = rocksdb_writebatch_create();
    return 0;
}

static int
r_begin(bench_engine *e, uint64_t height)
{
    (void)height;
    rocksdb_writebatch_clear(((rdb *)e->h)->wb);
    return 0;
}

static int
r_tx(bench_engine *e)
{
    (void)e;
    return 0;
}

static int
r_put(bench_engine *e, const void *k, size_t kl, const void *v, size_t vl)
{
    rocksdb_writebatch_put(((rdb *)e->h)->wb, k, kl, v, vl);
    return 0;
}

static int
r_del(bench_engine *e, const void *k, size_t kl)
{
    rocksdb_writebatch_delete(((rdb *)e->h)->wb, k, kl);
    return 0;
}

static int
r_commit(bench_engine *e)
{
    rdb *r = e->h;
    char *rerr = NULL;
    rocksdb_write(r->db, r->wo, r->wb, &rerr);
    if (rerr)
        return fail(e, "write", rerr);
    return 0;
}

static int
r_get(bench_engine *e, const void *k, size_t kl, void *buf, size_t cap, size_t *vlen)
{
    rdb *r = e->h;
    char *rerr = NULL;
    rocksdb_pinnableslice_t *ps = rocksdb_get_pinned(r->db, r->ro, k, kl, &rerr);
    if (rerr)
        return fail(e, "get", rerr);
    if (!ps)
        return 1;
    size_t n = 0;
    const char *v = rocksdb_pinnableslice_value(ps, &n);
    if (!v) {
        rocksdb_pinnableslice_destroy(ps);
        return 1;
    }
    *vlen = n;
    memcpy(buf, v, n < cap ? n : cap);
    rocksdb_pinnableslice_destroy(ps);
    return 0;
}

/* The driver's batch reads: RocksDB's batched MultiGet (one call per batch; it groups the
 * lookups per SST file and shares index and filter work). */
static int
r_get_many(bench_engine *e, size_t n, const uint8_t *keys, size_t kl, uint8_t *vals, size_t vcap,
           size_t *vlens, int *rcs)
{
    rdb *r = e->h;
    if (n > r->mcap) {
        free(r->mkeys);
        free(r->msizes);
        free(r->mvals);
        free(r->merrs);
        r->mkeys = malloc(n * sizeof(*r->mkeys));
        r->msizes = malloc(n * sizeof(*r->msizes));
        r->mvals = malloc(n * sizeof(*r->mvals));
        r->merrs = malloc(n * sizeof(*r->merrs));
        r->mcap = n;
        if (!r->mkeys || !r->msizes || !r->mvals || !r->merrs) {
            r->mcap = 0;
            snprintf(e->err, sizeof(e->err), "out of memory");
            return -1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        r->mkeys[i] = (const char *)keys + i * kl;
        r->msizes[i] = kl;
        r->mvals[i] = NULL;
        r->merrs[i] = NULL;
    }
    rocksdb_batched_multi_get_cf(r->db, r->ro, r->cf, n, r->mkeys, r->msizes, r->mvals, r->merrs,
                                 false);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (r->merrs[i]) {
            if (!rc)
                rc = fail(e, "multi_get", r->merrs[i]);
            else
                rocksdb_free(r->merrs[i]);
        }
        size_t vl = 0;
        const char *v = r->mvals[i] ? rocksdb_pinnableslice_value(r->mvals[i], &vl) : NULL;
        rcs[i] = v ? 0 : 1;
        vlens[i] = v ? vl : 0;
        if (v)
            memcpy(vals + i * vcap, v, vl < vcap ? vl : vcap);
        if (r->mvals[i])
            rocksdb_pinnableslice_destroy(r->mvals[i]);
    }
    return rc;
}

static uint64_t
prop_u64(rdb *r, const char *name)
{
    char *s = rocksdb_property_value(r->db, name);
    uint64_t v = s ? strtoull(s, NULL, 10) : 0;
    rocksdb_free(s);
    return v;
}

/* Bytes written by flushes and compactions since open: the "Cumulative compaction: X GB
 * write" line of rocksdb.cfstats (10 MB resolution). */
static uint64_t
compaction_bytes(rdb *r)
{
    char *s = rocksdb_property_value(r->db, "rocksdb.cfstats");
    const char *t = s ? strstr(s, "Cumulative compaction: ") : NULL;
    double gb = t ? strtod(t + strlen("Cumulative compaction: "), NULL) : 0;
    rocksdb_free(s);
    return (uint64_t)(gb * 1073741824.0);
}

static int
r_stats(bench_engine *e, bench_engine_stats *st)
{
    rdb *r = e->h;
    memset(st, 0, sizeof(*st));
    st->has_dram = 1;
    st->tree_dram_bytes = prop_u64(r, "rocksdb.cur-size-all-mem-tables");
    st->index_dram_bytes = prop_u64(r, "rocksdb.estimate-table-readers-mem");
    st->cache_bytes =
        r->cache ? rocksdb_cache_get_usage(r->cache) : prop_u64(r, "rocksdb.block-cache-usage");
    st->live_entries = prop_u64(r, "rocksdb.estimate-num-keys");
    st->compactions = prop_u64(r, "rocksdb.num-running-compactions");
    st->compaction_bytes = compaction_bytes(r);
    snprintf(st->note, sizeof(st->note),
             "memtables=%llu table-readers=%llu block-cache=%llu pending-compaction=%llu "
             "running-compactions=%llu blob-files=%llu",
             (unsigned long long)st->tree_dram_bytes, (unsigned long long)st->index_dram_bytes,
             (unsigned long long)st->cache_bytes,
             (unsigned long long)prop_u64(r, "rocksdb.estimate-pending-compaction-bytes"),
             (unsigned long long)st->compactions,
             (unsigned long long)prop_u64(r, "rocksdb.num-blob-files"));
    return 0;
}

static void
r_describe(bench_engine *e, char *buf, size_t n)
{
    rdb *r = e->h;
    if (r->blob)
        snprintf(buf, n,
                 "rocksdb tuned with blob files, estimate-num-keys=%llu, L0 files=%llu, "
                 "blob-files=%llu, blob-bytes=%llu, live-blob-bytes=%llu",
                 (unsigned long long)prop_u64(r, "rocksdb.estimate-num-keys"),
                 (unsigned long long)prop_u64(r, "rocksdb.num-files-at-level0"),
                 (unsigned long long)prop_u64(r, "rocksdb.num-blob-files"),
                 (unsigned long long)prop_u64(r, "rocksdb.total-blob-file-size"),
                 (unsigned long long)prop_u64(r, "rocksdb.live-blob-file-size"));
    else
        snprintf(buf, n, "rocksdb %s, estimate-num-keys=%llu, L0 files=%llu",
                 r->tuned ? "tuned" : "defaults",
                 (unsigned long long)prop_u64(r, "rocksdb.estimate-num-keys"),
                 (unsigned long long)prop_u64(r, "rocksdb.num-files-at-level0"));
}

static int
r_close(bench_engine *e)
{
    rdb *r = e->h;
    if (!r)
        return 0;
    if (r->cf)
        rocksdb_column_family_handle_destroy(r->cf);
    if (r->db)
        rocksdb_close(r->db);
    free(r->mkeys);
    free(r->msizes);
    free(r->mvals);
    free(r->merrs);
    if (r->wb)
        rocksdb_writebatch_destroy(r->wb);
    if (r->wo)
        rocksdb_writeoptions_destroy(r->wo);
    if (r->ro)
        rocksdb_readoptions_destroy(r->ro);
    if (r->opt)
        rocksdb_options_destroy(r->opt);
    if (r->bbt)
        rocksdb_block_based_options_destroy(r->bbt);
    if (r->cache)
        rocksdb_cache_destroy(r->cache);
    free(r);
    e->h = NULL;
    return 0;
}

/* Ordered scan (YCSB workload E): one iterator per scan on the latest committed state. */
static int
r_scan(bench_engine *e, const void *k, size_t kl, size_t count, size_t *got)
{
    rdb *r = e->h;
    rocksdb_iterator_t *it = rocksdb_create_iterator(r->db, r->ro);
    size_t n = 0;
    volatile unsigned char sink = 0;
    for (rocksdb_iter_seek(it, k, kl); n < count && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t vl = 0;
        const char *v = rocksdb_iter_value(it, &vl);
        if (v && vl)
            sink ^= (unsigned char)(v[0] ^ v[vl - 1]);
        n++;
    }
    (void)sink;
    char *rerr = NULL;
    rocksdb_iter_get_error(it, &rerr);
    rocksdb_iter_destroy(it);
    if (rerr)
        return fail(e, "scan", rerr);
    *got = n;
    return 0;
}

/* Readers beside the writer: a plain get (RocksDB reads are thread-safe). */
static int
r_reader_open(bench_engine *e, void **rd)
{
    (void)e;
    *rd = NULL;
    return 0;
}

static int
r_reader_get(bench_engine *e, void *rd, const void *k, size_t kl, void *buf, size_t cap,
             size_t *vlen)
{
    (void)rd;
    rdb *r = e->h;
    char *rerr = NULL;
    rocksdb_pinnableslice_t *ps = rocksdb_get_pinned(r->db, r->ro, k, kl, &rerr);
    if (rerr) {
        rocksdb_free(rerr);
        return -1; /* e->err belongs to the writer's thread */
    }
    if (!ps)
        return 1;
    size_t n = 0;
    const char *v = rocksdb_pinnableslice_value(ps, &n);
    int rc = v ? 0 : 1;
    if (v) {
        *vlen = n;
        memcpy(buf, v, n < cap ? n : cap);
    }
    rocksdb_pinnableslice_destroy(ps);
    return rc;
}

static void
r_reader_close(bench_engine *e, void *rd)
{
    (void)e;
    (void)rd;
}

void
engine_rocksdb_init(bench_engine *e, int mode)
{
    memset(e, 0, sizeof(*e));
    e->name = mode == 1 ? "rocksdb" : mode == 2 ? "rocksdb-blob" : "rocksdb-default";
    e->open = r_open;
    e->begin_block = r_begin;
    e->tx = r_tx;
    e->put = r_put;
    e->del = r_del;
    e->commit_block = r_commit;
    e->get = r_get;
    e->stats = r_stats;
    e->describe = r_describe;
    e->close = r_close;
    e->scan = r_scan;
    e->get_many = r_get_many;
    e->reader_open = r_reader_open;
    e->reader_get = r_reader_get;
    e->reader_close = r_reader_close;
}
