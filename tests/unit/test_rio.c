/* SPDX-License-Identifier: Apache-2.0 */
/* test_rio.c -- batched reads (rio.c), with io_uring and with the pread pool, buffered and
 * O_DIRECT: every request is answered once with the file's bytes at its offset, a read past
 * the end comes short, a bad descriptor is an error for that request alone; and with io_uring,
 * two threads' batches run at the same time (each in its own lane): a completion of the first
 * batch waits for the second batch to finish, which would never happen if one batch had to end
 * before the next began. Queue depths of 1 and 20 with io_uring cover a single slot and refills
 * that end on a partial submission group, also with completions slow enough that the reads
 * submitted before them land while they are handed over. A ring that fails for good in the
 * middle of a batch still answers every request once, and its lane reads with pread after. */
#include "../test.h"
#include "rio.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

/* Not a multiple of the O_DIRECT alignment, as an entry file ends anywhere: the last request's
 * aligned window runs past the end and its read comes short at an unaligned length. */
#define FILE_LEN ((1u << 20) - 1000u)
#define NREQ 600u

static u8 filebytes[FILE_LEN];
/* When set, each completion waits before it looks at its bytes, so reads submitted meanwhile
 * (rio.c submits the replacements before it hands completions over) land first: one that
 * went into a slot still being handed over would change the bytes compared. */
static bool slow_done;

typedef struct got {
    atomic_int calls[NREQ];
    int bad[NREQ]; /* per request: 0 ok, 1 wrong bytes or length, 2 error */
} got;

static void
on_done(void *arg, const qm_rreq *r, const u8 *data, size_t n, int rc)
{
    got *g = arg;
    atomic_fetch_add(&g->calls[r->tag], 1);
    if (slow_done)
        usleep(50);
    if (rc < 0) {
        g->bad[r->tag] = 2;
        return;
    }
    size_t want = r->off >= FILE_LEN ? 0 : QM_MIN((u64)r->len, FILE_LEN - r->off);
    g->bad[r->tag] = n != want || (n && memcmp(data, filebytes + r->off, n) != 0);
}

/* NREQ requests spread over 16 shards (sorted by shard, as rio asks), the last one past the
 * end of the file and one with a descriptor that is not open. */
static void
make_reqs(qm_rreq *q, int fd, uint64_t seed)
{
    for (u32 i = 0; i < NREQ; i++) {
        u32 len = 1 + (u32)(test_xorshift(&seed) % QM_RIO_MAX_LEN);
        u64 off = test_xorshift(&seed) % (FILE_LEN - len);
        q[i] = (qm_rreq){.fd = fd, .shard = i * 16 / NREQ, .off = off, .len = len, .tag = i};
    }
    q[NREQ - 1].off = FILE_LEN - 100; /* 100 bytes left of 4000 */
    q[NREQ - 1].len = 4000;
    q[NREQ - 2].fd = 1 << 20; /* not open */
}

static void
check_batch(qm_rio *r, int fd, uint64_t seed)
{
    static qm_rreq q[NREQ];
    static got g;
    make_reqs(q, fd, seed);
    for (u32 i = 0; i < NREQ; i++) {
        atomic_init(&g.calls[i], 0);
        g.bad[i] = -1;
    }
    CHECK_OK(qm_rio_run(r, q, NREQ, on_done, &g));
    for (u32 i = 0; i < NREQ; i++) {
        CHECK_EQ_U64(atomic_load(&g.calls[i]), 1);
        CHECK_EQ_U64(g.bad[i], i == NREQ - 2 ? 2 : 0);
    }
}

/* Two batches at once: batch A's first completion waits (up to 20 s) for batch B to end. */
typedef struct pair {
    qm_rio *r;
    int fd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool b_done, a_waited, a_saw_b;
} pair;

static void
on_a(void *arg, const qm_rreq *r, const u8 *data, size_t n, int rc)
{
    (void)r, (void)data, (void)n, (void)rc;
    pair *p = arg;
    pthread_mutex_lock(&p->mu);
    if (!p->a_waited) {
        p->a_waited = true;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 20;
        while (!p->b_done)
            if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT)
                break;
        p->a_saw_b = p->b_done;
    }
    pthread_mutex_unlock(&p->mu);
}

static void
on_b(void *arg, const qm_rreq *r, const u8 *data, size_t n, int rc)
{
    (void)arg, (void)r, (void)data, (void)n, (void)rc;
}

static void *
run_b(void *arg)
{
    pair *p = arg;
    qm_rreq q[NREQ];
    make_reqs(q, p->fd, 99);
    /* Starts once A is inside its first completion, so A holds its lane. */
    for (;;) {
        pthread_mutex_lock(&p->mu);
        bool go = p->a_waited;
        pthread_mutex_unlock(&p->mu);
        if (go)
            break;
        usleep(1000);
    }
    int rc = qm_rio_run(p->r, q, NREQ, on_b, p);
    pthread_mutex_lock(&p->mu);
    p->b_done = rc == 0;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void
check_two_lanes(qm_rio *r, int fd)
{
    pair p = {.r = r, .fd = fd};
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, run_b, &p) == 0);
    qm_rreq q[NREQ];
    make_reqs(q, fd, 7);
    CHECK_OK(qm_rio_run(r, q, NREQ, on_a, &p));
    pthread_join(th, NULL);
    CHECK(p.a_waited);
    CHECK(p.a_saw_b); /* B ran to its end while A was still inside its batch */
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv);
}

/* The ring fails for good at its at-th system call (qm_rio_fail_in): a submission that fails
 * leaves reads queued that the kernel never took, and the submit-and-wait after it fails: every
 * request is still answered once with the file's bytes (the reads the kernel took are waited for,
 * or, when waits fail too, read again with pread; the others read with pread), the lane is marked
 * and reads with pread from then on, and the batches after it are answered as before. */
static void
check_fail(int fd, bool direct, unsigned qd, bool waits)
{
    const long at[] = {1, 2, 7, 40, 300}; /* a depth of 32 makes fewer than 40 calls */
    for (unsigned k = 0; k < (qd == 1 ? 5u : 3u); k++) {
        qm_rio *r;
        CHECK_OK(qm_rio_new(qd, direct, 1, &r));
        if (!r || !qm_rio_uring(r)) {
            printf("no io_uring: the failed-ring cases are skipped\n");
            qm_rio_free(r);
            return;
        }
        qm_rio_fail_in(r, at[k], waits);
        check_batch(r, fd, 31 + k);
        CHECK_EQ_U64(qm_rio_broken_lanes(r), 1);
        check_batch(r, fd, 41 + k);
        check_batch(r, fd, 51 + k);
        CHECK_EQ_U64(qm_rio_broken_lanes(r), 1);
        qm_rio_free(r);
    }
}

int
main(void)
{
    char *dir = test_make_dir("rio", "t");
    char path[512];
    snprintf(path, sizeof(path), "%s/f", dir);
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    for (u32 i = 0; i < FILE_LEN; i++)
        filebytes[i] = (u8)(test_xorshift(&seed) >> 56);
    int wfd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(wfd >= 0);
    REQUIRE(write(wfd, filebytes, FILE_LEN) == (ssize_t)FILE_LEN);
    REQUIRE(fsync(wfd) == 0);
    close(wfd);
    int fd = open(path, O_RDONLY);
    REQUIRE(fd >= 0);
    int dfd = open(path, O_RDONLY | O_DIRECT); /* tmpfs has no O_DIRECT: then buffered only */

    for (int uring = 0; uring <= 1; uring++) {
        for (int direct = 0; direct <= (dfd >= 0); direct++) {
            qm_rio *r;
            CHECK_OK(qm_rio_new(uring ? 32 : 8, direct, uring, &r));
            if (!r)
                continue;
            printf("uring=%d (in use: %d, lanes %u) direct=%d\n", uring, qm_rio_uring(r),
                   qm_rio_lanes(r), direct);
            CHECK(qm_rio_lanes(r) >= 1 && qm_rio_lanes(r) <= (qm_rio_uring(r) ? 3u : 1u));
            for (uint64_t k = 1; k <= 5; k++)
                check_batch(r, direct ? dfd : fd, k * 1000003);
            CHECK_EQ_U64(qm_rio_reads(r), 5 * NREQ);
            if (qm_rio_lanes(r) > 1)
                check_two_lanes(r, direct ? dfd : fd);
            qm_rio_free(r);
        }
    }
    /* A queue depth of 1 with io_uring: one slot, every request still answered. And a depth
     * that is not a multiple of the submission group (rio.c submits 16 reads per call), so
     * that refills end on partial groups. */
    unsigned depths[] = {1, 20};
    for (unsigned k = 0; k < 2; k++) {
        for (int direct = 0; direct <= (dfd >= 0); direct++) {
            qm_rio *r1;
            CHECK_OK(qm_rio_new(depths[k], direct, 1, &r1));
            check_batch(r1, direct ? dfd : fd, 5 + k);
            slow_done = true; /* slots in use while the next reads land */
            check_batch(r1, direct ? dfd : fd, 9 + k);
            slow_done = false;
            qm_rio_free(r1);
        }
    }
    for (int direct = 0; direct <= (dfd >= 0); direct++) {
        for (int waits = 0; waits <= 1; waits++) {
            check_fail(direct ? dfd : fd, direct, 1, waits);
            check_fail(direct ? dfd : fd, direct, 32, waits);
        }
    }
    if (dfd >= 0)
        close(dfd);
    close(fd);
    test_remove_dir(dir);
    return test_report("test_rio");
}
