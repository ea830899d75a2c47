/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hpfile.c -- head-prunable segmented append-only file (format and rules in hpfile.h), and
 * qm_scan, a buffered sequential reader over one.
 * Thread: the owning shard's writer; readers and the flusher as hpfile.h allows.
 */
#include "hpfile.h"

#include "hugefolio.h"
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* The read mappings of a file's segments (hpfile.h, "Read mapping"). A grown table replaces
 * the old one, which stays on the prev chain until close: a reader that loaded it before
 * the switch still finds valid (and, for the segments it may read, identical) pointers. */
typedef struct qm_hpmaps {
    u64 n;                  /* slots */
    struct qm_hpmaps *prev; /* the table this one replaced */
    u8 *seg[];              /* segment i's mapping of seg_size bytes, or NULL */
} qm_hpmaps;

static void
seg_path(const qm_hpfile *f, u64 seg, char *out, size_t cap)
{
    snprintf(out, cap, "%s.%010" PRIu64, f->path_prefix, seg);
}

/* Grows an fd table (-1 = not open) so that it has slot seg. */
static int
fd_table_reserve(int **fds, u64 *nfds, u64 seg)
{
    if (seg < *nfds)
        return 0;
    u64 n = QM_MAX(seg + 1, *nfds * 2 + 4);
    int *t = realloc(*fds, n * sizeof(int));
    if (!t)
        return -ENOMEM;
    for (u64 i = *nfds; i < n; i++)
        t[i] = -1;
    *fds = t;
    *nfds = n;
    return 0;
}

static int
seg_fd_locked(qm_hpfile *f, u64 seg, bool create, int *fd_out)
{
    QM_RET(fd_table_reserve(&f->fds, &f->nfds, seg));
    if (f->fds[seg] < 0) {
        char path[4096];
        seg_path(f, seg, path, sizeof(path));
        int flags = f->rdonly ? O_RDONLY : O_RDWR;
        if (create)
            flags |= O_CREAT;
        int fd = qm_io_get()->open(path, flags, 0644);
        if (fd < 0)
            return qm_err_set(f->err, fd == -ENOENT ? QMDB_CORRUPT : fd,
                              "cannot open segment %s: %s", path, qmdb_strerror(fd));
        f->fds[seg] = fd;
        if (create)
            f->new_segment = true;
    }
    *fd_out = f->fds[seg];
    return 0;
}

static int
seg_fd(qm_hpfile *f, u64 seg, bool create, int *fd_out)
{
    pthread_mutex_lock(&f->mu);
    int rc = seg_fd_locked(f, seg, create, fd_out);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

/* The point-read fd of segment seg, opened once through the I/O seam as fds are: buffered, with
 * read-ahead off. A read through fds at a random place starts the kernel's read-ahead past it
 * when the pages before it are cached (it takes them for a sequential stream): under a memory
 * cap, gets of 64 KiB values read about 68 KB from the device each instead of 53 KB
 * (docs/BENCH.md, "Point reads without read-ahead"). A segment whose
 * second descriptor cannot be opened (a read-only handle's pruned file, the descriptor limit)
 * reads through fds. Called with mu held. */
static int
seg_pfd_locked(qm_hpfile *f, u64 seg, int *fd_out)
{
    QM_RET(fd_table_reserve(&f->pfds, &f->npfds, seg));
    if (f->pfds[seg] == -1) {
        char path[4096];
        seg_path(f, seg, path, sizeof(path));
        int fd = qm_io_get()->open(path, O_RDONLY, 0);
        if (fd >= 0)
            (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
        f->pfds[seg] = fd >= 0 ? fd : -2;
    }
    if (f->pfds[seg] >= 0) {
        *fd_out = f->pfds[seg];
        return 0;
    }
    return seg_fd_locked(f, seg, false, fd_out);
}

/* Opens (once) the batched-read fd for segment seg: O_DIRECT when direct, else buffered with
 * read-ahead off (random entry reads must not pull in 128 KiB each). Called with mu held. */
static int
seg_dfd_locked(qm_hpfile *f, u64 seg, bool direct, int *fd_out)
{
    QM_RET(fd_table_reserve(&f->dfds, &f->ndfds, seg));
    if (f->dfds[seg] < 0) {
        char path[4096];
        seg_path(f, seg, path, sizeof(path));
        /* A read-only handle holds every committed segment open since its open (fds); if a
         * writer in another process has pruned the file since, its path is gone but the
         * inode lives on, reachable through the held descriptor. */
        int fd = open(path, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
        if (fd < 0 && errno == ENOENT && f->rdonly && seg < f->nfds && f->fds[seg] >= 0) {
            snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fds[seg]);
            fd = open(path, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
        }
        if (fd < 0 && direct && errno == EINVAL) { /* no O_DIRECT here (tmpfs): buffered */
            direct = false;
            fd = open(path, O_RDONLY | O_CLOEXEC);
        }
        if (fd < 0)
            return qm_err_set(f->err, -errno, "cannot open segment %s for batched reads: %s", path,
                              strerror(errno));
        if (!direct)
            (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
        f->dfds[seg] = fd;
    }
    *fd_out = f->dfds[seg];
    return 0;
}

int
qm_hpfile_read_fd(qm_hpfile *f, u64 pos, bool direct, int *fd, u64 *off, u64 *seg_left)
{
    QM_ASSERT(pos < f->flushed && pos >= f->head);
    u64 seg = pos / f->seg_size;
    *off = pos % f->seg_size;
    *seg_left = f->seg_size - *off;
    pthread_mutex_lock(&f->mu);
    int rc = seg_dfd_locked(f, seg, direct, fd);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

/* Segment mappings of the whole process, at most QM_HP_MAPS_MAX: every mapping is one of the
 * process's memory areas (vm.max_map_count, 65,530 by default, shared with malloc and
 * everything else), so a database with tiny segments reads its oldest ones through pread
 * rather than exhausting them. */
#define QM_HP_MAPS_MAX 16384
static unsigned long hp_maps_live;

/* Maps segment seg through fd (writer, readers excluded). A failure leaves the segment
 * unmapped: its reads use pread. */
static void
map_seg(qm_hpfile *f, u64 seg, int fd)
{
    qm_hpmaps *m = f->maps;
    if (!f->map || (m && seg < m->n && m->seg[seg]))
        return;
    if (!m || seg >= m->n) {
        u64 n = QM_MAX(seg + 1, (m ? m->n : 0) * 2 + 8);
        qm_hpmaps *t = calloc(1, sizeof(*t) + n * sizeof(u8 *));
        if (!t)
            return;
        t->n = n;
        if (m)
            memcpy(t->seg, m->seg, m->n * sizeof(u8 *));
        t->prev = m;
        __atomic_store_n(&f->maps, t, __ATOMIC_RELEASE);
        m = t;
    }
    if (__atomic_add_fetch(&hp_maps_live, 1, __ATOMIC_RELAXED) > QM_HP_MAPS_MAX) {
        __atomic_sub_fetch(&hp_maps_live, 1, __ATOMIC_RELAXED);
        return;
    }
    void *p = mmap(NULL, (size_t)f->seg_size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        __atomic_sub_fetch(&hp_maps_live, 1, __ATOMIC_RELAXED);
        return;
    }
    /* Point reads: a fault must not read ahead (as POSIX_FADV_RANDOM for batched reads). */
    (void)madvise(p, (size_t)f->seg_size, MADV_RANDOM);
    __atomic_store_n(&m->seg[seg], (u8 *)p, __ATOMIC_RELEASE);
}

/* Unmaps segment seg (prune, cut, close: readers excluded). */
static void
unmap_seg(qm_hpfile *f, u64 seg)
{
    qm_hpmaps *m = f->maps;
    if (!m || seg >= m->n || !m->seg[seg])
        return;
    u8 *p = m->seg[seg];
    __atomic_store_n(&m->seg[seg], NULL, __ATOMIC_RELEASE);
    munmap(p, (size_t)f->seg_size);
    __atomic_sub_fetch(&hp_maps_live, 1, __ATOMIC_RELAXED);
}

const u8 *
qm_hpfile_view(const qm_hpfile *f, u64 pos, size_t len)
{
    const qm_hpmaps *m = __atomic_load_n(&f->maps, __ATOMIC_ACQUIRE);
    if (!m || pos < f->head || pos > f->flushed || len > f->flushed - pos)
        return NULL;
    u64 seg = pos / f->seg_size, off = pos % f->seg_size;
    if (seg >= m->n || len > f->seg_size - off || qm_io_get() != qm_io_posix())
        return NULL;
    u8 *p = __atomic_load_n(&m->seg[seg], __ATOMIC_ACQUIRE);
    return p ? p + off : NULL;
}

bool
qm_hpfile_resident(const qm_hpfile *f, u64 pos, size_t len)
{
    return len && qm_io_resident(qm_hpfile_view(f, pos, len), len);
}

size_t
qm_hpfile_span(const qm_hpfile *f, u64 pos, size_t len)
{
    if (pos < f->head || pos > f->flushed)
        return 0;
    u64 left = QM_MIN(f->flushed - pos, f->seg_size - pos % f->seg_size);
    return (size_t)QM_MIN((u64)len, left);
}

bool
qm_hpfile_mapped(const qm_hpfile *f)
{
    return f->map;
}

static void
seg_close(qm_hpfile *f, u64 seg)
{
    pthread_mutex_lock(&f->mu);
    if (seg < f->nfds && f->fds[seg] >= 0) {
        qm_io_get()->close(f->fds[seg]);
        f->fds[seg] = -1;
    }
    if (seg < f->ndfds && f->dfds[seg] >= 0) {
        close(f->dfds[seg]);
        f->dfds[seg] = -1;
    }
    if (seg < f->npfds && f->pfds[seg] != -1) {
        if (f->pfds[seg] >= 0)
            qm_io_get()->close(f->pfds[seg]);
        f->pfds[seg] = -1;
    }
    pthread_mutex_unlock(&f->mu);
}

/* Regions are readied while the records appended average at most this many bytes. */
#define QM_HP_HUGE_AVG 4096u

/* Tells the process-wide count of open logs (hugefolio.h: the huge-folio budget, and whether
 * the logs fit in memory) that the mapped file f now holds live bytes. */
static void
hp_huge_account(qm_hpfile *f, u64 live)
{
    if (!f->map)
        return;
    qm_huge_account((int64_t)(live - f->huge_acct));
    f->huge_acct = live;
}

/* Before [off, end) of segment seg (fd) is written, where off is the flushed end (no byte
 * lies past it): readies each 2 MiB region that starts in [off, end), none of whose bytes is
 * written yet, as one huge folio while that is wanted (hugefolio.h). A region the writer
 * enters unreadied keeps small folios. Worth it for logs of short records, read a few at a
 * time through the mapping: a region holds thousands. Records longer than a page on average
 * (64 KiB values, twig records) are few per region and read whole, while readying costs a
 * 2 MiB zero fill per region (docs/BENCH.md: about a fifth of the updates and a third to a
 * half of the inserts of 64 KiB values here). */
static void
hp_ready_huge(qm_hpfile *f, int fd, u64 off, u64 end)
{
    for (u64 r = (off + QM_HUGE_REGION - 1) / QM_HUGE_REGION * QM_HUGE_REGION; r < end;
         r += QM_HUGE_REGION)
        if (f->app_bytes <= (u64)QM_HP_HUGE_AVG * f->app_n && qm_huge_wanted())
            qm_huge_ready(fd, r);
}

/* Writes [pos, pos+len) directly to segment files. */
static int
hp_write_files(qm_hpfile *f, const u8 *data, size_t len, u64 pos)
{
    QM_ASSERT(pos == f->flushed); /* appends only: nothing lies past pos (hp_ready_huge) */
    while (len > 0) {
        u64 seg = pos / f->seg_size, off = pos % f->seg_size;
        size_t chunk = (size_t)QM_MIN((u64)len, f->seg_size - off);
        int fd = -1;
        QM_RET(seg_fd(f, seg, true, &fd));
        hp_huge_account(f, pos + chunk - f->head);
        if (f->huge)
            hp_ready_huge(f, fd, off, off + chunk);
        int rc = qm_io_pwrite_full(fd, data, chunk, off);
        if (rc)
            return qm_err_set(f->err, rc, "write to %s segment %" PRIu64 " at %" PRIu64 ": %s",
                              f->path_prefix, seg, off, qmdb_strerror(rc));
        map_seg(f, seg, fd);
        data += chunk;
        len -= chunk;
        pos += chunk;
    }
    return 0;
}

int
qm_hpfile_open(qm_hpfile *f, const qm_hpfile_cfg *cfg, qm_err *err)
{
    const char *dir = cfg->dir, *prefix = cfg->prefix;
    u64 seg_size = cfg->seg_size, head = cfg->head, size = cfg->size;
    size_t buf_cap = cfg->buf_cap;
    bool create = cfg->create, rdonly = cfg->rdonly;
    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    f->err = err;
    f->seg_size = seg_size;
    f->head = head;
    f->size = f->flushed = f->synced = size;
    f->pop_lo = UINT64_MAX;
    f->rdonly = rdonly;
    f->map = cfg->map && !rdonly && qm_io_map_allowed();
    f->huge = f->map && seg_size % QM_HUGE_REGION == 0;
    f->buf_cap = buf_cap;
    size_t plen = strlen(dir) + strlen(prefix) + 2;
    f->path_prefix = malloc(plen);
    f->buf = rdonly ? NULL : malloc(buf_cap ? buf_cap : 1);
    if (!f->path_prefix || (!rdonly && !f->buf)) {
        free(f->path_prefix);
        free(f->buf);
        pthread_mutex_destroy(&f->mu);
        return -ENOMEM;
    }
    snprintf(f->path_prefix, plen, "%s/%s", dir, prefix);
    hp_huge_account(f, size - head);
    if (create)
        return 0;

    const qm_io *io = qm_io_get();
    int rc = 0;
    u64 first = head / seg_size;
    u64 last = size ? (size - 1) / seg_size : 0; /* last segment holding data */
    /* Check every committed segment, cutting the last back to the committed size. */
    for (u64 s = first; size > head && s <= last; s++) {
        int fd = -1;
        QM_TRY(seg_fd(f, s, false, &fd));
        u64 want = (s == last) ? size - s * seg_size : seg_size, have;
        QM_TRY(io->fsize(fd, &have));
        if (have < want) {
            rc = QM_CORRUPT(err,
                            "%s.%010" PRIu64 ": %" PRIu64 " bytes, committed size needs %" PRIu64,
                            f->path_prefix, s, have, want);
            goto out;
        }
        if (have > want && !rdonly)
            QM_TRY(io->ftruncate(fd, want));
        map_seg(f, s, fd);
    }
    if (!rdonly) {
        /* Delete uncommitted segments after the last one, and stale ones below the head. */
        char path[4096];
        u64 s = (size > head) ? last + 1 : size / seg_size;
        for (;; s++) {
            seg_path(f, s, path, sizeof(path));
            if (io->unlink(path) != 0)
                break;
        }
        for (u64 k = first; k-- > 0;) {
            seg_path(f, k, path, sizeof(path));
            if (io->unlink(path) != 0)
                break;
        }
    }
out:
    if (rc)
        qm_hpfile_close(f);
    return rc;
}

int
qm_hpfile_close(qm_hpfile *f)
{
    hp_huge_account(f, 0);
    for (u64 i = 0; i < QM_MAX(QM_MAX(f->nfds, f->ndfds), f->npfds); i++)
        seg_close(f, i);
    for (qm_hpmaps *m = f->maps, *prev; m; m = prev) {
        prev = m->prev;
        if (m == f->maps)
            for (u64 i = 0; i < m->n; i++)
                unmap_seg(f, i);
        free(m);
    }
    free(f->fds);
    free(f->dfds);
    free(f->pfds);
    free(f->buf);
    free(f->path_prefix);
    pthread_mutex_destroy(&f->mu);
    memset(f, 0, sizeof(*f));
    return 0;
}

int
qm_hpfile_flush(qm_hpfile *f)
{
    if (f->size == f->flushed)
        return 0;
    QM_RET(hp_write_files(f, f->buf, (size_t)(f->size - f->flushed), f->flushed));
    f->flushed = f->size;
    return 0;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

static bool hp_pop_broken; /* the kernel refused MADV_POPULATE_READ: not asked again */

static void hp_release(qm_hpfile *f, u64 pos, u64 len, u64 end, bool uncache);

/* Maps the pages of the record [pos, pos + len), just written at once, into the read
 * mapping (qm_hpfile_populate), and keeps pop_lo: the first position from which every such
 * record is mapped. A client read of a long entry then copies it from the mapping once,
 * straight to the caller, where a pread copies it twice (into a buffer, then out of it) and
 * the mapping without this would fault on every fresh page (shard.c, SHARD_MAP_MAX). */
static void
hp_populate(qm_hpfile *f, u64 pos, size_t len)
{
    const u8 *v = f->pop && !__atomic_load_n(&hp_pop_broken, __ATOMIC_RELAXED)
                      ? qm_hpfile_view(f, pos, len)
                      : NULL;
    bool ok = false;
    if (v) {
        uintptr_t page = qm_page_size(), a = (uintptr_t)v / page * page;
        ok = madvise((void *)a, (uintptr_t)v + len - a, MADV_POPULATE_READ) == 0;
        if (!ok && errno == EINVAL)
            __atomic_store_n(&hp_pop_broken, true, __ATOMIC_RELAXED);
    }
    u64 lo = __atomic_load_n(&f->pop_lo, __ATOMIC_RELAXED);
    if (!ok)
        __atomic_store_n(&f->pop_lo, UINT64_MAX, __ATOMIC_RELEASE);
    else if (lo == UINT64_MAX)
        __atomic_store_n(&f->pop_lo, pos, __ATOMIC_RELEASE);
}

void
qm_hpfile_populate(qm_hpfile *f, bool on)
{
    f->pop = on && f->map;
    u64 lo = __atomic_load_n(&f->pop_lo, __ATOMIC_RELAXED);
    if (f->pop || lo == UINT64_MAX)
        return;
    /* Off with records still mapped: unmap them (the pages stay cached), so that reclaim,
     * which turning off foresees, finds page cache it can drop without unmapping it. */
    __atomic_store_n(&f->pop_lo, UINT64_MAX, __ATOMIC_RELEASE);
    hp_release(f, lo, f->flushed - lo, f->flushed, false);
}

bool
qm_hpfile_populated(const qm_hpfile *f, u64 pos, size_t len)
{
    return len >= f->buf_cap / 16 && len > 0 &&
           pos >= __atomic_load_n(&f->pop_lo, __ATOMIC_ACQUIRE);
}

int
qm_hpfile_append(qm_hpfile *f, const void *data, size_t len, u64 *pos)
{
    QM_ASSERT(!f->rdonly);
    f->app_n++;
    f->app_bytes += len;
    *pos = f->size;
    size_t used = (size_t)(f->size - f->flushed);
    /* A record of a sixteenth of the buffer or more is written at once, after the buffered
     * bytes: copied into the buffer, it would leave the buffer's pages it touched resident, a
     * second copy of long values that a memory cap takes from the page cache (docs/DESIGN.md,
     * "Long entries mapped as they are written"). */
    bool at_once = len >= f->buf_cap / 16;
    if (at_once || used + len > f->buf_cap) {
        QM_RET(qm_hpfile_flush(f));
        used = 0;
    }
    if (at_once) {
        QM_RET(hp_write_files(f, data, len, f->size));
        f->size += len;
        f->flushed = f->size;
        hp_populate(f, *pos, len);
        return 0;
    }
    memcpy(f->buf + used, data, len);
    f->size += len;
    return 0;
}

/* Reads up to len bytes at pos through the segments' fds, or their point-read fds (point). */
static int
hp_read_upto(qm_hpfile *f, u64 pos, void *out, size_t len, size_t *got, bool point)
{
    *got = 0;
    if (pos < f->head || pos > f->size)
        return qm_err_set(f->err, QMDB_INVALID,
                          "read of %s at %" PRIu64 " outside [%" PRIu64 ", %" PRIu64 ")",
                          f->path_prefix, pos, f->head, f->size);
    len = (size_t)QM_MIN((u64)len, f->size - pos);
    u8 *dst = out;
    size_t done = 0;
    while (done < len && pos + done < f->flushed) {
        u64 p = pos + done;
        u64 seg = p / f->seg_size, off = p % f->seg_size;
        size_t chunk = (size_t)QM_MIN((u64)(len - done), f->seg_size - off);
        chunk = (size_t)QM_MIN((u64)chunk, f->flushed - p);
        int fd = -1;
        pthread_mutex_lock(&f->mu);
        int rc = point ? seg_pfd_locked(f, seg, &fd) : seg_fd_locked(f, seg, false, &fd);
        pthread_mutex_unlock(&f->mu);
        QM_RET(rc);
        rc = qm_io_pread_full(fd, dst + done, chunk, off);
        if (rc)
            return qm_err_set(f->err, rc, "read of %s.%010" PRIu64 " at %" PRIu64 ": %s",
                              f->path_prefix, seg, off, qmdb_strerror(rc));
        done += chunk;
    }
    if (done < len) {
        u64 p = pos + done;
        memcpy(dst + done, f->buf + (p - f->flushed), len - done);
        done = len;
    }
    *got = done;
    return 0;
}

int
qm_hpfile_read_upto(qm_hpfile *f, u64 pos, void *out, size_t len, size_t *got)
{
    return hp_read_upto(f, pos, out, len, got, false);
}

int
qm_hpfile_read_point(qm_hpfile *f, u64 pos, void *out, size_t len, size_t *got)
{
    return hp_read_upto(f, pos, out, len, got, true);
}

int
qm_hpfile_read_direct(qm_hpfile *f, u64 pos, void *out, size_t len, size_t *got)
{
    *got = 0;
    if (pos < f->head || pos >= f->flushed)
        return qm_err_set(f->err, QMDB_INVALID,
                          "direct read of %s at %" PRIu64 " outside [%" PRIu64 ", %" PRIu64 ")",
                          f->path_prefix, pos, f->head, f->flushed);
    int fd;
    u64 off, left;
    QM_RET(qm_hpfile_read_fd(f, pos, true, &fd, &off, &left));
    len = (size_t)QM_MIN(QM_MIN((u64)len, left), f->flushed - pos);
    u64 aoff, alen;
    qm_io_window(off, len, &aoff, &alen);
    size_t skip = (size_t)(off - aoff), wlen = (size_t)alen;
    u8 *win;
    if (posix_memalign((void **)&win, QM_IO_ALIGN, wlen) != 0)
        return qm_err_set(f->err, -ENOMEM, "direct read of %s: no memory", f->path_prefix);
    /* One read: a short one ends at the end of the file, where a second would start at an
     * offset O_DIRECT refuses. */
    ssize_t k;
    do
        k = pread(fd, win, wlen, (off_t)aoff);
    while (k < 0 && errno == EINTR);
    int rc = k < 0 ? -errno : 0;
    if (k > (ssize_t)skip) {
        *got = QM_MIN((size_t)k - skip, len);
        memcpy(out, win + skip, *got);
    }
    free(win);
    if (rc)
        return qm_err_set(f->err, rc, "read of %s.%010" PRIu64 " at %" PRIu64 ": %s",
                          f->path_prefix, pos / f->seg_size, off, qmdb_strerror(rc));
    return 0;
}

int
qm_hpfile_read(qm_hpfile *f, u64 pos, void *out, size_t len)
{
    size_t got;
    QM_RET(qm_hpfile_read_upto(f, pos, out, len, &got));
    if (got != len)
        return qm_err_set(f->err, QMDB_CORRUPT,
                          "%s: read of %zu bytes at %" PRIu64 " passes the end (%" PRIu64 ")",
                          f->path_prefix, len, pos, f->size);
    return 0;
}

/* The whole pages of [pos, pos + len) that lie in [head, end): unmapped from the read mapping
 * (the page cache keeps them), and with uncache also dropped from the page cache. */
static void
hp_release(qm_hpfile *f, u64 pos, u64 len, u64 end, bool uncache)
{
    u64 page = qm_page_size();
    u64 a = (QM_MAX(pos, f->head) + page - 1) / page * page;
    u64 b = QM_MIN(pos + len, end) / page * page;
    if (qm_io_get() != qm_io_posix())
        return;
    while (a < b) {
        u64 seg = a / f->seg_size, off = a % f->seg_size, n = QM_MIN(b - a, f->seg_size - off);
        const u8 *v = qm_hpfile_view(f, a, (size_t)n);
        int fd = -1;
        if (v)
            (void)madvise((void *)v, (size_t)n, MADV_DONTNEED);
        if (uncache) {
            pthread_mutex_lock(&f->mu);
            int rc = seg_pfd_locked(f, seg, &fd); /* the descriptor the entry's reads use */
            pthread_mutex_unlock(&f->mu);
            if (rc == 0)
                (void)posix_fadvise(fd, (off_t)off, (off_t)n, POSIX_FADV_DONTNEED);
        }
        a += n;
    }
}

void
qm_hpfile_drop(qm_hpfile *f, u64 pos, u64 len)
{
    hp_release(f, pos, len, f->synced, true);
}

int
qm_hpfile_sync_begin(qm_hpfile *f, qm_hp_ticket *t)
{
    memset(t, 0, sizeof(*t));
    QM_RET(qm_hpfile_flush(f));
    if (f->flushed > f->synced) {
        t->any = true;
        t->first = f->synced / f->seg_size;
        t->last = (f->flushed - 1) / f->seg_size;
    }
    t->dir = f->new_segment;
    f->new_segment = false;
    f->synced = f->flushed;
    return 0;
}

int
qm_hpfile_sync_finish(qm_hpfile *f, const qm_hp_ticket *t)
{
    for (u64 s = t->first; t->any && s <= t->last; s++) {
        int fd = -1;
        QM_RET(seg_fd(f, s, true, &fd));
        int rc = qm_io_get()->fsync(fd);
        if (rc)
            return qm_err_set(f->err, rc, "fsync of %s.%010" PRIu64 ": %s", f->path_prefix, s,
                              qmdb_strerror(rc));
    }
    if (t->dir) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s", f->path_prefix);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        int rc = qm_io_fsync_dir(dir);
        if (rc)
            return qm_err_set(f->err, rc, "fsync of directory %s: %s", dir, qmdb_strerror(rc));
    }
    /* Segments before the ticket's last are complete and durable: later tickets start at or
     * after its last segment, so the writer may close them. */
    if (t->any && t->last > __atomic_load_n(&f->closable, __ATOMIC_RELAXED))
        __atomic_store_n(&f->closable, t->last, __ATOMIC_RELEASE);
    return 0;
}

int
qm_hpfile_sync(qm_hpfile *f)
{
    qm_hp_ticket t;
    QM_RET(qm_hpfile_sync_begin(f, &t));
    QM_RET(qm_hpfile_sync_finish(f, &t));
    qm_hpfile_close_cold(f);
    return 0;
}

void
qm_hpfile_close_cold(qm_hpfile *f)
{
    u64 last = __atomic_load_n(&f->closable, __ATOMIC_ACQUIRE);
    for (u64 s = QM_MAX(f->cold, f->head / f->seg_size); s < last; s++)
        seg_close(f, s);
    f->cold = QM_MAX(f->cold, last);
}

int
qm_hpfile_prune_head(qm_hpfile *f, u64 new_head)
{
    if (new_head <= f->head)
        return 0;
    QM_ASSERT(new_head <= f->size);
    u64 old_first = f->head / f->seg_size, new_first = new_head / f->seg_size;
    f->head = new_head;
    hp_huge_account(f, f->size - new_head);
    for (u64 s = old_first; s < new_first; s++) {
        char path[4096];
        unmap_seg(f, s);
        seg_close(f, s);
        seg_path(f, s, path, sizeof(path));
        int rc = qm_io_get()->unlink(path);
        if (rc && rc != -ENOENT)
            return qm_err_set(f->err, rc, "cannot delete %s: %s", path, qmdb_strerror(rc));
    }
    return 0;
}

u64
qm_hpfile_disk_bytes(const qm_hpfile *f)
{
    u64 start = (f->head / f->seg_size) * f->seg_size;
    return f->size > start ? f->size - start : 0;
}

/* ---- Sequential reader (qm_scan) ---------------------------------------------------------- */

int
qm_scan_init(qm_scan *sc, qm_hpfile *f, size_t cap)
{
    memset(sc, 0, sizeof(*sc));
    sc->f = f;
    sc->buf = malloc(cap);
    if (!sc->buf)
        return -ENOMEM;
    sc->cap = cap;
    return 0;
}

void
qm_scan_free(qm_scan *sc)
{
    free(sc->buf);
    memset(sc, 0, sizeof(*sc));
}

void
qm_scan_one_pass(qm_scan *sc)
{
    sc->one_pass = true;
    sc->ra_end = 0;
}

/* One pass: asks for the pages of [sc->ra_end, pos + QM_SCAN_AHEAD) once the position passes
 * half the window, a segment at a time: MADV_WILLNEED on a mapped segment, else
 * POSIX_FADV_WILLNEED on its descriptor (both start the reads and return). */
static void
scan_readahead(qm_scan *sc, u64 pos)
{
    qm_hpfile *f = sc->f;
    if (sc->ra_end > pos + QM_SCAN_AHEAD / 2 || qm_io_get() != qm_io_posix())
        return;
    u64 a = QM_MAX(sc->ra_end, pos), b = QM_MIN(pos + QM_SCAN_AHEAD, f->flushed);
    uintptr_t page = qm_page_size();
    while (a < b) {
        u64 seg = a / f->seg_size, off = a % f->seg_size, len = QM_MIN(b - a, f->seg_size - off);
        const u8 *v = qm_hpfile_view(f, a, (size_t)len);
        int fd = -1;
        if (v) {
            uintptr_t lo = (uintptr_t)v / page * page;
            (void)madvise((void *)lo, (size_t)((uintptr_t)v + len - lo), MADV_WILLNEED);
        } else if (seg_fd(f, seg, false, &fd) == 0) {
            (void)posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
        }
        a += len;
    }
    sc->ra_end = QM_MAX(b, sc->ra_end);
}

int
qm_scan_get(qm_scan *sc, u64 pos, size_t need, const u8 **p)
{
    if (pos >= sc->pos && pos + need <= sc->pos + sc->len) {
        *p = sc->buf + (pos - sc->pos);
        return 0;
    }
    if (sc->one_pass) {
        scan_readahead(sc, pos);
        const u8 *v = qm_hpfile_view(sc->f, pos, need);
        if (v) {
            *p = v;
            return 0;
        }
    }
    if (need > sc->cap) {
        u8 *nb = realloc(sc->buf, need);
        if (!nb)
            return -ENOMEM;
        sc->buf = nb;
        sc->cap = need;
    }
    size_t got;
    sc->len = 0;
    QM_RET(qm_hpfile_read_upto(sc->f, pos, sc->buf, sc->cap, &got));
    sc->pos = pos;
    sc->len = got;
    if (got < need)
        return qm_err_set(sc->f->err, QMDB_CORRUPT,
                          "%s: entry at %" PRIu64 " runs past the end of the log (%" PRIu64 ")",
                          sc->f->path_prefix, pos, sc->f->size);
    *p = sc->buf;
    return 0;
}

int
qm_hpfile_cut(qm_hpfile *f, u64 size)
{
    QM_ASSERT(!f->rdonly && f->size == f->flushed && size >= f->head && size <= f->size);
    if (size == f->size)
        return 0;
    u64 seg = size / f->seg_size, last = (f->size - 1) / f->seg_size;
    __atomic_store_n(&f->pop_lo, UINT64_MAX, __ATOMIC_RELEASE); /* cut pages lose their maps */
    f->size = f->flushed = f->synced = size;
    hp_huge_account(f, size - f->head);
    /* Segments from seg on are written again: they are neither complete nor closed. */
    if (__atomic_load_n(&f->closable, __ATOMIC_ACQUIRE) > seg)
        __atomic_store_n(&f->closable, seg, __ATOMIC_RELEASE);
    f->cold = QM_MIN(f->cold, seg);
    const qm_io *io = qm_io_get();
    char path[4096];
    for (u64 s = last; s >= seg; s--) {
        if (s == seg && size % f->seg_size != 0) {
            int fd = -1;
            QM_RET(seg_fd(f, s, false, &fd));
            int rc = io->ftruncate(fd, size % f->seg_size);
            if (rc)
                return qm_err_set(f->err, rc, "cannot cut %s.%010" PRIu64 " to %" PRIu64 ": %s",
                                  f->path_prefix, s, size % f->seg_size, qmdb_strerror(rc));
            break;
        }
        unmap_seg(f, s);
        seg_close(f, s);
        seg_path(f, s, path, sizeof(path));
        int rc = io->unlink(path);
        if (rc && rc != -ENOENT)
            return qm_err_set(f->err, rc, "cannot delete %s: %s", path, qmdb_strerror(rc));
        if (s == 0)
            break;
    }
    return 0;
}
