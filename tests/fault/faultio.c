/* SPDX-License-Identifier: Apache-2.0 */
/*
 * faultio.c -- the fault-injecting qm_io of faultio.h. Test-only. Any thread: the rule, the
 * counters, the descriptor-to-path table and the undo log are guarded by `mu`. A write holds
 * it from its undo record to the end of the write (so the log's order is the write order and
 * no write starts after a power loss); reads and fsyncs run outside it.
 */
#include "faultio.h"

#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIO_MAXFD 4096
#define FIO_PATH 4096

typedef struct undo {
    char *path;
    u64 seq;    /* order of logging (an fsync makes the records logged before it durable) */
    bool trunc; /* a truncate (else a write) */
    u64 off;    /* write offset, or the new length of a truncate */
    u64 len;    /* bytes written (writes) */
    u8 *old;    /* previous bytes of [off, off + oldlen) */
    u64 oldlen;
    u64 old_size; /* file size before the change */
} undo;

typedef struct created {
    char *path;
    u64 seq;
} created;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char *fd_path[FIO_MAXFD];
static fio_rule rule;
static bool concurrent, have_rule, undo_on, triggered, dead;
static int pending_fd = -1, pending_err; /* FIO_SHORT with err: fail fd's next write */
static long matches, batched, batched_faults;
static u64 seq;
static undo *ulog;
static size_t nundo, capundo;
static created *news;
static size_t nnew, capnew;

static const qm_io *
posix(void)
{
    return qm_io_posix();
}

/* Copies the path of fd to out (mu held); for files opened before fio_install, asks /proc. */
static void
path_of(int fd, char out[FIO_PATH])
{
    out[0] = '\0';
    if (fd < 0 || fd >= FIO_MAXFD)
        return;
    if (!fd_path[fd]) {
        char link[64], target[FIO_PATH];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0)
            return;
        target[n] = '\0';
        fd_path[fd] = strdup(target);
    }
    if (fd_path[fd])
        snprintf(out, FIO_PATH, "%s", fd_path[fd]);
}

/* Counts a matching call (mu held); true if the rule fires on it. */
static bool
hit(enum fio_op op, const char *path)
{
    if (!have_rule || (rule.op != FIO_ANY && rule.op != op))
        return false;
    if (rule.path_sub && !strstr(path, rule.path_sub))
        return false;
    if (rule.only_if && !__atomic_load_n(rule.only_if, __ATOMIC_ACQUIRE))
        return false;
    matches++;
    if (matches == rule.nth || (rule.sticky && matches > rule.nth)) {
        triggered = true;
        return true;
    }
    return false;
}

static void
die(void)
{
    kill(getpid(), SIGKILL);
    for (;;)
        pause();
}

static u64
size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (u64)st.st_size : 0;
}

/* Records the change a write or truncate is about to make (mu held). */
static void
log_change(const char *path, bool trunc, u64 off, u64 len)
{
    if (!undo_on || !*path)
        return;
    if (nundo == capundo) {
        capundo = capundo ? 2 * capundo : 256;
        ulog = realloc(ulog, capundo * sizeof(*ulog));
        if (!ulog)
            abort();
    }
    undo *u = &ulog[nundo++];
    memset(u, 0, sizeof(*u));
    u->path = strdup(path);
    u->seq = seq++;
    u->trunc = trunc;
    u->off = off;
    u->len = len;
    u->old_size = size_of(path);
    u64 from = off, to = trunc ? u->old_size : off + len;
    if (to > u->old_size)
        to = u->old_size;
    if (to > from) {
        u->oldlen = to - from;
        u->old = malloc(u->oldlen);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (!u->old || fd < 0 || pread(fd, u->old, u->oldlen, (off_t)from) != (ssize_t)u->oldlen)
            abort();
        close(fd);
    }
}

/* An fsync of path that started when the sequence counter was `before` made the changes
 * logged until then durable (mu held). */
static void
forget_path(const char *path, u64 before)
{
    size_t k = 0;
    for (size_t i = 0; i < nundo; i++) {
        if (ulog[i].seq < before && strcmp(ulog[i].path, path) == 0) {
            free(ulog[i].path);
            free(ulog[i].old);
        } else {
            ulog[k++] = ulog[i];
        }
    }
    nundo = k;
}

/* A directory fsync makes the creation of the files in it durable (mu held). */
static void
dir_synced(const char *dir, u64 before)
{
    size_t dl = strlen(dir), k = 0;
    for (size_t i = 0; i < nnew; i++) {
        const char *p = news[i].path;
        if (news[i].seq < before && strncmp(p, dir, dl) == 0 && p[dl] == '/' &&
            !strchr(p + dl + 1, '/'))
            free(news[i].path);
        else
            news[k++] = news[i];
    }
    nnew = k;
}

/* The common part of open, fsync, ftruncate and unlink (mu held): 1 to go on, else the call's
 * result. Sets *fire when the rule fired (for FIO_KILL_AFTER). */
static int
gate(enum fio_op op, const char *path, bool *fire)
{
    *fire = false;
    if (dead)
        return -EIO;
    if (!hit(op, path))
        return 1;
    *fire = true;
    switch (rule.action) {
    case FIO_ERR:
        return -rule.err;
    case FIO_KILL:
        die();
        break;
    case FIO_CRASH:
        dead = true;
        return -EIO;
    default:
        break;
    }
    return 1;
}

static void
kill_after(bool fire)
{
    if (fire && rule.action == FIO_KILL_AFTER)
        die();
}

static int
f_open(const char *path, int flags, int mode)
{
    bool fire;
    pthread_mutex_lock(&mu);
    int fd = gate(FIO_OPEN, path, &fire);
    if (fd == 1) {
        bool existed = access(path, F_OK) == 0;
        fd = posix()->open(path, flags, mode);
        if (fd >= 0 && fd < FIO_MAXFD) {
            free(fd_path[fd]);
            fd_path[fd] = strdup(path);
        }
        if (fd >= 0 && !existed && undo_on) {
            if (nnew == capnew) {
                capnew = capnew ? 2 * capnew : 64;
                news = realloc(news, capnew * sizeof(*news));
                if (!news)
                    abort();
            }
            news[nnew].path = strdup(path);
            news[nnew++].seq = seq++;
        }
        if (fd >= 0)
            kill_after(fire);
    }
    pthread_mutex_unlock(&mu);
    return fd;
}

static int
f_close(int fd)
{
    pthread_mutex_lock(&mu);
    if (fd >= 0 && fd < FIO_MAXFD) {
        free(fd_path[fd]);
        fd_path[fd] = NULL;
    }
    if (fd == pending_fd)
        pending_fd = -1;
    pthread_mutex_unlock(&mu);
    return posix()->close(fd);
}

/* A read, through pread or (res >= 0 or an error) a batched read: 1 to go on, else the
 * result. */
static ssize_t
read_gate(int fd, bool batch)
{
    char path[FIO_PATH];
    ssize_t rc = 1;
    pthread_mutex_lock(&mu);
    batched += batch;
    path_of(fd, path);
    if (dead) {
        rc = -EIO;
    } else if (hit(FIO_PREAD, path)) {
        if (rule.action == FIO_ERR)
            rc = -rule.err;
        else if (rule.action == FIO_KILL)
            die();
    }
    batched_faults += batch && rc < 0;
    pthread_mutex_unlock(&mu);
    return rc;
}

static ssize_t
f_pread(int fd, void *buf, size_t len, u64 off)
{
    ssize_t rc = read_gate(fd, false);
    return rc == 1 ? posix()->pread(fd, buf, len, off) : rc;
}

/* qm_io.read_done: a batched read is subject to the same rule as pread. */
static ssize_t
f_read_done(int fd, u64 off, size_t len, ssize_t res)
{
    (void)off, (void)len;
    ssize_t rc = read_gate(fd, true);
    return rc == 1 ? res : rc;
}

static ssize_t
f_pwrite_locked(int fd, const void *buf, size_t len, u64 off)
{
    if (dead)
        return -EIO;
    if (pending_err && fd == pending_fd) {
        int e = pending_err;
        pending_err = 0;
        pending_fd = -1;
        return -e;
    }
    char path[FIO_PATH];
    path_of(fd, path);
    bool fire = hit(FIO_PWRITE, path);
    if (fire) {
        size_t part = len * rule.torn_pct / 100;
        switch (rule.action) {
        case FIO_ERR:
            return -rule.err;
        case FIO_SHORT:
            if (len > 1) {
                log_change(path, false, off, len / 2);
                pending_err = rule.err;
                pending_fd = rule.err ? fd : -1;
                return posix()->pwrite(fd, buf, len / 2, off);
            }
            break;
        case FIO_KILL:
            if (part)
                posix()->pwrite(fd, buf, part, off);
            die();
            break;
        case FIO_CRASH:
            log_change(path, false, off, part);
            if (part)
                posix()->pwrite(fd, buf, part, off);
            dead = true;
            return -EIO;
        default:
            break;
        }
    }
    log_change(path, false, off, len);
    ssize_t n = posix()->pwrite(fd, buf, len, off);
    kill_after(fire);
    return n;
}

static ssize_t
f_pwrite(int fd, const void *buf, size_t len, u64 off)
{
    pthread_mutex_lock(&mu);
    ssize_t n = f_pwrite_locked(fd, buf, len, off);
    pthread_mutex_unlock(&mu);
    return n;
}

static int
f_fsync(int fd)
{
    char path[FIO_PATH];
    bool fire;
    pthread_mutex_lock(&mu);
    path_of(fd, path);
    int rc = gate(FIO_FSYNC, path, &fire);
    u64 before = seq;
    pthread_mutex_unlock(&mu);
    if (rc != 1)
        return rc;
    rc = posix()->fsync(fd);
    pthread_mutex_lock(&mu);
    if (rc == 0) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
            dir_synced(path, before);
        else
            forget_path(path, before);
    }
    kill_after(fire);
    pthread_mutex_unlock(&mu);
    return rc;
}

static int
f_ftruncate(int fd, u64 len)
{
    char path[FIO_PATH];
    bool fire;
    pthread_mutex_lock(&mu);
    path_of(fd, path);
    int rc = gate(FIO_FTRUNCATE, path, &fire);
    if (rc == 1) {
        log_change(path, true, len, 0);
        rc = posix()->ftruncate(fd, len);
        kill_after(fire);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static int
f_unlink(const char *path)
{
    bool fire;
    pthread_mutex_lock(&mu);
    int rc = gate(FIO_UNLINK, path, &fire);
    if (rc == 1) {
        rc = posix()->unlink(path);
        if (rc == 0)
            kill_after(fire);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static int
f_fsize(int fd, u64 *size)
{
    pthread_mutex_lock(&mu);
    bool d = dead;
    pthread_mutex_unlock(&mu);
    return d ? -EIO : posix()->fsize(fd, size);
}

static int
f_rename(const char *from, const char *to)
{
    bool fire;
    pthread_mutex_lock(&mu);
    int rc = gate(FIO_RENAME, from, &fire);
    if (rc == 1) {
        rc = posix()->rename(from, to);
        if (rc == 0)
            kill_after(fire);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static int
f_lock(int fd, bool exclusive)
{
    char path[FIO_PATH];
    bool fire;
    pthread_mutex_lock(&mu);
    path_of(fd, path);
    int rc = gate(FIO_LOCK, path, &fire);
    if (rc == 1) {
        rc = posix()->lock(fd, exclusive);
        if (rc == 0)
            kill_after(fire);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

/* The same calls; the engine runs sequentially under the first, concurrently under the
 * second (io.h). */
static const qm_io fault_io_seq = {f_open,   f_close, f_pread,  f_pwrite, f_fsync,     f_ftruncate,
                                   f_unlink, f_fsize, f_rename, f_lock,   f_read_done, false};
static const qm_io fault_io_conc = {f_open,   f_close, f_pread,  f_pwrite, f_fsync,     f_ftruncate,
                                    f_unlink, f_fsize, f_rename, f_lock,   f_read_done, true};

void
fio_set_concurrent(bool on)
{
    pthread_mutex_lock(&mu);
    concurrent = on;
    pthread_mutex_unlock(&mu);
}

void
fio_install(const fio_rule *r, bool undo_log)
{
    pthread_mutex_lock(&mu);
    /* Files may have been closed and their descriptor numbers reused while this layer was
     * not installed: forget every remembered path (path_of asks /proc again). */
    for (int fd = 0; fd < FIO_MAXFD; fd++) {
        free(fd_path[fd]);
        fd_path[fd] = NULL;
    }
    have_rule = r != NULL;
    if (r)
        rule = *r;
    undo_on = undo_log;
    triggered = dead = false;
    pending_err = 0;
    pending_fd = -1;
    matches = batched = batched_faults = 0;
    const qm_io *io = concurrent ? &fault_io_conc : &fault_io_seq;
    pthread_mutex_unlock(&mu);
    qm_io_set(io);
}

void
fio_uninstall(void)
{
    qm_io_set(NULL);
    pthread_mutex_lock(&mu);
    have_rule = false;
    dead = false;
    pending_err = 0;
    pending_fd = -1;
    pthread_mutex_unlock(&mu);
}

bool
fio_installed(void)
{
    const qm_io *io = qm_io_get();
    return io == &fault_io_seq || io == &fault_io_conc;
}

bool
fio_triggered(void)
{
    pthread_mutex_lock(&mu);
    bool t = triggered;
    pthread_mutex_unlock(&mu);
    return t;
}

long
fio_matches(void)
{
    pthread_mutex_lock(&mu);
    long m = matches;
    pthread_mutex_unlock(&mu);
    return m;
}

long
fio_batched_reads(void)
{
    pthread_mutex_lock(&mu);
    long m = batched;
    pthread_mutex_unlock(&mu);
    return m;
}

long
fio_batched_faults(void)
{
    pthread_mutex_lock(&mu);
    long m = batched_faults;
    pthread_mutex_unlock(&mu);
    return m;
}

static void
reset_locked(void)
{
    for (size_t i = 0; i < nundo; i++) {
        free(ulog[i].path);
        free(ulog[i].old);
    }
    nundo = 0;
    for (size_t i = 0; i < nnew; i++)
        free(news[i].path);
    nnew = 0;
    undo_on = false;
}

void
fio_reset(void)
{
    pthread_mutex_lock(&mu);
    reset_locked();
    pthread_mutex_unlock(&mu);
}

static bool
chance(uint64_t *rng, unsigned pct)
{
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    return *rng % 100 < pct;
}

long
fio_powerloss(uint64_t *rng, unsigned drop_pct)
{
    long reverted = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = nundo; i-- > 0;) {
        undo *u = &ulog[i];
        if (!chance(rng, drop_pct))
            continue;
        int fd = open(u->path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            continue; /* deleted since */
        if (u->oldlen && pwrite(fd, u->old, u->oldlen, (off_t)u->off) != (ssize_t)u->oldlen)
            abort();
        struct stat st;
        if (fstat(fd, &st) != 0)
            abort();
        if (u->trunc) {
            if ((u64)st.st_size < u->old_size && ftruncate(fd, (off_t)u->old_size) != 0)
                abort();
        } else if (u->off + u->len > u->old_size) {
            /* The write extended the file: cut it back if it is still the tail, else the
             * extension reads as zeros (an unwritten extent). */
            if ((u64)st.st_size == u->off + u->len) {
                if (ftruncate(fd, (off_t)u->old_size) != 0)
                    abort();
            } else {
                u64 from = u->old_size > u->off ? u->old_size : u->off;
                u8 *z = calloc(1, u->off + u->len - from);
                if (!z || pwrite(fd, z, u->off + u->len - from, (off_t)from) < 0)
                    abort();
                free(z);
            }
        }
        close(fd);
        reverted++;
    }
    for (size_t i = 0; i < nnew; i++)
        if (chance(rng, drop_pct) && unlink(news[i].path) == 0)
            reverted++;
    reset_locked();
    pthread_mutex_unlock(&mu);
    return reverted;
}
