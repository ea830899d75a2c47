/* SPDX-License-Identifier: Apache-2.0 */
/*
 * faultio.c -- the fault-injecting qm_io of faultio.h. Test-only; single-threaded.
 */
#include "faultio.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"

#define FIO_MAXFD 4096

typedef struct undo {
    char *path;
    bool trunc;   /* a truncate (else a write) */
    u64 off;      /* write offset, or the new length of a truncate */
    u64 len;      /* bytes written (writes) */
    u8 *old;      /* previous bytes of [off, off + oldlen) */
    u64 oldlen;
    u64 old_size; /* file size before the change */
} undo;

typedef struct created {
    char *path;
} created;

static const qm_io *posix;
static char *fd_path[FIO_MAXFD];
static fio_rule rule;
static bool have_rule, undo_on, triggered, dead;
static int pending_err; /* FIO_SHORT with err: fail the next call */
static long matches;
static undo *ulog;
static size_t nundo, capundo;
static created *news;
static size_t nnew, capnew;

/* The path of fd; for files opened before fio_install, asks /proc. */
static const char *
path_of(int fd)
{
    if (fd < 0 || fd >= FIO_MAXFD)
        return "";
    if (!fd_path[fd]) {
        char link[64], target[4096];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0)
            return "";
        target[n] = '\0';
        fd_path[fd] = strdup(target);
    }
    return fd_path[fd] ? fd_path[fd] : "";
}

/* Counts a matching call; true if the rule fires on it. */
static bool
hit(enum fio_op op, const char *path)
{
    if (!have_rule || (rule.op != FIO_ANY && rule.op != op))
        return false;
    if (rule.path_sub && !strstr(path, rule.path_sub))
        return false;
    if (rule.only_if && !*rule.only_if)
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

static void
forget_path(const char *path)
{
    size_t k = 0;
    for (size_t i = 0; i < nundo; i++) {
        if (strcmp(ulog[i].path, path) == 0) {
            free(ulog[i].path);
            free(ulog[i].old);
        } else {
            ulog[k++] = ulog[i];
        }
    }
    nundo = k;
}

/* A directory fsync makes the creation of the files in it durable. */
static void
dir_synced(const char *dir)
{
    size_t dl = strlen(dir), k = 0;
    for (size_t i = 0; i < nnew; i++) {
        const char *p = news[i].path;
        if (strncmp(p, dir, dl) == 0 && p[dl] == '/' && !strchr(p + dl + 1, '/'))
            free(news[i].path);
        else
            news[k++] = news[i];
    }
    nnew = k;
}

static int
f_open(const char *path, int flags, int mode)
{
    if (dead)
        return -EIO;
    if (pending_err) {
        int e = pending_err;
        pending_err = 0;
        return -e;
    }
    if (hit(FIO_OPEN, path)) {
        if (rule.action == FIO_ERR)
            return -rule.err;
        if (rule.action == FIO_KILL)
            die();
        if (rule.action == FIO_CRASH) {
            dead = true;
            return -EIO;
        }
    }
    bool existed = access(path, F_OK) == 0;
    int fd = posix->open(path, flags, mode);
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
        news[nnew++].path = strdup(path);
    }
    if (fd >= 0 && have_rule && rule.action == FIO_KILL_AFTER && triggered)
        die();
    return fd;
}

static int
f_close(int fd)
{
    if (fd >= 0 && fd < FIO_MAXFD) {
        free(fd_path[fd]);
        fd_path[fd] = NULL;
    }
    return posix->close(fd);
}

static ssize_t
f_pread(int fd, void *buf, size_t len, u64 off)
{
    if (dead)
        return -EIO;
    if (hit(FIO_PREAD, path_of(fd))) {
        if (rule.action == FIO_ERR)
            return -rule.err;
        if (rule.action == FIO_KILL)
            die();
    }
    return posix->pread(fd, buf, len, off);
}

static ssize_t
f_pwrite(int fd, const void *buf, size_t len, u64 off)
{
    if (dead)
        return -EIO;
    if (pending_err) {
        int e = pending_err;
        pending_err = 0;
        return -e;
    }
    const char *path = path_of(fd);
    if (hit(FIO_PWRITE, path)) {
        size_t part = len * rule.torn_pct / 100;
        switch (rule.action) {
        case FIO_ERR:
            return -rule.err;
        case FIO_SHORT:
            if (len > 1) {
                log_change(path, false, off, len / 2);
                pending_err = rule.err;
                return posix->pwrite(fd, buf, len / 2, off);
            }
            break;
        case FIO_KILL:
            if (part)
                posix->pwrite(fd, buf, part, off);
            die();
            break;
        case FIO_CRASH:
            log_change(path, false, off, part);
            if (part)
                posix->pwrite(fd, buf, part, off);
            dead = true;
            return -EIO;
        default:
            break;
        }
    }
    log_change(path, false, off, len);
    ssize_t n = posix->pwrite(fd, buf, len, off);
    if (have_rule && rule.action == FIO_KILL_AFTER && triggered)
        die();
    return n;
}

static int
f_fsync(int fd)
{
    if (dead)
        return -EIO;
    const char *path = path_of(fd);
    if (hit(FIO_FSYNC, path)) {
        if (rule.action == FIO_ERR)
            return -rule.err;
        if (rule.action == FIO_KILL)
            die();
        if (rule.action == FIO_CRASH) {
            dead = true;
            return -EIO;
        }
    }
    int rc = posix->fsync(fd);
    if (rc == 0) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
            dir_synced(path);
        else
            forget_path(path);
    }
    if (have_rule && rule.action == FIO_KILL_AFTER && triggered)
        die();
    return rc;
}

static int
f_ftruncate(int fd, u64 len)
{
    if (dead)
        return -EIO;
    const char *path = path_of(fd);
    if (hit(FIO_FTRUNCATE, path)) {
        if (rule.action == FIO_ERR)
            return -rule.err;
        if (rule.action == FIO_KILL)
            die();
        if (rule.action == FIO_CRASH) {
            dead = true;
            return -EIO;
        }
    }
    log_change(path, true, len, 0);
    int rc = posix->ftruncate(fd, len);
    if (have_rule && rule.action == FIO_KILL_AFTER && triggered)
        die();
    return rc;
}

static int
f_unlink(const char *path)
{
    if (dead)
        return -EIO;
    if (hit(FIO_UNLINK, path)) {
        if (rule.action == FIO_ERR)
            return -rule.err;
        if (rule.action == FIO_KILL)
            die();
        if (rule.action == FIO_CRASH) {
            dead = true;
            return -EIO;
        }
    }
    int rc = posix->unlink(path);
    if (rc == 0 && have_rule && rule.action == FIO_KILL_AFTER && triggered)
        die();
    return rc;
}

static int
f_fsize(int fd, u64 *size)
{
    if (dead)
        return -EIO;
    return posix->fsize(fd, size);
}

static const qm_io fault_io = {f_open,  f_close,     f_pread,  f_pwrite,
                               f_fsync, f_ftruncate, f_unlink, f_fsize};

void
fio_install(const fio_rule *r, bool undo_log)
{
    posix = qm_io_posix();
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
    matches = 0;
    qm_io_set(&fault_io);
}

void
fio_uninstall(void)
{
    qm_io_set(NULL);
    have_rule = false;
    dead = false;
    pending_err = 0;
}

bool
fio_triggered(void)
{
    return triggered;
}

long
fio_matches(void)
{
    return matches;
}

void
fio_reset(void)
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
    for (size_t i = nundo; i-- > 0;) {
        undo *u = &ulog[i];
        if (!chance(rng, drop_pct))
            continue;
        int fd = open(u->path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            continue; /* deleted since */
        if (u->oldlen && pwrite(fd, u->old, u->oldlen, (off_t)u->off) !=
                             (ssize_t)u->oldlen)
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
    fio_reset();
    return reverted;
}
