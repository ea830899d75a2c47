/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_model_random.c -- randomized differential test: drives the real engine through the
 * public header (include/qmdb.h) and the reference model (refmodel.c) side by side and
 * asserts, block by block, that the state roots are byte-identical and that qmdb_get
 * agrees with the model on a sample of present and absent keys. It also closes and reopens
 * the engine every ~10 blocks, checks stored historical roots, statistics, and the
 * rejection of invalid puts and bad heights. Half the blocks start with a qmdb_get_many of keys
 * the block then favours (read_ahead).
 *
 * Rollbacks: after 5% of the blocks the engine rolls back a random number of blocks
 * (qmdb_rollback; 1-6, or up to 40 one time in four) and the run continues with other
 * blocks; the model is replayed from genesis to the target height (the test keeps every
 * block's model calls) and the engine is checked against it: roots (latest and earlier),
 * values, statistics, proofs of sampled keys, sometimes after a reopen; rolling back to the
 * next height is QMDB_BAD_HEIGHT and to the latest a no-op. The compact-1-1-1 configuration
 * keeps 16 blocks of history, so deep rollbacks may be refused as pruned (QMDB_PRUNED, which
 * must then change nothing and happen only beyond the history).
 *
 * Configurations: default parameters; compact_thres=1 with 1/1; compact_thres=1 with 7/10
 * (update-heavy, long enough that compaction starts; asserted via the model's counter).
 *
 * Environment: QMDB_TEST_SEED (default fixed) and QMDB_TEST_OPS (operations per
 * configuration, default 20000; the 7/10 configuration runs 1.6x that).
 * On a failure it prints the seed, the config, the block, the first differing shard and
 * the model's entries of that block, and writes the op script of the run so far
 * (FORMAT.md §8; each commit line carries the model's root as a comment) to
 * /tmp/qmdb-model-fail-<seed>-<config>.ops for `qmdb apply`.
 *
 * qmdb_batch_tx is mirrored with the FORMAT.md §8 rule: the first call of a batch before
 * any operation names tx 0, every other call opens the next index (the engine does this).
 */
#include "qmdb.h"
#include "refmodel.h"

#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- failure reporting ---------------------------------------------------------------- */

static uint64_t g_seed;
static const char *g_cfg = "?";
static uint64_t g_height;
static char g_dir[64];
static char *g_log;
static size_t g_log_len, g_log_cap;

static int
rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void
remove_tmpdir(void)
{
    if (g_dir[0])
        nftw(g_dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    g_dir[0] = 0;
}

static void log_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void
log_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (g_log_len + (size_t)n + 1 > g_log_cap) {
        g_log_cap = (g_log_len + (size_t)n + 1) * 2;
        g_log = realloc(g_log, g_log_cap);
        if (g_log == NULL)
            abort();
    }
    va_start(ap, fmt);
    vsnprintf(g_log + g_log_len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    g_log_len += (size_t)n;
}

static void
log_hex(const uint8_t *p, size_t n)
{
    static const char d[] = "0123456789abcdef";
    if (g_log_len + 2 * n + 1 > g_log_cap) {
        g_log_cap = (g_log_len + 2 * n + 1) * 2;
        g_log = realloc(g_log, g_log_cap);
        if (g_log == NULL)
            abort();
    }
    for (size_t i = 0; i < n; i++) {
        g_log[g_log_len++] = d[p[i] >> 4];
        g_log[g_log_len++] = d[p[i] & 15];
    }
    g_log[g_log_len] = 0;
}

static void die(void) __attribute__((noreturn));
static void
die(void)
{
    char path[128];
    snprintf(path, sizeof path, "/tmp/qmdb-model-fail-%" PRIu64 "-%s.ops", g_seed, g_cfg);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "# seed %" PRIu64 " config %s (failure in block %" PRIu64 ")\n", g_seed, g_cfg,
                g_height);
        if (g_log)
            fwrite(g_log, 1, g_log_len, f);
        fclose(f);
        fprintf(stderr, "op script so far written to %s\n", path);
    }
    fprintf(stderr,
            "FAILED: seed %" PRIu64 " (rerun with QMDB_TEST_SEED=%" PRIu64
            "), config %s, block %" PRIu64 "\n",
            g_seed, g_seed, g_cfg, g_height);
    remove_tmpdir();
    exit(1);
}

#define ASSERT(cond)                                                                  \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: ASSERT failed: %s\n", __FILE__, __LINE__, #cond); \
            die();                                                                    \
        }                                                                             \
    } while (0)

#define ASSERT_EQ_INT(a, b)                                                                      \
    do {                                                                                         \
        long long a_ = (long long)(a), b_ = (long long)(b);                                      \
        if (a_ != b_) {                                                                          \
            fprintf(stderr, "%s:%d: ASSERT %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, \
                    #a, #b, a_, b_);                                                             \
            die();                                                                               \
        }                                                                                        \
    } while (0)

#define ASSERT_OK(call)                                                                     \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        if (rc_ != QMDB_OK) {                                                               \
            fprintf(stderr, "%s:%d: %s returned %d (%s)\n", __FILE__, __LINE__, #call, rc_, \
                    qmdb_strerror(rc_));                                                    \
            die();                                                                          \
        }                                                                                   \
    } while (0)

static void
print_hash(FILE *f, const char *label, const uint8_t h[32])
{
    fprintf(f, "%s", label);
    for (int i = 0; i < 32; i++)
        fprintf(f, "%02x", h[i]);
    fputc('\n', f);
}

/* ---- PRNG (splitmix64) ---------------------------------------------------------------- */

static uint64_t g_rng;

static uint64_t
rnd(void)
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi] */
static uint64_t
rnd_range(uint64_t lo, uint64_t hi)
{
    return lo + rnd() % (hi - lo + 1);
}
static int
chance(unsigned percent)
{
    return rnd() % 100 < percent;
}

static void
rnd_bytes(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rnd();
}

/* ---- key pool ------------------------------------------------------------------------- */

typedef struct {
    uint8_t k[255];
    uint8_t kl;
} key_t_;

static key_t_ *g_pool;
static size_t g_npool, g_cappool;

static void
new_key(key_t_ *k)
{
    unsigned r = (unsigned)rnd_range(0, 99);
    k->kl = (uint8_t)(r < 5 ? 255 : r < 12 ? rnd_range(1, 3) : rnd_range(1, 64));
    rnd_bytes(k->k, k->kl);
}

static void
pool_add(const key_t_ *k)
{
    if (g_npool == g_cappool) {
        g_cappool = g_cappool ? g_cappool * 2 : 1024;
        g_pool = realloc(g_pool, g_cappool * sizeof *g_pool);
        if (g_pool == NULL)
            abort();
    }
    g_pool[g_npool++] = *k;
}

/* The keys read by qmdb_get_many before this block's operations (read_ahead), which
 * pick_key then prefers. */
#define HOT_MAX 48
static key_t_ g_hot[HOT_MAX];
static size_t g_nhot;

/* Picks a pool key whose presence in the model equals want_present, often one read before
 * the block; falls back to a fresh key (absent) or any pool key. */
static key_t_
pick_key(rm *m, int want_present)
{
    key_t_ k;
    if (g_nhot > 0 && chance(30)) {
        for (int tries = 0; tries < 8; tries++) {
            k = g_hot[rnd() % g_nhot];
            if (rm_get(m, k.k, k.kl, NULL, NULL) == want_present)
                return k;
        }
    }
    for (int tries = 0; tries < 32 && g_npool > 0; tries++) {
        k = g_pool[rnd() % g_npool];
        if (rm_get(m, k.k, k.kl, NULL, NULL) == want_present)
            return k;
    }
    if (!want_present || g_npool == 0) {
        new_key(&k);
        pool_add(&k);
        return k;
    }
    return g_pool[rnd() % g_npool];
}

/* ---- driver --------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    uint64_t thres;
    uint32_t ratio, div;
    double ops_factor;
    /* op weights (percent): create, update, delete present, delete absent, repeat pair */
    unsigned w_create, w_update, w_del, w_del_absent, w_repeat;
    int expect_compaction; /* 1: must compact; 0: must not */
    uint64_t history;      /* history_blocks (0: the default); small values make pruning
                              bound the rollback window */
} config;

/* The model-side calls of one block, kept for replaying the model to an earlier height
 * after a qmdb_rollback. */
typedef struct {
    char op; /* 'p' put, 'd' delete, 't' rm_tx */
    key_t_ k;
    uint8_t *val;
    size_t vl;
} mop;

typedef struct {
    mop *ops;
    size_t n, cap;
} mblock;

typedef struct {
    qmdb_db *db;
    qmdb_batch *b;
    rm *m;
    size_t batch_ops;      /* accepted put/del calls in the current batch */
    size_t batch_tx_calls; /* qmdb_batch_tx calls on the current batch */
    size_t ops_total;
    uint64_t compact_at_open;
    uint8_t (*roots)[32]; /* roots[h] for every committed height */
    size_t nroots;
    const config *cfg;
    mblock *blocks; /* blocks[h]: the model calls of block h (1..height) */
    size_t nblocks, capblocks;
    unsigned rollbacks, rolled_back_blocks, refused;
    uint64_t max_height; /* the highest height ever committed (rolled-back ones included) */
} run;

static void
mblock_add(run *r, char op, const key_t_ *k, const uint8_t *val, size_t vl)
{
    mblock *b = &r->blocks[r->nblocks - 1];
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->ops = realloc(b->ops, b->cap * sizeof *b->ops);
        if (b->ops == NULL)
            abort();
    }
    mop *o = &b->ops[b->n++];
    memset(o, 0, sizeof *o);
    o->op = op;
    if (k)
        o->k = *k;
    if (val) {
        o->val = malloc(vl);
        if (o->val == NULL)
            abort();
        memcpy(o->val, val, vl);
        o->vl = vl;
    }
}

static void
mblocks_truncate(run *r, size_t n)
{
    while (r->nblocks > n) {
        mblock *b = &r->blocks[--r->nblocks];
        for (size_t i = 0; i < b->n; i++)
            free(b->ops[i].val);
        free(b->ops);
        memset(b, 0, sizeof *b);
    }
}

/* Starts the record of block h (blocks[0] stands for genesis). */
static void
mblocks_begin(run *r, uint64_t h)
{
    mblocks_truncate(r, h);
    if (h + 1 > r->capblocks) {
        size_t old = r->capblocks;
        r->capblocks = (h + 1) * 2;
        r->blocks = realloc(r->blocks, r->capblocks * sizeof *r->blocks);
        if (r->blocks == NULL)
            abort();
        memset(r->blocks + old, 0, (r->capblocks - old) * sizeof *r->blocks);
    }
    memset(&r->blocks[h], 0, sizeof r->blocks[h]);
    r->nblocks = h + 1;
}

static uint8_t g_val[5000];

static void
do_put(run *r, const key_t_ *k)
{
    size_t vl = chance(1) ? rnd_range(4000, 4200) : rnd_range(1, 100);
    rnd_bytes(g_val, vl);
    ASSERT_OK(qmdb_batch_put(r->b, k->k, k->kl, g_val, vl));
    ASSERT_EQ_INT(rm_put(r->m, k->k, k->kl, g_val, vl), 0);
    mblock_add(r, 'p', k, g_val, vl);
    r->batch_ops++;
    r->ops_total++;
    log_printf("put ");
    log_hex(k->k, k->kl);
    log_printf(" ");
    log_hex(g_val, vl);
    log_printf("\n");
}

static void
do_del(run *r, const key_t_ *k)
{
    ASSERT_OK(qmdb_batch_del(r->b, k->k, k->kl));
    ASSERT_EQ_INT(rm_del(r->m, k->k, k->kl), 0);
    mblock_add(r, 'd', k, NULL, 0);
    r->batch_ops++;
    r->ops_total++;
    log_printf("del ");
    log_hex(k->k, k->kl);
    log_printf("\n");
}

/* qmdb_batch_tx follows FORMAT.md §8: the first call of a batch, before any operation,
 * only names tx 0; every other call opens the next index (so tx, tx before the first op
 * leaves tx 0 empty, and it still counts for versions). */
static void
do_tx(run *r)
{
    ASSERT_OK(qmdb_batch_tx(r->b));
    if (r->batch_ops > 0 || r->batch_tx_calls > 0) {
        rm_tx(r->m);
        mblock_add(r, 't', NULL, NULL, 0);
    }
    r->batch_tx_calls++;
    log_printf("tx\n");
}

static void
one_op(run *r, const config *c)
{
    unsigned total = c->w_create + c->w_update + c->w_del + c->w_del_absent + c->w_repeat;
    unsigned x = (unsigned)rnd_range(0, total - 1);
    key_t_ k;
    if (x < c->w_create) {
        k = pick_key(r->m, 0);
        if (chance(50)) { /* a brand-new key rather than a deleted one */
            new_key(&k);
            pool_add(&k);
        }
        do_put(r, &k);
    } else if ((x -= c->w_create) < c->w_update) {
        k = pick_key(r->m, 1);
        do_put(r, &k);
    } else if ((x -= c->w_update) < c->w_del) {
        k = pick_key(r->m, 1);
        do_del(r, &k);
    } else if ((x -= c->w_del) < c->w_del_absent) {
        if (chance(50)) {
            new_key(&k); /* never seen */
        } else {
            k = pick_key(r->m, 0);
        }
        do_del(r, &k);
    } else {
        /* the same key twice in one transaction: put+del, del+put or put+put */
        k = pick_key(r->m, (int)chance(50));
        switch (rnd() % 3) {
        case 0:
            do_put(r, &k);
            do_del(r, &k);
            break;
        case 1:
            do_del(r, &k);
            do_put(r, &k);
            break;
        default:
            do_put(r, &k);
            do_put(r, &k);
            break;
        }
    }
}

/* Reads a group of keys with qmdb_get_many before the block's operations, as a block
 * executor does: pool keys and a few fresh ones, checked against the model (still at the
 * previous block's state). The reads leave their entries (and absent keys' predecessors) in
 * the shards' warm caches and mark the keys read, so the prefetch stage skips their puts
 * (prefetch.c). The block's operations then favour these keys (pick_key), so the update stage
 * meets keys that a read found and that earlier operations of the same block created,
 * updated, deleted or moved (as a predecessor, or by compaction); the roots and values checked
 * after the commit show that what the reads cached never stands in for the key's state. */
static void
read_ahead(run *r)
{
    static uint8_t bufs[HOT_MAX][128];
    qmdb_read rd[HOT_MAX];
    g_nhot = rnd_range(8, HOT_MAX);
    for (size_t i = 0; i < g_nhot; i++) {
        if (g_npool == 0 || chance(8)) {
            new_key(&g_hot[i]);
            pool_add(&g_hot[i]);
        } else {
            g_hot[i] = g_pool[rnd() % g_npool];
        }
        rd[i] = (qmdb_read){.key = g_hot[i].k, .klen = g_hot[i].kl, .buf = bufs[i], .cap = 128};
    }
    ASSERT_OK(qmdb_get_many(r->db, rd, g_nhot));
    for (size_t i = 0; i < g_nhot; i++) {
        const uint8_t *mv = NULL;
        size_t mvl = 0;
        int present = rm_get(r->m, g_hot[i].k, g_hot[i].kl, &mv, &mvl);
        if (!present) {
            ASSERT_EQ_INT(rd[i].rc, QMDB_NOTFOUND);
        } else if (mvl > 128) {
            ASSERT_EQ_INT(rd[i].rc, QMDB_BUFFER_TOO_SMALL);
            ASSERT_EQ_INT(rd[i].vlen, mvl);
        } else {
            ASSERT_EQ_INT(rd[i].rc, QMDB_OK);
            ASSERT(rd[i].vlen == mvl && memcmp(bufs[i], mv, mvl) == 0);
        }
    }
}

static void
check_get(run *r, const key_t_ *k)
{
    const uint8_t *mv = NULL;
    size_t mvl = 0, vl = 12345;
    static uint8_t buf[5000];
    int present = rm_get(r->m, k->k, k->kl, &mv, &mvl);
    int rc = qmdb_get(r->db, k->k, k->kl, buf, sizeof buf, &vl);
    if (!present) {
        if (rc != QMDB_NOTFOUND) {
            fprintf(stderr, "qmdb_get of an absent key (len %u) returned %d\n", k->kl, rc);
            die();
        }
        return;
    }
    if (rc != QMDB_OK || vl != mvl || memcmp(buf, mv, mvl) != 0) {
        fprintf(stderr, "qmdb_get (key len %u) returned %d vlen %zu, model vlen %zu\n", k->kl, rc,
                vl, mvl);
        die();
    }
    if (mvl > 1) { /* a too-small buffer reports the needed length */
        vl = 0;
        rc = qmdb_get(r->db, k->k, k->kl, buf, mvl - 1, &vl);
        ASSERT_EQ_INT(rc, QMDB_BUFFER_TOO_SMALL);
        ASSERT_EQ_INT(vl, mvl);
    }
}

static void
check_sample(run *r, unsigned n)
{
    for (unsigned i = 0; i < n && g_npool > 0; i++)
        check_get(r, &g_pool[rnd() % g_npool]);
    key_t_ k;
    new_key(&k); /* almost surely absent */
    check_get(r, &k);
}

static void
check_stats(run *r)
{
    qmdb_stats st = QMDB_STATS_INIT;
    ASSERT_OK(qmdb_stat(r->db, &st));
    uint64_t live = 0, total = 0;
    for (unsigned s = 0; s < RM_SHARDS; s++) {
        live += rm_live(r->m, s);
        total += rm_next_sn(r->m, s);
    }
    ASSERT_EQ_INT(st.height, rm_height(r->m));
    ASSERT_EQ_INT(st.live_with_sentries, live);
    ASSERT_EQ_INT(st.live_entries, live - 65536);
    ASSERT_EQ_INT(st.total_entries, total);
    ASSERT_EQ_INT(st.compactions, rm_compactions(r->m) - r->compact_at_open);
}

/* On a root mismatch: print the first differing shard and the model's entries of it. */
static void
explain_mismatch(run *r, const uint8_t got[32], const uint8_t want[32])
{
    fprintf(stderr, "state root mismatch at height %" PRIu64 "\n", g_height);
    print_hash(stderr, "  engine: ", got);
    print_hash(stderr, "  model:  ", want);
    for (unsigned s = 0; s < RM_SHARDS; s++) {
        uint8_t es[32], ms[32];
        int rc = qmdb_shard_root(r->db, s, es);
        rm_shard_root(r->m, s, ms);
        if (rc != QMDB_OK || memcmp(es, ms, 32) != 0) {
            fprintf(stderr, "first differing shard: %u (qmdb_shard_root rc %d)\n", s, rc);
            print_hash(stderr, "  engine shard root: ", es);
            print_hash(stderr, "  model shard root:  ", ms);
            fprintf(stderr,
                    "  model: next_sn %" PRIu64 " live %" PRIu64 " sn_start %" PRIu64
                    "; entries appended in this block (height shard sn kind "
                    "file_pos hash hex):\n",
                    rm_next_sn(r->m, s), rm_live(r->m, s), rm_sn_start(r->m, s));
            rm_dump_entries(r->m, s, rm_block_start_sn(r->m, s), stderr);
            break;
        }
    }
}

static void
commit_block(run *r, uint64_t h)
{
    uint8_t got[32], want[32], again[32];
    int rc = qmdb_commit(r->db, h, r->b, got);
    if (rc != QMDB_OK) {
        fprintf(stderr, "qmdb_commit(%" PRIu64 ") = %d (%s): %s\n", h, rc, qmdb_strerror(rc),
                qmdb_last_error(r->db));
        die();
    }
    ASSERT_EQ_INT(rm_commit(r->m, want), 0);
    log_printf("commit # model root ");
    log_hex(want, 32);
    log_printf("\n");
    if (memcmp(got, want, 32) != 0) {
        explain_mismatch(r, got, want);
        die();
    }
    ASSERT_EQ_INT(qmdb_height(r->db), h);
    ASSERT_OK(qmdb_root(r->db, UINT64_MAX, again));
    ASSERT(memcmp(again, want, 32) == 0);
    if (h > r->max_height)
        r->max_height = h;
    if (r->nroots <= h) {
        r->roots = realloc(r->roots, (h + 64) * 32);
        ASSERT(r->roots != NULL);
        r->nroots = h + 64;
    }
    memcpy(r->roots[h], want, 32);
}

static void
reopen(run *r)
{
    static unsigned nreopen;
    ASSERT_OK(qmdb_close(r->db));
    r->db = NULL;
    /* Every other reopen is a fast one: with the hybrid indexer it must resume every shard's
     * index from the checkpoint written at close (QMDB_INDEXER=hybrid runs this test). */
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = (nreopen++ & 1) ? QMDB_OPEN_FAST : 0;
    int rc = qmdb_open(g_dir, &o, &r->db);
    if (rc != QMDB_OK) {
        fprintf(stderr, "qmdb_open: %d (%s): %s\n", rc, qmdb_strerror(rc), qmdb_open_error());
        die();
    }
    const char *ix = getenv("QMDB_INDEXER");
    if (ix && strcmp(ix, "hybrid") == 0) {
        qmdb_stats st = QMDB_STATS_INIT;
        ASSERT_OK(qmdb_stat(r->db, &st));
        ASSERT_EQ_INT(st.indexer, QMDB_INDEXER_HYBRID);
        ASSERT_EQ_INT(st.index_resumed_shards, (o.flags & QMDB_OPEN_FAST) ? 16 : 0);
    }
    r->compact_at_open = rm_compactions(r->m);
    uint8_t root[32];
    ASSERT_EQ_INT(qmdb_height(r->db), rm_height(r->m));
    ASSERT_OK(qmdb_root(r->db, UINT64_MAX, root));
    ASSERT(memcmp(root, r->roots[rm_height(r->m)], 32) == 0);
}

/* Proofs of a sample of keys about the latest height, verified against its root with the
 * model's answer (inclusion of its value, or exclusion). */
static void
check_proofs(run *r, unsigned n)
{
    uint64_t h = rm_height(r->m);
    for (unsigned i = 0; i < n && g_npool > 0; i++) {
        const key_t_ *k = &g_pool[rnd() % g_npool];
        const uint8_t *mv = NULL;
        size_t mvl = 0;
        int present = rm_get(r->m, k->k, k->kl, &mv, &mvl);
        uint8_t *pf = NULL;
        size_t pl = 0;
        ASSERT_OK(qmdb_prove(r->db, k->k, k->kl, UINT64_MAX, &pf, &pl));
        uint64_t ph = 0;
        const char *why = NULL;
        int rc = qmdb_proof_verify(pf, pl, r->roots[h], k->k, k->kl, present ? mv : NULL,
                                   present ? mvl : 0, h, &ph, &why);
        qmdb_proof_free(pf);
        if (rc != QMDB_OK) {
            fprintf(stderr, "proof of a %s key at height %" PRIu64 " fails: %s\n",
                    present ? "present" : "absent", h, why ? why : "?");
            die();
        }
    }
}

/* The model of height h, replayed from genesis with the recorded model calls. */
static void
model_replay(run *r, uint64_t h)
{
    rm_free(r->m);
    r->m = rm_new(r->cfg->thres, r->cfg->ratio, r->cfg->div);
    ASSERT(r->m != NULL);
    for (uint64_t b = 1; b <= h; b++) {
        ASSERT_EQ_INT(rm_begin_block(r->m, b), 0);
        const mblock *mb = &r->blocks[b];
        for (size_t i = 0; i < mb->n; i++) {
            const mop *o = &mb->ops[i];
            if (o->op == 'p')
                ASSERT_EQ_INT(rm_put(r->m, o->k.k, o->k.kl, o->val, o->vl), 0);
            else if (o->op == 'd')
                ASSERT_EQ_INT(rm_del(r->m, o->k.k, o->k.kl), 0);
            else
                rm_tx(r->m);
        }
        ASSERT_EQ_INT(rm_commit(r->m, NULL), 0);
    }
    mblocks_truncate(r, h + 1);
}

/* Rolls the engine back a random number of blocks (qmdb_rollback) and checks it against the
 * model of that height: roots (latest and historical), values, statistics, proofs, and
 * sometimes a reopen. Depths beyond the history setting may be refused (QMDB_PRUNED), and
 * must then change nothing. */
static void
do_rollback(run *r, uint64_t *hp)
{
    uint64_t h = *hp;
    uint8_t root[32];
    ASSERT_EQ_INT(qmdb_rollback(r->db, h + 1), QMDB_BAD_HEIGHT);
    ASSERT_OK(qmdb_rollback(r->db, h)); /* the latest: nothing to do */
    uint64_t depth = chance(25) ? rnd_range(1, h < 40 ? h : 40) : rnd_range(1, h < 6 ? h : 6);
    uint64_t to = h - depth, hist = r->cfg->history ? r->cfg->history : 100000;
    int rc = qmdb_rollback(r->db, to);
    if (rc == QMDB_PRUNED) {
        /* Only beyond the history, counted from the highest height ever committed (pruning
         * done there is not undone by a rollback). */
        ASSERT(r->max_height - to > hist);
        ASSERT_EQ_INT(qmdb_height(r->db), h);
        ASSERT_OK(qmdb_root(r->db, UINT64_MAX, root));
        ASSERT(memcmp(root, r->roots[h], 32) == 0);
        check_sample(r, 8);
        r->refused++;
        return;
    }
    if (rc != QMDB_OK) {
        fprintf(stderr, "qmdb_rollback(%" PRIu64 ") at height %" PRIu64 " = %d (%s): %s\n", to, h,
                rc, qmdb_strerror(rc), qmdb_last_error(r->db));
        die();
    }
    log_printf("# rollback to %" PRIu64 "\n", to);
    r->rollbacks++;
    r->rolled_back_blocks += (unsigned)depth;
    g_height = to;
    model_replay(r, to);
    rm_state_root(r->m, root);
    ASSERT(memcmp(root, r->roots[to], 32) == 0);
    ASSERT_EQ_INT(qmdb_height(r->db), to);
    ASSERT_OK(qmdb_root(r->db, UINT64_MAX, root));
    ASSERT(memcmp(root, r->roots[to], 32) == 0);
    ASSERT_EQ_INT(qmdb_root(r->db, to + 1, root), QMDB_NOTFOUND);
    for (unsigned i = 0; i < 4; i++) {
        uint64_t hh = rnd_range(0, to);
        ASSERT_OK(qmdb_root(r->db, hh, root));
        ASSERT(memcmp(root, r->roots[hh], 32) == 0);
    }
    qmdb_stats st = QMDB_STATS_INIT;
    ASSERT_OK(qmdb_stat(r->db, &st));
    r->compact_at_open = rm_compactions(r->m) - st.compactions;
    check_stats(r);
    check_sample(r, 48);
    check_proofs(r, 8);
    if (chance(30)) {
        reopen(r);
        check_sample(r, 24);
        check_stats(r);
        check_proofs(r, 4);
    }
    *hp = to;
}

static int
run_config(const config *c, size_t ops_target)
{
    run r;
    memset(&r, 0, sizeof r);
    r.cfg = c;
    g_cfg = c->name;
    g_height = 0;
    g_npool = 0;
    g_log_len = 0;
    if (g_log)
        g_log[0] = 0;
    snprintf(g_dir, sizeof g_dir, "/tmp/qmdb-model-XXXXXX");
    ASSERT(mkdtemp(g_dir) != NULL);
    log_printf("# qmdb init --compact-thres %" PRIu64 " --utilization %u/%u\n", c->thres, c->ratio,
               c->div);

    qmdb_options opt;
    qmdb_options_init(&opt);
    opt.compact_thres = c->thres;
    opt.utilization_ratio = c->ratio;
    opt.utilization_div = c->div;
    if (c->history)
        opt.history_blocks = c->history;
    ASSERT_OK(qmdb_create(g_dir, &opt));
    int rc = qmdb_open(g_dir, &opt, &r.db);
    if (rc != QMDB_OK) {
        fprintf(stderr, "qmdb_open: %d (%s): %s\n", rc, qmdb_strerror(rc), qmdb_open_error());
        die();
    }
    r.m = rm_new(c->thres, c->ratio, c->div);
    ASSERT(r.m != NULL);
    ASSERT_OK(qmdb_batch_new(&r.b));

    /* genesis */
    r.roots = calloc(64, 32);
    ASSERT(r.roots != NULL);
    r.nroots = 64;
    rm_state_root(r.m, r.roots[0]);
    uint8_t root[32];
    ASSERT_OK(qmdb_root(r.db, UINT64_MAX, root));
    ASSERT(memcmp(root, r.roots[0], 32) == 0);
    ASSERT_EQ_INT(qmdb_height(r.db), 0);

    /* rejection of invalid puts: nothing is added to the batch */
    uint8_t kbuf[300] = {1}, vbuf[4] = {1, 2, 3, 4};
    ASSERT_EQ_INT(qmdb_batch_put(r.b, kbuf, 0, vbuf, 1), QMDB_INVALID);
    ASSERT_EQ_INT(qmdb_batch_put(r.b, kbuf, 5, vbuf, 0), QMDB_INVALID);
    ASSERT_EQ_INT(qmdb_batch_put(r.b, kbuf, 256, vbuf, 4), QMDB_INVALID);
    ASSERT_EQ_INT(qmdb_batch_ops(r.b), 0);
    ASSERT_EQ_INT(rm_put(r.m, kbuf, 0, vbuf, 1), -1); /* (model not in a block: -1 too) */

    /* a commit at the wrong height is refused and changes nothing */
    ASSERT_EQ_INT(qmdb_commit(r.db, 2, r.b, root), QMDB_BAD_HEIGHT);
    ASSERT_EQ_INT(qmdb_height(r.db), 0);

    uint64_t h = 0;
    unsigned blocks_since_reopen = 0, reopens = 0;
    /* A configuration that must compact runs on until it has (rollbacks may undo much of
     * the work), for up to four times its operations. */
    while (r.ops_total < ops_target ||
           (c->expect_compaction && rm_compactions(r.m) == 0 && r.ops_total < 4 * ops_target)) {
        h++;
        g_height = h;
        qmdb_batch_reset(r.b);
        r.batch_ops = 0;
        r.batch_tx_calls = 0;
        ASSERT_EQ_INT(rm_begin_block(r.m, h), 0);
        mblocks_begin(&r, h);
        log_printf("block %" PRIu64 "\n", h);
        g_nhot = 0;
        if (chance(50))
            read_ahead(&r);
        if (chance(10))
            do_tx(&r); /* names tx 0 only */
        if (chance(3))
            do_tx(&r); /* then (if the first did) leaves tx 0 empty */
        if (!chance(4)) {
            size_t n_ops = rnd_range(50, 200), done = 0;
            int first = 1;
            while (done < n_ops) {
                if (!first)
                    do_tx(&r);
                first = 0;
                size_t in_tx = chance(8) ? 0 : rnd_range(1, 12);
                for (size_t i = 0; i < in_tx; i++)
                    one_op(&r, c);
                done += in_tx ? in_tx : 1;
                if (chance(3)) { /* invalid puts mid-block: rejected, nothing added */
                    size_t before = qmdb_batch_ops(r.b);
                    ASSERT_EQ_INT(qmdb_batch_put(r.b, kbuf, 0, vbuf, 4), QMDB_INVALID);
                    ASSERT_EQ_INT(qmdb_batch_put(r.b, kbuf, 3, vbuf, 0), QMDB_INVALID);
                    ASSERT_EQ_INT(qmdb_batch_ops(r.b), before);
                }
            }
        } else if (chance(50)) {
            do_tx(&r); /* an empty block with empty transactions */
            do_tx(&r);
        }
        ASSERT_EQ_INT(qmdb_batch_ops(r.b), r.batch_ops);
        commit_block(&r, h);
        g_nhot = 0;
        check_sample(&r, 24);
        check_stats(&r);
        if (++blocks_since_reopen >= 8 + rnd() % 5) {
            reopen(&r);
            check_sample(&r, 24);
            check_stats(&r);
            blocks_since_reopen = 0;
            reopens++;
        }
        if (chance(5)) /* a chain reorganization: back some blocks, then other blocks */
            do_rollback(&r, &h);
        if (chance(10)) { /* a historical root */
            uint64_t hh = rnd_range(0, h);
            ASSERT_OK(qmdb_root(r.db, hh, root));
            ASSERT(memcmp(root, r.roots[hh], 32) == 0);
        }
    }
    ASSERT_EQ_INT(qmdb_root(r.db, h + 1, root), QMDB_NOTFOUND);

    /* final: every pool key, and all historical roots, after one more reopen */
    reopen(&r);
    for (size_t i = 0; i < g_npool; i++)
        check_get(&r, &g_pool[i]);
    for (uint64_t hh = 0; hh <= h; hh++) {
        ASSERT_OK(qmdb_root(r.db, hh, root));
        ASSERT(memcmp(root, r.roots[hh], 32) == 0);
    }
    /* the model's root from its leaves alone equals the memoized one */
    rm_set_scratch(r.m, 1);
    rm_state_root(r.m, root);
    ASSERT(memcmp(root, r.roots[h], 32) == 0);

    uint64_t comp = rm_compactions(r.m);
    if (c->expect_compaction)
        ASSERT(comp > 0);
    else
        ASSERT_EQ_INT(comp, 0);
    uint64_t entries = 0;
    for (unsigned s = 0; s < RM_SHARDS; s++)
        entries += rm_next_sn(r.m, s) - RM_SENTRIES_PER_SHARD;
    printf("  %-14s %zu ops, %" PRIu64 " blocks, %u reopens, %" PRIu64 " entries appended, %" PRIu64
           " compaction steps, %zu keys checked at end\n",
           c->name, r.ops_total, h, reopens, entries, comp, g_npool);
    printf("  %-14s %u rollbacks (%u blocks undone), %u refused as pruned\n", c->name, r.rollbacks,
           r.rolled_back_blocks, r.refused);
    ASSERT(r.rollbacks > 0);
    mblocks_truncate(&r, 0);
    free(r.blocks);

    qmdb_batch_free(r.b);
    ASSERT_OK(qmdb_close(r.db));
    rm_free(r.m);
    free(r.roots);
    remove_tmpdir();
    return 0;
}

int
main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *s = getenv("QMDB_TEST_SEED");
    g_seed = s && *s ? strtoull(s, NULL, 0) : 0x5eed2024ull;
    const char *o = getenv("QMDB_TEST_OPS");
    size_t ops = o && *o ? (size_t)strtoull(o, NULL, 0) : 20000;
    static const config cfgs[] = {
        {"default", 20000000, 7, 10, 1.0, 35, 30, 15, 10, 10, 0, 0},
        {"compact-1-1-1", 1, 1, 1, 1.0, 35, 30, 15, 10, 10, 1, 16},
        /* update-heavy so that dead entries reach 30% and compaction starts */
        {"compact-1-7-10", 1, 7, 10, 1.6, 12, 60, 16, 6, 6, 1, 0},
    };
    printf("test_model_random: seed %" PRIu64 "\n", g_seed);
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        g_rng = g_seed * 0x100000001b3ull + i;
        run_config(&cfgs[i], (size_t)(ops * cfgs[i].ops_factor));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("  %-14s %.2f s\n", cfgs[i].name,
               (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    }
    free(g_pool);
    free(g_log);
    printf("test_model_random: ok\n");
    return 0;
}
