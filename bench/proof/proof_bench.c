/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proof_bench.c -- qmdb-proof-bench: proof generation and verification rates and proof
 * sizes (issue 4). Public API only.
 *
 *   qmdb-proof-bench [--entries N] [--proofs M] [--dir DIR] [--block-ops B] [--keep]
 *                    [--multi-keys K] [--multi-sets S] [--witness-ops A,B,...] [--reopen]
 *
 * Loads N keys (16-byte pseudo-random keys, 32-byte values) in blocks of B operations, then
 * runs 4 update blocks of min(N/10, B) updates each (so historical proofs have something to
 * follow), and measures, single-threaded:
 *   inclusion  M proofs of random live keys at the latest height: generate, then verify;
 *   exclusion  M/4 proofs of random absent keys;
 *   historical M/4 proofs at random heights among the last 5 (value from before the updates);
 *              the first one on each shard pays for the history cache (reported apart);
 *   multi-key  S multi-key proofs of K random live keys each at the latest height, and S of K
 *              random updated keys at an earlier height: generate, verify (every answer
 *              compared), bytes per key and their ratio to an inclusion proof's bytes;
 *   witness    after the above, per size A, B, ... (default 1000,10000) one block of that
 *              many random operations (60% updates, 25% creates, 15% deletes), committed; its
 *              witness is built (timed) and verified (timed) against the root before it, and
 *              the post-state root compared with the engine's; bytes per operation.
 * With --reopen, after the load: 200 historical proofs (timed: they build every shard's
 * history cache), qmdb_close (timed: it writes the caches to sXX.hist), qmdb_open with
 * QMDB_OPEN_FAST (timed), one historical proof (timed, wall and CPU: the first historical
 * proof after the open), 199 more (timed with it: every shard's first after the open), then
 * the kinds as above.
 * Prints one line per kind and a JSON summary on the last line. Uses DIR (default
 * ./proof-bench-db), which must not exist; removed at the end unless --keep.
 *
 * Thread: single.
 * Owns: the proof benchmark's flags, load, claims, timing and output lines.
 */
#include "qmdb.h"
#include "rng.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t
mix(uint64_t z)
{
    return rng_splitmix64(z);
}

static void
make_key(uint64_t i, uint8_t k[16])
{
    uint64_t a = mix(i), b = mix(i ^ 0xabcdefull);
    memcpy(k, &a, 8);
    memcpy(k + 8, &b, 8);
}

static void
make_val(uint64_t i, uint64_t ver, uint8_t v[32])
{
    for (int j = 0; j < 4; j++) {
        uint64_t x = mix(i * 31 + ver * 7 + (uint64_t)j);
        memcpy(v + 8 * j, &x, 8);
    }
}

static void
die(const char *what, int rc)
{
    fprintf(stderr, "qmdb-proof-bench: %s: %s\n", what, qmdb_strerror(rc));
    exit(1);
}

typedef struct kind_stats {
    const char *name;
    uint64_t n;
    double gen_s, gen_cpu_s, ver_s, bytes;
} kind_stats;

static void
report(const kind_stats *k)
{
    printf("%-11s %8" PRIu64 " proofs  gen %9.0f /s (per CPU second %9.0f)  verify %9.0f /s  %7.1f "
           "bytes/proof\n",
           k->name, k->n, k->n / k->gen_s, k->n / k->gen_cpu_s, k->n / k->ver_s,
           k->bytes / (double)k->n);
}

/* The command line. */
typedef struct pb_cfg {
    uint64_t n, m, block_ops, mkeys, msets;
    const char *wops;
    const char *dir;
    int keep, reopen;
} pb_cfg;

/* The loaded database: keys i < nupd have value version u at height hl + u (u = 1..4). */
typedef struct pb_db {
    qmdb_db *db;
    uint8_t root[32];
    uint64_t h, hl, nupd;
    double load_s;
} pb_db;

/* Parses the flags into c. Returns -1 to go on, else the exit status. */
static int
parse_args(pb_cfg *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--entries") == 0 && i + 1 < argc)
            c->n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--proofs") == 0 && i + 1 < argc)
            c->m = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--block-ops") == 0 && i + 1 < argc)
            c->block_ops = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            c->dir = argv[++i];
        else if (strcmp(argv[i], "--multi-keys") == 0 && i + 1 < argc)
            c->mkeys = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--multi-sets") == 0 && i + 1 < argc)
            c->msets = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--witness-ops") == 0 && i + 1 < argc)
            c->wops = argv[++i];
        else if (strcmp(argv[i], "--keep") == 0)
            c->keep = 1;
        else if (strcmp(argv[i], "--reopen") == 0)
            c->reopen = 1;
        else {
            fprintf(stderr, "usage: qmdb-proof-bench [--entries N] [--proofs M] [--dir DIR] "
                            "[--block-ops B] [--keep] [--multi-keys K] [--multi-sets S] "
                            "[--witness-ops A,B,...] [--reopen]\n");
            return 2;
        }
    }
    if (c->n == 0 || c->m == 0 || c->block_ops == 0 || c->mkeys == 0 ||
        c->mkeys > QMDB_MPROOF_MAX_KEYS || c->msets == 0) {
        fprintf(stderr,
                "qmdb-proof-bench: --entries, --proofs, --block-ops and --multi-sets must be "
                "positive, and --multi-keys between 1 and %u\n",
                (unsigned)QMDB_MPROOF_MAX_KEYS);
        return 2;
    }
    return -1;
}

/* Creates and opens the database, loads n keys in blocks of block_ops, then commits the 4
 * update blocks over the first nupd keys. */
static void
load_db(const pb_cfg *c, pb_db *d)
{
    int rc = qmdb_create(c->dir, NULL);
    if (rc)
        die(qmdb_open_error(), rc);
    if ((rc = qmdb_open(c->dir, NULL, &d->db)) != 0)
        die("open", rc);
    qmdb_batch *b;
    if ((rc = qmdb_batch_new(&b)) != 0)
        die("batch", rc);
    uint8_t key[16], val[32];
    d->h = 0;
    double t0 = now_s();
    for (uint64_t i = 0; i < c->n; i++) {
        make_key(i, key);
        make_val(i, 0, val);
        if ((rc = qmdb_batch_put(b, key, 16, val, 32)) != 0)
            die("put", rc);
        if ((i + 1) % c->block_ops == 0 || i + 1 == c->n) {
            if ((rc = qmdb_commit(d->db, ++d->h, b, d->root)) != 0)
                die("commit", rc);
            qmdb_batch_reset(b);
        }
    }
    d->load_s = now_s() - t0;
    /* 4 update blocks over the first keys: key i < nupd has value version u at height hl+u. */
    d->hl = d->h;
    d->nupd = c->n / 10 < c->block_ops ? c->n / 10 : c->block_ops;
    if (d->nupd == 0)
        d->nupd = 1;
    for (uint64_t u = 1; u <= 4; u++) {
        for (uint64_t i = 0; i < d->nupd; i++) {
            make_key(i, key);
            make_val(i, u, val);
            if ((rc = qmdb_batch_put(b, key, 16, val, 32)) != 0)
                die("put", rc);
        }
        if ((rc = qmdb_commit(d->db, ++d->h, b, d->root)) != 0)
            die("commit", rc);
        qmdb_batch_reset(b);
    }
    qmdb_batch_free(b);
    fprintf(stderr, "loaded %" PRIu64 " keys in %.1f s (%.0f keys/s), height %" PRIu64 "\n", c->n,
            d->load_s, c->n / d->load_s, d->h);
}

/* The claims of proof kind `kind` (0 inclusion, 1 exclusion, 2 historical): key ids and
 * heights (UINT64_MAX = latest). */
static void
pick_claims(const pb_cfg *c, const pb_db *d, int kind, uint64_t cnt, uint64_t *ids, uint64_t *hts)
{
    for (uint64_t j = 0; j < cnt; j++) {
        uint64_t r = mix(j * 3 + (uint64_t)kind + 1000000007ull);
        if (kind == 0) {
            ids[j] = r % c->n;
            hts[j] = UINT64_MAX;
        } else if (kind == 1) {
            ids[j] = c->n + r % (c->n * 10); /* never loaded */
            hts[j] = UINT64_MAX;
        } else {
            ids[j] = r % d->nupd;
            hts[j] = d->hl + (r >> 32) % 4; /* value version hts - hl */
        }
    }
}

/* Proves the first 200 historical claims once, untimed by the rates. Returns the seconds. */
static double
warm_history(const pb_db *d, uint64_t cnt, const uint64_t *ids, const uint64_t *hts)
{
    uint8_t key[16];
    double t = now_s();
    for (uint64_t j = 0; j < 200 && j < cnt; j++) {
        uint8_t *p;
        size_t len;
        make_key(ids[j], key);
        int rc = qmdb_prove(d->db, key, 16, hts[j], &p, &len);
        if (rc != 0)
            die("prove (history warm-up)", rc);
        qmdb_proof_free(p);
    }
    return now_s() - t;
}

/* Verifies the k->n proofs of kind `kind` against the latest root. 0, or 1 with a message
 * when one does not verify. */
static int
verify_all(const pb_db *d, int kind, const kind_stats *k, const uint64_t *ids, const uint64_t *hts,
           uint8_t *const *proofs, const size_t *lens)
{
    uint8_t key[16], val[32];
    for (uint64_t j = 0; j < k->n; j++) {
        make_key(ids[j], key);
        const uint8_t *v = NULL;
        if (kind == 0) {
            make_val(ids[j], ids[j] < d->nupd ? 4 : 0, val);
            v = val;
        } else if (kind == 2) {
            make_val(ids[j], hts[j] - d->hl, val);
            v = val;
        }
        const char *why = NULL;
        int rc = qmdb_proof_verify(proofs[j], lens[j], d->root, key, 16, v, v ? 32 : 0,
                                   kind == 2 ? hts[j] : UINT64_MAX, NULL, &why);
        if (rc) {
            fprintf(stderr, "%s proof %" PRIu64 " does not verify: %s\n", k->name, j, why);
            return 1;
        }
    }
    return 0;
}

/* Generates (timed) and verifies (timed) the proofs of one kind, then prints its line.
 * *hist_first_s gets the history warm-up time for the historical kind. 0 or 1. */
static int
bench_kind(const pb_cfg *c, const pb_db *d, int kind, kind_stats *k, uint8_t **proofs, size_t *lens,
           uint64_t *ids, uint64_t *hts, double *hist_first_s)
{
    uint8_t key[16];
    k->n = kind == 0 ? c->m : (c->m / 4 ? c->m / 4 : 1);
    pick_claims(c, d, kind, k->n, ids, hts);
    if (kind == 2) /* warm the history cache once, timed apart */
        *hist_first_s = warm_history(d, k->n, ids, hts);
    double t = now_s(), c0 = cpu_s();
    for (uint64_t j = 0; j < k->n; j++) {
        make_key(ids[j], key);
        int rc = qmdb_prove(d->db, key, 16, hts[j], &proofs[j], &lens[j]);
        if (rc != 0)
            die("prove", rc);
        k->bytes += (double)lens[j];
    }
    k->gen_s = now_s() - t;
    k->gen_cpu_s = cpu_s() - c0;
    t = now_s();
    if (verify_all(d, kind, k, ids, hts, proofs, lens))
        return 1;
    k->ver_s = now_s() - t;
    for (uint64_t j = 0; j < k->n; j++) {
        qmdb_proof_free(proofs[j]);
        proofs[j] = NULL;
    }
    report(k);
    return 0;
}

/* Multi-key proofs: sets of c->mkeys keys, latest (hist 0) or historical (hist 1). */
typedef struct multi_stats {
    uint64_t sets, keys;
    double gen_s, ver_s, bytes;
} multi_stats;

static int
bench_multi(const pb_cfg *c, const pb_db *d, int hist, multi_stats *ms)
{
    uint64_t k = c->mkeys;
    uint8_t(*keys)[16] = calloc(k, 16);
    const void **kp = calloc(k, sizeof(void *));
    size_t *kl = calloc(k, sizeof(size_t));
    uint64_t *ids = calloc(k, sizeof(uint64_t));
    qmdb_proof_answer *ans = calloc(k, sizeof(qmdb_proof_answer));
    if (!keys || !kp || !kl || !ids || !ans)
        die("alloc", -12);
    memset(ms, 0, sizeof(*ms));
    for (uint64_t s = 0; s < c->msets; s++) {
        uint64_t h = hist ? d->hl + 1 + s % 3 : UINT64_MAX;
        for (uint64_t j = 0; j < k; j++) {
            uint64_t r = mix(s * 1000003ull + j * 7 + (uint64_t)hist * 99991 + 17);
            ids[j] = hist ? r % d->nupd : r % c->n;
            make_key(ids[j], keys[j]);
            kp[j] = keys[j];
            kl[j] = 16;
        }
        uint8_t *p;
        size_t len;
        double t = now_s();
        int rc = qmdb_prove_many(d->db, kp, kl, k, h, &p, &len);
        if (rc != 0)
            die("prove_many", rc);
        ms->gen_s += now_s() - t;
        const char *why = NULL;
        t = now_s();
        rc = qmdb_proof_verify_many(p, len, d->root, kp, kl, k, h, NULL, ans, &why);
        ms->ver_s += now_s() - t;
        if (rc) {
            fprintf(stderr, "multi-key proof %" PRIu64 " does not verify: %s\n", s, why);
            return 1;
        }
        for (uint64_t j = 0; j < k; j++) {
            uint8_t val[32];
            uint64_t ver = hist ? h - d->hl : (ids[j] < d->nupd ? 4 : 0);
            make_val(ids[j], ver, val);
            if (!ans[j].present || ans[j].vlen != 32 || memcmp(ans[j].value, val, 32) != 0) {
                fprintf(stderr, "multi-key proof %" PRIu64 ": wrong answer for key %" PRIu64 "\n",
                        s, j);
                return 1;
            }
        }
        ms->bytes += (double)len;
        ms->sets++;
        ms->keys += k;
        qmdb_proof_free(p);
    }
    free(keys);
    free(kp);
    free(kl);
    free(ids);
    free(ans);
    return 0;
}

static void
report_multi(const char *name, const multi_stats *ms, double single_bytes)
{
    printf("%-11s %8" PRIu64 " proofs of %" PRIu64 " keys  gen %9.0f keys/s  verify %9.0f keys/s  "
           "%7.1f bytes/key (%.2f of a single proof)\n",
           name, ms->sets, ms->keys / ms->sets, ms->keys / ms->gen_s, ms->keys / ms->ver_s,
           ms->bytes / (double)ms->keys, ms->bytes / (double)ms->keys / single_bytes);
}

/* One block of nops random operations on the loaded database, then its witness. */
typedef struct wit_stats {
    uint64_t ops;
    double build_s, verify_s, bytes;
} wit_stats;

static int
bench_witness(pb_db *d, const pb_cfg *c, uint64_t nops, uint64_t *next_new, wit_stats *ws)
{
    qmdb_block_op *ops = calloc(nops, sizeof(qmdb_block_op));
    uint8_t(*keys)[16] = calloc(nops, 16), (*vals)[32] = calloc(nops, 32);
    qmdb_batch *b;
    if (!ops || !keys || !vals || qmdb_batch_new(&b) != 0)
        die("alloc", -12);
    uint8_t pre[32];
    memcpy(pre, d->root, 32);
    for (uint64_t j = 0; j < nops; j++) {
        uint64_t r = mix(d->h * 7919 + j), kind = r % 100, id;
        if (kind < 25)
            id = (*next_new)++; /* create */
        else
            id = (r >> 8) % c->n; /* update or delete of a loaded key (maybe deleted already) */
        make_key(id, keys[j]);
        ops[j].key = keys[j];
        ops[j].klen = 16;
        if (kind < 85) {
            make_val(id, 100 + d->h, vals[j]);
            ops[j].value = vals[j];
            ops[j].vlen = 32;
            if (qmdb_batch_put(b, keys[j], 16, vals[j], 32) != 0)
                die("put", -1);
        } else if (qmdb_batch_del(b, keys[j], 16) != 0) {
            die("del", -1);
        }
    }
    int rc = qmdb_commit(d->db, ++d->h, b, d->root);
    if (rc)
        die("commit", rc);
    qmdb_batch_free(b);
    uint8_t *w;
    size_t len;
    double t = now_s();
    if ((rc = qmdb_witness(d->db, d->h, ops, nops, &w, &len)) != 0)
        die("witness", rc);
    ws->build_s = now_s() - t;
    uint8_t post[32];
    const char *why = NULL;
    t = now_s();
    rc = qmdb_witness_verify(w, len, pre, d->h, ops, nops, NULL, post, &why);
    ws->verify_s = now_s() - t;
    if (rc || memcmp(post, d->root, 32) != 0) {
        fprintf(stderr, "witness of a %" PRIu64 "-op block: %s\n", nops,
                rc ? why : "post-state root differs from the engine's");
        return 1;
    }
    ws->ops = nops;
    ws->bytes = (double)len;
    qmdb_proof_free(w);
    free(ops);
    free(keys);
    free(vals);
    return 0;
}

/* --reopen: one historical proof (builds a shard's history cache), close, fast open, and the
 * first historical proof after the open; each timed. */
typedef struct reopen_stats {
    double first_s, close_s, open_s, after_s, after_cpu_s, after200_s;
} reopen_stats;

/* Historical proofs of keys first .. first + cnt - 1 at height hl + 1; returns the seconds. */
static double
hist_proofs(const pb_db *d, uint64_t first, uint64_t cnt)
{
    uint8_t key[16];
    double t = now_s();
    for (uint64_t i = first; i < first + cnt; i++) {
        uint8_t *p;
        size_t len;
        make_key(i % d->nupd, key);
        int rc = qmdb_prove(d->db, key, 16, d->hl + 1, &p, &len);
        if (rc != 0)
            die("prove (historical)", rc);
        qmdb_proof_free(p);
    }
    return now_s() - t;
}

static void
bench_reopen(const pb_cfg *c, pb_db *d, reopen_stats *r)
{
    r->first_s = hist_proofs(d, 0, 200); /* every shard's history cache */
    double t = now_s();
    int rc = qmdb_close(d->db);
    if (rc)
        die("close", rc);
    r->close_s = now_s() - t;
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags |= QMDB_OPEN_FAST;
    t = now_s();
    if ((rc = qmdb_open(c->dir, &o, &d->db)) != 0)
        die(qmdb_open_error(), rc);
    r->open_s = now_s() - t;
    double c0 = cpu_s();
    r->after_s = hist_proofs(d, 0, 1);
    r->after_cpu_s = cpu_s() - c0;
    r->after200_s = hist_proofs(d, 1, 199) + r->after_s;
    printf("reopen      200 historical proofs (every shard's cache) %.4f s, close %.2f s, fast "
           "open %.2f s, first historical proof after the open %.4f s (CPU %.4f s), 200 after "
           "the open %.4f s\n",
           r->first_s, r->close_s, r->open_s, r->after_s, r->after_cpu_s, r->after200_s);
}

int
main(int argc, char **argv)
{
    pb_cfg c = {.n = 1000000,
                .m = 100000,
                .block_ops = 100000,
                .mkeys = 1000,
                .msets = 20,
                .wops = "1000,10000",
                .dir = "./proof-bench-db"};
    int st = parse_args(&c, argc, argv);
    if (st >= 0)
        return st;
    pb_db d;
    memset(&d, 0, sizeof(d));
    load_db(&c, &d);
    reopen_stats rs = {0, 0, 0, 0, 0, 0};
    if (c.reopen)
        bench_reopen(&c, &d, &rs);

    kind_stats ks[3] = {
        {"inclusion", 0, 0, 0, 0, 0}, {"exclusion", 0, 0, 0, 0, 0}, {"historical", 0, 0, 0, 0, 0}};
    uint64_t m = c.m;
    uint8_t **proofs = calloc(m, sizeof(uint8_t *));
    size_t *lens = calloc(m, sizeof(size_t));
    uint64_t *ids = calloc(m, sizeof(uint64_t));
    uint64_t *hts = calloc(m, sizeof(uint64_t));
    if (!proofs || !lens || !ids || !hts)
        die("alloc", -12);
    double hist_first_s = 0;
    for (int kind = 0; kind < 3; kind++)
        if (bench_kind(&c, &d, kind, &ks[kind], proofs, lens, ids, hts, &hist_first_s))
            return 1;
    printf("history cache warm-up (200 historical proofs, building every shard's cache): %.2f s\n",
           hist_first_s);
    multi_stats mm[2];
    for (int hist = 0; hist < 2; hist++)
        if (bench_multi(&c, &d, hist, &mm[hist]))
            return 1;
    double incl_bytes = ks[0].bytes / (double)ks[0].n, hist_bytes = ks[2].bytes / (double)ks[2].n;
    report_multi("multi-key", &mm[0], incl_bytes);
    report_multi("multi-hist", &mm[1], hist_bytes);
    wit_stats ws[8];
    int nws = 0;
    uint64_t next_new = c.n * 100;
    for (const char *q = c.wops; *q && nws < 8;) {
        uint64_t nops = strtoull(q, NULL, 10);
        if (nops == 0)
            break;
        if (bench_witness(&d, &c, nops, &next_new, &ws[nws]))
            return 1;
        printf("witness     block of %6" PRIu64 " ops  build %7.3f s  verify %7.3f s  %9.0f bytes "
               "(%.0f bytes/op)\n",
               nops, ws[nws].build_s, ws[nws].verify_s, ws[nws].bytes, ws[nws].bytes / nops);
        nws++;
        q = strchr(q, ',');
        if (!q)
            break;
        q++;
    }
    printf("{\"entries\": %" PRIu64, c.n);
    for (int kind = 0; kind < 3; kind++)
        printf(", \"%s\": {\"proofs\": %" PRIu64 ", \"gen_per_s\": %.0f, \"gen_per_cpu_s\": %.0f, "
               "\"verify_per_s\": %.0f, \"bytes_per_proof\": %.1f}",
               ks[kind].name, ks[kind].n, ks[kind].n / ks[kind].gen_s,
               ks[kind].n / ks[kind].gen_cpu_s, ks[kind].n / ks[kind].ver_s,
               ks[kind].bytes / (double)ks[kind].n);
    for (int hist = 0; hist < 2; hist++)
        printf(", \"%s\": {\"proofs\": %" PRIu64 ", \"keys_per_proof\": %" PRIu64
               ", \"gen_keys_per_s\": %.0f, \"verify_keys_per_s\": %.0f, \"bytes_per_key\": %.1f, "
               "\"ratio_to_single\": %.3f}",
               hist ? "multi_historical" : "multi_key", mm[hist].sets, c.mkeys,
               mm[hist].keys / mm[hist].gen_s, mm[hist].keys / mm[hist].ver_s,
               mm[hist].bytes / (double)mm[hist].keys,
               mm[hist].bytes / (double)mm[hist].keys / (hist ? hist_bytes : incl_bytes));
    for (int i = 0; i < nws; i++)
        printf(", \"witness_%" PRIu64
               "\": {\"build_s\": %.3f, \"verify_s\": %.3f, \"bytes\": %.0f, "
               "\"bytes_per_op\": %.0f}",
               ws[i].ops, ws[i].build_s, ws[i].verify_s, ws[i].bytes, ws[i].bytes / ws[i].ops);
    if (c.reopen)
        printf(", \"reopen\": {\"hist200_s\": %.4f, \"close_s\": %.2f, \"open_s\": %.2f, "
               "\"first_hist_after_open_s\": %.4f, \"first_hist_after_open_cpu_s\": %.4f, "
               "\"hist200_after_open_s\": %.4f}",
               rs.first_s, rs.close_s, rs.open_s, rs.after_s, rs.after_cpu_s, rs.after200_s);
    printf(", \"history_warmup_s\": %.2f, \"load_s\": %.1f}\n", hist_first_s, d.load_s);
    free(proofs);
    free(lens);
    free(ids);
    free(hts);
    qmdb_close(d.db);
    if (!c.keep) {
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c.dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", c.dir);
    }
    return 0;
}
