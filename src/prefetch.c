/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prefetch.c -- the prefetch stage and batched client reads.
 *
 * Both ask the indexers for the log positions a set of keys may need (a key's candidates;
 * for deletes and likely creates the predecessor's candidates too), drop those already in the
 * shards' warm caches, not yet written to the files, or resident in a mapped log's page cache
 * (until the batch meets one that is not: docs/DESIGN.md), and read the rest in one batch through
 * rio (io_uring at queue depth, or the pread pool). Every entry read lands in its shard's
 * warm cache, so the update stage or the lookups that follow find it in DRAM: one SSD read
 * per state access, issued many at a time. With the hybrid indexer the keys are looked up in
 * key-hash order, and the run pages they need that are not in the thread's page slots are read
 * first, in batches whose bytes go to the lookups (qm_hix_pages_use).
 *
 * Thread: qm_prefetch_block runs on the committing thread in the update stage (writer lock
 * held); qm_get_many on any reader thread (reader lock held by the caller), a large one with
 * two helper threads for its entry reads (gm_bg), and when the logs fit in memory cut in two parts,
 * the second on another helper (gm_part) with its own; all are joined before it returns.
 */
#include "prefetch.h"

#include "codec.h"
#include "hash.h"
#include "hugefolio.h"
#include "ix.h"
#include "posset.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* Bytes a batched read takes per entry: PF_READ_LEN, which covers typical entries (53 bytes +
 * key + value), or in a shard that met longer ones, the length of the latest (seen_len,
 * shard.h) rounded up to PF_READ_LEN, at most PF_READ_MAX (a rio slot holds any such read,
 * also widened to the alignment of O_DIRECT). An entry longer than the read is read once more when
 * it is used, from the page cache: the completion asks the kernel to read the rest ahead
 * (POSIX_FADV_WILLNEED), so the rest of a batch's long entries are read in parallel, not one
 * at a time in the update stage. */
#define PF_READ_LEN 512u
#define PF_READ_MAX 4096u
#define PF_CAND_MAX 32u

int
qm_reqs_reserve(qm_reqs *q, size_t n)
{
    if (q->n + n <= q->cap)
        return 0;
    size_t cap = QM_MAX(q->n + n, q->cap * 2 + 256);
    qm_rreq *r = realloc(q->r, cap * sizeof(*r));
    if (!r)
        return -ENOMEM;
    q->r = r;
    q->cap = cap;
    return 0;
}

void
qm_reqs_free(qm_reqs *q)
{
    free(q->r);
    memset(q, 0, sizeof(*q));
}

/* Where memory is short (the batch met a page that is not resident) and the reads bypass the
 * page cache (O_DIRECT), an entry still in the page cache, most often one written a moment
 * ago, is copied from there into the warm cache at once: a pread of the cached bytes, not a
 * device read (a read through the mapping later could find the page evicted and fault).
 * Asked only at the ages of the log that keep answering yes (qm_cprobe, io.h). True when the
 * entry is now in the warm cache; false leaves it to the device read. */
static bool
pf_cached(qm_shard *s, u64 pos, u32 want)
{
    qm_hpfile *f = &s->entries;
    unsigned c = qm_cprobe_class(f->flushed - pos);
    if (!qm_cprobe_ask(&s->cprobe, c))
        return false;
    size_t len = (size_t)QM_MIN((u64)want, f->flushed - pos);
    bool in = qm_hpfile_resident(f, pos, len);
    qm_cprobe_note(&s->cprobe, c, in);
    u8 buf[PF_READ_MAX];
    size_t got;
    if (!in || qm_hpfile_read_point(f, pos, buf, len, &got) != 0 || got < QM_ENTRY_FIXED + 3)
        return false;
    u32 el = qm_entry_len_from_header(buf);
    if (el > got) /* longer than the read: the device read and its read-ahead (pf_done) */
        return false;
    qm_shard_warm_put(s, pos, buf, el, NULL);
    __atomic_fetch_add(&s->cprobe.taken, 1, __ATOMIC_RELAXED);
    return true;
}

/* Queues reads for those of the n positions in pos that are neither cached nor buffered. */
static int
pf_queue(qm_reqs *q, qm_shard *s, bool direct, const u64 *pos, size_t n)
{
    QM_RET(qm_reqs_reserve(q, n));
    qm_hpfile *f = &s->entries;
    u32 seen = qm_shard_seen_len(s);
    u32 want = QM_MIN(PF_READ_MAX,
                      QM_MAX(PF_READ_LEN, (seen + PF_READ_LEN - 1) / PF_READ_LEN * PF_READ_LEN));
    for (size_t i = 0; i < n; i++) {
        if (pos[i] < f->head || pos[i] + QM_ENTRY_FIXED >= f->flushed ||
            qm_shard_warm_has(s, pos[i]))
            continue;
        /* Mapped and in the page cache, while nothing in this batch was found missing: the
         * reader takes the entry from the mapping (no system call, no kernel copy, no sort).
         * A batch that meets a missing page reads the rest from the device as before. The
         * question is a system call (mincore) per position: a shard whose answers keep being
         * yes is trusted (s->res, shared with its client reads), and then asked about one
         * position in QM_TRUST_EVERY (later QM_TRUST_LONG_EVERY). Only where the question
         * covers whole entries (seen_len within PF_READ_MAX): of a longer one it asks about
         * the first pages alone, which says less than the client reads' answers. */
        if (!q->no_probe && f->map) {
            size_t len = (size_t)QM_MIN(want, f->flushed - pos[i]);
            const u8 *v = qm_hpfile_view(f, pos[i], len);
            if (v &&
                (seen <= PF_READ_MAX ? qm_trust_resident(&s->res, v, len) : qm_io_resident(v, len)))
                continue;
            q->no_probe = true; /* this one was just found missing: read from the device */
        } else if (f->map && direct && seen <= PF_READ_MAX && pf_cached(s, pos[i], want)) {
            continue; /* memory is short: copied from the page cache (whole entries only) */
        }
        qm_rreq *r = &q->r[q->n];
        u64 left;
        QM_RET(qm_hpfile_read_fd(f, pos[i], direct, &r->fd, &r->off, &left));
        r->len = (u32)QM_MIN((u64)want, QM_MIN(left, f->flushed - pos[i]));
        r->shard = s->id;
        r->tag = pos[i];
        q->n++;
    }
    return 0;
}

/* rio completion: a whole entry goes to its shard's warm cache; of a longer one, the kernel
 * is asked to read the rest ahead, and the shard's reads grow to fit such entries. */
static void
pf_done(void *arg, const qm_rreq *r, const u8 *data, size_t got, int rc)
{
    qm_shard *s = &((qm_shard *)arg)[r->shard];
    if (rc < 0 || got < QM_ENTRY_FIXED + 3)
        return; /* the synchronous read later reports any real error */
    u32 len = qm_entry_len_from_header(data);
    if (len <= got) {
        qm_shard_warm_put(s, r->tag, data, len, NULL);
        return;
    }
    qm_shard_saw_len(s, len);
    if (got == r->len) /* the read ended inside the entry, not at the segment's end */
        (void)posix_fadvise(r->fd, (off_t)(r->off + got), (off_t)(len - got), POSIX_FADV_WILLNEED);
}

/* Orders reads by shard (rio's requirement for its pread pool), then by offset. */
static int
req_cmp(const void *a, const void *b)
{
    const qm_rreq *x = a, *y = b;
    if (x->shard != y->shard)
        return x->shard < y->shard ? -1 : 1;
    if (x->fd != y->fd)
        return x->fd < y->fd ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Sorts a batch of reads by shard (rio's requirement for its pread pool) and offset, and
 * drops repeats (two keys of a batch may share a candidate or a predecessor). */
static void
pf_sort_unique(qm_reqs *q)
{
    qsort(q->r, q->n, sizeof(*q->r), req_cmp);
    size_t k = 0;
    for (size_t i = 0; i < q->n; i++)
        if (k == 0 || q->r[i].fd != q->r[k - 1].fd || q->r[i].off != q->r[k - 1].off)
            q->r[k++] = q->r[i];
    q->n = k;
}

/* Sorts a batch of entry reads, drops repeats, and runs it. */
static int
pf_run(qm_reqs *q, qm_rio *rio, qm_shard *shards)
{
    if (q->n == 0)
        return 0;
    pf_sort_unique(q);
    return qm_rio_run(rio, q->r, q->n, pf_done, shards);
}

/* rio completion of an index page: its bytes go to the batch's slot (r->tag) and its key
 * to pg[r->tag], for the lookups that follow. Slots are distinct, so the pread pool's threads
 * may fill them at once. A page that fails or comes short keeps the key UINT64_MAX (left out);
 * its lookup reads it and reports the error. */
static void
pf_page_done(void *arg, const qm_rreq *r, const u8 *data, size_t got, int rc)
{
    qm_pf_pages *pp = arg;
    if (rc == 0 && got == QM_IX_PAGE) {
        memcpy(pp->data + (size_t)r->tag * QM_IX_PAGE, data, QM_IX_PAGE);
        pp->pg[r->tag].key = qm_hix_pages_key(r->fd, r->off);
    }
}

/* Reads the queued run pages in one batch into pp; *view then finds them for the lookups
 * (qm_hix_pages_use). */
static int
pf_run_pages(qm_reqs *q, qm_rio *rio, qm_pf_pages *pp, qm_hix_pages *view)
{
    *view = (qm_hix_pages){0};
    if (q->n == 0)
        return 0;
    pf_sort_unique(q);
    size_t n = q->n;
    if (n > pp->cap) {
        u8 *d = realloc(pp->data, n * QM_IX_PAGE);
        if (!d)
            return -ENOMEM;
        pp->data = d;
        qm_hix_pg *pg = realloc(pp->pg, n * sizeof(*pg));
        if (!pg)
            return -ENOMEM;
        pp->pg = pg;
        pp->cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        q->r[i].tag = i;
        pp->pg[i] = (qm_hix_pg){UINT64_MAX, (u32)i};
    }
    QM_RET(qm_rio_run(rio, q->r, n, pf_page_done, pp));
    qsort(pp->pg, n, sizeof(*pp->pg), qm_hix_pg_cmp); /* the missing ones last */
    while (n > 0 && pp->pg[n - 1].key == UINT64_MAX)
        n--;
    *view = (qm_hix_pages){pp->pg, n, pp->data};
    return 0;
}

static void
pf_pages_free(qm_pf_pages *pp)
{
    free(pp->data);
    free(pp->pg);
    memset(pp, 0, sizeof(*pp));
}

/* Hybrid indexer, phase one of a two-phase prefetch: the run page each key's lookup reads,
 * all in one batch, before the lookups that name the entries to read in phase two. Keys come
 * in key-hash order, so a page is queued once for the run of keys that read it. */
static int
pf_queue_page(qm_reqs *q, qm_shard *s, const u8 kh[32])
{
    int fd;
    u64 off;
    if (!qm_ix_page_of(&s->index, kh, &fd, &off))
        return 0;
    if (q->n > 0 && q->r[q->n - 1].fd == fd && q->r[q->n - 1].off == off)
        return 0;
    QM_RET(qm_reqs_reserve(q, 1));
    q->r[q->n++] = (qm_rreq){.fd = fd, .shard = s->id, .off = off, .len = QM_IX_PAGE};
    return 0;
}

/* A put whose key a client read for this block (qmdb_get_many, or a qmdb_get that found it)
 * has its entries cached already. */
static bool
pf_seen(qm_shard *s, const qm_op *op)
{
    if (op->vlen == 0)
        return false; /* a delete also needs the predecessor */
    pthread_mutex_lock(&s->warm_mu);
    bool seen = qm_warm_key_has(&s->warm, op->kh);
    pthread_mutex_unlock(&s->warm_mu);
    return seen;
}

/* Queues the entry reads of one operation: its candidates and, for deletes and likely
 * creates, the predecessor's. */
static int
pf_op(qm_reqs *q, qm_shard *s, bool direct, const qm_op *op)
{
    u64 pos[PF_CAND_MAX];
    size_t nkey;
    size_t n = qm_shard_op_positions(s, op->kh, op->vlen == 0 ? QM_PRED_ALWAYS : QM_PRED_IF_ABSENT,
                                     pos, PF_CAND_MAX, &nkey);
    return pf_queue(q, s, direct, pos, n);
}

void
qm_pf_free(qm_pf *pf)
{
    qm_reqs_free(&pf->ent);
    qm_reqs_free(&pf->pg);
    free(pf->mark);
    free(pf->seq);
    free(pf->tmp);
    pf_pages_free(&pf->pages);
    memset(pf, 0, sizeof(*pf));
}

/* Index pages read per batch before the lookups that wait for them (their bytes are held
 * until those lookups are done: 1 MiB, which a small memory cgroup would otherwise give to
 * the page cache). */
#define PF_PAGE_CHUNK 256u

/* Reads the queued index pages, then does the deferred lookups among operations
 * [from, to) of the visiting order. */
static int
pf_deferred(qm_pf *pf, qm_shard *shards, const qm_changeset *cs, qm_rio *rio, size_t from,
            size_t to)
{
    if (pf->pg.n == 0)
        return 0;
    qm_hix_pages view;
    QM_RET(pf_run_pages(&pf->pg, rio, &pf->pages, &view));
    pf->pg.n = 0;
    qm_hix_pages_use(&view);
    int rc = 0;
    for (size_t at = from; at < to && !rc; at++)
        if (pf->mark[at])
            rc = pf_op(&pf->ent, &shards[pf->seq[at].shard], qm_rio_direct(rio),
                       &cs->ops[pf->seq[at].shard][pf->seq[at].idx]);
    qm_hix_pages_use(NULL);
    return rc;
}

/* The lookup order's sort (prefetch.h). */
void
qm_pf_sort(qm_pf_op *v, size_t n, void *scratch)
{
    if (n < 64) {
        for (size_t i = 1; i < n; i++) {
            qm_pf_op x = v[i];
            size_t j = i;
            for (; j > 0 && v[j - 1].key > x.key; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    /* An even number of passes: the last one writes back into v. */
    _Static_assert(QM_PF_SORT_PASSES % 2 == 0, "the sorted keys must end in v");
    const u64 mask = QM_PF_SORT_DIG - 1;
    qm_pf_op *src = v, *dst = scratch;
    u32 *cnt = (u32 *)(dst + n);
    memset(cnt, 0, QM_PF_SORT_PASSES * QM_PF_SORT_DIG * sizeof(u32));
    for (size_t i = 0; i < n; i++)
        for (unsigned d = 0; d < QM_PF_SORT_PASSES; d++)
            cnt[d * QM_PF_SORT_DIG + ((v[i].key >> (d * QM_PF_SORT_BITS)) & mask)]++;
    for (unsigned d = 0; d < QM_PF_SORT_PASSES; d++) {
        u32 *c = cnt + d * QM_PF_SORT_DIG;
        unsigned sh = d * QM_PF_SORT_BITS;
        u32 sum = 0;
        for (unsigned k = 0; k < QM_PF_SORT_DIG; k++) {
            u32 t = c[k];
            c[k] = sum;
            sum += t;
        }
        for (size_t i = 0; i < n; i++)
            dst[c[(src[i].key >> sh) & mask]++] = src[i];
        qm_pf_op *t = src;
        src = dst;
        dst = t;
    }
}

/* The block's operations shard by shard; with the hybrid indexer, each shard's in key-hash
 * order. Its run pages hold neighbouring key hashes, so the keys of one page are then looked
 * up one after another, the page is queued for the batch once, and all but the first find it
 * in the lookup thread's page slots (hindex.c). The changeset's own order (by
 * transaction, then key hash) puts them in arrival order when every operation is its own
 * transaction. Only the order of the lookups and reads changes: what they find does not. */
static int
pf_order(qm_pf *pf, qm_shard *shards, const qm_changeset *cs, size_t total)
{
    if (total > pf->mcap) {
        u8 *m = realloc(pf->mark, total);
        if (!m)
            return -ENOMEM;
        pf->mark = m;
        qm_pf_op *q = realloc(pf->seq, total * sizeof(*q));
        if (!q)
            return -ENOMEM;
        pf->seq = q;
        if (shards[0].index.hyb) { /* only the hybrid indexer's order is sorted */
            void *t = realloc(pf->tmp, QM_PF_SORT_SCRATCH(total));
            if (!t)
                return -ENOMEM;
            pf->tmp = t;
        }
        pf->mcap = total;
    }
    size_t at = 0;
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++) {
        size_t first = at;
        for (size_t k = 0; k < cs->n[i]; k++) {
            const qm_op *op = &cs->ops[i][k];
            pf->seq[at++] = (qm_pf_op){.key = qm_get_u48be(op->kh), .idx = (u32)k, .shard = i};
        }
        if (shards[i].index.hyb && at - first > 1)
            qm_pf_sort(pf->seq + first, at - first, pf->tmp);
    }
    return 0;
}

int
qm_prefetch_block(qm_shard *shards, qm_rio *rio, const qm_changeset *cs, qm_pf *pf)
{
    bool direct = qm_rio_direct(rio);
    qm_reqs *q = &pf->ent, *pq = &pf->pg;
    q->n = pq->n = 0;
    q->no_probe = false;
    size_t total = 0;
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
        total += cs->n[i];
    QM_RET(pf_order(pf, shards, cs, total));
    /* Hybrid indexer: an operation whose index page is not in DRAM waits for one batch of
     * page reads (phase one); the others are looked up at once. The lookups fill the memo
     * the update stage reads. */
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
        QM_RET(qm_ix_memo_reserve(&shards[i].index, cs->n[i]));
    /* Deferred lookups run a chunk at a time, so that the bytes of a chunk's pages are held
     * only until its lookups are done (PF_PAGE_CHUNK). */
    size_t from = 0;
    for (size_t at = 0; at < total; at++) {
        qm_shard *s = &shards[pf->seq[at].shard];
        const qm_op *op = &cs->ops[pf->seq[at].shard][pf->seq[at].idx];
        pf->mark[at] = 0;
        if (pf_seen(s, op))
            continue;
        if (!qm_ix_cached(&s->index, op->kh)) {
            QM_RET(pf_queue_page(pq, s, op->kh));
            pf->mark[at] = 1;
            if (pq->n >= PF_PAGE_CHUNK) {
                QM_RET(pf_deferred(pf, shards, cs, rio, from, at + 1));
                from = at + 1;
            }
            continue;
        }
        QM_RET(pf_op(q, s, direct, op));
    }
    QM_RET(pf_deferred(pf, shards, cs, rio, from, total));
    return pf_run(q, rio, shards);
}

/* Hands a found value to a read: copied, or QMDB_BUFFER_TOO_SMALL with the length set. */
static void
gm_value(qmdb_read *r, const u8 *v, u32 vl)
{
    r->vlen = vl;
    if (r->cap < vl)
        r->rc = QMDB_BUFFER_TOO_SMALL;
    else
        memcpy(r->buf, v, vl);
}

/*
 * A large qmdb_get_many reads its entries while it goes on looking keys up: each time a chunk
 * of entry reads is queued, a helper thread takes it and the caller looks up the next keys, in
 * the hybrid indexer's case mostly run pages read from the page cache (CPU), while the device
 * serves the chunks before. The first chunk is GM_IO_FIRST reads and each next one twice the
 * last, up to GM_IO_CHUNK, so that the device starts about a millisecond into the call, not
 * after the 4-7 ms that the lookups of a full chunk took. Two helpers take the chunks in turn,
 * each batch on its own rio lane, so that a chunk's reads start while the last reads of the
 * one before are still in flight; with one helper the device's queue ran dry at every
 * hand-over (docs/BENCH.md, "Batched reads that keep the device busy"). A helper is joined
 * before it takes its next chunk, and both before the keys are compared; the caller holds the
 * reader lock throughout. A read that an earlier chunk of the call queued (two keys sharing an
 * entry, or one key read twice) is not queued again (gm_bg_dedup). Chunks are smaller than a
 * whole batch, so fewer neighbouring reads reach the block layer together to be merged
 * (docs/BENCH.md, "Hybrid creates under a cap").
 */
#define GM_IO_CHUNK 2048u
#define GM_IO_FIRST 256u

/* One helper thread's chunk of reads. */
typedef struct gm_run {
    qm_reqs q;
    pthread_t th;
    bool on;
    int rc;
    qm_rio *rio;
    qm_shard *shards;
} gm_run;

typedef struct gm_bg {
    gm_run run[2];  /* chunks are handed to them in turn */
    unsigned next;  /* the one the next chunk goes to */
    qm_posset seen; /* the call's queued reads: position | shard << 60 */
} gm_bg;

/* Drops the reads queued since q->r[from] that this call queued before (another chunk may
 * be reading them), and remembers the others. */
static int
gm_bg_dedup(gm_bg *b, qm_reqs *q, size_t from)
{
    size_t k = from;
    for (size_t i = from; i < q->n; i++) {
        u64 key = q->r[i].tag | (u64)q->r[i].shard << 60; /* log positions stay below 2^60 */
        int added = qm_posset_add(&b->seen, key);
        if (added < 0)
            return added;
        if (added)
            q->r[k++] = q->r[i];
    }
    q->n = k;
    return 0;
}

static void *
gm_run_main(void *arg)
{
    gm_run *r = arg;
    r->rc = pf_run(&r->q, r->rio, r->shards);
    return NULL;
}

/* Waits for a helper's chunk; its result. */
static int
gm_run_join(gm_run *r)
{
    if (!r->on)
        return 0;
    pthread_join(r->th, NULL);
    r->on = false;
    return r->rc;
}

/* Waits for every chunk in flight; the first failure. */
static int
gm_bg_join(gm_bg *b)
{
    int rc = gm_run_join(&b->run[0]);
    int rc2 = gm_run_join(&b->run[1]);
    return rc ? rc : rc2;
}

/* Hands the queued reads in q to the next helper in turn, once its previous chunk is done; q
 * is left empty. */
static int
gm_bg_start(gm_bg *b, qm_reqs *q)
{
    gm_run *r = &b->run[b->next];
    b->next ^= 1;
    QM_RET(gm_run_join(r));
    qm_reqs t = r->q;
    r->q = *q;
    *q = t;
    q->n = 0;
    q->no_probe = r->q.no_probe; /* a missing page seen: no more residency questions */
    if (pthread_create(&r->th, NULL, gm_run_main, r) != 0)
        return pf_run(&r->q, r->rio, r->shards); /* no thread: read it now */
    r->on = true;
    return 0;
}

/* Candidate positions of one read of a batch: cand[off, off + n), or one of: */
typedef struct gm_slot {
    u32 off, n;
} gm_slot;
#define GM_PLAIN UINT32_MAX          /* too many candidates: a plain lookup */
#define GM_ANSWERED (UINT32_MAX - 1) /* answered from a pre-image */
#define GM_DEFER (UINT32_MAX - 2)    /* looked up after the index page batch */

/* The lookups of one qmdb_get_many batch. */
typedef struct gm_ctx {
    qm_shard *shards;
    qm_rio *rio;
    u8 (*kh)[32];
    gm_slot *slot;
    u64 *cand; /* candidate positions of all keys */
    size_t ncand, ccap;
    qm_reqs *q;
    bool for_block;
    gm_bg *bg;         /* with a helper: queued reads are deduplicated across chunks */
    qm_pf_pages pages; /* the run pages of the deferred lookups */
} gm_ctx;

static int gm_lookup(gm_ctx *g, size_t i);

/* Reads the queued index pages, then looks up the deferred keys among ord[*from, to). */
static int
gm_deferred(gm_ctx *g, qm_reqs *pq, const qmdb_read *rd, const qm_pf_op *ord, size_t *from,
            size_t to)
{
    if (pq->n == 0)
        return 0;
    qm_hix_pages view;
    QM_RET(pf_run_pages(pq, g->rio, &g->pages, &view));
    pq->n = 0;
    qm_hix_pages_use(&view);
    int rc = 0;
    for (; *from < to && !rc; (*from)++) {
        size_t i = ord[*from].idx;
        if (!rd[i].rc && g->slot[i].n == GM_DEFER)
            rc = gm_lookup(g, i);
    }
    qm_hix_pages_use(NULL);
    return rc;
}

/* Key i's candidates (and its predecessor's, for a block's absent keys) into g->cand, and
 * reads for those not in DRAM into g->q. */
static int
gm_lookup(gm_ctx *g, size_t i)
{
    qm_shard *s = &g->shards[qm_shard_of(g->kh[i])];
    if (g->ccap - g->ncand < PF_CAND_MAX) {
        size_t nc = QM_MAX(g->ccap * 2, g->ncand + PF_CAND_MAX + 1024);
        u64 *c = realloc(g->cand, nc * sizeof(u64));
        if (!c)
            return -ENOMEM;
        g->cand = c;
        g->ccap = nc;
    }
    size_t nkey;
    size_t m = qm_shard_op_positions(s, g->kh[i], g->for_block ? QM_PRED_IF_ABSENT : QM_PRED_NONE,
                                     g->cand + g->ncand, PF_CAND_MAX, &nkey);
    if (nkey == SIZE_MAX) { /* unusual: many records share the prefix; plain lookup */
        g->slot[i].n = GM_PLAIN;
        return 0;
    }
    g->slot[i].off = (u32)g->ncand;
    g->slot[i].n = (u32)nkey;
    if (g->rio) {
        size_t from = g->q->n;
        QM_RET(pf_queue(g->q, s, qm_rio_direct(g->rio), g->cand + g->ncand, m));
        if (g->bg)
            QM_RET(gm_bg_dedup(g->bg, g->q, from));
    }
    g->ncand += m;
    return 0;
}

/* Answers a read from the in-flight blocks' pre-images (the entry each records, read into b);
 * 0 if none holds the key, 1 if answered, or a negative error. */
static int
gm_pre(qm_undo *const pre[][QM_SHARD_COUNT], unsigned npre, qm_shard *s, const u8 kh[32],
       qm_ebuf *b, qmdb_read *r)
{
    for (unsigned k = 0; k < npre; k++) {
        u64 pos;
        int got = qm_undo_get(pre[k][s->id], kh, &pos);
        if (got < 0)
            continue;
        if (got == 0) {
            r->rc = QMDB_NOTFOUND;
            return 1;
        }
        qm_entry e;
        QM_RET(qm_shard_read_pre(s, pos, r->key, (u32)r->klen, b, &e));
        gm_value(r, e.value, e.vlen);
        return 1;
    }
    return 0;
}

/*
 * A large qmdb_get_many whose logs fit in memory is cut in two parts, the keys ord[0, nk / 2)
 * and ord[nk / 2, nk) of the visiting order, run at once on the caller's thread and a helper
 * thread: there the lookups are bound by one core's CPU, not by the device (docs/BENCH.md,
 * "Batched reads on both cores"). A part looks its keys up, reads their entries (with its own
 * gm_bg), then compares its keys; each has its own candidates, read queues and index-page
 * batches of half the size, so the call holds no more page bytes than one part would. The
 * parts write only their own keys' slots and reads, and the shards' warm caches and the
 * indexers' memos, which take their own locks as they do for two readers' calls: an entry
 * queued by both parts is read twice and cached once. When the logs do not fit the call stays
 * on one thread: there the split grew the process by 8-15 MB more per phase (why was not
 * found) and the lookups of absent keys, which live on the index's page cache, lost more than
 * the split gained (docs/BENCH.md, "Batched reads in two lanes"). Logs that are not mapped
 * (QMDB_NO_MMAP) are not counted by qm_logs_fit, so they count as fitting.
 */
#define GM_SPLIT_MIN (2 * GM_IO_CHUNK)

static u64 gm_splits; /* calls cut in two (qm_get_many_splits) */

u64
qm_get_many_splits(void)
{
    return __atomic_load_n(&gm_splits, __ATOMIC_RELAXED);
}

/* What both parts of a call share; a part adds its keys, ord[lo, hi). */
typedef struct gm_call {
    qm_shard *shards;
    qm_rio *rio;
    qmdb_read *rd;
    u8 (*kh)[32];
    gm_slot *slot;
    const qm_pf_op *ord;
    qm_undo *const (*pre)[QM_SHARD_COUNT];
    unsigned npre, nparts;
    bool for_block;
} gm_call;

typedef struct gm_part {
    const gm_call *c;
    size_t lo, hi;
    pthread_t th;
    int rc;
} gm_part;

/* Keys of one shard whose reads a block's call answered, added to the shard's key set under
 * one lock (qm_warm_key_add) instead of one lock per key (docs/BENCH.md, "Fewer locks per
 * batched read"). The prefetch stage asks the set only after the call returns. */
#define GM_KEYS_BATCH 64
typedef struct gm_keys {
    qm_shard *s;
    const u8 *kh[GM_KEYS_BATCH];
    size_t n;
} gm_keys;

static void
gm_keys_flush(gm_keys *k)
{
    if (k->n == 0)
        return;
    pthread_mutex_lock(&k->s->warm_mu);
    for (size_t i = 0; i < k->n; i++)
        qm_warm_key_add(&k->s->warm, k->kh[i]);
    pthread_mutex_unlock(&k->s->warm_mu);
    k->n = 0;
}

static int
gm_part_run(const gm_part *p)
{
    const gm_call *c = p->c;
    qm_shard *shards = c->shards;
    qm_rio *rio = c->rio;
    qmdb_read *rd = c->rd;
    u8(*kh)[32] = c->kh;
    gm_slot *slot = c->slot;
    const qm_pf_op *ord = c->ord;
    size_t page_chunk = PF_PAGE_CHUNK / c->nparts; /* the call holds one part's page bytes */
    qm_reqs q = {0}, pq = {0};
    gm_bg bg = {.run = {{.rio = rio, .shards = shards}, {.rio = rio, .shards = shards}}};
    bool overlap = rio && p->hi - p->lo > GM_IO_CHUNK && qm_io_concurrent();
    gm_ctx g = {shards, rio, kh, slot, NULL, 0, 0, &q, c->for_block, overlap ? &bg : NULL, {0}};
    size_t from = p->lo;        /* deferred lookups before this key are done */
    size_t chunk = GM_IO_FIRST; /* reads queued that make the next chunk */
    int rc = 0;
    u8 stackbuf[512];
    qm_ebuf b = {stackbuf, sizeof(stackbuf), NULL};
    gm_keys ka = {0};
    /* Pass 1: every key's candidates (and the predecessor's of absent keys), looked up at
     * once, or, with the hybrid indexer, after one batch of the index pages not in DRAM;
     * then one batch of reads for the entries not in DRAM. */
    size_t d = qm_hint_ahead();
    for (size_t j = p->lo; j < p->hi; j++) {
        size_t i = ord[j].idx;
        qm_shard *s = &shards[qm_shard_of(kh[i])];
        if (d && j + d < p->hi) {
            const u8 *k2 = kh[ord[j + d].idx];
            qm_ix_prefetch(&shards[qm_shard_of(k2)].index, k2);
        }
        int pr = c->npre ? gm_pre(c->pre, c->npre, s, kh[i], &b, &rd[i]) : 0;
        if (pr < 0) {
            rc = pr;
            goto out;
        }
        if (pr) {
            slot[i].n = GM_ANSWERED;
        } else if (rio && !qm_ix_cached(&s->index, kh[i])) {
            QM_TRY(pf_queue_page(&pq, s, kh[i]));
            slot[i].n = GM_DEFER;
        } else {
            QM_TRY(gm_lookup(&g, i));
        }
        if (pq.n >= page_chunk) /* a chunk at a time, as in the prefetch stage */
            QM_TRY(gm_deferred(&g, &pq, rd, ord, &from, j + 1));
        if (overlap && q.n >= chunk) {
            QM_TRY(gm_bg_start(&bg, &q));
            chunk = QM_MIN(chunk * 2, (size_t)GM_IO_CHUNK);
        }
    }
    QM_TRY(gm_deferred(&g, &pq, rd, ord, &from, p->hi));
    if (rio && q.n)
        QM_TRY(pf_run(&q, rio, shards));
    QM_TRY(gm_bg_join(&bg));
    /* Pass 2: compare full keys (entries now come from the warm caches). */
    for (size_t j = p->lo; j < p->hi; j++) {
        size_t i = ord[j].idx;
        if (d && j + d < p->hi) {
            size_t i2 = ord[j + d].idx;
            if (slot[i2].n > 0 && slot[i2].n < GM_DEFER)
                qm_shard_prefetch_entry(&shards[qm_shard_of(kh[i2])], g.cand[slot[i2].off]);
        }
        if (slot[i].n == GM_ANSWERED)
            continue;
        qm_shard *s = &shards[qm_shard_of(kh[i])];
        qm_entry e;
        u64 pos;
        int r = slot[i].n == GM_PLAIN
                    ? qm_shard_get(s, kh[i], rd[i].key, (u32)rd[i].klen, &b, &e, &pos)
                    : qm_shard_get_in(s, g.cand + slot[i].off, slot[i].n, rd[i].key,
                                      (u32)rd[i].klen, &b, &e, &pos);
        if (r && r != QMDB_NOTFOUND) {
            rc = r;
            break;
        }
        /* Its entries (or its predecessor's) are cached: a put of it needs no prefetch. */
        if (c->for_block) {
            if (ka.n == GM_KEYS_BATCH || (ka.n && ka.s != s))
                gm_keys_flush(&ka);
            ka.s = s;
            ka.kh[ka.n++] = kh[i];
        }
        rd[i].rc = r;
        if (!r)
            gm_value(&rd[i], e.value, e.vlen);
    }
    gm_keys_flush(&ka);
out:
    (void)gm_bg_join(&bg); /* after a failure the helper may still be reading */
    qm_reqs_free(&bg.run[0].q);
    qm_reqs_free(&bg.run[1].q);
    qm_posset_free(&bg.seen);
    qm_ebuf_free(&b);
    pf_pages_free(&g.pages);
    free(g.cand);
    qm_reqs_free(&q);
    qm_reqs_free(&pq);
    return rc;
}

static void *
gm_part_main(void *arg)
{
    gm_part *p = arg;
    p->rc = gm_part_run(p);
    return NULL;
}

int
qm_get_many(qm_shard *shards, qm_rio *rio, qmdb_read *rd, size_t n,
            qm_undo *const pre[][QM_SHARD_COUNT], unsigned npre, bool for_block)
{
    if (n > UINT32_MAX) /* keys are numbered in 32 bits (qm_pf_op) */
        return QMDB_INVALID;
    u8(*kh)[32] = malloc(n * 32 + 1);
    gm_slot *slot = malloc(n * sizeof(*slot) + 1);
    qm_pf_op *ord = malloc(n * sizeof(*ord) + 1);
    int rc = 0;
    if (!kh || !slot || !ord) {
        rc = -ENOMEM;
        goto out;
    }
    /* A warm cache that nearly filled up without a block to empty it (a reader that never
     * commits) would stop taking this batch's entries: start it afresh. */
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++) {
        pthread_mutex_lock(&shards[i].warm_mu);
        if (shards[i].warm.alen > QM_WARM_MAX_BYTES / 4 * 3 || shards[i].warm.kn > QM_WARM_MAX_KEYS)
            qm_warm_clear(&shards[i].warm);
        pthread_mutex_unlock(&shards[i].warm_mu);
    }
    /* The keys' hashes, and the order to look them up in: with the hybrid indexer, by key
     * hash (so by shard, then run page: pf_order). Invalid reads are answered here and left
     * out of the order. */
    size_t nk = 0;
    for (size_t i = 0; i < n; i++) {
        slot[i].n = 0;
        if (!rd[i].key || rd[i].klen == 0 || rd[i].klen > QMDB_MAX_KEY_LEN ||
            (rd[i].cap > 0 && !rd[i].buf)) {
            rd[i].rc = QMDB_INVALID;
            continue;
        }
        rd[i].rc = 0;
        qm_sha256(rd[i].key, rd[i].klen, kh[i]);
        ord[nk++] = (qm_pf_op){.key = qm_get_u48be(kh[i]), .idx = (u32)i};
    }
    if (rio && shards[0].index.hyb && nk > 1) {
        void *tmp = malloc(QM_PF_SORT_SCRATCH(nk));
        if (!tmp) {
            rc = -ENOMEM;
            goto out;
        }
        qm_pf_sort(ord, nk, tmp);
        free(tmp);
    }
    unsigned nparts = rio && nk >= GM_SPLIT_MIN && qm_io_concurrent() && qm_logs_fit() ? 2 : 1;
    gm_call c = {shards, rio, rd, kh, slot, ord, pre, npre, nparts, for_block};
    gm_part part[2];
    for (unsigned k = 0; k < nparts; k++)
        part[k] = (gm_part){.c = &c, .lo = nk * k / nparts, .hi = nk * (k + 1) / nparts};
    bool helper = nparts == 2 && pthread_create(&part[1].th, NULL, gm_part_main, &part[1]) == 0;
    if (nparts == 2)
        __atomic_fetch_add(&gm_splits, 1, __ATOMIC_RELAXED);
    rc = gm_part_run(&part[0]);
    if (helper)
        pthread_join(part[1].th, NULL);
    else if (nparts == 2) /* no thread: the second part after the first */
        part[1].rc = rc ? 0 : gm_part_run(&part[1]);
    if (!rc && nparts == 2)
        rc = part[1].rc;
out:
    free(kh);
    free(slot);
    free(ord);
    return rc;
}
