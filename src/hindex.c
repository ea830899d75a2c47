/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hindex.c -- the hybrid indexer (layers and threads in hindex.h).
 *
 * The run file's layout, its writer and sequential reader, merged walks and loading are in
 * hixrun.c; this file holds the layers, lookups, changes, the merger thread and maintenance.
 *
 * Thread: see hindex.h. Merges of all indexes of the process are serialised (one at a time)
 * so that they take one core at most.
 */
#include "codec.h"
#include "hindex_int.h"
#include "hixj.h"
#include "hugefolio.h"
#include "indexer.h"
#include "io.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define HIX_MIN_MERGE 32768u
/* A journal this long starts a merge whatever the overlay's size (blocks with few changes
 * still add a record each; the open after a crash reads the journal). */
#define HIX_JOURNAL_MAX (32ull << 20)

static pthread_mutex_t g_merge_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;

/* g_merge_mu is process-wide: a fork while a merger thread holds it would leave it locked
 * forever in the child (which has no merger threads). Take it around fork. */
static void
fork_prepare(void)
{
    pthread_mutex_lock(&g_merge_mu);
}

static void
fork_after(void)
{
    pthread_mutex_unlock(&g_merge_mu);
}

static void
fork_once(void)
{
    pthread_atfork(fork_prepare, fork_after, fork_after);
}

static layer *
layer_new(void)
{
    layer *l = calloc(1, sizeof(*l));
    if (l)
        qm_index_init(&l->ins);
    return l;
}

static void
layer_free(layer *l)
{
    if (!l)
        return;
    qm_index_free(&l->ins);
    qm_posset_free(&l->del);
    free(l);
}

/* A run's DRAM: the sparse index and the bits of pages checked in the mapping. */
static u64
run_dram(const run *r)
{
    return r->npages * 6 + (r->checked ? (r->npages + 63) / 64 * sizeof(u64) : 0);
}

static u64
layer_bytes(const layer *l)
{
    return l ? sizeof(*l) + qm_index_dram_bytes(&l->ins) - sizeof(l->ins) + qm_posset_bytes(&l->del)
             : 0;
}

/* ---- runs --------------------------------------------------------------------------------- */

static u32
page_nrec(const run *r, u64 p)
{
    return p + 1 < r->npages ? QM_HIX_PER_PAGE : (u32)(r->nrec - p * QM_HIX_PER_PAGE);
}

/* The keys of page p of r lie in [*lo_key, *hi_key). */
static void
page_keys(const run *r, u64 p, u64 *lo_key, u64 *hi_key)
{
    *lo_key = k48(r->first + p * 6);
    *hi_key = p + 1 < r->npages ? k48(r->first + (p + 1) * 6) : (1ull << 48);
}

/* First record of page p of r (at pg) whose key is >= key. */
static u32
page_lower_bound(const run *r, u64 p, const u8 *pg, u64 key)
{
    u64 lo_key, hi_key;
    page_keys(r, p, &lo_key, &hi_key);
    return hix_page_search(pg, page_nrec(r, p), key, lo_key, hi_key);
}

/*
 * Run pages recently read by this thread, keyed by (run id, page): the lookups of one key
 * (find, then the predecessor's records) and the update stage's lookups right after the
 * prefetcher's usually want the same page. A page is CRC-checked when it enters (a page of the
 * run's mapping only the first time: pc_admit). p points
 * at the page: into the run's mapping (hix_run_map), else at buf, where pread put it. A
 * mapping lives as long as its run, and a run is replaced only under the writer lock, while
 * no lookup runs; entries of a replaced run are never matched again (run ids are unique).
 */
#define PC_SLOTS 4u
typedef struct pcache_ent {
    u64 run_id, page; /* run_id 0: empty */
    const u8 *p;
    u8 buf[QM_HIX_PAGE];
} pcache_ent;
static __thread pcache_ent tl_pc[PC_SLOTS];
static __thread unsigned tl_pc_next;
/* Pages this thread's lookups may take before reading (qm_hix_pages_use). */
static __thread const qm_hix_pages *tl_pages;

void
qm_hix_pages_use(const qm_hix_pages *p)
{
    tl_pages = p;
}

u64
qm_hix_pages_key(int fd, u64 off)
{
    return (u64)fd << 40 | off / QM_HIX_PAGE;
}

int
qm_hix_pg_cmp(const void *a, const void *b)
{
    u64 x = ((const qm_hix_pg *)a)->key, y = ((const qm_hix_pg *)b)->key;
    return x < y ? -1 : x > y;
}

/* The batch's bytes of the page at off in fd, or NULL. */
static const u8 *
pages_find(const qm_hix_pages *b, int fd, u64 off)
{
    qm_hix_pg want = {qm_hix_pages_key(fd, off), 0};
    const qm_hix_pg *g = b->n ? bsearch(&want, b->pg, b->n, sizeof(*g), qm_hix_pg_cmp) : NULL;
    return g ? b->data + (size_t)g->slot * QM_HIX_PAGE : NULL;
}

/* This thread's cached copy of page p of run r, or NULL. */
static const u8 *
pc_find(const run *r, u64 p)
{
    for (unsigned i = 0; i < PC_SLOTS; i++)
        if (tl_pc[i].run_id == r->id && tl_pc[i].page == p)
            return tl_pc[i].p;
    return NULL;
}

/* Admits a page just read into slot e if its CRC and first key hold (counted as a read). A
 * page of the run's mapping is checked there once (r->checked): the lookups that take it again
 * find its bit set and touch only the records they search, where the CRC read the whole page
 * from memory each time (docs/DESIGN.md, "Hybrid indexer"). */
static bool
pc_admit(qm_hindex *x, const run *r, u64 p, pcache_ent *e)
{
    __atomic_fetch_add(&x->page_reads, 1, __ATOMIC_RELAXED);
    bool mapped = r->checked && e->p == r->map + (p + 1) * QM_HIX_PAGE;
    u64 bit = 1ull << (p % 64);
    if (!mapped || !(__atomic_load_n(&r->checked[p / 64], __ATOMIC_RELAXED) & bit)) {
        if (qm_get_u32le(e->p + QM_HIX_PAGE - 4) != page_crc(e->p, p) ||
            memcmp(e->p, r->first + p * 6, 6) != 0)
            return false;
        if (mapped)
            __atomic_fetch_or(&r->checked[p / 64], bit, __ATOMIC_RELAXED);
    }
    e->run_id = r->id;
    e->page = p;
    tl_pc_next++;
    return true;
}

/* Page p of run r: from this thread's slots, from the batch in use (qm_hix_pages_use), or
 * read; checked as it enters a slot. The pointer is valid until this thread's next call. */
static int
run_page(qm_hindex *x, const run *r, u64 p, const u8 **out, qm_err *err)
{
    if ((*out = pc_find(r, p)) != NULL)
        return 0;
    pcache_ent *e = &tl_pc[tl_pc_next % PC_SLOTS];
    e->run_id = 0;
    const u8 *got = tl_pages ? pages_find(tl_pages, r->fd, (p + 1) * QM_HIX_PAGE) : NULL;
    if (got) {
        memcpy(e->buf, got, QM_HIX_PAGE);
        e->p = e->buf;
        if (pc_admit(x, r, p, e)) {
            *out = e->p;
            return 0;
        } /* damaged in the batch: read it again below, and report what that finds */
    }
    if (r->map && qm_logs_fit()) { /* else mostly not resident: pread (hugefolio.h) */
        e->p = r->map + (p + 1) * QM_HIX_PAGE;
    } else {
        int rc = qm_iox_pread_full(x->io, r->fd, e->buf, QM_HIX_PAGE, (p + 1) * QM_HIX_PAGE);
        if (rc)
            return qm_err_set(err, rc, "%s: reading index page %" PRIu64 ": %s", x->path, p,
                              strerror(-rc));
        e->p = e->buf;
    }
    if (!pc_admit(x, r, p, e))
        return QM_CORRUPT(err, "%s: index page %" PRIu64 " (offset %" PRIu64 ") is corrupt",
                          x->path, p, (p + 1) * QM_HIX_PAGE);
    *out = e->p;
    return 0;
}

/* The last page whose first key is below key6 (0 if none). */
static u64
run_page_below(const run *r, const u8 key6[6])
{
    return hix_first_below(r->first, r->npages, k48(key6));
}

bool
qm_hix_cached(qm_hindex *x, const u8 kh[32])
{
    const run *r = &x->r;
    if (r->fd < 0 || r->npages == 0 || !x->io->concurrent)
        return true;
    u64 p = run_page_below(r, kh);
    if (pc_find(r, p))
        return true;
    if (!r->map || !qm_logs_fit())
        return false; /* read in the batch: no system call per key (prefetch.c) */
    /* Resident: the page cache holds the page (asked with mincore unless the index's pages are
     * trusted: x->res, io.h). A wrong "yes" costs the lookup a fault that reads the page, never
     * a wrong answer. A damaged page is left to the lookup. */
    const u8 *pg = r->map + (p + 1) * QM_HIX_PAGE;
    if (!qm_trust_resident(&x->res, pg, QM_HIX_PAGE))
        return false;
    pcache_ent *e = &tl_pc[tl_pc_next % PC_SLOTS];
    e->run_id = 0;
    e->p = pg;
    (void)pc_admit(x, r, p, e);
    return true;
}

/* Merges F into a new run (the merger's work; mu not held). */
static void
merge_frozen(qm_hindex *x)
{
    layer *ls[2] = {x->f, NULL};
    run out = {.fd = -1};
    pthread_mutex_lock(&g_merge_mu);
    int rc = hix_merge_write(x, &x->r, ls, x->fblob ? &x->fst : NULL, x->fgen, x->fblob,
                             x->fblob_len, false, &out, &x->merr);
    pthread_mutex_unlock(&g_merge_mu);
    pthread_mutex_lock(&x->mu);
    x->out = out;
    x->merge_rc = rc;
    x->state = MERGE_DONE;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static void *
merger_main(void *arg)
{
    qm_hindex *x = arg;
    pthread_mutex_lock(&x->mu);
    for (;;) {
        while (!x->stop && x->state != MERGE_REQUESTED)
            pthread_cond_wait(&x->cv, &x->mu);
        if (x->stop)
            break;
        pthread_mutex_unlock(&x->mu);
        merge_frozen(x);
        pthread_mutex_lock(&x->mu);
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

int
qm_hix_new(const char *dir, unsigned shard, u64 merge_changes, qm_hindex **out, qm_err *err)
{
    pthread_once(&g_fork_once, fork_once);
    qm_hindex *x = calloc(1, sizeof(*x));
    if (!x || hix_set_paths(x, dir, shard)) {
        free(x);
        return -ENOMEM;
    }
    x->io = qm_io_get();
    x->merge_changes = merge_changes;
    x->err = err;
    x->r.fd = -1;
    x->out.fd = -1;
    pthread_mutex_init(&x->mu, NULL);
    pthread_mutex_init(&x->mmu, NULL);
    pthread_cond_init(&x->cv, NULL);
    qm_hixj_init(&x->j, x->io, x->dir, shard);
    x->a = layer_new();
    /* Under a sequential test I/O layer merges run inline (qm_hix_maintain): no merger
     * thread, which could otherwise pick up the request too. */
    bool threaded = x->io->concurrent;
    if (!x->a || (threaded && pthread_create(&x->th, NULL, merger_main, x) != 0)) {
        layer_free(x->a);
        free(x->dir);
        free(x);
        return -ENOMEM;
    }
    if (threaded) {
        char name[16];
        snprintf(name, sizeof(name), "qmdb-merge-%x", shard & 0xfu);
        pthread_setname_np(x->th, name);
    }
    x->th_started = threaded;
    *out = x;
    return 0;
}

void
qm_hix_free(qm_hindex *x)
{
    if (!x)
        return;
    if (x->th_started) {
        pthread_mutex_lock(&x->mu);
        while (x->state == MERGE_REQUESTED) /* let a running merge end */
            pthread_cond_wait(&x->cv, &x->mu);
        x->stop = true;
        pthread_cond_broadcast(&x->cv);
        pthread_mutex_unlock(&x->mu);
        pthread_join(x->th, NULL);
    }
    hix_run_close(x->io, &x->r);
    hix_run_close(x->io, &x->out);
    layer_free(x->a);
    layer_free(x->f);
    hix_bulk_free(x);
    free(x->mt);
    free(x->fblob);
    qm_hixj_close(&x->j);
    pthread_mutex_destroy(&x->mu);
    pthread_mutex_destroy(&x->mmu);
    pthread_cond_destroy(&x->cv);
    free(x->dir);
    free(x);
}

/* ---- lookups ------------------------------------------------------------------------------ */

static bool
run_dead(const qm_hindex *x, u64 pos)
{
    /* Both sets' slots load at once: the first answer is usually no. */
    qm_posset_prefetch(&x->a->del, pos);
    if (x->f)
        qm_posset_prefetch(&x->f->del, pos);
    return qm_posset_has(&x->a->del, pos) || (x->f && qm_posset_has(&x->f->del, pos));
}

typedef struct outv {
    u64 *out;
    size_t cap, n;
} outv;

static inline void
ov_add(outv *o, u64 pos)
{
    if (o->n < o->cap)
        o->out[o->n] = pos;
    o->n++;
}

/* A growable list of positions with inline room for the common case. */
typedef struct posv {
    u64 *v;
    size_t n, cap;
    u64 inl[16];
} posv;

static void
pv_init(posv *p)
{
    p->v = p->inl;
    p->n = 0;
    p->cap = QM_ARRAY_LEN(p->inl);
}

static int
pv_add(posv *p, u64 pos)
{
    if (p->n == p->cap) {
        size_t nc = p->cap * 4;
        u64 *nv = malloc(nc * sizeof(u64));
        if (!nv)
            return -ENOMEM;
        memcpy(nv, p->v, p->n * sizeof(u64));
        if (p->v != p->inl)
            free(p->v);
        p->v = nv;
        p->cap = nc;
    }
    p->v[p->n++] = pos;
    return 0;
}

static void
pv_free(posv *p)
{
    if (p->v != p->inl)
        free(p->v);
}

/* Every run record with key `key` (erased or not), from page p0 on: run_page_below's
 * answer for key, or RUN_PAGE_FIND to have it computed here. */
#define RUN_PAGE_FIND UINT64_MAX
static int
run_collect(qm_hindex *x, u64 key, u64 p0, posv *pv, qm_err *err)
{
    const run *r = &x->r;
    if (r->fd < 0 || r->npages == 0)
        return 0;
    if (p0 == RUN_PAGE_FIND) {
        u8 key6[6];
        qm_put_u48be(key6, key);
        p0 = run_page_below(r, key6);
    }
    const u8 *pg;
    for (u64 p = p0; p < r->npages; p++) {
        if (p > 0 && k48(r->first + p * 6) > key)
            break;
        QM_RET(run_page(x, r, p, &pg, err));
        u32 n = page_nrec(r, p), i = page_lower_bound(r, p, pg, key);
        for (; i < n && k48(pg + (size_t)i * QM_HIX_REC) == key; i++)
            QM_RET(pv_add(pv, rec_pos12(pg + (size_t)i * QM_HIX_REC)));
        if (i < n || p + 1 >= r->npages || k48(r->first + (p + 1) * 6) != key)
            break;
    }
    return 0;
}

/* A lookup's hint to its caller (qm_hix_find_point). */
typedef struct pos_hint {
    qm_hix_hint_fn fn;
    void *arg;
} pos_hint;

/* Run records with key key6 that no overlay erased. memo: ask and fill the memo. p0: as
 * run_collect's. h (may be NULL) hears of each run record's position before its check. */
static int
run_find(qm_hindex *x, const u8 key6[6], u64 p0, outv *o, bool memo, const pos_hint *h, qm_err *err)
{
    u64 key = k48(key6);
    memo_ent me, *m = memo && hix_memo_get(x, key, &me) ? &me : NULL;
    if (m && (m->flags & MEMO_F)) {
        for (unsigned i = 0; i < m->nf; i++)
            if (!run_dead(x, m->fpos[i]))
                ov_add(o, m->fpos[i]);
        return 0;
    }
    posv pv;
    pv_init(&pv);
    int rc = run_collect(x, key, p0, &pv, err);
    for (size_t i = 0; h && !rc && i < pv.n; i++)
        h->fn(h->arg, pv.v[i]);
    for (size_t i = 0; !rc && i < pv.n; i++)
        if (!run_dead(x, pv.v[i]))
            ov_add(o, pv.v[i]);
    if (!rc && memo && pv.n <= MEMO_POS) {
        memo_ent v = {.flags = MEMO_F, .nf = (u8)pv.n};
        memcpy(v.fpos, pv.v, pv.n * sizeof(u64));
        hix_memo_put(x, key, &v);
    }
    pv_free(&pv);
    return rc;
}

/* The largest key below key6 in key6's unit among run records no overlay erased. */
static int
run_below(qm_hindex *x, const u8 key6[6], u8 best[6], bool *found, qm_err *err)
{
    const run *r = &x->r;
    *found = false;
    if (r->fd < 0 || r->npages == 0)
        return 0;
    u64 key = k48(key6), unit = key >> 32;
    const u8 *pg;
    u64 p = run_page_below(r, key6);
    for (;;) {
        QM_RET(run_page(x, r, p, &pg, err));
        for (u32 i = page_lower_bound(r, p, pg, key); i > 0; i--) {
            const u8 *rec = pg + (size_t)(i - 1) * QM_HIX_REC;
            if (k48(rec) >> 32 != unit)
                return 0; /* left the unit */
            if (!run_dead(x, rec_pos12(rec))) {
                memcpy(best, rec, 6);
                *found = true;
                return 0;
            }
        }
        if (p == 0)
            return 0;
        p--;
    }
}

/* The run's part of a predecessor lookup: its largest live key below key6 (*have) and that
 * key's live records (into o). Uses and fills the memo. */
static int
run_pred(qm_hindex *x, const u8 key6[6], bool *have, u64 *best, outv *o, qm_err *err)
{
    u64 key = k48(key6);
    memo_ent me, *m = hix_memo_get(x, key, &me) ? &me : NULL;
    if (m && (m->flags & MEMO_B)) {
        *have = false;
        if (!m->has_best)
            return 0; /* nothing below then; records only die */
        size_t before = o->n;
        for (unsigned i = 0; i < m->nb; i++)
            if (!run_dead(x, m->bpos[i]))
                ov_add(o, m->bpos[i]);
        if (o->n > before) { /* still the largest live key below */
            *have = true;
            *best = m->best;
            return 0;
        }
    }
    u8 b6[6];
    QM_RET(run_below(x, key6, b6, have, err));
    posv pv;
    pv_init(&pv);
    int rc = *have ? run_collect(x, k48(b6), RUN_PAGE_FIND, &pv, err) : 0;
    for (size_t i = 0; !rc && i < pv.n; i++)
        if (!run_dead(x, pv.v[i]))
            ov_add(o, pv.v[i]);
    *best = *have ? k48(b6) : 0;
    if (!rc && pv.n <= MEMO_POS) {
        memo_ent v = {.flags = MEMO_B, .nb = (u8)pv.n, .has_best = *have, .best = *best};
        memcpy(v.bpos, pv.v, pv.n * sizeof(u64));
        hix_memo_put(x, key, &v);
    }
    pv_free(&pv);
    return rc;
}

static void
kh_of(const u8 key6[6], u8 kh[32])
{
    memset(kh, 0, 32);
    memcpy(kh, key6, 6);
}

/* Overlay records with key6 that no newer layer erased. */
static int
overlay_find(qm_hindex *x, const u8 key6[6], outv *o)
{
    u8 kh[32];
    kh_of(key6, kh);
    layer *ls[2] = {x->f, x->a};
    for (unsigned k = 0; k < 2; k++) {
        if (!ls[k])
            continue;
        u64 tmp[64], *v = tmp;
        size_t n = qm_index_find(&ls[k]->ins, kh, tmp, QM_ARRAY_LEN(tmp));
        if (n > QM_ARRAY_LEN(tmp)) { /* unusual: many records share the prefix */
            v = malloc(n * sizeof(u64));
            if (!v)
                return -ENOMEM;
            qm_index_find(&ls[k]->ins, kh, v, n);
        }
        for (size_t i = 0; i < n; i++)
            if (k == 1 || !qm_posset_has(&x->a->del, v[i]))
                ov_add(o, v[i]);
        if (v != tmp)
            free(v);
    }
    return 0;
}

/* Hints to the CPU for a lookup of kh: start loading, together, the records its searches
 * begin at that no other load decides, the one in the run's page (when mapped and not in this
 * thread's slots) and the one in each overlay's unit, which the searches otherwise waited for
 * one after another. Returns the run page to search (run_collect's p0). */
static u64
hix_hint(qm_hindex *x, const u8 kh[32])
{
    const run *r = &x->r;
    u64 p = RUN_PAGE_FIND;
    if (r->fd >= 0 && r->npages > 0) {
        p = run_page_below(r, kh);
        if (r->map && qm_logs_fit() && !pc_find(r, p)) {
            u64 lo_key, hi_key;
            page_keys(r, p, &lo_key, &hi_key);
            u64 g = hix_keys_guess(page_nrec(r, p), k48(kh), lo_key, hi_key);
            __builtin_prefetch(r->map + (p + 1) * QM_HIX_PAGE + g * QM_HIX_REC);
        }
    }
    qm_index_prefetch(&x->a->ins, kh);
    if (x->f)
        qm_index_prefetch(&x->f->ins, kh);
    return p;
}

/* Only the memo's slot: the same hint on the run page and the overlays (hix_hint) gained
 * nothing more here, as in the earlier test (docs/BENCH.md, "Lookups that start loading a few
 * keys ahead"): a batch's keys come in key order, so their run pages and overlay units are
 * mostly neighbours of the last key's, while the memo's slots are spread at random. */
void
qm_hix_prefetch(qm_hindex *x, const u8 kh[32])
{
    hix_memo_prefetch(x, k48(kh));
}

/* memo: ask and fill the memo (lookups of the update stage, and all of them when the logs do
 * not fit in memory); the others take the hints (hix_hint). h: as run_find's. */
static int
hix_find(qm_hindex *x, const u8 kh[32], u64 *out, size_t cap, size_t *n, bool memo,
         const pos_hint *h)
{
    outv o = {out, cap, 0};
    QM_RET(run_find(x, kh, memo ? RUN_PAGE_FIND : hix_hint(x, kh), &o, memo, h, x->err));
    QM_RET(overlay_find(x, kh, &o));
    *n = o.n;
    return 0;
}

int
qm_hix_find(qm_hindex *x, const u8 kh[32], u64 *out, size_t cap, size_t *n)
{
    return hix_find(x, kh, out, cap, n, true, NULL);
}

/* While the logs fit in memory the run's pages do too (a run record is 12 bytes, an entry
 * hundreds), and the memo saves the update stage only a search of a page in DRAM; asking it
 * costs a point read a probe of a table of the block's keys that almost never holds the key,
 * and filling it a slot: 15% of a point read's samples at 10M uncapped (docs/BENCH.md, "Point
 * reads of the hybrid indexer skip the memo"). When the logs do not fit, the memo saves a
 * device read of the page, and point reads keep using it. */
int
qm_hix_find_point(qm_hindex *x, const u8 kh[32], u64 *out, size_t cap, size_t *n,
                  qm_hix_hint_fn hint, void *hint_arg)
{
    pos_hint h = {hint, hint_arg};
    return hix_find(x, kh, out, cap, n, !qm_logs_fit(), hint ? &h : NULL);
}

static bool
dead_in_a(const void *arg, u64 pos)
{
    const qm_hindex *x = arg;
    return qm_posset_has(&x->a->del, pos);
}

int
qm_hix_pred(qm_hindex *x, const u8 kh[32], u64 *out, size_t cap, size_t *n)
{
    /* The predecessor's key is the largest of the layers' largest live keys below kh. */
    outv run_grp = {out, cap, 0};
    bool have;
    u64 best;
    QM_RET(run_pred(x, kh, &have, &best, &run_grp, x->err));
    u8 k6[6];
    if (x->f && qm_index_below(&x->f->ins, kh, dead_in_a, x, k6) && (!have || k48(k6) > best)) {
        best = k48(k6);
        have = true;
        run_grp.n = 0; /* the run holds nothing with a larger key */
    }
    if (qm_index_below(&x->a->ins, kh, NULL, NULL, k6) && (!have || k48(k6) > best)) {
        best = k48(k6);
        have = true;
        run_grp.n = 0;
    }
    outv o = run_grp;
    if (have) {
        qm_put_u48be(k6, best);
        QM_RET(overlay_find(x, k6, &o));
    }
    QM_RET(run_find(x, kh, RUN_PAGE_FIND, &o, true, NULL, x->err));
    QM_RET(overlay_find(x, kh, &o));
    *n = o.n;
    return 0;
}

bool
qm_hix_page_of(qm_hindex *x, const u8 kh[32], int *fd, u64 *off)
{
    if (x->r.fd < 0 || x->r.npages == 0)
        return false;
    *fd = x->r.fd;
    *off = (run_page_below(&x->r, kh) + 1) * QM_HIX_PAGE;
    return true;
}

/* ---- changes ------------------------------------------------------------------------------ */

int
qm_hix_insert(qm_hindex *x, const u8 kh[32], u64 pos)
{
    qm_hixj_ins(&x->j, kh, pos);
    QM_RET(qm_index_insert(&x->a->ins, kh, pos));
    x->count++;
    return 0;
}

int
qm_hix_erase(qm_hindex *x, const u8 kh[32], u64 pos)
{
    qm_hixj_erase(&x->j, kh, pos);
    if (qm_index_erase(&x->a->ins, kh, pos) != 0) {
        int rc = qm_posset_add(&x->a->del, pos);
        if (rc < 0)
            return rc;
    }
    x->count--;
    return 0;
}

int
qm_hix_replace(qm_hindex *x, const u8 kh[32], u64 old_pos, u64 new_pos)
{
    qm_hixj_replace(&x->j, kh, old_pos, new_pos);
    if (qm_index_replace(&x->a->ins, kh, old_pos, new_pos) == 0)
        return 0;
    int rc = qm_posset_add(&x->a->del, old_pos);
    return rc < 0 ? rc : qm_index_insert(&x->a->ins, kh, new_pos);
}

static u64
layer_changes(const layer *l)
{
    return l->ins.count + l->del.n;
}

/* Installs a finished merge (mu held). */
static int
install_locked(qm_hindex *x)
{
    int rc = x->merge_rc;
    x->state = MERGE_IDLE;
    if (rc) {
        qm_err_set(x->err, rc, "%s", x->merr.msg);
        return rc; /* F stays; the handle reports the failure */
    }
    hix_run_close(x->io, &x->r);
    x->r = x->out;
    x->out = (run){.fd = -1}; /* moved to r: fd, records and mapping */
    layer_free(x->f);
    x->f = NULL;
    x->gen = x->fgen;
    x->rheight = x->fst.height;
    free(x->fblob);
    x->fblob = NULL;
    x->merges++;
    return 0;
}

/* Freezes A into F (mu held, no merge running): takes the snapshot of the state A reflects
 * and starts the journal of the next generation at block `height`. */
static int
freeze_locked(qm_hindex *x, u64 height, qm_hix_snap_fn snap, void *arg)
{
    layer *na = layer_new();
    if (!na)
        return -ENOMEM;
    qm_hix_state st = {0};
    u8 *blob = NULL;
    size_t len = 0;
    int rc = snap ? snap(arg, &st, &blob, &len) : 0;
    u64 gen = x->gen ? x->gen + 1 : hix_new_chain_gen();
    if (!rc && snap)
        rc = qm_hixj_start(&x->j, gen, height, false, x->err);
    if (rc) {
        free(blob);
        layer_free(na);
        return rc;
    }
    x->fst = st;
    x->fblob = blob;
    x->fblob_len = len;
    x->fgen = gen;
    x->freezes++;
    x->f = x->a;
    x->a = na;
    return 0;
}

int
qm_hix_maintain(qm_hindex *x, u64 height, qm_hix_snap_fn snap, void *arg)
{
    int rc = 0;
    /* A test I/O layer (fault injection, simulated power loss) is single-threaded: merge
     * inline then, like the rest of the engine does under it. */
    bool inline_merge = !x->th_started;
    pthread_mutex_lock(&x->mu);
    if (x->state == MERGE_DONE && x->merge_rc)
        rc = install_locked(x); /* reports the failure; a merge that succeeded: qm_hix_install */
    u64 thres = x->merge_changes ? x->merge_changes : QM_MAX((u64)HIX_MIN_MERGE, x->r.nrec / 12);
    /* Keys spread evenly over the shards, so their overlays fill at one rate: the first
     * overlay of a handle is frozen at (shard + 1) / 16 of the size, so that the shards then
     * freeze and merge in turn, not all in the same block (fewer full and frozen overlays in
     * DRAM at once, and merges spread over the blocks). */
    if (!x->merge_changes && x->freezes == 0)
        thres = thres * (x->shard + 1) / QM_SHARD_COUNT;
    if (!rc && x->state == MERGE_IDLE && !x->f &&
        (layer_changes(x->a) >= thres || (x->j.on && x->j.off >= HIX_JOURNAL_MAX)))
        rc = freeze_locked(x, height, snap, arg);
    /* Start (or, after a failure, retry) the merge of F. */
    if (!rc && x->state == MERGE_IDLE && x->f) {
        x->state = MERGE_REQUESTED;
        pthread_cond_broadcast(&x->cv);
    }
    pthread_mutex_unlock(&x->mu);
    if (!rc && inline_merge && x->state == MERGE_REQUESTED) {
        merge_frozen(x);
        pthread_mutex_lock(&x->mu);
        rc = install_locked(x);
        pthread_mutex_unlock(&x->mu);
    }
    return rc;
}

void
qm_hix_install(qm_hindex *x)
{
    pthread_mutex_lock(&x->mu);
    if (x->state == MERGE_DONE && !x->merge_rc)
        (void)install_locked(x);
    pthread_mutex_unlock(&x->mu);
}

int
qm_hix_checkpoint(qm_hindex *x, const qm_hix_state *st, const u8 *blob, size_t blob_len)
{
    int rc = 0;
    pthread_mutex_lock(&x->mu);
    while (x->state == MERGE_REQUESTED)
        pthread_cond_wait(&x->cv, &x->mu);
    if (x->state == MERGE_DONE)
        rc = install_locked(x);
    pthread_mutex_unlock(&x->mu);
    if (rc)
        return rc;
    layer *ls[3] = {x->f ? x->f : x->a, x->f ? x->a : NULL, NULL};
    run out = {.fd = -1};
    u64 gen = x->gen ? QM_MAX(x->gen, x->fgen) + 1 : hix_new_chain_gen();
    pthread_mutex_lock(&g_merge_mu);
    rc = hix_merge_write(x, &x->r, ls, st, gen, blob, blob_len, true, &out, x->err);
    pthread_mutex_unlock(&g_merge_mu);
    if (rc)
        return rc;
    hix_run_close(x->io, &x->r);
    x->r = out;
    x->gen = gen;
    x->rheight = st->height;
    free(x->fblob);
    x->fblob = NULL;
    /* No block follows a checkpoint in this process; the next open continues the journal. */
    x->j.on = false;
    layer_free(x->f);
    x->f = NULL;
    layer_free(x->a);
    x->a = layer_new();
    return x->a ? 0 : -ENOMEM;
}

/* ---- the journal ---------------------------------------------------------------------------- */

void
qm_hix_note_deact(qm_hindex *x, u64 sn)
{
    qm_hixj_deact(&x->j, sn);
}

int
qm_hix_journal_block(qm_hindex *x, const qm_hixj_blk *b)
{
    return qm_hixj_block(&x->j, b, x->err);
}

qm_hixj *
qm_hix_journal(qm_hindex *x)
{
    return &x->j;
}

u64
qm_hix_gen(const qm_hindex *x)
{
    return x->gen;
}

bool
qm_hix_run_below(qm_hindex *x, u64 h, u64 *gen, u64 *first_h)
{
    pthread_mutex_lock(&x->mu);
    bool ok = !x->f && x->state == MERGE_IDLE && x->r.fd >= 0 && x->gen != 0 && x->j.on &&
              x->j.gen == x->gen && x->rheight <= h;
    pthread_mutex_unlock(&x->mu);
    *gen = x->gen;
    *first_h = x->rheight + 1;
    return ok;
}

/* ---- walks and statistics ----------------------------------------------------------------- */

int
qm_hix_foreach(qm_hindex *x, qm_hix_fn fn, void *arg)
{
    layer *ls[3] = {x->f ? x->f : x->a, x->f ? x->a : NULL, NULL};
    return hix_merged_walk(x, &x->r, ls, fn, arg, x->err);
}

u64
qm_hix_count(const qm_hindex *x)
{
    return x->count;
}

/* The statistics read fields the merger thread and the updater change: under mu. */
u64
qm_hix_dram_bytes(const qm_hindex *xc)
{
    qm_hindex *x = (qm_hindex *)xc;
    pthread_mutex_lock(&x->mu);
    u64 b = sizeof(*x) + run_dram(&x->r) + run_dram(&x->out) + layer_bytes(x->a) +
            layer_bytes(x->f) + (x->bulk ? x->bulk->cap * QM_HIX_REC : 0);
    pthread_mutex_unlock(&x->mu);
    return b;
}

u64
qm_hix_ssd_bytes(const qm_hindex *xc)
{
    qm_hindex *x = (qm_hindex *)xc;
    pthread_mutex_lock(&x->mu);
    u64 b = x->r.file_bytes;
    pthread_mutex_unlock(&x->mu);
    return b;
}

bool
qm_hix_merge_waiting(qm_hindex *x)
{
    pthread_mutex_lock(&x->mu);
    bool w = x->state == MERGE_DONE;
    pthread_mutex_unlock(&x->mu);
    return w;
}

u64
qm_hix_merges(const qm_hindex *xc)
{
    qm_hindex *x = (qm_hindex *)xc;
    pthread_mutex_lock(&x->mu);
    u64 m = x->merges;
    pthread_mutex_unlock(&x->mu);
    return m;
}

u64
qm_hix_page_reads(const qm_hindex *x)
{
    return __atomic_load_n(&x->page_reads, __ATOMIC_RELAXED);
}

/* ---- loading at open ------------------------------------------------------------------------ */

int
qm_hix_load(const char *dir, unsigned shard, u64 merge_changes, qm_hix_state *st, u64 *gen,
            qm_hindex **out, u8 **blob, size_t *blob_len, qm_err *err)
{
    *out = NULL;
    run r;
    QM_RET(hix_run_read(dir, shard, &r, st, gen, blob, blob_len, err));
    qm_hindex *x = NULL;
    int rc = qm_hix_new(dir, shard, merge_changes, &x, err);
    if (rc) {
        hix_run_close(qm_io_get(), &r);
        free(*blob);
        *blob = NULL;
        return rc;
    }
    x->r = r;
    x->count = r.nrec;
    x->gen = *gen;
    x->rheight = st->height;
    *out = x;
    return 0;
}
