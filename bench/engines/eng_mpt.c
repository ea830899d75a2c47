/* SPDX-License-Identifier: Apache-2.0 */
/*
 * eng_mpt.c -- the "mpt" engine of qmdb-bench: the MPT-on-RocksDB baseline (mpt.c), i.e.
 * the authenticated status quo the paper compares against. Written here as a baseline, not
 * go-ethereum's code (see mpt.h for the differences).
 *
 * Owns: the mapping of the bench interface onto the trie (one commit, hence one state root,
 * per block; get = one read of the flat table) and the cache sizing. MPT gets the same total
 * cache as the tuned rocksdb engine (bench_rocksdb_cache_budget: 3/8 of --mem-cap, 1 GiB
 * when uncapped), split 3/4 clean-node LRU cache, 1/4 RocksDB block cache (which also holds
 * the flat table's blocks), and the same memtable bound. $QMDB_BENCH_MPT_NODE_CACHE (bytes,
 * K/M/G suffixes) moves the split: it sets the node cache and the block cache gets the rest
 * of the total (at least 16 MiB). RocksDB options are the tuned ones of rocksdb_tune.c;
 * sync=1 per block at D1, 0 at D0.
 * Thread: the driver's thread.
 */
#include "engines.h"
#include "mpt.h"
#include "rocksdb_tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
m_fail(bench_engine *e)
{
    snprintf(e->err, sizeof(e->err), "mpt: %s", mpt_error(e->h));
    return -1;
}

static size_t
env_bytes(const char *name, size_t dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    switch (*end) {
    case 'k':
    case 'K':
        v <<= 10;
        break;
    case 'm':
    case 'M':
        v <<= 20;
        break;
    case 'g':
    case 'G':
        v <<= 30;
        break;
    default:
        break;
    }
    return (size_t)v;
}

static int
m_open(bench_engine *e, const char *dir, const bench_engine_cfg *cfg)
{
    size_t total = bench_rocksdb_cache_budget(cfg->mem_cap);
    size_t node = env_bytes("QMDB_BENCH_MPT_NODE_CACHE", total / 4 * 3);
    size_t block = total > node ? total - node : 0;
    if (block < ((size_t)16 << 20))
        block = (size_t)16 << 20;
    mpt_opts o = {.durable = cfg->durable,
                  .node_cache_bytes = node,
                  .block_cache_bytes = block,
                  .memtable_bytes = bench_rocksdb_memtable_budget(cfg->mem_cap)};
    mpt *t = NULL;
    if (mpt_open(&t, dir, &o, e->err, sizeof(e->err)) != 0)
        return -1;
    e->h = t;
    return 0;
}

static int
m_begin(bench_engine *e, uint64_t height)
{
    (void)e;
    (void)height;
    return 0;
}

static int
m_tx(bench_engine *e)
{
    (void)e;
    return 0;
}

static int
m_put(bench_engine *e, const void *k, size_t kl, const void *v, size_t vl)
{
    return mpt_put(e->h, k, kl, v, vl) == 0 ? 0 : m_fail(e);
}

static int
m_del(bench_engine *e, const void *k, size_t kl)
{
    int rc = mpt_del(e->h, k, kl);
    return rc >= 0 ? 0 : m_fail(e); /* deleting an absent key is not an error */
}

static int
m_commit(bench_engine *e)
{
    mpt_stats s;
    mpt_get_stats(e->h, &s);
    return mpt_commit(e->h, s.height + 1, NULL) == 0 ? 0 : m_fail(e);
}

static int
m_get(bench_engine *e, const void *k, size_t kl, void *buf, size_t cap, size_t *vlen)
{
    int rc = mpt_get(e->h, k, kl, buf, cap, vlen);
    return rc >= 0 ? rc : m_fail(e);
}

static int
m_stats(bench_engine *e, bench_engine_stats *st)
{
    mpt *t = e->h;
    mpt_stats s;
    mpt_get_stats(t, &s);
    memset(st, 0, sizeof(*st));
    st->has_dram = 1;
    st->tree_dram_bytes = mpt_db_property(t, "rocksdb.cur-size-all-mem-tables");
    st->index_dram_bytes = mpt_db_property(t, "rocksdb.estimate-table-readers-mem");
    st->cache_bytes = s.node_cache_bytes + mpt_block_cache_usage(t);
    st->live_entries = s.count;
    snprintf(st->note, sizeof(st->note),
             "node-cache=%llu (%llu nodes) block-cache=%llu flat-reads=%llu db-reads=%llu "
             "nodes-written=%llu nodes-deleted=%llu",
             (unsigned long long)s.node_cache_bytes, (unsigned long long)s.node_cache_entries,
             (unsigned long long)mpt_block_cache_usage(t), (unsigned long long)s.flat_reads,
             (unsigned long long)s.db_reads, (unsigned long long)s.nodes_written,
             (unsigned long long)s.nodes_deleted);
    return 0;
}

static void
m_describe(bench_engine *e, char *buf, size_t n)
{
    mpt *t = e->h;
    mpt_stats s;
    mpt_get_stats(t, &s);
    uint8_t r[32];
    mpt_root(t, r);
    char hex[65];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", r[i]);
    snprintf(buf, n,
             "mpt (SHA-256, own encoding, path-keyed, flat reads) height=%llu keys=%llu "
             "nodes_written=%llu node_bytes_written=%llu state_root=%s",
             (unsigned long long)s.height, (unsigned long long)s.count,
             (unsigned long long)s.nodes_written, (unsigned long long)s.bytes_written, hex);
}

static int
m_close(bench_engine *e)
{
    mpt_close(e->h);
    e->h = NULL;
    return 0;
}

void
engine_mpt_init(bench_engine *e)
{
    memset(e, 0, sizeof(*e));
    e->name = "mpt";
    e->open = m_open;
    e->begin_block = m_begin;
    e->tx = m_tx;
    e->put = m_put;
    e->del = m_del;
    e->commit_block = m_commit;
    e->get = m_get;
    e->stats = m_stats;
    e->describe = m_describe;
    e->close = m_close;
}
