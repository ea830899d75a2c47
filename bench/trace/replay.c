/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay.c -- `qmdb-bench replay`: replays a QTRC trace (docs/TRACE.md) against each engine.
 *
 * Owns: loading the initial-state bundle (one engine block per bundle block), the timed replay
 * loop, progress and result lines, the optional read-back check against a model of the final
 * state, qmdb's shard roots and state_root_digest, and the replay JSON file.
 * Threads: the engine runs on the main thread; trace reading, CRC checking and decoding run on
 * a trace_pipe thread (trace_read.c) that stays up to --queue-depth blocks ahead.
 *
 * Block semantics (the same for every engine): all reads of a block are gets against the last
 * committed state, done before the block's writes; then begin_block, one tx() per trace
 * transaction (read-only ones too, so qmdb versions follow transaction indices), a put per
 * write/create (an empty value is a delete), a del per delete, and commit_block. Every trace
 * block, init or not, is exactly one engine block; heights start at 1.
 */
#include "replay.h"

#include "registry.h"
#include "report.h"
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <qmdb.h> /* QMDB_SHARDS, and the qmdb API when QMDB_BENCH_HAVE_QMDB */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct rcfg {
    char engines[BENCH_MAX_ENGINES][32];
    int n_engines;
    const char *trace, *init, *db_dir, *output, *dump;
    int durable, keep, verify, depth;
    double progress_secs;
} rcfg;

/* ---- model of the final state (for --verify and --dump) ------------------------------------ */
typedef struct ment {
    uint64_t koff, voff; /* into karena / varena */
    uint32_t vlen;
    uint8_t klen, live;
} ment;

typedef struct model {
    ment *e;
    size_t n, cap;
    uint32_t *ht; /* index + 1 */
    size_t ht_cap;
    uint8_t *ka, *va;
    size_t kn, kcap, vn, vcap;
} model;

static uint64_t
key_hash(const uint8_t *k, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ k[i]) * 0x100000001b3ull;
    return h ^ (h >> 31);
}

static int
arena_add(uint8_t **a, size_t *n, size_t *cap, const void *p, size_t len)
{
    if (*n + len > *cap) {
        size_t nc = *cap ? *cap : 1 << 16;
        while (nc < *n + len)
            nc *= 2;
        uint8_t *q = realloc(*a, nc);
        if (!q)
            return -1;
        *a = q;
        *cap = nc;
    }
    if (len)
        memcpy(*a + *n, p, len);
    *n += len;
    return 0;
}

static int
model_set(model *m, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl, int live)
{
    if ((m->n + 1) * 2 > m->ht_cap) {
        size_t nc = m->ht_cap ? m->ht_cap * 2 : 1 << 12;
        uint32_t *t = calloc(nc, sizeof(*t));
        if (!t)
            return -1;
        for (size_t i = 0; i < m->n; i++) {
            size_t s = key_hash(m->ka + m->e[i].koff, m->e[i].klen) & (nc - 1);
            while (t[s])
                s = (s + 1) & (nc - 1);
            t[s] = (uint32_t)i + 1;
        }
        free(m->ht);
        m->ht = t;
        m->ht_cap = nc;
    }
    size_t s = key_hash(k, kl) & (m->ht_cap - 1);
    ment *e = NULL;
    while (m->ht[s]) {
        ment *c = &m->e[m->ht[s] - 1];
        if (c->klen == kl && memcmp(m->ka + c->koff, k, kl) == 0) {
            e = c;
            break;
        }
        s = (s + 1) & (m->ht_cap - 1);
    }
    if (!e) {
        if (m->n == m->cap) {
            size_t nc = m->cap ? m->cap * 2 : 1 << 12;
            ment *p = realloc(m->e, nc * sizeof(*p));
            if (!p)
                return -1;
            m->e = p;
            m->cap = nc;
        }
        e = &m->e[m->n];
        e->koff = m->kn;
        e->klen = (uint8_t)kl;
        e->live = 0;
        e->vlen = 0;
        if (arena_add(&m->ka, &m->kn, &m->kcap, k, kl))
            return -1;
        m->ht[s] = (uint32_t)++m->n;
    }
    if (live == 2) /* a read: only registers the key */
        return 0;
    e->live = (uint8_t)live;
    if (live) {
        if (e->vlen >= vl && e->live) { /* overwrite in place when it fits */
            memcpy(m->va + e->voff, v, vl);
        } else {
            e->voff = m->vn;
            if (arena_add(&m->va, &m->vn, &m->vcap, v, vl))
                return -1;
        }
        e->vlen = (uint32_t)vl;
    }
    return 0;
}

static void
model_free(model *m)
{
    free(m->e);
    free(m->ht);
    free(m->ka);
    free(m->va);
    memset(m, 0, sizeof(*m));
}

/* Applies a whole trace to the model (last write wins, in trace order). */
static int
model_load(model *m, const char *path)
{
    char err[600];
    trace_reader *r;
    if (tr_open(&r, path, err, sizeof(err))) {
        fprintf(stderr, "replay: %s\n", err);
        return -1;
    }
    trace_block b;
    memset(&b, 0, sizeof(b));
    int rc;
    while ((rc = tr_next(r, &b)) == 1) {
        for (uint32_t i = 0; i < b.n_ops && rc == 1; i++) {
            const trace_op *op = &b.ops[i];
            int live = op->type == TOP_READ ? 2 : (op->type != TOP_DELETE && op->vlen > 0);
            if (model_set(m, op->key, op->klen, op->val, op->vlen, live))
                rc = -2;
        }
        if (rc != 1)
            break;
    }
    if (rc == -1)
        fprintf(stderr, "replay: %s\n", tr_error(r));
    else if (rc == -2)
        fprintf(stderr, "replay: out of memory building the model\n");
    tr_close(r);
    trace_block_free(&b);
    return rc ? -1 : 0;
}

/* ---- per-engine result ------------------------------------------------------------------- */
typedef struct rres {
    char name[32], dir[1024], error[2048], describe[512];
    int ok;
    double open_secs, close_secs;
    uint64_t init_blocks, init_entries;
    double init_secs;
    uint64_t blocks, txs, ops, reads, read_hits, puts, dels, empty_dels;
    double secs, wait_secs, cpu_user, cpu_sys;
    uint64_t disk_rd, disk_wr, rss, ssd, height;
    lat_sum read_lat, block_lat, commit_lat;
    uint64_t *timeline;
    size_t timeline_n;
    int verified;
    uint64_t vkeys, vlive, vbad;
    char vdigest[65];
    int have_root;
    char root[65], shard[QMDB_SHARDS][65];
} rres;

static void
hex32(const uint8_t *p, char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", p[i]);
}

static int
efail(rres *res, const bench_engine *e, const char *what)
{
    snprintf(res->error, sizeof(res->error), "%s: %s", what, e->err[0] ? e->err : "failed");
    return -1;
}

/* Loads the init bundle: each bundle block -> one engine block, one transaction. */
static int
load_init(const rcfg *c, bench_engine *e, rres *res, uint64_t *height)
{
    char err[600];
    trace_pipe *p;
    if (tp_start(&p, c->init, c->depth, err, sizeof(err))) {
        snprintf(res->error, sizeof(res->error), "init: %s", err);
        return -1;
    }
    uint64_t total = 0, t0 = now_ns(), last = t0, done_ops = 0;
    trace_hdr_u64(tp_header(p), "ops", &total);
    int rc = 0, prc;
    trace_block *b;
    while (!rc && (b = tp_next(p, &prc)) != NULL) {
        if (bench_stop) {
            rc = -1;
            snprintf(res->error, sizeof(res->error), "interrupted");
        } else if (e->begin_block(e, *height + 1) || e->tx(e)) {
            rc = efail(res, e, "init block");
        }
        for (uint32_t i = 0; i < b->n_ops && !rc; i++) {
            const trace_op *op = &b->ops[i];
            if (op->type == TOP_READ)
                continue;
            if (op->type != TOP_DELETE && op->vlen)
                rc =
                    e->put(e, op->key, op->klen, op->val, op->vlen) ? efail(res, e, "init put") : 0;
            else
                rc = e->del(e, op->key, op->klen) ? efail(res, e, "init del") : 0;
        }
        if (!rc && e->commit_block(e))
            rc = efail(res, e, "init commit");
        if (!rc) {
            ++*height;
            res->init_blocks++;
            done_ops += b->n_ops;
        }
        tp_release(p, b);
        uint64_t now = now_ns();
        if (!rc && now - last >= (uint64_t)(c->progress_secs * 1e9)) {
            double s = (double)(now - t0) / 1e9;
            printf("Init [%.1f%%] entries %" PRIu64 " | %.0f entries/s\n",
                   total ? 100.0 * (double)done_ops / (double)total : 0.0, done_ops,
                   (double)done_ops / s);
            last = now;
        }
    }
    if (!rc && prc < 0) {
        snprintf(res->error, sizeof(res->error), "init: %s", tp_error(p));
        rc = -1;
    }
    tp_stop(p);
    res->init_entries = done_ops;
    res->init_secs = (double)(now_ns() - t0) / 1e9;
    if (!rc)
        printf("Init loaded: %" PRIu64 " entries in %" PRIu64 " blocks, %.3fs (%.0f entries/s)\n",
               done_ops, res->init_blocks, res->init_secs,
               res->init_secs > 0 ? (double)done_ops / res->init_secs : 0.0);
    return rc;
}

/* The block's reads, timed one by one into rl, before the block starts. 0 or -1. */
static int
replay_reads(bench_engine *e, const trace_block *b, uint8_t *rbuf, size_t rcap, lat_hist *rl,
             rres *res)
{
    int rc = 0;
    for (uint32_t i = 0; i < b->n_ops && !rc; i++) {
        const trace_op *op = &b->ops[i];
        if (op->type != TOP_READ)
            continue;
        size_t vl = 0;
        uint64_t t = now_ns();
        int g = e->get(e, op->key, op->klen, rbuf, rcap, &vl);
        hist_add(rl, now_ns() - t);
        if (g < 0)
            rc = efail(res, e, "get");
        res->reads++;
        res->read_hits += g == 0;
    }
    return rc;
}

/* The block's writes, transaction by transaction (a put of an empty value is a delete).
 * 0 or -1. */
static int
replay_writes(bench_engine *e, const trace_block *b, rres *res)
{
    int rc = 0;
    for (uint32_t t = 0; t < b->n_tx && !rc; t++) {
        if (e->tx(e)) {
            rc = efail(res, e, "tx");
            break;
        }
        for (uint32_t i = b->tx_start[t]; i < b->tx_start[t + 1] && !rc; i++) {
            const trace_op *op = &b->ops[i];
            if (op->type == TOP_READ)
                continue;
            if (op->type != TOP_DELETE && op->vlen) {
                rc = e->put(e, op->key, op->klen, op->val, op->vlen) ? efail(res, e, "put") : 0;
                res->puts++;
            } else {
                rc = e->del(e, op->key, op->klen) ? efail(res, e, "del") : 0;
                res->dels++;
                res->empty_dels += op->type != TOP_DELETE;
            }
        }
    }
    return rc;
}

/* The summary lines of a finished replay. */
static void
print_replay_done(const rres *res)
{
    printf("Benchmark Finished.\n");
    printf("Total Ops: %" PRIu64 "\n", res->ops);
    printf("Duration: %.3fs\n", res->secs);
    printf("Blocks: %" PRIu64 " | Txs: %" PRIu64 " | TPS: %.0f | Ops/s: %.0f | reads %" PRIu64
           " (%" PRIu64 " hits), puts %" PRIu64 ", deletes %" PRIu64 "\n",
           res->blocks, res->txs, res->secs > 0 ? (double)res->txs / res->secs : 0,
           res->secs > 0 ? (double)res->ops / res->secs : 0, res->reads, res->read_hits, res->puts,
           res->dels);
    printf("> Latency per read: p50=%.1fus p99=%.1fus max=%.1fus | per block: p50=%.2fms "
           "p99=%.2fms (commit p50=%.2fms) | waited for the reader thread %.3fs\n",
           res->read_lat.p50 / 1e3, res->read_lat.p99 / 1e3, res->read_lat.max / 1e3,
           res->block_lat.p50 / 1e6, res->block_lat.p99 / 1e6, res->commit_lat.p50 / 1e6,
           res->wait_secs);
    printf("> OS Physical Write = %" PRIu64 " bytes, Read = %" PRIu64 " bytes; CPU user=%.2fs "
           "sys=%.2fs\n",
           res->disk_wr, res->disk_rd, res->cpu_user, res->cpu_sys);
}

static int
do_replay(const rcfg *c, bench_engine *e, rres *res, uint64_t *height)
{
    char err[600];
    trace_pipe *p;
    if (tp_start(&p, c->trace, c->depth, err, sizeof(err))) {
        snprintf(res->error, sizeof(res->error), "trace: %s", err);
        return -1;
    }
    uint64_t total_blocks = 0;
    trace_hdr_u64(tp_header(p), "blocks", &total_blocks);
    size_t rcap = 1 << 20;
    uint8_t *rbuf = malloc(rcap);
    lat_hist *rl = malloc(sizeof(*rl)), *bl = malloc(sizeof(*bl)), *cl = malloc(sizeof(*cl));
    timeline tl;
    memset(&tl, 0, sizeof(tl));
    if (!rbuf || !rl || !bl || !cl) {
        snprintf(res->error, sizeof(res->error), "out of memory");
        free(rbuf), free(rl), free(bl), free(cl);
        tp_stop(p);
        return -1;
    }
    hist_reset(rl), hist_reset(bl), hist_reset(cl);
    uint64_t rd0 = 0, wr0 = 0, rd1 = 0, wr1 = 0;
    double cu0, cs0, cu1, cs1;
    disk_sample(bench_disk, &rd0, &wr0, NULL);
    cpu_times(&cu0, &cs0);
    uint64_t t0 = now_ns(), last = t0, last_txs = 0, last_ops = 0;
    tl_start(&tl, t0);
    int rc = 0, prc;
    trace_block *b;
    while (!rc && (b = tp_next(p, &prc)) != NULL) {
        uint64_t tb = now_ns();
        rc = replay_reads(e, b, rbuf, rcap, rl, res); /* reads: last committed state */
        if (!rc && (bench_stop || e->begin_block(e, *height + 1)))
            rc = bench_stop ? (snprintf(res->error, sizeof(res->error), "interrupted"), -1)
                            : efail(res, e, "begin_block");
        if (!rc)
            rc = replay_writes(e, b, res);
        uint64_t tc = now_ns();
        if (!rc && e->commit_block(e))
            rc = efail(res, e, "commit");
        uint64_t te = now_ns();
        if (!rc) {
            ++*height;
            hist_add(bl, te - tb);
            hist_add(cl, te - tc);
            tl_add(&tl, te, b->n_tx);
            res->blocks++;
            res->txs += b->n_tx;
            res->ops += b->n_ops;
        }
        uint64_t number = b->number;
        tp_release(p, b);
        if (!rc && te - last >= (uint64_t)(c->progress_secs * 1e9)) {
            double dt = (double)(te - last) / 1e9;
            double pct = total_blocks ? 100.0 * (double)res->blocks / (double)total_blocks
                                      : 100.0 * (double)tp_bytes_read(p) /
                                            (double)(tp_total_bytes(p) ? tp_total_bytes(p) : 1);
            printf("Replay [%.1f%%] Block %" PRIu64 " | TPS: %.0f | Ops/s: %.0f\n", pct, number,
                   (double)(res->txs - last_txs) / dt, (double)(res->ops - last_ops) / dt);
            last = te, last_txs = res->txs, last_ops = res->ops;
        }
    }
    if (!rc && prc < 0) {
        snprintf(res->error, sizeof(res->error), "trace: %s", tp_error(p));
        rc = -1;
    }
    res->secs = (double)(now_ns() - t0) / 1e9;
    res->wait_secs = (double)tp_wait_ns(p) / 1e9;
    tp_stop(p);
    disk_sample(bench_disk, &rd1, &wr1, NULL);
    cpu_times(&cu1, &cs1);
    res->disk_rd = rd1 - rd0, res->disk_wr = wr1 - wr0;
    res->cpu_user = cu1 - cu0, res->cpu_sys = cs1 - cs0;
    lat_summarize(rl, &res->read_lat), lat_summarize(bl, &res->block_lat),
        lat_summarize(cl, &res->commit_lat);
    res->timeline = tl.sec, res->timeline_n = tl.n;
    free(rbuf), free(rl), free(bl), free(cl);
    if (!rc)
        print_replay_done(res);
    return rc;
}

/* Reads every model key back from the engine; compares with the model; digests what it read. */
static int
readback(const rcfg *c, bench_engine *e, const model *m, rres *res)
{
    FILE *df = NULL;
    if (c->dump) {
        char path[1200];
        snprintf(path, sizeof(path), "%s.%s", c->dump, res->name);
        df = fopen(path, "w");
        if (!df) {
            snprintf(res->error, sizeof(res->error), "cannot create %s", path);
            return -1;
        }
    }
    size_t cap = 1 << 16;
    uint8_t *buf = malloc(cap);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!buf || !md) {
        free(buf);
        EVP_MD_CTX_free(md);
        if (df)
            fclose(df);
        return -1;
    }
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    int rc = 0;
    for (size_t i = 0; i < m->n && !rc; i++) {
        const ment *x = &m->e[i];
        const uint8_t *k = m->ka + x->koff;
        size_t vl = 0;
        int g = e->get(e, k, x->klen, buf, cap, &vl);
        if (g == 0 && vl > cap) {
            uint8_t *nb = realloc(buf, vl);
            if (!nb) {
                rc = -1;
                break;
            }
            buf = nb, cap = vl;
            g = e->get(e, k, x->klen, buf, cap, &vl);
        }
        if (g < 0) {
            rc = efail(res, e, "readback get");
            break;
        }
        int found = g == 0;
        res->vkeys++;
        res->vlive += found;
        if (found != x->live || (found && (vl != x->vlen || memcmp(buf, m->va + x->voff, vl) != 0)))
            res->vbad++;
        uint8_t h[6] = {x->klen, (uint8_t)found};
        uint32_t v32 = found ? (uint32_t)vl : 0;
        memcpy(h + 2, &v32, 4);
        EVP_DigestUpdate(md, h, 6);
        EVP_DigestUpdate(md, k, x->klen);
        if (found)
            EVP_DigestUpdate(md, buf, vl);
        if (df) {
            for (size_t j = 0; j < x->klen; j++)
                fprintf(df, "%02x", k[j]);
            fputc(' ', df);
            for (size_t j = 0; found && j < vl; j++)
                fprintf(df, "%02x", buf[j]);
            fputs(found ? "\n" : "-\n", df);
        }
    }
    uint8_t dg[32];
    unsigned dl = 0;
    EVP_DigestFinal_ex(md, dg, &dl);
    EVP_MD_CTX_free(md);
    free(buf);
    if (df && fclose(df) != 0)
        rc = -1;
    hex32(dg, res->vdigest);
    res->verified = !rc;
    if (!rc)
        printf("Readback: keys=%" PRIu64 " present=%" PRIu64 " mismatches=%" PRIu64
               " readback_sha256=%s\n",
               res->vkeys, res->vlive, res->vbad, res->vdigest);
    return rc;
}

/* qmdb only: reopen read-only and print the 16 shard roots and the state root. */
static int
qmdb_roots(rres *res)
{
#ifdef QMDB_BENCH_HAVE_QMDB
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = QMDB_OPEN_RDONLY | QMDB_OPEN_FAST;
    qmdb_db *db = NULL;
    int rc = qmdb_open(res->dir, &o, &db);
    if (rc) {
        snprintf(res->error, sizeof(res->error), "reopen for roots: %s: %s", qmdb_strerror(rc),
                 qmdb_open_error());
        return -1;
    }
    uint8_t r[QMDB_HASH_LEN];
    for (unsigned s = 0; s < QMDB_SHARDS && !rc; s++) {
        rc = qmdb_shard_root(db, s, r);
        hex32(r, res->shard[s]);
        if (!rc)
            printf("shard_root[%u] %s\n", s, res->shard[s]);
    }
    res->height = qmdb_height(db);
    if (!rc)
        rc = qmdb_root(db, UINT64_MAX, r);
    hex32(r, res->root);
    qmdb_close(db);
    if (rc) {
        snprintf(res->error, sizeof(res->error), "roots: %s", qmdb_strerror(rc));
        return -1;
    }
    res->have_root = 1;
    printf("state_root_digest height=%" PRIu64 " %s\n", res->height, res->root);
    return 0;
#else
    (void)res;
    return 0;
#endif
}

static int
run_engine(const rcfg *c, const char *name, const model *m, rres *res)
{
    bench_engine e;
    snprintf(res->name, sizeof(res->name), "%s", name);
    snprintf(res->dir, sizeof(res->dir), "%s/%s", c->db_dir, name);
    if (engine_lookup(name, &e) != 0) {
        snprintf(res->error, sizeof(res->error), "%s", e.err);
        return -1;
    }
    printf("=== replay engine %s: dir %s, durability %s ===\n", name, res->dir,
           strcmp(name, "qmdb") == 0 || c->durable ? "D1" : "D0");
    if (rm_rf(res->dir) != 0 || mkdir_p(res->dir) != 0) {
        snprintf(res->error, sizeof(res->error), "cannot prepare %s: %s", res->dir,
                 strerror(errno));
        return -1;
    }
    uint64_t init_ops = 0, creates = 0;
    char err[600];
    trace_reader *r;
    if (c->init && tr_open(&r, c->init, err, sizeof(err)) == 0) {
        trace_hdr_u64(tr_header(r), "ops", &init_ops);
        tr_close(r);
    }
    if (tr_open(&r, c->trace, err, sizeof(err)) == 0) {
        trace_hdr_u64(tr_header(r), "creates", &creates);
        tr_close(r);
    }
    bench_engine_cfg ec = {.durable = c->durable,
                           .entry_count = init_ops + creates + 1,
                           .key_size = TRACE_KEY_MAX,
                           .value_size = 80,
                           .tuned =
                               strcmp(name, "rocksdb") == 0 || strcmp(name, "rocksdb-blob") == 0,
                           .blob = strcmp(name, "rocksdb-blob") == 0};
    uint64_t t = now_ns();
    if (e.open(&e, res->dir, &ec)) {
        efail(res, &e, "open");
        e.close(&e);
        return -1;
    }
    res->open_secs = (double)(now_ns() - t) / 1e9;
    uint64_t height = 0;
    int rc = 0;
    if (c->init)
        rc = load_init(c, &e, res, &height);
    if (!rc)
        rc = do_replay(c, &e, res, &height);
    if (!rc && m)
        rc = readback(c, &e, m, res);
    if (!rc) {
        e.describe(&e, res->describe, sizeof(res->describe));
        res->rss = proc_status_bytes("VmRSS");
    }
    t = now_ns();
    if (e.close(&e) && !rc)
        rc = efail(res, &e, "close");
    res->close_secs = (double)(now_ns() - t) / 1e9;
    uint64_t app;
    res->ssd = du_bytes(res->dir, &app);
    if (!rc && strcmp(name, "qmdb") == 0)
        rc = qmdb_roots(res);
    if (!c->keep)
        rm_rf(res->dir);
    res->ok = !rc && (!m || res->vbad == 0);
    return rc;
}

static int
write_json(const rcfg *c, const rres *rs, int n, const char *hdr, int ok)
{
    char tmp[4200];
    FILE *f = jw_file_open(c->output, tmp, sizeof(tmp), "replay");
    if (!f)
        return -1;
    jw w;
    jw_init(&w, f);
    jw_obj(&w, NULL);
    jw_str(&w, "tool", "qmdb-bench replay");
    jw_bool(&w, "ok", ok);
    jw_obj(&w, "config");
    jw_str(&w, "trace", c->trace);
    jw_str(&w, "init", c->init);
    jw_str(&w, "db_dir", c->db_dir);
    jw_str(&w, "durability", c->durable ? "D1" : "D0");
    jw_str(&w, "read_semantics",
           "reads see the last committed state (before the block's "
           "writes), for every engine");
    jw_bool(&w, "verify", c->verify);
    jw_str(&w, "trace_header", hdr);
    jw_obj_end(&w);
    jw_arr(&w, "engines");
    for (int i = 0; i < n; i++) {
        const rres *r = &rs[i];
        jw_obj(&w, NULL);
        jw_str(&w, "engine", r->name);
        jw_bool(&w, "ok", r->ok);
        if (r->error[0])
            jw_str(&w, "error", r->error);
        jw_str(&w, "final", r->describe);
        jw_dbl(&w, "open_seconds", r->open_secs);
        jw_dbl(&w, "close_seconds", r->close_secs);
        jw_obj(&w, "init");
        jw_u64(&w, "blocks", r->init_blocks);
        jw_u64(&w, "entries", r->init_entries);
        jw_dbl(&w, "seconds", r->init_secs);
        jw_dbl(&w, "entries_per_sec",
               r->init_secs > 0 ? (double)r->init_entries / r->init_secs : 0);
        jw_obj_end(&w);
        jw_obj(&w, "replay");
        jw_u64(&w, "blocks", r->blocks);
        jw_u64(&w, "txs", r->txs);
        jw_u64(&w, "ops", r->ops);
        jw_u64(&w, "reads", r->reads);
        jw_u64(&w, "read_hits", r->read_hits);
        jw_u64(&w, "puts", r->puts);
        jw_u64(&w, "deletes", r->dels);
        jw_u64(&w, "empty_value_deletes", r->empty_dels);
        jw_dbl(&w, "seconds", r->secs);
        jw_dbl(&w, "tps", r->secs > 0 ? (double)r->txs / r->secs : 0);
        jw_dbl(&w, "ops_per_sec", r->secs > 0 ? (double)r->ops / r->secs : 0);
        jw_dbl(&w, "reader_wait_seconds", r->wait_secs);
        jw_lat(&w, "read_latency", &r->read_lat);
        jw_lat(&w, "block_latency", &r->block_lat);
        jw_lat(&w, "commit_latency", &r->commit_lat);
        jw_u64(&w, "disk_bytes_read", r->disk_rd);
        jw_u64(&w, "disk_bytes_written", r->disk_wr);
        jw_dbl(&w, "cpu_user_seconds", r->cpu_user);
        jw_dbl(&w, "cpu_sys_seconds", r->cpu_sys);
        jw_u64(&w, "rss_bytes", r->rss);
        jw_u64(&w, "ssd_bytes", r->ssd);
        jw_arr(&w, "timeline_txs_per_second");
        for (size_t k = 0; k < r->timeline_n; k++)
            jw_u64(&w, NULL, r->timeline[k]);
        jw_arr_end(&w);
        jw_obj_end(&w);
        if (r->verified) {
            jw_obj(&w, "readback");
            jw_u64(&w, "keys", r->vkeys);
            jw_u64(&w, "present", r->vlive);
            jw_u64(&w, "mismatches", r->vbad);
            jw_str(&w, "sha256", r->vdigest);
            jw_obj_end(&w);
        }
        if (r->have_root) {
            jw_u64(&w, "height", r->height);
            jw_str(&w, "state_root_digest", r->root);
            jw_arr(&w, "shard_roots");
            for (int s = 0; s < QMDB_SHARDS; s++)
                jw_str(&w, NULL, r->shard[s]);
            jw_arr_end(&w);
        }
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    return jw_file_commit(f, tmp, c->output, "replay");
}

static void
usage(FILE *f)
{
    fprintf(
        f,
        "usage: qmdb-bench replay --trace TRACE [--init INIT] [options]   (docs/TRACE.md)\n"
        "  --trace PATH        QTRC trace file or directory of *.qtr segments\n"
        "  --init PATH         initial-state bundle, loaded (untimed) before the replay\n"
        "  --engine LIST       qmdb|rocksdb|rocksdb-default|rocksdb-blob|lmdb|mpt, comma-separated "
        "(default qmdb)\n"
        "  --db-dir DIR        parent of the engines' DBs (default /tmp/qmdb-replay)\n"
        "  --durability D0|D1  (default D1; qmdb is always D1)\n"
        "  --verify            read every key of init + trace back at the end and compare with\n"
        "                      the trace's final state; engines must agree (exit 1 otherwise)\n"
        "  --dump PREFIX       with --verify: write PREFIX.<engine> (key value|- per line)\n"
        "  --queue-depth N     blocks the reader thread decodes ahead (default 64)\n"
        "  --progress-secs S   seconds between progress lines (default 2)\n"
        "  --output FILE       JSON results (default qmdb-replay-results.json)\n"
        "  --keep              keep the DB directories\n");
}

static void
on_sig(int s)
{
    (void)s;
    bench_stop = 1;
}

/* Parses the replay flags into c. Returns -1 to go on, else the exit status. */
static int
parse_args(rcfg *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1, bad = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--verify") == 0) {
            c->verify = 1, used = 0;
        } else if (strcmp(a, "--keep") == 0) {
            c->keep = 1, used = 0;
        } else if (!v) {
            bad = 1;
        } else if (strcmp(a, "--trace") == 0) {
            c->trace = v;
        } else if (strcmp(a, "--init") == 0) {
            c->init = v;
        } else if (strcmp(a, "--db-dir") == 0) {
            c->db_dir = v;
        } else if (strcmp(a, "--output") == 0) {
            c->output = v;
        } else if (strcmp(a, "--dump") == 0) {
            c->dump = v;
        } else if (strcmp(a, "--durability") == 0) {
            c->durable = strcmp(v, "D1") == 0 || strcmp(v, "d1") == 0;
            bad = !c->durable && strcmp(v, "D0") != 0 && strcmp(v, "d0") != 0;
        } else if (strcmp(a, "--queue-depth") == 0) {
            c->depth = atoi(v);
            bad = c->depth < 1 || c->depth > 4096;
        } else if (strcmp(a, "--progress-secs") == 0) {
            char *end;
            c->progress_secs = strtod(v, &end);
            bad = *end || c->progress_secs < 0;
        } else if (strcmp(a, "--engine") == 0) {
            char buf[256];
            snprintf(buf, sizeof(buf), "%s", v);
            c->n_engines = 0;
            for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t && !bad;
                 t = strtok_r(NULL, ",", &sv)) {
                bad = c->n_engines == BENCH_MAX_ENGINES;
                if (!bad)
                    snprintf(c->engines[c->n_engines++], sizeof(c->engines[0]), "%s", t);
            }
            bad = bad || c->n_engines == 0;
        } else {
            fprintf(stderr, "qmdb-bench replay: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "qmdb-bench replay: bad or missing value for %s\n", a);
            return 2;
        }
        i += used;
    }
    if (!c->trace || (c->dump && !c->verify)) {
        fprintf(stderr, "qmdb-bench replay: --trace is required (and --dump needs --verify)\n");
        usage(stderr);
        return 2;
    }
    return -1;
}

/* The "Replay summary" lines; 1 when the engines' read-backs differ, else 0. */
static int
print_summary(const rcfg *c, const rres *rs, int n)
{
    int fail = 0;
    printf("\nReplay summary\n");
    for (int i = 0; i < n; i++) {
        printf("%s: %s %" PRIu64 " txs %" PRIu64 " ops in %.3fs, TPS %.0f, ops/s %.0f", rs[i].name,
               rs[i].ok ? "ok" : "FAILED", rs[i].txs, rs[i].ops, rs[i].secs,
               rs[i].secs > 0 ? (double)rs[i].txs / rs[i].secs : 0,
               rs[i].secs > 0 ? (double)rs[i].ops / rs[i].secs : 0);
        if (rs[i].verified)
            printf(", readback %s", rs[i].vdigest);
        printf("\n");
        if (c->verify && i > 0 && rs[i].verified && rs[0].verified &&
            strcmp(rs[i].vdigest, rs[0].vdigest) != 0) {
            printf("readback MISMATCH between %s and %s\n", rs[0].name, rs[i].name);
            fail = 1;
        }
    }
    /* Each qmdb variant against the fastest rival by TPS (bench_fastest_rival). */
    const char *names[BENCH_MAX_ENGINES];
    double tps[BENCH_MAX_ENGINES];
    for (int i = 0; i < n; i++) {
        names[i] = rs[i].name;
        tps[i] = rs[i].ok && rs[i].secs > 0 ? (double)rs[i].txs / rs[i].secs : 0;
    }
    for (int s = 0; s < n; s++) {
        int b =
            bench_is_qmdb(rs[s].name) && tps[s] > 0 ? bench_fastest_rival(names, tps, n, s) : -1;
        if (b >= 0)
            printf("%s / fastest rival: %.2fx vs %s (TPS)\n", rs[s].name, tps[s] / tps[b],
                   rs[b].name);
    }
    return fail;
}

int
replay_main(int argc, char **argv)
{
    rcfg c = {.db_dir = "/tmp/qmdb-replay",
              .output = "qmdb-replay-results.json",
              .durable = 1,
              .depth = 64,
              .progress_secs = 2.0};
    snprintf(c.engines[0], sizeof(c.engines[0]), "qmdb");
    c.n_engines = 1;
    int st = parse_args(&c, argc, argv);
    if (st >= 0)
        return st;
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sig;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (mkdir_p(c.db_dir) != 0) {
        fprintf(stderr, "qmdb-bench replay: cannot create %s: %s\n", c.db_dir, strerror(errno));
        return 2;
    }
    if (disk_find(c.db_dir, bench_disk, sizeof(bench_disk)) != 0)
        fprintf(stderr, "warning: no block device found for %s; disk bytes will be 0\n", c.db_dir);

    char err[600], hdr[8192] = "";
    trace_reader *r;
    if (tr_open(&r, c.trace, err, sizeof(err))) {
        fprintf(stderr, "qmdb-bench replay: %s\n", err);
        return 2;
    }
    snprintf(hdr, sizeof(hdr), "%s", tr_header(r));
    tr_close(r);
    printf("qmdb-bench replay: trace=%s init=%s engines=", c.trace, c.init ? c.init : "(none)");
    for (int i = 0; i < c.n_engines; i++)
        printf("%s%s", i ? "," : "", c.engines[i]);
    printf(" durability=%s device=%s\n", c.durable ? "D1" : "D0", bench_disk[0] ? bench_disk : "?");

    model m;
    memset(&m, 0, sizeof(m));
    if (c.verify) {
        uint64_t t = now_ns();
        if ((c.init && model_load(&m, c.init)) || model_load(&m, c.trace)) {
            model_free(&m);
            return 1;
        }
        printf("verify: final-state model of %zu keys built in %.2fs\n", m.n,
               (double)(now_ns() - t) / 1e9);
    }
    rres *rs = calloc((size_t)c.n_engines, sizeof(*rs));
    if (!rs)
        return 1;
    int n = 0, fail = 0;
    for (int i = 0; i < c.n_engines && !bench_stop; i++, n++) {
        if (run_engine(&c, c.engines[i], c.verify ? &m : NULL, &rs[i]) != 0 || !rs[i].ok) {
            fail = 1;
            fprintf(stderr, "replay: engine %s failed: %s\n", c.engines[i],
                    rs[i].error[0] ? rs[i].error : "read-back mismatches");
        }
    }
    if (print_summary(&c, rs, n))
        fail = 1;
    if (write_json(&c, rs, n, hdr, !fail && !bench_stop) == 0)
        printf("results written to %s\n", c.output);
    else
        fail = 1;
    if (!c.keep)
        rmdir(c.db_dir); /* only if empty */
    for (int i = 0; i < n; i++)
        free(rs[i].timeline);
    free(rs);
    model_free(&m);
    return fail || bench_stop ? 1 : 0;
}
