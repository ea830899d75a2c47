/* SPDX-License-Identifier: Apache-2.0 */
/*
 * soak.c -- qmdb-soak, the long-running reliability driver behind scripts/soak.sh. It is
 * built with the tests but is not a CTest test (it runs for half an hour or more).
 *
 * What it owns: one database directory, DIR/qmdb-soak-PID (created here, deleted at the end
 * unless --keep); the deterministic workload (block h is a function of the seed, h and the
 * state at h-1: creates, updates, deletes, repeated keys, empty transactions and blocks, some
 * blocks of thousands of operations, values of 16 B to 8 KiB that name their key and the
 * write that made them); and the expected state (one 64-bit tag per key, rebuilt by
 * replaying blocks).
 *
 * Processes and threads:
 *   supervisor (the parent; one thread): keeps the model and the roots the writer reported,
 *     forks one writer incarnation at a time, ends each after a random 10-60 s with SIGKILL
 *     (one in eight with SIGUSR1, a clean stop that closes the database), then reopens the
 *     directory read-only (alternating the indexer, every 4th open a full verifying open)
 *     and checks: recovered height >= the last height reported durable; the root of every
 *     reported height in the history window (and a sample of older ones) equals the root
 *     reported at commit time; a sample of keys (every key at each 4th check, and keys that
 *     never exist) has the model's value. Prints progress on stderr every 30 s and the
 *     figures at the end; exit status 1 if anything that must be 0 is not, or if the
 *     writer's RSS grew by more than 5%.
 *   writer incarnation (a forked child; it keeps the model at the verified height and frees
 *     the rest of the supervisor's memory, so that its RSS is its own):
 *     main thread -- opens the database with this incarnation's indexer (memory and hybrid
 *       alternate), applies blocks at a capped rate with qmdb_submit + qmdb_wait or with
 *       qmdb_commit (per incarnation), calls qmdb_prune now and then, and writes to the pipe
 *       "C h root" only after the call that made h durable returned 0; also "O" (opened),
 *       "M" (RSS and statistics, every 2 s) and "S" (reader counts);
 *     reader threads (--readers, default 2) -- qmdb_get, qmdb_get_many, qmdb_get_committed
 *       and qmdb_get_many_committed on random keys, each result checked against the values
 *       the key may legally have had between the read's start and end (a per-key ring of
 *       its last writes, kept by the main thread under a mutex before each block is handed
 *       to the database); a qmdb_get_many_committed must also see one height for all keys.
 *
 * RSS (the anonymous RSS, RssAnon; see rss_kb): every incarnation reports it when it has
 * applied --rss-blocks blocks since
 * its open (the "warm" sample; the line also carries the engine's own DRAM figures and how
 * many shards' indexes the open loaded instead of rebuilding them by a log scan). Per
 * indexer, a start figure is the median of the first five samples of incarnations opened
 * after the first tenth of the run (three, or one, when there are fewer than ten, or six,
 * samples), the end figure the median of the last five; growth = end / start - 1. The
 * pass/fail criterion (rss_report) compares like with like: VmRSS minus the engine's
 * per-block caches, within each kind of open (log scan or loaded index) that has at least six
 * samples; the raw VmRSS growth over all samples is printed beside it.
 */
#include "qmdb.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- configuration ------------------------------------------------------------------- */

static struct {
    double minutes;
    char dir[512];
    bool keep;
    uint64_t seed;
    uint32_t nkeys;
    unsigned readers;
    double rate;                 /* blocks per second per writer (cap) */
    unsigned kill_min, kill_max; /* seconds */
    unsigned read_pause_us;
    uint64_t rss_blocks;
    uint64_t history;
} cfg = {
    .minutes = 30,
    .nkeys = 100000,
    .readers = 2,
    .rate = 30,
    .kill_min = 10,
    .kill_max = 60,
    .read_pause_us = 300,
    .rss_blocks = 200,
    .history = 400,
};

#define PREFILL 10      /* blocks 1..PREFILL create every key */
#define RING 6          /* writes remembered per key by the writer's readers */
#define ABSENT_EXTRA 50 /* 1 key in 50 read lies beyond the key space (never exists) */
#define MAXVAL 8192

/* ---- deterministic workload ---------------------------------------------------------- */

static inline uint64_t
mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

typedef struct rng {
    uint64_t s;
} rng;

static inline uint64_t
rnext(rng *r)
{
    r->s = mix(r->s);
    return r->s;
}

/* A tag names one put: (height << 24) | (op index << 1) | 1. A state is a tag or 0 (absent).
 * A ring entry is a state at a height: a tag, or (height << 24) for a delete. */
#define TAG(h, i) (((uint64_t)(h) << 24) | ((uint64_t)(i) << 1) | 1u)
#define EHEIGHT(e) ((e) >> 24)
#define ESTATE(e) (((e)&1u) ? (e) : 0)

static size_t
key_of(uint32_t ki, unsigned char *k)
{
    size_t n = 8 + ki % 9;
    memcpy(k, "soak", 4);
    k[4] = (unsigned char)(ki >> 24);
    k[5] = (unsigned char)(ki >> 16);
    k[6] = (unsigned char)(ki >> 8);
    k[7] = (unsigned char)ki;
    for (size_t j = 8; j < n; j++)
        k[j] = (unsigned char)('a' + (ki + j) % 26);
    return n;
}

static size_t
vlen_of(uint32_t ki, uint64_t tag)
{
    uint64_t x = mix(tag * 31 + ki);
    unsigned r = (unsigned)(x % 1000);
    x >>= 10;
    if (r < 700)
        return 16 + x % 49;
    if (r < 985)
        return 65 + x % 448;
    return 1024 + x % (MAXVAL - 1024 + 1);
}

/* Value of put `tag` of key ki: ki and tag, then bytes derived from both. */
static size_t
value_of(uint32_t ki, uint64_t tag, unsigned char *v)
{
    size_t n = vlen_of(ki, tag);
    memcpy(v, &ki, 4);
    memcpy(v + 4, &tag, 8);
    uint64_t x = tag ^ ((uint64_t)ki << 40);
    for (size_t j = 12; j < n; j++) {
        if ((j - 12) % 8 == 0)
            x = mix(x);
        v[j] = (unsigned char)(x >> (8 * ((j - 12) % 8)));
    }
    return n;
}

/* The state a read result stands for: 0 (absent), a tag, or UINT64_MAX for a value that no
 * put of this workload can have made (always a mismatch). */
static uint64_t
decode_value(uint32_t ki, const unsigned char *v, size_t n)
{
    static _Thread_local unsigned char want[MAXVAL];
    uint32_t k;
    uint64_t tag;
    if (n < 12 || n > MAXVAL)
        return UINT64_MAX;
    memcpy(&k, v, 4);
    memcpy(&tag, v + 4, 8);
    if (k != ki || !(tag & 1u) || value_of(ki, tag, want) != n || memcmp(want, v, n) != 0)
        return UINT64_MAX;
    return tag;
}

typedef struct op {
    uint32_t ki;
    uint8_t newtx; /* transactions to open before this op (0..2; 2 leaves an empty one) */
    uint64_t st;   /* the key's state after the op: a tag (put) or 0 (delete) */
} op;

typedef struct oplist {
    op *v;
    size_t n, cap;
} oplist;

static void
ops_push(oplist *l, op o)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = realloc(l->v, l->cap * sizeof(*l->v));
        if (!l->v)
            abort();
    }
    l->v[l->n++] = o;
}

/* Generates block h into l from the state cur (at h-1) and applies it to cur. */
static void
gen_block(uint64_t h, uint64_t *cur, oplist *l)
{
    l->n = 0;
    uint32_t nk = cfg.nkeys;
    if (h <= PREFILL) {
        uint32_t a = (uint32_t)((uint64_t)nk * (h - 1) / PREFILL);
        uint32_t b = (uint32_t)((uint64_t)nk * h / PREFILL);
        for (uint32_t ki = a; ki < b; ki++) {
            op o = {ki, (uint8_t)(ki > a && (ki - a) % 1000 == 0), TAG(h, ki - a)};
            cur[ki] = o.st;
            ops_push(l, o);
        }
        return;
    }
    rng r = {mix(cfg.seed * 0x100000001b3ull ^ h)};
    unsigned kind = (unsigned)(rnext(&r) % 100);
    size_t nops = kind < 2 ? 0 : kind < 4 ? 2000 + rnext(&r) % 8001 : 10 + rnext(&r) % 191;
    size_t ntx = 1 + rnext(&r) % 6;
    size_t per_tx = nops / ntx ? nops / ntx : 1;
    uint32_t hot = nk < 256 ? nk : 256;
    for (size_t i = 0; i < nops; i++) {
        op o = {0};
        if (i > 0 && rnext(&r) % per_tx == 0)
            o.newtx = rnext(&r) % 20 == 0 ? 2 : 1;
        o.ki = (uint32_t)(rnext(&r) % 10 < 2 ? rnext(&r) % hot : rnext(&r) % nk);
        unsigned p = (unsigned)(rnext(&r) % 100);
        if (cur[o.ki])
            o.st = p < 75 ? TAG(h, i) : 0; /* update or delete */
        else
            o.st = p < 93 ? TAG(h, i) : 0; /* create, or delete of an absent key */
        cur[o.ki] = o.st;
        ops_push(l, o);
    }
}

/* ---- small helpers ------------------------------------------------------------------- */

static double
now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void
hex32(const unsigned char *r, char *out)
{
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", r[i]);
}

static int
unhex32(const char *s, unsigned char *r)
{
    for (int i = 0; i < 32; i++) {
        unsigned x;
        if (sscanf(s + 2 * i, "%2x", &x) != 1)
            return -1;
        r[i] = (unsigned char)x;
    }
    return 0;
}

/* The writer's own memory: RssAnon (heap, stacks, anonymous arenas). VmRSS would also count
 * the pages of the entry logs that point reads touch through their read-only mappings
 * (hpfile.h, "Read mapping"): page cache, shared with the kernel, growing with the reads and
 * dropped under memory pressure, not memory the process holds. */
static long
rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "RssAnon: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static void
rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char path[1024];
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            rm_tree(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void
fill_options(qmdb_options *o, uint32_t indexer, uint32_t flags)
{
    qmdb_options_init(o);
    /* Small enough that compaction runs all the time (about 5,000 live entries per shard)
     * and that segments roll over and get pruned every few hundred blocks. */
    o->compact_thres = 2000;
    o->utilization_ratio = 7;
    o->utilization_div = 10;
    o->entry_segment_bytes = 1u << 20;
    o->twig_segment_bytes = 256u << 10;
    o->history_blocks = cfg.history;
    o->indexer = indexer;
    o->flags = flags;
}

/* ---- the writer incarnation (child) -------------------------------------------------- */

typedef struct kring {
    uint64_t e[RING]; /* oldest first; n used */
    uint8_t n;
} kring;

static uint64_t *cur; /* model: state of every key (parent: at the verified height;
                         writer: at the latest generated block) */
static kring *rings;  /* writer only */
static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t started; /* under ring_mu: highest block handed (or being handed) to qmdb */
static _Atomic uint64_t published; /* highest block whose submit/commit has returned */
static atomic_bool stop_readers;
static volatile sig_atomic_t stop_writer;
static int report_fd = -1;
static qmdb_db *wdb;
static _Atomic uint64_t r_checked, r_unchecked, r_bad;

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
report(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(line))
        _exit(7);
    /* One write per line (< PIPE_BUF, so lines from several threads never interleave). */
    if (write(report_fd, line, (size_t)n) != n)
        _exit(5);
}

static void
ring_apply(uint64_t h, const oplist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        kring *k = &rings[l->v[i].ki];
        uint64_t e = l->v[i].st ? l->v[i].st : ((uint64_t)h << 24);
        if (k->n && EHEIGHT(k->e[k->n - 1]) == h) {
            k->e[k->n - 1] = e;
            continue;
        }
        if (k->n == RING) {
            memmove(k->e, k->e + 1, (RING - 1) * sizeof(k->e[0]));
            k->n--;
        }
        k->e[k->n++] = e;
    }
}

/* Under ring_mu: is state `obs` one that key ki had at some height in [v0, v1]? Returns 1
 * (and the first and last such heights), 0 (illegal) or -1 (history no longer known). */
static int
legal(uint32_t ki, uint64_t obs, uint64_t v0, uint64_t v1, uint64_t *lo, uint64_t *hi)
{
    if (ki >= cfg.nkeys) {
        *lo = v0;
        *hi = v1;
        return obs == 0;
    }
    const kring *k = &rings[ki];
    int base = -1;
    for (int i = 0; i < k->n; i++)
        if (EHEIGHT(k->e[i]) <= v0)
            base = i;
    if (base < 0)
        return -1;
    int found = 0;
    for (int i = base; i < k->n && (i == base || EHEIGHT(k->e[i]) <= v1); i++) {
        uint64_t from = i == base ? v0 : EHEIGHT(k->e[i]);
        uint64_t to = (i + 1 < k->n && EHEIGHT(k->e[i + 1]) <= v1) ? EHEIGHT(k->e[i + 1]) - 1 : v1;
        if (ESTATE(k->e[i]) == obs) {
            if (!found)
                *lo = from;
            *hi = to;
            found = 1;
        }
    }
    return found;
}

static const char *const READ_KIND[] = {"qmdb_get", "qmdb_get_committed", "qmdb_get_many",
                                        "qmdb_get_many_committed"};

#define MANY 32

static void *
reader_main(void *arg)
{
    rng r = {mix((uint64_t)(uintptr_t)arg * 7919 + (uint64_t)getpid() * 1000003)};
    unsigned char keys[MANY][32];
    uint32_t kis[MANY];
    unsigned char *bufs = malloc((size_t)MANY * MAXVAL);
    qmdb_read rd[MANY];
    if (!bufs)
        abort();
    uint64_t span = cfg.nkeys + cfg.nkeys / ABSENT_EXTRA + 1;
    while (!atomic_load(&stop_readers)) {
        unsigned kind = (unsigned)(rnext(&r) % 4);
        size_t n = kind < 2 ? 1 : 1 + rnext(&r) % MANY;
        for (size_t i = 0; i < n; i++) {
            kis[i] = (uint32_t)(rnext(&r) % span);
            rd[i] = (qmdb_read){keys[i], key_of(kis[i], keys[i]), bufs + i * MAXVAL, MAXVAL, 0, 0};
        }
        bool committed = kind == 1 || kind == 3;
        uint64_t v0 = committed ? qmdb_height(wdb) : atomic_load(&published);
        int rc = 0;
        switch (kind) {
        case 0:
            rd[0].rc = qmdb_get(wdb, rd[0].key, rd[0].klen, rd[0].buf, rd[0].cap, &rd[0].vlen);
            break;
        case 1:
            rd[0].rc =
                qmdb_get_committed(wdb, rd[0].key, rd[0].klen, rd[0].buf, rd[0].cap, &rd[0].vlen);
            break;
        case 2:
            rc = qmdb_get_many(wdb, rd, n);
            break;
        default:
            rc = qmdb_get_many_committed(wdb, rd, n);
            break;
        }
        uint64_t c1 = committed ? qmdb_height(wdb) : 0;
        if (rc) {
            fprintf(stderr, "soak writer: %s: %s: %s\n", READ_KIND[kind], qmdb_strerror(rc),
                    qmdb_last_error(wdb));
            atomic_fetch_add(&r_bad, 1);
            report("X\n");
            continue;
        }
        pthread_mutex_lock(&ring_mu);
        uint64_t v1 = committed ? c1 : started;
        uint64_t all_lo = v0, all_hi = v1;
        for (size_t i = 0; i < n; i++) {
            uint64_t obs = rd[i].rc == QMDB_NOTFOUND ? 0
                           : rd[i].rc == 0           ? decode_value(kis[i], rd[i].buf, rd[i].vlen)
                                                     : UINT64_MAX;
            uint64_t lo = 0, hi = 0;
            int ok = obs == UINT64_MAX ? 0 : legal(kis[i], obs, v0, v1, &lo, &hi);
            if (ok < 0) {
                atomic_fetch_add(&r_unchecked, 1);
                continue;
            }
            atomic_fetch_add(&r_checked, 1);
            if (ok && lo > all_lo)
                all_lo = lo;
            if (ok && hi < all_hi)
                all_hi = hi;
            if (!ok) {
                atomic_fetch_add(&r_bad, 1);
                report("X\n");
                fprintf(stderr,
                        "soak writer: %s: key %u: rc %d, vlen %zu, state %#" PRIx64
                        " not legal in heights [%" PRIu64 ", %" PRIu64 "]\n",
                        READ_KIND[kind], kis[i], rd[i].rc, rd[i].vlen, obs, v0, v1);
            }
        }
        if (kind == 3 && all_lo > all_hi) {
            atomic_fetch_add(&r_bad, 1);
            report("X\n");
            fprintf(stderr,
                    "soak writer: qmdb_get_many_committed: %zu keys do not share one "
                    "height in [%" PRIu64 ", %" PRIu64 "]\n",
                    n, v0, v1);
        }
        pthread_mutex_unlock(&ring_mu);
        if (cfg.read_pause_us)
            usleep(cfg.read_pause_us);
    }
    free(bufs);
    return NULL;
}

static void
on_usr1(int sig)
{
    (void)sig;
    stop_writer = 1;
}

static void
writer_fail(const char *what, uint64_t h, int rc)
{
    fprintf(stderr, "soak writer: %s %" PRIu64 ": %s: %s\n", what, h, qmdb_strerror(rc),
            wdb ? qmdb_last_error(wdb) : qmdb_open_error());
    report("E %s %" PRIu64 " %d\n", what, h, rc);
    _exit(4);
}

static void
report_stats(uint64_t nblocks)
{
    qmdb_stats st = QMDB_STATS_INIT;
    qmdb_stat(wdb, &st);
    report("M %" PRIu64 " %ld %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
           nblocks, rss_kb(), st.pruned_twigs, st.compactions, st.ssd_bytes, st.live_entries,
           st.cache_dram_bytes);
    report("S %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", atomic_load(&r_checked),
           atomic_load(&r_unchecked), atomic_load(&r_bad));
}

/* Runs one writer incarnation; never returns. cur holds the state at `expect` (the height
 * the supervisor verified). */
static void
writer_main(int fd, uint64_t expect, uint32_t indexer, bool use_commit, bool fast, uint64_t wseed)
{
    report_fd = fd;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGINT, SIG_IGN); /* ^C goes to the supervisor, which ends this process */
    qmdb_options o;
    fill_options(&o, indexer, fast ? QMDB_OPEN_FAST : 0);
    int rc = qmdb_open(cfg.dir, &o, &wdb);
    if (rc)
        writer_fail("open", expect, rc);
    uint64_t h0 = qmdb_height(wdb);
    unsigned char root[32];
    char hex[65];
    rc = qmdb_root(wdb, UINT64_MAX, root);
    if (rc)
        writer_fail("root", h0, rc);
    hex32(root, hex);
    report("O %" PRIu64 " %s\n", h0, hex);
    if (h0 != expect) {
        fprintf(stderr, "soak writer: opened at height %" PRIu64 ", the check saw %" PRIu64 "\n",
                h0, expect);
        _exit(6);
    }
    rings = calloc(cfg.nkeys, sizeof(*rings));
    if (!rings)
        abort();
    for (uint32_t ki = 0; ki < cfg.nkeys; ki++) {
        rings[ki].e[0] = cur[ki] ? cur[ki] : (h0 << 24);
        rings[ki].n = 1;
    }
    started = h0;
    atomic_store(&published, h0);
    pthread_t th[16];
    unsigned nr = cfg.readers > 16 ? 16 : cfg.readers;
    for (unsigned i = 0; i < nr; i++)
        if (pthread_create(&th[i], NULL, reader_main, (void *)(uintptr_t)(wseed + i)) != 0)
            abort();

    qmdb_batch *b;
    if (qmdb_batch_new(&b))
        abort();
    oplist l = {0};
    static unsigned char val[MAXVAL], key[32];
    rng r = {wseed};
    double t_next = now_s(), t_stats = now_s() + 2;
    uint64_t nblocks = 0, h = h0 + 1;
    bool warm_sent = false;
    for (; !stop_writer; h++) {
        /* Rate cap: prefill blocks and the first blocks after an open run unthrottled. */
        if (h > PREFILL && cfg.rate > 0) {
            t_next += 1.0 / cfg.rate;
            double d = t_next - now_s();
            if (d > 0)
                usleep((useconds_t)(d * 1e6));
            else if (d < -1)
                t_next = now_s();
        }
        gen_block(h, cur, &l);
        qmdb_batch_reset(b);
        for (size_t i = 0; i < l.n; i++) {
            const op *p = &l.v[i];
            for (unsigned t = 0; t < p->newtx; t++)
                if (qmdb_batch_tx(b))
                    abort();
            size_t kl = key_of(p->ki, key);
            if (p->st) {
                size_t vl = value_of(p->ki, p->st, val);
                rc = qmdb_batch_put(b, key, kl, val, vl);
            } else {
                rc = qmdb_batch_del(b, key, kl);
            }
            if (rc)
                writer_fail("batch", h, rc);
        }
        pthread_mutex_lock(&ring_mu);
        ring_apply(h, &l);
        started = h;
        pthread_mutex_unlock(&ring_mu);
        if (use_commit) {
            rc = qmdb_commit(wdb, h, b, root);
            if (rc)
                writer_fail("commit", h, rc);
            atomic_store(&published, h);
            hex32(root, hex);
            report("C %" PRIu64 " %s\n", h, hex);
        } else {
            rc = qmdb_submit(wdb, h, b);
            if (rc)
                writer_fail("submit", h, rc);
            atomic_store(&published, h);
            if (h > h0 + 1) {
                rc = qmdb_wait(wdb, h - 1, root);
                if (rc)
                    writer_fail("wait", h - 1, rc);
                hex32(root, hex);
                report("C %" PRIu64 " %s\n", h - 1, hex);
            }
        }
        nblocks++;
        if (rnext(&r) % 700 == 0 && (rc = qmdb_prune(wdb)) != 0)
            writer_fail("prune", h, rc);
        if (!warm_sent && nblocks >= cfg.rss_blocks) {
            qmdb_stats st = QMDB_STATS_INIT;
            qmdb_stat(wdb, &st);
            struct mallinfo2 mi = mallinfo2();
            report("W %" PRIu64 " %ld %" PRIu64 " %" PRIu64 " %" PRIu64 " %u %zu\n", nblocks,
                   rss_kb(), st.index_dram_bytes, st.tree_dram_bytes, st.cache_dram_bytes,
                   (unsigned)st.index_resumed_shards, mi.uordblks + mi.hblkhd);
            warm_sent = true;
        }
        if (now_s() >= t_stats) {
            report_stats(nblocks);
            t_stats = now_s() + 2;
        }
    }
    /* Clean stop (SIGUSR1): make the last submitted block durable, stop the readers,
     * close. */
    if (!use_commit && h - 1 > h0) {
        rc = qmdb_wait(wdb, h - 1, root);
        if (rc)
            writer_fail("wait", h - 1, rc);
        hex32(root, hex);
        report("C %" PRIu64 " %s\n", h - 1, hex);
    }
    atomic_store(&stop_readers, true);
    for (unsigned i = 0; i < nr; i++)
        pthread_join(th[i], NULL);
    report_stats(nblocks);
    qmdb_batch_free(b);
    rc = qmdb_close(wdb);
    if (rc)
        writer_fail("close", h - 1, rc);
    report("Q\n");
    _exit(0);
}

/* ---- the supervisor ------------------------------------------------------------------ */

static uint64_t model_h;           /* cur is the state at model_h */
static unsigned char (*roots)[32]; /* reported roots, by height */
static uint8_t *known;             /* known[h]: roots[h] was reported */
static uint64_t roots_cap;
static uint64_t last_ok; /* highest height reported durable */
static uint64_t s_rng;
static volatile sig_atomic_t interrupted;

static struct {
    uint64_t blocks, kills, clean_stops, incarnations, verifies;
    uint64_t lost, root_mismatch, value_mismatch, writer_errors, check_problems;
    uint64_t reads_writer, reads_unchecked, reads_bad, reads_verify, roots_checked;
    uint64_t compactions, pruned_twigs, ssd_max, ssd_last, live_last;
} tot;

typedef struct inc_info {
    uint32_t indexer;
    double t_open;
    long warm_kb;      /* -1: killed before the warm sample */
    long warm_heap_kb; /* heap bytes in use then (malloc's count: mallinfo2), in kB */
    long last_kb;
    uint64_t last_blocks;
    uint64_t open_h;
    long warm_index_kb, warm_tree_kb, warm_cache_kb; /* the engine's DRAM figures then */
    long last_cache_kb;                              /* the engine's caches at last_kb */
    unsigned warm_resumed; /* shards whose index the open loaded rather than rebuilt */
} inc_info;
static inc_info *incs;
static size_t nincs, incs_cap;

static uint64_t
srnd(uint64_t n)
{
    s_rng = mix(s_rng);
    return n ? s_rng % n : 0;
}

static void
root_store(uint64_t h, const unsigned char *r, const char *who)
{
    if (h >= roots_cap) {
        uint64_t nc = roots_cap ? roots_cap : 4096;
        while (nc <= h)
            nc *= 2;
        roots = realloc(roots, nc * 32);
        known = realloc(known, nc);
        if (!roots || !known)
            abort();
        memset(known + roots_cap, 0, nc - roots_cap);
        roots_cap = nc;
    }
    if (known[h] && memcmp(roots[h], r, 32) != 0) {
        fprintf(stderr,
                "soak: ROOT MISMATCH: %s root of height %" PRIu64
                " differs from the one reported before\n",
                who, h);
        tot.root_mismatch++;
        return;
    }
    memcpy(roots[h], r, 32);
    known[h] = 1;
}

static void
model_to(uint64_t h)
{
    static oplist l;
    if (h < model_h) { /* cannot happen unless blocks were lost: replay from scratch */
        memset(cur, 0, cfg.nkeys * sizeof(*cur));
        model_h = 0;
    }
    while (model_h < h)
        gen_block(++model_h, cur, &l);
}

static bool
value_ok(uint32_t ki, int rc, const unsigned char *v, size_t vl)
{
    uint64_t want = ki < cfg.nkeys ? cur[ki] : 0;
    if (want == 0)
        return rc == QMDB_NOTFOUND;
    return rc == 0 && decode_value(ki, v, vl) == want;
}

/* Reopens read-only and checks the recovered state (see the header). Returns false if the
 * database cannot be opened (the run stops). */
static bool
verify(bool final)
{
    uint64_t vno = tot.verifies++;
    bool full = final || vno % 4 == 0;
    uint32_t indexer = vno % 2 ? QMDB_INDEXER_HYBRID : QMDB_INDEXER_MEMORY;
    qmdb_options o;
    fill_options(&o, indexer, QMDB_OPEN_RDONLY | (full ? 0 : QMDB_OPEN_FAST));
    qmdb_db *db = NULL;
    int rc = qmdb_open(cfg.dir, &o, &db);
    if (rc) {
        fprintf(stderr, "soak: CHECK OPEN FAILED: %s: %s\n", qmdb_strerror(rc), qmdb_open_error());
        tot.writer_errors++;
        return false;
    }
    uint64_t H = qmdb_height(db);
    if (H < last_ok) {
        fprintf(stderr, "soak: LOST BLOCKS: recovered height %" PRIu64 " < reported %" PRIu64 "\n",
                H, last_ok);
        tot.lost += last_ok - H;
    }
    if (H < model_h) {
        fprintf(stderr, "soak: height went back from %" PRIu64 " to %" PRIu64 "\n", model_h, H);
        if (H >= last_ok)
            tot.lost += model_h - H;
    }
    model_to(H);
    unsigned char r[32];
    /* Roots: every reported height in the history window, and 64 older ones. */
    uint64_t lo = H > cfg.history ? H - cfg.history : 1;
    for (uint64_t h = lo; h <= H && h < roots_cap; h++) {
        if (!known[h])
            continue;
        rc = qmdb_root(db, h, r);
        tot.roots_checked++;
        if (rc || memcmp(r, roots[h], 32) != 0) {
            fprintf(stderr, "soak: ROOT MISMATCH at height %" PRIu64 " (rc %d)\n", h, rc);
            tot.root_mismatch++;
        }
    }
    for (int i = 0; i < 64 && lo > 1; i++) {
        uint64_t h = 1 + srnd(lo - 1);
        if (h >= roots_cap || !known[h])
            continue;
        rc = qmdb_root(db, h, r);
        tot.roots_checked++;
        if (rc || memcmp(r, roots[h], 32) != 0) {
            fprintf(stderr, "soak: ROOT MISMATCH at old height %" PRIu64 " (rc %d)\n", h, rc);
            tot.root_mismatch++;
        }
    }
    if (qmdb_root(db, UINT64_MAX, r) == 0)
        root_store(H, r, "recovered");
    /* Values: every key (full checks) or 3,000 random ones, plus keys beyond the key space
     * (absent), half through qmdb_get and half through qmdb_get_many. */
    /* On the heap, not static: freed (unmapped) after the check, so that a writer forked
     * later does not carry these pages in its RSS. [64]: the single gets. */
    unsigned char(*buf)[MAXVAL] = malloc(65 * sizeof(*buf)), (*kb)[32] = malloc(65 * 32);
    if (!buf || !kb)
        abort();
    size_t nsample = full ? cfg.nkeys : 3000;
    size_t nextra = full ? 1000 : 300;
    qmdb_read rd[64];
    uint32_t kis[64];
    size_t nrd = 0;
    for (size_t i = 0; i < nsample + nextra; i++) {
        uint32_t ki = i < nsample ? (full ? (uint32_t)i : (uint32_t)srnd(cfg.nkeys))
                                  : cfg.nkeys + (uint32_t)srnd(1u << 20);
        if (srnd(2)) {
            size_t vl = 0;
            rc = qmdb_get(db, kb[64], key_of(ki, kb[64]), buf[64], MAXVAL, &vl);
            tot.reads_verify++;
            if (!value_ok(ki, rc, buf[64], vl)) {
                fprintf(stderr,
                        "soak: VALUE MISMATCH: key %u at height %" PRIu64
                        ": rc %d, vlen %zu, model %#" PRIx64 "\n",
                        ki, H, rc, vl, ki < cfg.nkeys ? cur[ki] : 0);
                tot.value_mismatch++;
            }
            continue;
        }
        kis[nrd] = ki;
        rd[nrd] = (qmdb_read){kb[nrd], key_of(ki, kb[nrd]), buf[nrd], MAXVAL, 0, 0};
        if (++nrd == 64 || i + 1 == nsample + nextra) {
            rc = qmdb_get_many(db, rd, nrd);
            for (size_t j = 0; j < nrd; j++) {
                tot.reads_verify++;
                if (rc || !value_ok(kis[j], rd[j].rc, rd[j].buf, rd[j].vlen)) {
                    fprintf(stderr,
                            "soak: VALUE MISMATCH (get_many): key %u at height %" PRIu64
                            ": rc %d/%d, vlen %zu\n",
                            kis[j], H, rc, rd[j].rc, rd[j].vlen);
                    tot.value_mismatch++;
                }
            }
            nrd = 0;
        }
    }
    if (nrd) { /* the last batch when the loop ended on a qmdb_get */
        rc = qmdb_get_many(db, rd, nrd);
        for (size_t j = 0; j < nrd; j++) {
            tot.reads_verify++;
            if (rc || !value_ok(kis[j], rd[j].rc, rd[j].buf, rd[j].vlen)) {
                fprintf(stderr, "soak: VALUE MISMATCH (get_many): key %u at height %" PRIu64 "\n",
                        kis[j], H);
                tot.value_mismatch++;
            }
        }
    }
    free(buf);
    free(kb);
    rc = qmdb_close(db);
    if (rc) {
        fprintf(stderr, "soak: close after check: %s\n", qmdb_strerror(rc));
        tot.writer_errors++;
    }
    if (H > last_ok)
        last_ok = H;
    return true;
}

static void
on_term(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void
handle_line(char *line, inc_info *inc, uint64_t *inc_checked, uint64_t *inc_unchecked,
            uint64_t *inc_bad, uint64_t *inc_compactions, uint64_t *inc_pruned)
{
    unsigned long long a, b, c, d, e, f;
    long kb;
    char hex[80];
    unsigned char r[32];
    switch (line[0]) {
    case 'C':
        if (sscanf(line, "C %llu %70s", &a, hex) != 2 || unhex32(hex, r)) {
            tot.writer_errors++;
            return;
        }
        if (a != last_ok + 1)
            fprintf(stderr, "soak: writer reported height %llu after %" PRIu64 "\n", a, last_ok);
        root_store(a, r, "reported");
        tot.blocks++;
        if (a > last_ok)
            last_ok = a;
        break;
    case 'O':
        if (sscanf(line, "O %llu %70s", &a, hex) != 2 || unhex32(hex, r)) {
            tot.writer_errors++;
            return;
        }
        root_store(a, r, "opened");
        inc->open_h = a;
        break;
    case 'W':
        unsigned long long heap = 0;
        if (sscanf(line, "W %llu %ld %llu %llu %llu %llu %llu", &a, &kb, &b, &c, &d, &e, &heap) ==
            7) {
            inc->warm_heap_kb = (long)(heap / 1024);
            inc->warm_kb = kb;
            inc->warm_resumed = (unsigned)e;
            inc->warm_index_kb = (long)(b / 1024);
            inc->warm_tree_kb = (long)(c / 1024);
            inc->warm_cache_kb = (long)(d / 1024);
        }
        break;
    case 'M':
        if (sscanf(line, "M %llu %ld %llu %llu %llu %llu %llu", &a, &kb, &b, &c, &d, &e, &f) == 7) {
            inc->last_kb = kb;
            inc->last_cache_kb = (long)(f / 1024);
            inc->last_blocks = a;
            *inc_pruned = b;
            *inc_compactions = c;
            if (d > tot.ssd_max)
                tot.ssd_max = d;
            tot.ssd_last = d;
            tot.live_last = e;
        }
        break;
    case 'S': /* cumulative counts of this incarnation's readers */
        if (sscanf(line, "S %llu %llu %llu", &a, &b, &c) == 3) {
            *inc_checked = a;
            *inc_unchecked = b;
        }
        break;
    case 'X': /* a reader saw a value it may not see (reported at once, not with S) */
        (*inc_bad)++;
        break;
    case 'E':
        tot.writer_errors++;
        break;
    case 'Q':
        break;
    default:
        fprintf(stderr, "soak: bad report line '%s'\n", line);
        tot.writer_errors++;
    }
}

static uint64_t live_reads; /* reads checked by the running incarnation so far */

static void
progress(double t0, bool force)
{
    static double last;
    double t = now_s();
    if (!force && t - last < 30)
        return;
    last = t;
    long el = (long)(t - t0);
    fprintf(stderr,
            "[soak] %02ld:%02ld:%02ld height %" PRIu64 " kills %" PRIu64 " clean stops %" PRIu64
            " reads %" PRIu64 " problems %" PRIu64 "\n",
            el / 3600, el / 60 % 60, el % 60, last_ok, tot.kills, tot.clean_stops,
            tot.reads_writer + tot.reads_verify + live_reads,
            tot.lost + tot.root_mismatch + tot.value_mismatch + tot.reads_bad + tot.writer_errors);
}

/* Runs one writer incarnation until its end time (or the end of the run). */
static void
run_incarnation(double t0, double t_end)
{
    int pfd[2];
    if (pipe(pfd))
        abort();
    uint32_t indexer = tot.incarnations % 2 ? QMDB_INDEXER_HYBRID : QMDB_INDEXER_MEMORY;
    bool use_commit = srnd(4) == 0, fast = srnd(2) == 0;
    uint64_t wseed = mix(s_rng ^ 0x5eed);
    srnd(1);
    if (nincs == incs_cap) {
        incs_cap = incs_cap ? 2 * incs_cap : 64;
        incs = realloc(incs, incs_cap * sizeof(*incs));
        if (!incs)
            abort();
    }
    inc_info *inc = &incs[nincs++];
    *inc = (inc_info){.indexer = indexer,
                      .t_open = now_s() - t0,
                      .warm_kb = -1,
                      .last_kb = -1,
                      .warm_index_kb = -1,
                      .warm_tree_kb = -1,
                      .warm_cache_kb = -1};
    tot.incarnations++;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        close(pfd[0]);
        /* The writer keeps only the model (cur): the supervisor's root table grows with the
         * height and its heap holds what its checks freed; inherited, they would count in
         * the writer's RSS. */
        free(roots);
        free(known);
        free(incs);
        roots = NULL;
        known = NULL;
        incs = NULL;
        malloc_trim(0);
        writer_main(pfd[1], model_h, indexer, use_commit, fast, wseed);
    }
    close(pfd[1]);
    double life = cfg.kill_min + (double)srnd(1000 * (cfg.kill_max - cfg.kill_min) + 1) / 1000;
    bool clean = srnd(8) == 0;
    double t_stop = now_s() + life;
    if (t_stop >= t_end) {
        t_stop = t_end;
        clean = true; /* the last incarnation closes the database */
    }
    bool signalled = false, stalled = false;
    uint64_t checked = 0, unchecked = 0, bad = 0, compactions = 0, pruned = 0;
    char buf[1 << 16];
    size_t n = 0;
    double t_line = now_s(), t_signal = 0;
    for (;;) {
        double t = now_s();
        if (!signalled && (t >= t_stop || interrupted)) {
            kill(pid, clean ? SIGUSR1 : SIGKILL);
            signalled = true;
            t_signal = t;
        }
        /* A writer that reports nothing for 120 s (it sends statistics every 2 s), or that
         * has not finished 120 s after a clean-stop request, is hung: kill it and count it. */
        if (!stalled && (t - t_line > 120 || (signalled && t - t_signal > 120))) {
            fprintf(stderr, "soak: WRITER HUNG (no report for %.0f s); killing it\n", t - t_line);
            kill(pid, SIGKILL);
            stalled = signalled = true;
            t_signal = t;
        }
        struct pollfd p = {pfd[0], POLLIN, 0};
        int wait_ms = signalled ? 1000 : (int)((t_stop - t) * 1000) + 1;
        if (wait_ms > 1000)
            wait_ms = 1000;
        if (poll(&p, 1, wait_ms) > 0) {
            ssize_t got = read(pfd[0], buf + n, sizeof(buf) - 1 - n);
            if (got <= 0)
                break;
            t_line = now_s();
            n += (size_t)got;
            char *s = buf, *nl;
            while ((nl = memchr(s, '\n', n - (size_t)(s - buf))) != NULL) {
                *nl = '\0';
                handle_line(s, inc, &checked, &unchecked, &bad, &compactions, &pruned);
                s = nl + 1;
            }
            n -= (size_t)(s - buf);
            memmove(buf, s, n);
        }
        live_reads = checked;
        progress(t0, false);
    }
    live_reads = 0;
    close(pfd[0]);
    int st;
    while (waitpid(pid, &st, 0) != pid)
        if (errno != EINTR)
            abort();
    tot.reads_writer += checked;
    tot.reads_unchecked += unchecked;
    tot.reads_bad += bad;
    tot.compactions += compactions;
    tot.pruned_twigs += pruned;
    const char *how = "failed";
    if (stalled) {
        how = "hung";
        tot.writer_errors++;
    } else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && !clean) {
        tot.kills++;
        how = "SIGKILL";
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && clean) {
        tot.clean_stops++;
        how = "clean stop";
    } else {
        fprintf(stderr, "soak: WRITER FAILED: status %#x\n", st);
        tot.writer_errors++;
    }
    fprintf(stderr,
            "[soak] writer %" PRIu64 ": %s indexer, %s, %s open at %" PRIu64 ", %.0f s, %s at "
            "%" PRIu64 "; RSS %ld kB (engine: index %ld, trees %ld, caches %ld kB) after %" PRIu64
            " blocks, %ld kB after %" PRIu64 "\n",
            tot.incarnations, indexer ? "hybrid" : "memory",
            use_commit ? "qmdb_commit" : "qmdb_submit+qmdb_wait", fast ? "fast" : "verifying",
            inc->open_h, now_s() - t0 - inc->t_open, how, last_ok, inc->warm_kb, inc->warm_index_kb,
            inc->warm_tree_kb, inc->warm_cache_kb, cfg.rss_blocks, inc->last_kb, inc->last_blocks);
}

static int
cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static long
median(long *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_long);
    return v[n / 2];
}

/* What rss_figures compares: the raw VmRSS of the warm samples, or the VmRSS minus the
 * engine's per-block caches (warm-entry caches and pre-images, arenas that keep the capacity
 * of the largest block the incarnation has applied, so that they vary from sample to sample
 * with the workload, not with age). Samples are grouped by how the open built the index:
 * OPEN_LOADED (every shard's index loaded from its run file) or OPEN_SCANNED (at least one
 * shard rebuilt by a log scan, which leaves the allocator with more free memory in its
 * heap), or OPEN_ANY. RSS_HEAP (printed, not the criterion) is malloc's own count of the
 * bytes in use minus the same caches: it tells growth of what the process holds from memory
 * the allocator keeps free. */
enum { RSS_RAW, RSS_BASE, RSS_HEAP };
enum { OPEN_SCANNED, OPEN_LOADED, OPEN_ANY };

static long
sample_kb(const inc_info *c, int metric)
{
    if (metric == RSS_HEAP)
        return c->warm_heap_kb - c->warm_cache_kb;
    return metric == RSS_RAW ? c->warm_kb : c->warm_kb - c->warm_cache_kb;
}

/* Start and end medians of one indexer's warm samples of one open kind (and of the engine's
 * tree DRAM at the same samples); returns the growth in percent, or a number below -1000
 * when there are fewer than `need` samples. */
static double
rss_figures(uint32_t indexer, int kind, int metric, size_t need, double t_skip, long *start,
            long *end, long *tree_start, long *tree_end, size_t *nsamples)
{
    static size_t idx[4096];
    size_t n = 0;
    for (size_t i = 0; i < nincs && n < 4096; i++)
        if (incs[i].indexer == indexer && incs[i].t_open >= t_skip && incs[i].warm_kb > 0 &&
            (kind == OPEN_ANY || (int)(incs[i].warm_resumed >= QMDB_SHARDS) == kind))
            idx[n++] = i;
    *nsamples = n;
    if (n < 2 || n < need)
        return -1e9;
    size_t k = n >= 10 ? 5 : n >= 6 ? 3 : 1;
    long a[5], b[5], ta[5], tb[5];
    for (size_t j = 0; j < k; j++) {
        a[j] = sample_kb(&incs[idx[j]], metric);
        ta[j] = incs[idx[j]].warm_tree_kb;
        b[j] = sample_kb(&incs[idx[n - k + j]], metric);
        tb[j] = incs[idx[n - k + j]].warm_tree_kb;
    }
    *start = median(a, k);
    *end = median(b, k);
    *tree_start = median(ta, k);
    *tree_end = median(tb, k);
    return 100.0 * ((double)*end / (double)*start - 1.0);
}

/* Prints one indexer's RSS lines; returns true when its growth is beyond 5%. The criterion is
 * like for like: RSS minus the per-block caches, compared within each open kind that has at
 * least six samples (the larger growth of the two counts); with fewer than six samples of
 * either kind, over all samples. The raw VmRSS figure over all samples is printed beside it. */
static bool
rss_report(uint32_t indexer, double t_skip)
{
    const char *name = indexer ? "hybrid" : "memory";
    static const char *const kinds[] = {"after a log scan", "after loading the index"};
    long s = 0, e = 0, ts = 0, te = 0;
    size_t ns = 0;
    double raw = rss_figures(indexer, OPEN_ANY, RSS_RAW, 2, t_skip, &s, &e, &ts, &te, &ns);
    if (raw < -1000) {
        printf("writer RSS (%s):   too few samples (%zu)\n", name, ns);
        return true;
    }
    printf("writer RSS (%s):   start %ld kB, end %ld kB, %+.1f%% raw (%zu incarnations sampled "
           "after %" PRIu64 " blocks; the engine's tree DRAM %ld -> %ld kB)\n",
           name, s, e, raw, ns, cfg.rss_blocks, ts, te);
    double worst = -1e9;
    for (int kind = OPEN_SCANNED; kind <= OPEN_LOADED; kind++) {
        double g = rss_figures(indexer, kind, RSS_BASE, 6, t_skip, &s, &e, &ts, &te, &ns);
        if (g < -1000) {
            printf("  minus caches, %s: %zu samples (too few to compare)\n", kinds[kind], ns);
            continue;
        }
        printf("  minus caches, %s: start %ld kB, end %ld kB, growth %+.1f%% (%zu samples)\n",
               kinds[kind], s, e, g, ns);
        if (g > worst)
            worst = g;
    }
    if (worst < -1000) {
        worst = rss_figures(indexer, OPEN_ANY, RSS_BASE, 2, t_skip, &s, &e, &ts, &te, &ns);
        printf("  minus caches, any open: start %ld kB, end %ld kB, growth %+.1f%% (%zu samples)\n",
               s, e, worst, ns);
    }
    double heap = rss_figures(indexer, OPEN_ANY, RSS_HEAP, 2, t_skip, &s, &e, &ts, &te, &ns);
    printf("  heap in use minus caches (malloc's count, not the criterion): start %ld kB, end "
           "%ld kB, %+.1f%%\n",
           s, e, heap);
    printf("  growth (%s, like for like): %+.1f%% (limit +5%%)\n", name, worst);
    return worst > 5.0;
}

static void
usage(const char *p)
{
    fprintf(stderr,
            "usage: %s [--minutes M] [--dir DIR] [--keep] [--seed S] [--keys N] [--readers R]\n"
            "          [--rate BLOCKS_PER_S] [--kill-min S] [--kill-max S] [--history BLOCKS]\n"
            "          [--read-pause-us US] [--rss-blocks N]\n"
            "The database is DIR/qmdb-soak-PID (DIR defaults to /tmp); it is deleted at the end\n"
            "unless --keep. Defaults: 30 minutes, 100000 keys, 2 readers, 30 blocks/s, kills\n"
            "every 10-60 s, history 400 blocks, RSS sampled after 200 blocks.\n",
            p);
}

int
main(int argc, char **argv)
{
    static const struct option lo[] = {{"minutes", 1, 0, 'm'},       {"dir", 1, 0, 'd'},
                                       {"keep", 0, 0, 'k'},          {"seed", 1, 0, 's'},
                                       {"keys", 1, 0, 'n'},          {"readers", 1, 0, 'r'},
                                       {"rate", 1, 0, 'R'},          {"kill-min", 1, 0, 'a'},
                                       {"kill-max", 1, 0, 'b'},      {"history", 1, 0, 'H'},
                                       {"read-pause-us", 1, 0, 'p'}, {"rss-blocks", 1, 0, 'w'},
                                       {"help", 0, 0, 'h'},          {0, 0, 0, 0}};
    cfg.seed = (uint64_t)time(NULL);
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'm':
            cfg.minutes = atof(optarg);
            break;
        case 'd':
            snprintf(cfg.dir, sizeof(cfg.dir), "%s", optarg);
            break;
        case 'k':
            cfg.keep = true;
            break;
        case 's':
            cfg.seed = strtoull(optarg, NULL, 10);
            break;
        case 'n':
            cfg.nkeys = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'r':
            cfg.readers = (unsigned)atoi(optarg);
            break;
        case 'R':
            cfg.rate = atof(optarg);
            break;
        case 'a':
            cfg.kill_min = (unsigned)atoi(optarg);
            break;
        case 'b':
            cfg.kill_max = (unsigned)atoi(optarg);
            break;
        case 'H':
            cfg.history = strtoull(optarg, NULL, 10);
            break;
        case 'p':
            cfg.read_pause_us = (unsigned)atoi(optarg);
            break;
        case 'w':
            cfg.rss_blocks = strtoull(optarg, NULL, 10);
            break;
        default:
            usage(argv[0]);
            return 2;
        }
    }
    if (cfg.minutes <= 0 || cfg.nkeys < 1000 || cfg.nkeys > (1u << 28) ||
        cfg.kill_max < cfg.kill_min || cfg.kill_min < 1 || cfg.history < 1) {
        usage(argv[0]);
        return 2;
    }
    /* The database goes into a fresh subdirectory of --dir (default /tmp): that
     * subdirectory is all the run deletes at the end. */
    {
        char base[512];
        snprintf(base, sizeof(base), "%s", cfg.dir[0] ? cfg.dir : "/tmp");
        size_t bl = strlen(base);
        while (bl > 1 && base[bl - 1] == '/')
            base[--bl] = '\0';
        if (snprintf(cfg.dir, sizeof(cfg.dir), "%s/qmdb-soak-%d", base, (int)getpid()) >=
            (int)sizeof(cfg.dir)) {
            fprintf(stderr, "soak: --dir too long\n");
            return 2;
        }
    }
    /* The indexer is chosen per open here; the environment must not override it. */
    unsetenv("QMDB_INDEXER");
    unsetenv("QMDB_HIX_MERGE");
    s_rng = mix(cfg.seed ^ 0xa5a5);
    cur = calloc(cfg.nkeys, sizeof(*cur));
    if (!cur)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    qmdb_options o;
    fill_options(&o, QMDB_INDEXER_MEMORY, 0);
    int rc = qmdb_create(cfg.dir, &o);
    if (rc) {
        fprintf(stderr, "soak: create %s: %s: %s\n", cfg.dir, qmdb_strerror(rc), qmdb_open_error());
        return 1;
    }
    fprintf(stderr,
            "[soak] dir %s, %.1f min, seed %" PRIu64 ", %u keys, %u readers, <= %.0f blocks/s, "
            "kill every %u-%u s, history %" PRIu64 " blocks\n",
            cfg.dir, cfg.minutes, cfg.seed, cfg.nkeys, cfg.readers, cfg.rate, cfg.kill_min,
            cfg.kill_max, cfg.history);
    double t0 = now_s(), t_end = t0 + cfg.minutes * 60;
    bool ok = true;
    while (ok && !interrupted) {
        run_incarnation(t0, t_end);
        ok = verify(now_s() >= t_end || interrupted);
        if (now_s() >= t_end)
            break;
    }
    double elapsed = now_s() - t0;
    progress(t0, true);
    /* The offline check of the final database. */
    uint64_t problems = 0;
    if (ok) {
        rc = qmdb_check(cfg.dir, NULL, NULL, &problems);
        if (rc && rc != QMDB_CORRUPT) {
            fprintf(stderr, "soak: qmdb_check: %s\n", qmdb_strerror(rc));
            problems++;
        }
        tot.check_problems = problems;
    }

    printf("soak: %.1f min, seed %" PRIu64 ", %u keys, %u reader threads, dir %s\n", elapsed / 60,
           cfg.seed, cfg.nkeys, cfg.readers, cfg.dir);
    printf("blocks applied:        %" PRIu64 " (final height; %" PRIu64 " reported durable by "
           "the writers, the others recovered after a kill before their report)\n",
           last_ok, tot.blocks);
    printf("writer incarnations:   %" PRIu64 " (%" PRIu64 " SIGKILLs, %" PRIu64 " clean stops)\n",
           tot.incarnations, tot.kills, tot.clean_stops);
    printf("kills:                 %" PRIu64 "\n", tot.kills);
    printf("reads checked:         %" PRIu64 " (%" PRIu64
           " by reader threads during writes, %" PRIu64 " after restarts; %" PRIu64
           " not decidable)\n",
           tot.reads_writer + tot.reads_verify, tot.reads_writer, tot.reads_verify,
           tot.reads_unchecked);
    printf("roots checked:         %" PRIu64 "\n", tot.roots_checked);
    printf("compactions:           %" PRIu64 ", pruned twigs %" PRIu64 ", db size %.1f MiB at "
           "the end (largest %.1f MiB), live entries %" PRIu64 "\n",
           tot.compactions, tot.pruned_twigs, (double)tot.ssd_last / 1048576.0,
           (double)tot.ssd_max / 1048576.0, tot.live_last);
    printf("lost blocks:           %" PRIu64 "\n", tot.lost);
    printf("root mismatches:       %" PRIu64 "\n", tot.root_mismatch);
    printf("value mismatches:      %" PRIu64 " (after restarts %" PRIu64 ", reader threads %" PRIu64
           ")\n",
           tot.value_mismatch + tot.reads_bad, tot.value_mismatch, tot.reads_bad);
    printf("writer/check errors:   %" PRIu64 ", qmdb_check problems %" PRIu64 "\n",
           tot.writer_errors, tot.check_problems);
    bool fail = tot.lost || tot.root_mismatch || tot.value_mismatch || tot.reads_bad ||
                tot.writer_errors || tot.check_problems || !ok || interrupted;
    double t_skip = elapsed / 10;
    for (uint32_t ix = 0; ix < 2; ix++)
        if (rss_report(ix, t_skip))
            fail = true;
    /* The longest-lived incarnation: warm sample vs its last sample (information). */
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < nincs; i++)
        if (incs[i].warm_kb > 0 && incs[i].last_kb > 0 &&
            (best == SIZE_MAX || incs[i].last_blocks > incs[best].last_blocks))
            best = i;
    if (best != SIZE_MAX)
        printf("longest incarnation:   %" PRIu64 " blocks (%s), RSS %ld kB after %" PRIu64
               " blocks, %ld kB at the end; minus caches %ld -> %ld kB\n",
               incs[best].last_blocks, incs[best].indexer ? "hybrid" : "memory", incs[best].warm_kb,
               cfg.rss_blocks, incs[best].last_kb, sample_kb(&incs[best], RSS_BASE),
               incs[best].last_kb - incs[best].last_cache_kb);
    printf("result:                %s\n", fail ? "FAIL" : "PASS");
    fflush(stdout);
    if (!cfg.keep)
        rm_tree(cfg.dir);
    else
        fprintf(stderr, "[soak] database kept in %s\n", cfg.dir);
    return fail ? 1 : 0;
}
