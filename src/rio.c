/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rio.c -- batched entry reads with io_uring or a pread thread pool (see rio.h).
 *
 * io_uring path: RIO_LANES lanes, each one ring of depth qd; each read owns one slot buffer
 * of 8 KiB (4 KiB aligned, enough for a 4 KiB read widened to alignment) from when it is
 * queued until its completion has been handled. A lane has 2 * qd slots: when completions
 * arrive, the reads that replace them are submitted first, into the spare slots
 * (RIO_SUBMIT_GROUP per system call), and only then are the completions handed to the caller
 * and taken off the ring, so the device does not wait for the caller's completion work (the
 * device tends to finish a queue's reads in bursts). Memory stays RIO_LANES * 2 * qd * 8 KiB
 * however many reads a batch holds. A ring that fails for good (a system call error other
 * than EINTR, EAGAIN or EBUSY) ends io_uring on its lane: the reads the kernel took are
 * waited for, those it never took and the rest of the batch are read with pread, and the
 * lane's later batches use pread on their caller's thread (rio_fail). A batch takes a free
 * lane, so up to three threads' batches (a large qmdb_get_many's two helpers' chunks of entry
 * reads beside its own index pages or last chunk, or a reader's beside the prefetch stage's)
 * are on the device at once instead of one waiting for another to end.
 *
 * pread path: the shared worker pool runs one job per shard; each job reads its shard's
 * requests in order into its own buffer.
 *
 * Both paths bypass the I/O layer's pread; each completed read is reported to the layer in
 * use when the batch started (qm_io.read_done), so that a test layer can inject read errors
 * into batched reads too.
 *
 * Thread: any; a lane runs one batch at a time (lane->mu), on its caller's thread.
 */
#include "rio.h"

#include "io.h"
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef QMDB_HAVE_URING
#include <liburing.h>
#endif

#define RIO_SLOT 8192u
#define RIO_JOBS 16u
#define RIO_PREAD_THREADS 8u
#define RIO_LANES 3u
#define RIO_QD_MAX 1024u

typedef struct rio_lane {
    pthread_mutex_t mu;
    const qm_rio *r;
#ifdef QMDB_HAVE_URING
    struct io_uring ring; /* set up iff r->uring and the lane is below r->nlanes */
#endif
    u8 *bufs; /* 2 * qd slot buffers (io_uring) or RIO_JOBS job buffers (pread) */
    u16 *free_slots;
    size_t *slot_req; /* io_uring: the request each slot in use holds (the free ones: stale) */
    bool broken;      /* io_uring failed on this lane: its batches use pread (rio_fail) */
    unsigned spare;   /* then: a slot no read of the kernel's can still land in */
    /* The batch being run (guarded by mu, read by the pread jobs). */
    const qm_io *io;
    const qm_rreq *reqs;
    size_t start[RIO_JOBS + 1];
    qm_rio_done done;
    void *arg;
} rio_lane;

struct qm_rio {
    bool uring, direct;
    unsigned qd;
    unsigned nlanes; /* RIO_LANES with io_uring; 1 with the pread pool, which is one pool */
    qm_pool *pool;
    u64 reads;
    long fail_in;    /* tests: > 0, the rings "fail" at the fail_in-th system call from now */
    bool fail_waits; /* tests: and then waits for completions fail too */
    rio_lane lane[RIO_LANES];
};

/* The aligned window [*aoff, *aoff + *alen) covering a request. */
static void
rio_window(const qm_rio *r, const qm_rreq *q, u64 *aoff, u32 *alen)
{
    if (!r->direct) {
        *aoff = q->off;
        *alen = q->len;
        return;
    }
    u64 len;
    qm_io_window(q->off, q->len, aoff, &len);
    *alen = (u32)len;
}

/* Hands a finished read to the caller: res is the pread/io_uring result for the window. */
static void
rio_complete(const rio_lane *l, const qm_rreq *q, const u8 *buf, u64 aoff, ssize_t res)
{
    if (l->io->read_done)
        res = l->io->read_done(q->fd, q->off, q->len, res);
    if (res < 0) {
        l->done(l->arg, q, NULL, 0, (int)res);
        return;
    }
    u64 skip = q->off - aoff;
    size_t got = (u64)res > skip ? (size_t)QM_MIN((u64)res - skip, (u64)q->len) : 0;
    l->done(l->arg, q, buf + skip, got, 0);
}

static ssize_t
rio_pread(int fd, u8 *buf, u32 len, u64 off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t k = pread(fd, buf + done, len - done, (off_t)(off + done));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            break;
        done += (size_t)k;
        /* A short read of a regular file ends at its end. Read on only from an aligned offset:
         * O_DIRECT does not allow an unaligned one (ext4 and XFS answer 0 at the end of a file
         * before they check the alignment, but an error here would throw away the bytes just
         * read, so this loop does not rely on that). */
        if (done < len && (off + done) % QM_IO_ALIGN != 0)
            break;
    }
    return (ssize_t)done;
}

/* Reads requests [from, to) one after another with pread into buf (one slot). */
static void
rio_pread_range(const rio_lane *l, const qm_rreq *reqs, size_t from, size_t to, u8 *buf)
{
    for (size_t k = from; k < to; k++) {
        u64 aoff;
        u32 alen;
        rio_window(l->r, &reqs[k], &aoff, &alen);
        rio_complete(l, &reqs[k], buf, aoff, rio_pread(reqs[k].fd, buf, alen, aoff));
    }
}

static int
rio_job(void *arg, size_t i)
{
    const rio_lane *l = arg;
    rio_pread_range(l, l->reqs, l->start[i], l->start[i + 1], l->bufs + i * RIO_SLOT);
    return 0;
}

static int
rio_run_pread(rio_lane *l, const qm_rreq *reqs, size_t n)
{
    l->reqs = reqs;
    size_t k = 0;
    for (unsigned s = 0; s <= RIO_JOBS; s++) {
        while (k < n && reqs[k].shard < s)
            k++;
        l->start[s] = k;
    }
    l->start[RIO_JOBS] = n;
    return qm_pool_run(l->r->pool, RIO_JOBS, rio_job, l);
}

#ifdef QMDB_HAVE_URING
/* Reads given to the kernel per system call. The device starts on a call's reads only once
 * the kernel has prepared all of them (a few microseconds each), so a refill of a whole queue
 * in one call would leave it idle that long after every burst of completions; smaller groups
 * cost a system call and a device notification each (docs/BENCH.md, "Batched reads: the
 * device waits for the submissions"). */
#define RIO_SUBMIT_GROUP 16u

/* One batch on one lane: requests [next, n) are still to be queued; `inflight` are on the
 * ring (queued or submitted, not yet taken off it), of which the last `unsub` queued were not
 * taken by the kernel yet (it takes queued reads in order); `nfree` slots are free. */
typedef struct rio_batch {
    const qm_rreq *reqs;
    size_t n, next, inflight, unsub, nfree;
} rio_batch;

/* Tests (qm_rio_fail_in): whether this system call on the ring (a submission; or a wait, when
 * wait) is to fail as one on a ring that failed for good would; once one has, every later
 * one does. */
static bool
rio_fake_fail(const rio_lane *l, bool wait)
{
    qm_rio *r = (qm_rio *)l->r;
    if (wait)
        return r->fail_waits && __atomic_load_n(&r->fail_in, __ATOMIC_RELAXED) < 0;
    long v = __atomic_load_n(&r->fail_in, __ATOMIC_RELAXED);
    if (v < 0)
        return true;
    if (v == 0 || __atomic_sub_fetch(&r->fail_in, 1, __ATOMIC_RELAXED) != 0)
        return false;
    __atomic_store_n(&r->fail_in, -1, __ATOMIC_RELAXED);
    return true;
}

/* The kernel took k of the queued reads. */
static void
rio_taken(rio_batch *b, int k)
{
    if (k > 0)
        b->unsub -= QM_MIN((size_t)k, b->unsub);
}

/* Queues reads while fewer than qd are in flight and a slot is free, and submits them
 * RIO_SUBMIT_GROUP at a time. A failed submission leaves them queued: the caller's next
 * submit-and-wait tries again and reports it. */
static void
rio_refill(rio_lane *l, rio_batch *b)
{
    const qm_rio *r = l->r;
    for (;;) {
        unsigned k = 0;
        while (k < RIO_SUBMIT_GROUP && b->next < b->n && b->inflight < r->qd && b->nfree > 0) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
            if (!sqe)
                break;
            unsigned slot = l->free_slots[--b->nfree];
            u64 aoff;
            u32 alen;
            rio_window(r, &b->reqs[b->next], &aoff, &alen);
            io_uring_prep_read(sqe, b->reqs[b->next].fd, l->bufs + (size_t)slot * RIO_SLOT, alen,
                               aoff);
            io_uring_sqe_set_data64(sqe, ((u64)b->next << 16) | slot);
            l->slot_req[slot] = b->next;
            b->next++;
            b->inflight++;
            b->unsub++;
            k++;
        }
        if (k == 0)
            return;
        int got = rio_fake_fail(l, false) ? -EIO : io_uring_submit(&l->ring);
        rio_taken(b, got);
        if (got < 0 || k < RIO_SUBMIT_GROUP)
            return;
    }
}

/* Hands over request q's read, done into `slot` with result res. */
static void
rio_finish(rio_lane *l, const qm_rreq *q, unsigned slot, ssize_t res)
{
    u8 *buf = l->bufs + (size_t)slot * RIO_SLOT;
    u64 aoff;
    u32 alen;
    rio_window(l->r, q, &aoff, &alen);
    if (res == -EAGAIN || res == -EINTR) /* rare: retry synchronously */
        res = rio_pread(q->fd, buf, alen, aoff);
    rio_complete(l, q, buf, aoff, res);
}

/* Submits what is queued and waits for a completion. */
static int
rio_enter(rio_lane *l)
{
    return rio_fake_fail(l, false) ? -EIO : io_uring_submit_and_wait(&l->ring, 1);
}

/* Hands over the read of completion d (request << 16 | slot) and frees its slot. */
static void
rio_slot_done(rio_lane *l, rio_batch *b, u64 d, ssize_t res)
{
    rio_finish(l, &b->reqs[d >> 16], d & 0xFFFF, res);
    l->free_slots[b->nfree++] = (u16)(d & 0xFFFF);
}

/*
 * The ring failed for good. No read is queued on it again: the lane's later batches use pread
 * (qm_rio_run). The reads the kernel took are waited for and handed over as usual; those it
 * never took (the last b->unsub queued: requests [next - unsub, next), still in the ring's
 * queue) and those not queued yet are read with pread into a free slot. If even the wait
 * fails, the reads the kernel took may still land in their slots: their requests are read
 * with pread too, and those slots are never used again (the lane keeps its buffers until
 * qm_rio_free, which closes the ring first). Every request is handed over once.
 */
static void
rio_fail(rio_lane *l, rio_batch *b)
{
    const qm_rio *r = l->r;
    l->broken = true;
    size_t first_unsub = b->next - b->unsub, taken = b->inflight - b->unsub;
    struct io_uring_cqe *cqe;
    while (taken > 0 && !rio_fake_fail(l, true) && io_uring_wait_cqe(&l->ring, &cqe) == 0) {
        rio_slot_done(l, b, io_uring_cqe_get_data64(cqe), cqe->res);
        io_uring_cqe_seen(&l->ring, cqe);
        taken--;
    }
    l->spare = l->free_slots[0]; /* free: at most qd of the 2 * qd slots are in flight */
    u8 *buf = l->bufs + (size_t)l->spare * RIO_SLOT;
    if (taken > 0) { /* the reads the kernel kept: the slots not free below first_unsub */
        u64 isfree[2 * RIO_QD_MAX / 64] = {0};
        for (size_t i = 0; i < b->nfree; i++)
            isfree[l->free_slots[i] / 64] |= 1ull << (l->free_slots[i] % 64);
        for (unsigned s = 0; s < 2 * r->qd; s++)
            if (!(isfree[s / 64] >> (s % 64) & 1) && l->slot_req[s] < first_unsub)
                rio_pread_range(l, b->reqs, l->slot_req[s], l->slot_req[s] + 1, buf);
    }
    rio_pread_range(l, b->reqs, first_unsub, b->n, buf);
}

static int
rio_run_uring(rio_lane *l, const qm_rreq *reqs, size_t n)
{
    const qm_rio *r = l->r;
    rio_batch b = {reqs, n, 0, 0, 0, 2 * (size_t)r->qd};
    for (unsigned i = 0; i < 2 * r->qd; i++)
        l->free_slots[i] = (u16)i;
    while (b.next < n || b.inflight > 0) {
        rio_refill(l, &b);
        int rc = rio_enter(l);
        rio_taken(&b, rc);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
            rio_fail(l, &b);
            return 0;
        }
        /* The completions that have arrived: their replacements go to the device first (into
         * the spare slots), then they are handed over and taken off the ring. The ring has
         * room: at most qd of them wait here, and at most qd more reads are in flight. */
        struct io_uring_cqe *cqe;
        unsigned head, seen = io_uring_cq_ready(&l->ring), done = 0;
        b.inflight -= seen;
        rio_refill(l, &b);
        io_uring_for_each_cqe(&l->ring, head, cqe)
        {
            if (done == seen)
                break;
            rio_slot_done(l, &b, io_uring_cqe_get_data64(cqe), cqe->res);
            done++;
        }
        io_uring_cq_advance(&l->ring, seen);
    }
    return 0;
}

static bool
rio_probe(rio_lane *l, unsigned qd)
{
    if (io_uring_queue_init(qd, &l->ring, 0) != 0)
        return false;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
    struct io_uring_cqe *cqe = NULL;
    bool ok = false;
    if (sqe) {
        io_uring_prep_nop(sqe);
        if (io_uring_submit_and_wait(&l->ring, 1) == 1 && io_uring_peek_cqe(&l->ring, &cqe) == 0) {
            ok = cqe->res == 0;
            io_uring_cqe_seen(&l->ring, cqe);
        }
    }
    if (!ok)
        io_uring_queue_exit(&l->ring);
    return ok;
}
#endif

static int
rio_lane_bufs(rio_lane *l, size_t nbufs)
{
    if (posix_memalign((void **)&l->bufs, QM_IO_ALIGN, nbufs * RIO_SLOT) != 0) {
        l->bufs = NULL;
        return -ENOMEM;
    }
    l->free_slots = malloc(nbufs * sizeof(u16));
    l->slot_req = malloc(nbufs * sizeof(size_t));
    return l->free_slots && l->slot_req ? 0 : -ENOMEM;
}

int
qm_rio_new(unsigned qd, bool direct, int uring, qm_rio **out)
{
    *out = NULL;
    qm_rio *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    for (unsigned i = 0; i < RIO_LANES; i++) {
        pthread_mutex_init(&r->lane[i].mu, NULL);
        r->lane[i].r = r;
    }
    r->direct = direct;
    r->qd = QM_MAX(1u, QM_MIN(qd, RIO_QD_MAX));
    r->nlanes = 1;
    const char *env = getenv("QMDB_NO_URING");
#ifdef QMDB_HAVE_URING
    if (uring == 1 || (uring < 0 && !(env && atoi(env) != 0))) {
        r->uring = rio_probe(&r->lane[0], r->qd);
        /* Further lanes where the kernel gives them; one is enough to run. */
        while (r->uring && r->nlanes < RIO_LANES && rio_probe(&r->lane[r->nlanes], r->qd))
            r->nlanes++;
    }
#else
    (void)env;
    (void)uring;
#endif
    int rc = 0;
    for (unsigned i = 0; i < r->nlanes && !rc; i++)
        rc = rio_lane_bufs(&r->lane[i], r->uring ? 2 * (size_t)r->qd : RIO_JOBS);
    if (!rc && !r->uring)
        rc = qm_pool_new(RIO_PREAD_THREADS, &r->pool);
    if (rc) {
        qm_rio_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void
qm_rio_free(qm_rio *r)
{
    if (!r)
        return;
    for (unsigned i = 0; i < RIO_LANES; i++) {
        rio_lane *l = &r->lane[i];
#ifdef QMDB_HAVE_URING
        if (r->uring && i < r->nlanes)
            io_uring_queue_exit(&l->ring);
#endif
        free(l->bufs);
        free(l->free_slots);
        free(l->slot_req);
        pthread_mutex_destroy(&l->mu);
    }
    qm_pool_free(r->pool);
    free(r);
}

bool
qm_rio_uring(const qm_rio *r)
{
    return r->uring;
}

bool
qm_rio_direct(const qm_rio *r)
{
    return r->direct;
}

unsigned
qm_rio_lanes(const qm_rio *r)
{
    return r->nlanes;
}

unsigned
qm_rio_broken_lanes(const qm_rio *r)
{
    unsigned k = 0;
    for (unsigned i = 0; i < r->nlanes; i++) {
        rio_lane *l = (rio_lane *)&r->lane[i];
        pthread_mutex_lock(&l->mu);
        k += l->broken;
        pthread_mutex_unlock(&l->mu);
    }
    return k;
}

void
qm_rio_fail_in(qm_rio *r, long calls, bool waits)
{
    r->fail_waits = waits;
    __atomic_store_n(&r->fail_in, calls, __ATOMIC_RELAXED);
}

u64
qm_rio_reads(const qm_rio *r)
{
    return __atomic_load_n(&r->reads, __ATOMIC_RELAXED);
}

int
qm_rio_run(qm_rio *r, const qm_rreq *reqs, size_t n, qm_rio_done done, void *arg)
{
    if (n == 0)
        return 0;
    /* The first free lane; when all are busy, the first one's queue. */
    rio_lane *l = NULL;
    for (unsigned i = 0; i < r->nlanes && !l; i++)
        if (pthread_mutex_trylock(&r->lane[i].mu) == 0)
            l = &r->lane[i];
    if (!l) {
        l = &r->lane[0];
        pthread_mutex_lock(&l->mu);
    }
    l->done = done;
    l->arg = arg;
    l->io = qm_io_get();
    __atomic_fetch_add(&r->reads, n, __ATOMIC_RELAXED);
    int rc;
#ifdef QMDB_HAVE_URING
    if (!r->uring) {
        rc = rio_run_pread(l, reqs, n);
    } else if (l->broken) { /* on this thread: the pread pool exists only without io_uring */
        rio_pread_range(l, reqs, 0, n, l->bufs + (size_t)l->spare * RIO_SLOT);
        rc = 0;
    } else {
        rc = rio_run_uring(l, reqs, n);
    }
#else
    rc = rio_run_pread(l, reqs, n);
#endif
    pthread_mutex_unlock(&l->mu);
    return rc;
}
