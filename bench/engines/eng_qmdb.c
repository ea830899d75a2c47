/* SPDX-License-Identifier: Apache-2.0 */
/*
 * eng_qmdb.c -- qmdb adapter for qmdb-bench, using only the public API in include/qmdb.h.
 *
 * Owns: the block -> qmdb_batch mapping. qmdb_create (skipped if a database exists) +
 * qmdb_open with default options, or the ablation overrides from bench_engine_cfg; one
 * reusable qmdb_batch per block. With the pipeline (engine "qmdb", the default) a block is
 * handed over with qmdb_submit and commit_block then waits until the block before it is
 * durable (qmdb_wait), so block N's hashing and fsync overlap block N+1's reads and update;
 * sync waits for the last one. Engine "qmdb-seq" opens with QMDB_OPEN_NO_PIPELINE and uses
 * qmdb_commit (the paper's pipeline-off ablation). Engine "qmdb-hybrid" is "qmdb" with the
 * hybrid indexer (QMDB_INDEXER_HYBRID). Every block is fsynced either way (qmdb
 * has no D0 tier). Reads: qmdb_get, and qmdb_get_many for the driver's batches; readers
 * beside the writer (--reader-threads) use the committed-read API, qmdb_get_committed (the
 * latest durable block).
 * Threads: the driver's thread calls the adapter; qmdb runs its pipeline threads itself;
 * reader_* run on reader threads (qmdb's reads are thread-safe).
 */
#include "engines.h"

#include <qmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct qdb {
    qmdb_db *db;
    qmdb_batch *b;
    uint64_t height;
    int pipeline;
    uint8_t root[QMDB_HASH_LEN];
    qmdb_read *rd;
    size_t rdcap;
} qdb;

static int
qfail(bench_engine *e, const char *what, int rc)
{
    qdb *q = e->h;
    const char *detail = (q && q->db) ? qmdb_last_error(q->db) : qmdb_open_error();
    snprintf(e->err, sizeof(e->err), "qmdb %s: %s%s%s", what, qmdb_strerror(rc),
             detail && *detail ? ": " : "", detail ? detail : "");
    return -1;
}

static int
q_open(bench_engine *e, const char *dir, const bench_engine_cfg *cfg)
{
    qdb *q = calloc(1, sizeof(*q));
    if (!q) {
        snprintf(e->err, sizeof(e->err), "out of memory");
        return -1;
    }
    e->h = q;
    qmdb_options opt;
    qmdb_options_init(&opt);
    /* Ablation knobs (--qmdb-compact-thres, --qmdb-utilization, ...); 0 keeps the default. */
    if (cfg->qmdb_compact_thres)
        opt.compact_thres = cfg->qmdb_compact_thres;
    if (cfg->qmdb_util_ratio && cfg->qmdb_util_div) {
        opt.utilization_ratio = cfg->qmdb_util_ratio;
        opt.utilization_div = cfg->qmdb_util_div;
    }
    if (cfg->qmdb_history_blocks)
        opt.history_blocks = cfg->qmdb_history_blocks;
    if (cfg->qmdb_segment_bytes)
        opt.entry_segment_bytes = cfg->qmdb_segment_bytes;
    q->pipeline = cfg->qmdb_pipeline;
    if (!q->pipeline)
        opt.flags |= QMDB_OPEN_NO_PIPELINE;
    if (cfg->qmdb_direct_io)
        opt.flags |= QMDB_OPEN_DIRECT_IO;
    if (cfg->fast_open)
        opt.flags |= QMDB_OPEN_FAST;
    opt.indexer = cfg->qmdb_hybrid ? QMDB_INDEXER_HYBRID : QMDB_INDEXER_MEMORY;
    /* An existing database (e.g. a restored YCSB load image) is opened as it is. */
    int rc = qmdb_create(dir, &opt);
    if (rc && rc != QMDB_EXISTS)
        return qfail(e, "create", rc);
    rc = qmdb_open(dir, &opt, &q->db);
    if (rc)
        return qfail(e, "open", rc);
    q->height = qmdb_height(q->db);
    rc = qmdb_batch_new(&q->b);
    if (rc)
        return qfail(e, "batch_new", rc);
    return 0;
}

static int
q_begin(bench_engine *e, uint64_t height)
{
    (void)height;
    qmdb_batch_reset(((qdb *)e->h)->b);
    return 0;
}

static int
q_tx(bench_engine *e)
{
    int rc = qmdb_batch_tx(((qdb *)e->h)->b);
    return rc ? qfail(e, "batch_tx", rc) : 0;
}

static int
q_put(bench_engine *e, const void *k, size_t kl, const void *v, size_t vl)
{
    int rc = qmdb_batch_put(((qdb *)e->h)->b, k, kl, v, vl);
    return rc ? qfail(e, "batch_put", rc) : 0;
}

static int
q_del(bench_engine *e, const void *k, size_t kl)
{
    int rc = qmdb_batch_del(((qdb *)e->h)->b, k, kl);
    return rc ? qfail(e, "batch_del", rc) : 0;
}

static int
q_commit(bench_engine *e)
{
    qdb *q = e->h;
    if (!q->pipeline) {
        int rc = qmdb_commit(q->db, q->height + 1, q->b, q->root);
        if (rc)
            return qfail(e, "commit", rc);
        q->height++;
        return 0;
    }
    int rc = qmdb_submit(q->db, q->height + 1, q->b);
    if (rc)
        return qfail(e, "submit", rc);
    q->height++;
    /* Block N-1 must be durable before block N+1 is built: at most two blocks in flight. */
    rc = q->height > 1 ? qmdb_wait(q->db, q->height - 1, NULL) : 0;
    return rc ? qfail(e, "wait", rc) : 0;
}

static int
q_sync(bench_engine *e)
{
    qdb *q = e->h;
    int rc = qmdb_wait(q->db, q->height, q->root);
    return rc ? qfail(e, "wait", rc) : 0;
}

static int
q_get_many(bench_engine *e, size_t n, const uint8_t *keys, size_t kl, uint8_t *vals, size_t vcap,
           size_t *vlens, int *rcs)
{
    qdb *q = e->h;
    if (n > q->rdcap) {
        qmdb_read *rd = realloc(q->rd, n * sizeof(*rd));
        if (!rd) {
            snprintf(e->err, sizeof(e->err), "out of memory");
            return -1;
        }
        q->rd = rd;
        q->rdcap = n;
    }
    for (size_t i = 0; i < n; i++)
        q->rd[i] = (qmdb_read){keys + i * kl, kl, vals + i * vcap, vcap, 0, 0};
    int rc = qmdb_get_many(q->db, q->rd, n);
    if (rc)
        return qfail(e, "get_many", rc);
    for (size_t i = 0; i < n; i++) {
        if (q->rd[i].rc && q->rd[i].rc != QMDB_NOTFOUND && q->rd[i].rc != QMDB_BUFFER_TOO_SMALL)
            return qfail(e, "get_many", q->rd[i].rc);
        rcs[i] = q->rd[i].rc == QMDB_NOTFOUND;
        vlens[i] = q->rd[i].vlen;
    }
    return 0;
}

static int
q_get(bench_engine *e, const void *k, size_t kl, void *buf, size_t cap, size_t *vlen)
{
    int rc = qmdb_get(((qdb *)e->h)->db, k, kl, buf, cap, vlen);
    if (rc == QMDB_NOTFOUND)
        return 1;
    if (rc == QMDB_BUFFER_TOO_SMALL)
        return 0; /* *vlen is set; the driver flags the length mismatch */
    return rc ? qfail(e, "get", rc) : 0;
}

static int
q_stats(bench_engine *e, bench_engine_stats *st)
{
    qdb *q = e->h;
    qmdb_stats s = QMDB_STATS_INIT;
    memset(st, 0, sizeof(*st));
    int rc = qmdb_stat(q->db, &s);
    if (rc)
        return qfail(e, "stat", rc);
    st->has_dram = 1;
    st->index_dram_bytes = s.index_dram_bytes;
    st->tree_dram_bytes = s.tree_dram_bytes;
    st->live_entries = s.live_entries;
    st->compactions = s.compactions;
    st->hash_compressions = s.sha256_compressions;
    st->batched_reads = s.batched_reads;
    snprintf(st->note, sizeof(st->note),
             "index=%llu tree=%llu height=%llu total_entries=%llu compactions=%llu "
             "pruned_twigs=%llu batched_reads=%llu warm_hits=%llu sha256_compressions=%llu "
             "pipeline=%u io_uring=%u indexer=%s index_ssd=%llu index_merges=%llu "
             "index_page_reads=%llu page_cache_reads=%llu",
             (unsigned long long)s.index_dram_bytes, (unsigned long long)s.tree_dram_bytes,
             (unsigned long long)s.height, (unsigned long long)s.total_entries,
             (unsigned long long)s.compactions, (unsigned long long)s.pruned_twigs,
             (unsigned long long)s.batched_reads, (unsigned long long)s.warm_hits,
             (unsigned long long)s.sha256_compressions, s.pipeline, s.io_uring,
             s.indexer == QMDB_INDEXER_HYBRID ? "hybrid" : "memory",
             (unsigned long long)s.index_ssd_bytes, (unsigned long long)s.index_merges,
             (unsigned long long)s.index_page_reads, (unsigned long long)s.page_cache_reads);
    st->index_page_reads = s.index_page_reads;
    st->pruned_twigs = s.pruned_twigs;
    st->index_merges = s.index_merges;
    return 0;
}

static void
q_describe(bench_engine *e, char *buf, size_t n)
{
    qdb *q = e->h;
    uint8_t root[QMDB_HASH_LEN];
    char hex[2 * QMDB_HASH_LEN + 1];
    if (qmdb_root(q->db, UINT64_MAX, root) != 0)
        memcpy(root, q->root, sizeof(root));
    for (int i = 0; i < QMDB_HASH_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", root[i]);
    snprintf(buf, n, "qmdb %s height=%llu state_root=%s", qmdb_version(),
             (unsigned long long)qmdb_height(q->db), hex);
}

static int
q_close(bench_engine *e)
{
    qdb *q = e->h;
    if (!q)
        return 0;
    qmdb_batch_free(q->b);
    int rc = qmdb_close(q->db);
    free(q->rd);
    free(q);
    e->h = NULL;
    if (rc) {
        snprintf(e->err, sizeof(e->err), "qmdb close: %s", qmdb_strerror(rc));
        return -1;
    }
    return 0;
}

static int
q_reader_open(bench_engine *e, void **rd)
{
    (void)e;
    *rd = NULL;
    return 0;
}

static int
q_reader_get(bench_engine *e, void *rd, const void *k, size_t kl, void *buf, size_t cap,
             size_t *vlen)
{
    (void)rd;
    int rc = qmdb_get_committed(((qdb *)e->h)->db, k, kl, buf, cap, vlen);
    if (rc == QMDB_NOTFOUND)
        return 1;
    if (rc == QMDB_BUFFER_TOO_SMALL)
        return 0;
    return rc ? -1 : 0;
}

static void
q_reader_close(bench_engine *e, void *rd)
{
    (void)e;
    (void)rd;
}

int
engine_qmdb_available(void)
{
    return 1;
}

void
engine_qmdb_init(bench_engine *e)
{
    memset(e, 0, sizeof(*e));
    e->name = "qmdb";
    e->open = q_open;
    e->begin_block = q_begin;
    e->tx = q_tx;
    e->put = q_put;
    e->del = q_del;
    e->commit_block = q_commit;
    e->get_many = q_get_many;
    e->sync = q_sync;
    e->get = q_get;
    e->stats = q_stats;
    e->describe = q_describe;
    e->close = q_close;
    e->reader_open = q_reader_open;
    e->reader_get = q_reader_get;
    e->reader_close = q_reader_close;
}
