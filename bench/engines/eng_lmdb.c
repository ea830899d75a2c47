/* SPDX-License-Identifier: Apache-2.0 */
/*
 * eng_lmdb.c -- LMDB adapter for qmdb-bench.
 *
 * Owns: LMDB environment settings and the block -> write transaction mapping. One write txn
 * per block; at D1 LMDB's default commit (fsync of data and meta page), at D0 MDB_NOSYNC.
 * MDB_NORDAHEAD is set because every access is a random point lookup. The map is sparse and
 * sized generously (at least 64 GiB, more for very large data sets). Reads outside a block
 * use one long-lived read txn that is reset/renewed after each commit; reads inside a block
 * go through the open write txn. Ordered scans (YCSB workload E) use a cursor on the same
 * txn a get would use.
 * Readers beside the writer (--reader-threads): each reader thread has its own read txn,
 * reset and renewed every LMDB_READER_RENEW gets so that it sees new commits and does not
 * hold old pages for long.
 * Threads: the driver's thread (the main thread of qmdb-bench); reader_* on reader threads.
 */
#include "engines.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LMDB_READER_RENEW 64

typedef struct lreader {
    MDB_txn *t;
    unsigned n; /* gets since the last renew */
} lreader;

typedef struct ldb {
    MDB_env *env;
    MDB_dbi dbi;
    MDB_txn *wtxn;
    MDB_txn *rtxn;
    int rtxn_stale; /* 1 = rtxn must be renewed before use */
    int rtxn_live;  /* 1 = rtxn is active (not reset) */
} ldb;

static int
lfail(bench_engine *e, const char *what, int rc)
{
    snprintf(e->err, sizeof(e->err), "lmdb %s: %s", what, mdb_strerror(rc));
    return -1;
}

static int
l_open(bench_engine *e, const char *dir, const bench_engine_cfg *cfg)
{
    ldb *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(e->err, sizeof(e->err), "out of memory");
        return -1;
    }
    e->h = l;
    int rc = mdb_env_create(&l->env);
    if (rc)
        return lfail(e, "env_create", rc);
    uint64_t per = (uint64_t)cfg->key_size + cfg->value_size + 64;
    uint64_t want = (cfg->entry_count + cfg->entry_count / 2 + 100000) * per * 3;
    uint64_t map = (uint64_t)64 << 30;
    if (want > map)
        map = (want + ((1u << 30) - 1)) & ~(uint64_t)((1u << 30) - 1);
    rc = mdb_env_set_mapsize(l->env, (size_t)map);
    if (rc)
        return lfail(e, "set_mapsize", rc);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(e->err, sizeof(e->err), "lmdb mkdir %s: %s", dir, strerror(errno));
        return -1;
    }
    unsigned flags = MDB_NORDAHEAD | (cfg->durable ? 0 : MDB_NOSYNC);
    rc = mdb_env_open(l->env, dir, flags, 0644);
    if (rc)
        return lfail(e, "env_open", rc);
    MDB_txn *t;
    rc = mdb_txn_begin(l->env, NULL, 0, &t);
    if (rc)
        return lfail(e, "txn_begin", rc);
    rc = mdb_dbi_open(t, NULL, 0, &l->dbi);
    if (rc) {
        mdb_txn_abort(t);
        return lfail(e, "dbi_open", rc);
    }
    rc = mdb_txn_commit(t);
    if (rc)
        return lfail(e, "txn_commit", rc);
    l->rtxn_stale = 1;
    return 0;
}

static int
l_begin(bench_engine *e, uint64_t height)
{
    (void)height;
    ldb *l = e->h;
    /* Release the reader snapshot so the writer can reuse freed pages. */
    if (l->rtxn && l->rtxn_live) {
        mdb_txn_reset(l->rtxn);
        l->rtxn_live = 0;
        l->rtxn_stale = 1;
    }
    int rc = mdb_txn_begin(l->env, NULL, 0, &l->wtxn);
    if (rc) {
        l->wtxn = NULL;
        return lfail(e, "txn_begin", rc);
    }
    return 0;
}

static int
l_tx(bench_engine *e)
{
    (void)e;
    return 0;
}

static int
l_put(bench_engine *e, const void *k, size_t kl, const void *v, size_t vl)
{
    ldb *l = e->h;
    MDB_val mk = {kl, (void *)k}, mv = {vl, (void *)v};
    int rc = mdb_put(l->wtxn, l->dbi, &mk, &mv, 0);
    return rc ? lfail(e, "put", rc) : 0;
}

static int
l_del(bench_engine *e, const void *k, size_t kl)
{
    ldb *l = e->h;
    MDB_val mk = {kl, (void *)k};
    int rc = mdb_del(l->wtxn, l->dbi, &mk, NULL);
    if (rc == MDB_NOTFOUND)
        return 0;
    return rc ? lfail(e, "del", rc) : 0;
}

static int
l_commit(bench_engine *e)
{
    ldb *l = e->h;
    int rc = mdb_txn_commit(l->wtxn);
    l->wtxn = NULL;
    l->rtxn_stale = 1;
    return rc ? lfail(e, "commit", rc) : 0;
}

static int
l_get(bench_engine *e, const void *k, size_t kl, void *buf, size_t cap, size_t *vlen)
{
    ldb *l = e->h;
    MDB_txn *t = l->wtxn;
    int rc;
    if (!t) {
        if (l->rtxn_stale) {
            if (l->rtxn && l->rtxn_live)
                mdb_txn_reset(l->rtxn);
            l->rtxn_live = 0;
            rc = l->rtxn ? mdb_txn_renew(l->rtxn)
                         : mdb_txn_begin(l->env, NULL, MDB_RDONLY, &l->rtxn);
            if (rc)
                return lfail(e, "read txn", rc);
            l->rtxn_live = 1;
            l->rtxn_stale = 0;
        }
        t = l->rtxn;
    }
    MDB_val mk = {kl, (void *)k}, mv;
    rc = mdb_get(t, l->dbi, &mk, &mv);
    if (rc == MDB_NOTFOUND)
        return 1;
    if (rc)
        return lfail(e, "get", rc);
    *vlen = mv.mv_size;
    memcpy(buf, mv.mv_data, mv.mv_size < cap ? mv.mv_size : cap);
    return 0;
}

static int
l_stats(bench_engine *e, bench_engine_stats *st)
{
    ldb *l = e->h;
    memset(st, 0, sizeof(*st));
    MDB_stat ms;
    if (mdb_env_stat(l->env, &ms) == 0) {
        st->live_entries = ms.ms_entries;
        snprintf(st->note, sizeof(st->note), "btree depth=%u branch=%zu leaf=%zu overflow=%zu",
                 ms.ms_depth, ms.ms_branch_pages, ms.ms_leaf_pages, ms.ms_overflow_pages);
    }
    return 0;
}

static void
l_describe(bench_engine *e, char *buf, size_t n)
{
    ldb *l = e->h;
    MDB_stat ms;
    MDB_envinfo ei;
    if (mdb_env_stat(l->env, &ms) == 0 && mdb_env_info(l->env, &ei) == 0)
        snprintf(buf, n, "lmdb entries=%zu depth=%u last_pgno=%zu mapsize=%zu", ms.ms_entries,
                 ms.ms_depth, ei.me_last_pgno, ei.me_mapsize);
    else
        snprintf(buf, n, "lmdb");
}

static int
l_close(bench_engine *e)
{
    ldb *l = e->h;
    if (!l)
        return 0;
    if (l->wtxn)
        mdb_txn_abort(l->wtxn);
    if (l->rtxn)
        mdb_txn_abort(l->rtxn);
    if (l->env)
        mdb_env_close(l->env);
    free(l);
    e->h = NULL;
    return 0;
}

/* Ordered scan (YCSB workload E) with a cursor: the open write txn inside a block,
 * otherwise the (renewed) read txn, like l_get. */
static int
l_scan(bench_engine *e, const void *k, size_t kl, size_t count, size_t *got)
{
    ldb *l = e->h;
    size_t vlen;
    unsigned char one;
    /* l_get with a zero-capacity buffer brings the read txn up to date; its result is
     * irrelevant here. */
    int rc = l_get(e, k, kl, &one, 0, &vlen);
    if (rc < 0)
        return rc;
    MDB_txn *t = l->wtxn ? l->wtxn : l->rtxn;
    MDB_cursor *cur;
    rc = mdb_cursor_open(t, l->dbi, &cur);
    if (rc)
        return lfail(e, "cursor_open", rc);
    MDB_val mk = {kl, (void *)k}, mv;
    size_t n = 0;
    volatile unsigned char sink = 0;
    rc = mdb_cursor_get(cur, &mk, &mv, MDB_SET_RANGE);
    while (rc == 0 && n < count) {
        if (mv.mv_size)
            sink ^= (unsigned char)(((const unsigned char *)mv.mv_data)[0] ^
                                    ((const unsigned char *)mv.mv_data)[mv.mv_size - 1]);
        n++;
        rc = mdb_cursor_get(cur, &mk, &mv, MDB_NEXT);
    }
    (void)sink;
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND)
        return lfail(e, "cursor_get", rc);
    *got = n;
    return 0;
}

static int
l_reader_open(bench_engine *e, void **rd)
{
    ldb *l = e->h;
    lreader *r = calloc(1, sizeof(*r));
    if (!r)
        return -1;
    if (mdb_txn_begin(l->env, NULL, MDB_RDONLY, &r->t) != 0) {
        free(r);
        return -1;
    }
    *rd = r;
    return 0;
}

static int
l_reader_get(bench_engine *e, void *rd, const void *k, size_t kl, void *buf, size_t cap,
             size_t *vlen)
{
    ldb *l = e->h;
    lreader *r = rd;
    if (++r->n >= LMDB_READER_RENEW) {
        mdb_txn_reset(r->t);
        if (mdb_txn_renew(r->t) != 0)
            return -1;
        r->n = 0;
    }
    MDB_val mk = {kl, (void *)k}, mv;
    int rc = mdb_get(r->t, l->dbi, &mk, &mv);
    if (rc == MDB_NOTFOUND)
        return 1;
    if (rc)
        return -1;
    *vlen = mv.mv_size;
    memcpy(buf, mv.mv_data, mv.mv_size < cap ? mv.mv_size : cap);
    return 0;
}

static void
l_reader_close(bench_engine *e, void *rd)
{
    (void)e;
    lreader *r = rd;
    if (r) {
        mdb_txn_abort(r->t);
        free(r);
    }
}

void
engine_lmdb_init(bench_engine *e)
{
    memset(e, 0, sizeof(*e));
    e->name = "lmdb";
    e->open = l_open;
    e->begin_block = l_begin;
    e->tx = l_tx;
    e->put = l_put;
    e->del = l_del;
    e->commit_block = l_commit;
    e->get = l_get;
    e->stats = l_stats;
    e->describe = l_describe;
    e->close = l_close;
    e->scan = l_scan;
    e->reader_open = l_reader_open;
    e->reader_get = l_reader_get;
    e->reader_close = l_reader_close;
}
