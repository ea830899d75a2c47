/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rio.c -- batched entry reads with io_uring or a pread thread pool (see rio.h).
 *
 * io_uring path: one ring of depth qd; each in-flight read owns one slot buffer of 8 KiB
 * (4 KiB aligned, enough for a 4 KiB read widened to alignment). Completions are handled on
 * the calling thread as they arrive and their slots reused, so memory stays qd * 8 KiB however
 * many reads a batch holds. A failed submission finishes the batch with pread.
 *
 * pread path: the shared worker pool runs one job per shard; each job reads its shard's
 * requests in order into its own buffer.
 *
 * Both paths bypass the I/O layer's pread; each completed read is reported to the layer in
 * use when the batch started (qm_io.read_done), so that a test layer can inject read errors
 * into batched reads too.
 *
 * Thread: any; qm_rio_run calls are serialised by rio->mu.
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
#define RIO_ALIGN 4096u
#define RIO_JOBS 16u
#define RIO_PREAD_THREADS 8u

struct qm_rio {
    pthread_mutex_t mu;
    bool uring, direct;
    unsigned qd;
#ifdef QMDB_HAVE_URING
    struct io_uring ring;
#endif
    u8 *bufs; /* qd slot buffers (io_uring) or RIO_JOBS job buffers (pread) */
    u16 *free_slots;
    qm_pool *pool;
    u64 reads;
    /* The batch being run (guarded by mu, read by the pread jobs). */
    const qm_io *io;
    const qm_rreq *reqs;
    size_t start[RIO_JOBS + 1];
    qm_rio_done done;
    void *arg;
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
    *aoff = q->off & ~(u64)(RIO_ALIGN - 1);
    u64 end = (q->off + q->len + RIO_ALIGN - 1) & ~(u64)(RIO_ALIGN - 1);
    *alen = (u32)(end - *aoff);
}

/* Hands a finished read to the caller: res is the pread/io_uring result for the window. */
static void
rio_complete(qm_rio *r, const qm_rreq *q, const u8 *buf, u64 aoff, ssize_t res)
{
    if (r->io->read_done)
        res = r->io->read_done(q->fd, q->off, q->len, res);
    if (res < 0) {
        r->done(r->arg, q, NULL, 0, (int)res);
        return;
    }
    u64 skip = q->off - aoff;
    size_t got = (u64)res > skip ? (size_t)QM_MIN((u64)res - skip, (u64)q->len) : 0;
    r->done(r->arg, q, buf + skip, got, 0);
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
    }
    return (ssize_t)done;
}

static int
rio_job(void *arg, size_t i)
{
    qm_rio *r = arg;
    u8 *buf = r->bufs + i * RIO_SLOT;
    for (size_t k = r->start[i]; k < r->start[i + 1]; k++) {
        const qm_rreq *q = &r->reqs[k];
        u64 aoff;
        u32 alen;
        rio_window(r, q, &aoff, &alen);
        rio_complete(r, q, buf, aoff, rio_pread(q->fd, buf, alen, aoff));
    }
    return 0;
}

static int
rio_run_pread(qm_rio *r, const qm_rreq *reqs, size_t n)
{
    r->reqs = reqs;
    size_t k = 0;
    for (unsigned s = 0; s <= RIO_JOBS; s++) {
        while (k < n && reqs[k].shard < s)
            k++;
        r->start[s] = k;
    }
    r->start[RIO_JOBS] = n;
    return qm_pool_run(r->pool, RIO_JOBS, rio_job, r);
}

#ifdef QMDB_HAVE_URING
static int
rio_run_uring(qm_rio *r, const qm_rreq *reqs, size_t n)
{
    size_t next = 0, inflight = 0, nfree = r->qd;
    u64 aoffs[1024];
    for (unsigned i = 0; i < r->qd; i++)
        r->free_slots[i] = (u16)i;
    while (next < n || inflight > 0) {
        while (next < n && nfree > 0) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
            if (!sqe)
                break;
            unsigned slot = r->free_slots[--nfree];
            u32 alen;
            rio_window(r, &reqs[next], &aoffs[slot], &alen);
            io_uring_prep_read(sqe, reqs[next].fd, r->bufs + (size_t)slot * RIO_SLOT, alen,
                               aoffs[slot]);
            io_uring_sqe_set_data64(sqe, ((u64)next << 16) | slot);
            next++;
            inflight++;
        }
        int rc = io_uring_submit_and_wait(&r->ring, 1);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
            /* The ring is unusable: finish what was queued but not completed, then the rest,
             * with pread. Completions already reaped were handed over. */
            struct io_uring_cqe *cqe;
            while (inflight > 0 && io_uring_wait_cqe(&r->ring, &cqe) == 0) {
                u64 d = io_uring_cqe_get_data64(cqe);
                unsigned slot = d & 0xFFFF;
                rio_complete(r, &reqs[d >> 16], r->bufs + (size_t)slot * RIO_SLOT, aoffs[slot],
                             cqe->res);
                io_uring_cqe_seen(&r->ring, cqe);
                inflight--;
            }
            return next < n ? rio_run_pread(r, reqs + next, n - next) : 0;
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&r->ring, head, cqe)
        {
            u64 d = io_uring_cqe_get_data64(cqe);
            unsigned slot = d & 0xFFFF;
            const qm_rreq *q = &reqs[d >> 16];
            ssize_t res = cqe->res;
            if (res == -EAGAIN || res == -EINTR) { /* rare: retry synchronously */
                u32 alen;
                rio_window(r, q, &aoffs[slot], &alen);
                res = rio_pread(q->fd, r->bufs + (size_t)slot * RIO_SLOT, alen, aoffs[slot]);
            }
            rio_complete(r, q, r->bufs + (size_t)slot * RIO_SLOT, aoffs[slot], res);
            r->free_slots[nfree++] = (u16)slot;
            inflight--;
            seen++;
        }
        io_uring_cq_advance(&r->ring, seen);
    }
    return 0;
}

static bool
rio_probe(qm_rio *r)
{
    if (io_uring_queue_init(r->qd, &r->ring, 0) != 0)
        return false;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    struct io_uring_cqe *cqe = NULL;
    bool ok = false;
    if (sqe) {
        io_uring_prep_nop(sqe);
        if (io_uring_submit_and_wait(&r->ring, 1) == 1 && io_uring_peek_cqe(&r->ring, &cqe) == 0) {
            ok = cqe->res == 0;
            io_uring_cqe_seen(&r->ring, cqe);
        }
    }
    if (!ok)
        io_uring_queue_exit(&r->ring);
    return ok;
}
#endif

int
qm_rio_new(unsigned qd, bool direct, int uring, qm_rio **out)
{
    *out = NULL;
    qm_rio *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    pthread_mutex_init(&r->mu, NULL);
    r->direct = direct;
    r->qd = QM_MAX(1u, QM_MIN(qd, 1024u));
    const char *env = getenv("QMDB_NO_URING");
#ifdef QMDB_HAVE_URING
    if (uring == 1 || (uring < 0 && !(env && atoi(env) != 0)))
        r->uring = rio_probe(r);
#else
    (void)env;
    (void)uring;
#endif
    size_t nbufs = r->uring ? r->qd : RIO_JOBS;
    int rc = 0;
    if (posix_memalign((void **)&r->bufs, RIO_ALIGN, nbufs * RIO_SLOT) != 0)
        rc = -ENOMEM;
    r->free_slots = malloc(r->qd * sizeof(u16));
    if (!rc && !r->free_slots)
        rc = -ENOMEM;
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
#ifdef QMDB_HAVE_URING
    if (r->uring)
        io_uring_queue_exit(&r->ring);
#endif
    qm_pool_free(r->pool);
    free(r->bufs);
    free(r->free_slots);
    pthread_mutex_destroy(&r->mu);
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
    pthread_mutex_lock(&r->mu);
    r->done = done;
    r->arg = arg;
    r->io = qm_io_get();
    __atomic_fetch_add(&r->reads, n, __ATOMIC_RELAXED);
    int rc;
#ifdef QMDB_HAVE_URING
    rc = r->uring ? rio_run_uring(r, reqs, n) : rio_run_pread(r, reqs, n);
#else
    rc = rio_run_pread(r, reqs, n);
#endif
    pthread_mutex_unlock(&r->mu);
    return rc;
}
