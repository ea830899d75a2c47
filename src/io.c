/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io.c -- POSIX implementation of the file-I/O seam (see io.h) and the loops that turn
 * partial reads and writes into complete ones. Any thread.
 */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int
posix_open(const char *path, int flags, int mode)
{
    int fd = open(path, flags | O_CLOEXEC, mode);
    return fd < 0 ? -errno : fd;
}
static int
posix_close(int fd)
{
    return close(fd) < 0 ? -errno : 0;
}
static ssize_t
posix_pread(int fd, void *buf, size_t len, u64 off)
{
    ssize_t n = pread(fd, buf, len, (off_t)off);
    return n < 0 ? -errno : n;
}
static ssize_t
posix_pwrite(int fd, const void *buf, size_t len, u64 off)
{
    ssize_t n = pwrite(fd, buf, len, (off_t)off);
    return n < 0 ? -errno : n;
}
static int
posix_fsync(int fd)
{
    return fdatasync(fd) < 0 ? -errno : 0;
}
static int
posix_ftruncate(int fd, u64 len)
{
    return ftruncate(fd, (off_t)len) < 0 ? -errno : 0;
}
static int
posix_unlink(const char *path)
{
    return unlink(path) < 0 ? -errno : 0;
}
static int
posix_rename(const char *from, const char *to)
{
    return rename(from, to) < 0 ? -errno : 0;
}
static int
posix_lock(int fd, bool exclusive)
{
    return flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0 ? -errno : 0;
}
static int
posix_fsize(int fd, u64 *size)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    *size = (u64)st.st_size;
    return 0;
}

static const qm_io posix_io = {posix_open,   posix_close,     posix_pread,  posix_pwrite,
                               posix_fsync,  posix_ftruncate, posix_unlink, posix_fsize,
                               posix_rename, posix_lock,      NULL,         true};

static _Atomic(const qm_io *) current_io;

const qm_io *
qm_io_posix(void)
{
    return &posix_io;
}

const qm_io *
qm_io_get(void)
{
    const qm_io *io = atomic_load_explicit(&current_io, memory_order_acquire);
    return io ? io : &posix_io;
}

bool
qm_io_concurrent(void)
{
    return qm_io_get()->concurrent;
}

bool
qm_io_map_allowed(void)
{
    if (qm_env_flag("QMDB_NO_MMAP"))
        return false;
    return qm_io_get() == qm_io_posix() && SIZE_MAX > UINT32_MAX;
}

uintptr_t
qm_page_size(void)
{
    static uintptr_t pg;
    uintptr_t p = __atomic_load_n(&pg, __ATOMIC_RELAXED);
    if (!p) {
        long r = sysconf(_SC_PAGESIZE);
        p = r > 0 ? (uintptr_t)r : 4096;
        __atomic_store_n(&pg, p, __ATOMIC_RELAXED);
    }
    return p;
}

/* Residency questions this thread asked (qm_io_resident calls that reached mincore), for
 * tests; per thread, so that concurrent readers share no cache line for it. */
static __thread u64 io_resident_asks;

u64
qm_io_resident_asks(void)
{
    return io_resident_asks;
}

bool
qm_io_resident(const void *addr, size_t len)
{
    if (!addr || !len)
        return false;
    io_resident_asks++;
    uintptr_t pg = qm_page_size();
    uintptr_t lo = (uintptr_t)addr / pg * pg, end = (uintptr_t)addr + len;
    size_t pages = (end - lo + pg - 1) / pg;
    unsigned char in[64];
    for (size_t done = 0; done < pages;) {
        size_t k = QM_MIN(pages - done, sizeof(in));
        if (mincore((void *)(lo + done * pg), k * pg, in) != 0)
            return false;
        for (size_t i = 0; i < k; i++)
            if (!(in[i] & 1))
                return false;
        done += k;
    }
    return true;
}

void
qm_io_set(const qm_io *io)
{
    atomic_store_explicit(&current_io, io, memory_order_release);
}

int
qm_io_pread_upto(int fd, void *buf, size_t len, u64 off, size_t *got)
{
    return qm_iox_pread_upto(qm_io_get(), fd, buf, len, off, got);
}

int
qm_iox_pread_upto(const qm_io *io, int fd, void *buf, size_t len, u64 off, size_t *got)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = io->pread(fd, (u8 *)buf + done, len - done, off + done);
        if (n == -EINTR)
            continue;
        if (n < 0) {
            *got = done;
            return (int)n;
        }
        if (n == 0)
            break;
        done += (size_t)n;
    }
    *got = done;
    return 0;
}

int
qm_io_pread_full(int fd, void *buf, size_t len, u64 off)
{
    return qm_iox_pread_full(qm_io_get(), fd, buf, len, off);
}

int
qm_iox_pread_full(const qm_io *io, int fd, void *buf, size_t len, u64 off)
{
    size_t got;
    QM_RET(qm_iox_pread_upto(io, fd, buf, len, off, &got));
    return got == len ? 0 : -EIO;
}

int
qm_io_pwrite_full(int fd, const void *buf, size_t len, u64 off)
{
    return qm_iox_pwrite_full(qm_io_get(), fd, buf, len, off);
}

int
qm_iox_pwrite_full(const qm_io *io, int fd, const void *buf, size_t len, u64 off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = io->pwrite(fd, (const u8 *)buf + done, len - done, off + done);
        if (n == -EINTR)
            continue;
        if (n < 0)
            return (int)n;
        if (n == 0)
            return -EIO;
        done += (size_t)n;
    }
    return 0;
}

int
qm_io_fsync_dir(const char *dir)
{
    return qm_iox_fsync_dir(qm_io_get(), dir);
}

int
qm_iox_fsync_dir(const qm_io *io, const char *dir)
{
    int fd = io->open(dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return fd;
    int rc = io->fsync(fd);
    int rc2 = io->close(fd);
    return rc ? rc : rc2;
}
