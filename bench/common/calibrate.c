/* SPDX-License-Identifier: Apache-2.0 */
/*
 * calibrate.c -- device and hash calibration for qmdb-bench. See calibrate.h.
 * Owns: the calibration file, the timed write/read loops and the SHA-256 loop.
 * Threads: the main thread, before any engine runs (io_uring for the QD32 test).
 */
#include "calibrate.h"

#include "report.h"
#include "workload.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CAL_BLK 4096u
#define CAL_CHUNK (1u << 20)
#define CAL_QD 32u

static int
make_file(calib *c, const char *path, uint64_t bytes)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
    c->direct = fd >= 0;
    if (fd < 0)
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        snprintf(c->note, sizeof(c->note), "open calibration file: %s", strerror(errno));
        return -1;
    }
    void *buf;
    if (posix_memalign(&buf, CAL_BLK, CAL_CHUNK) != 0) {
        close(fd);
        return -1;
    }
    uint64_t *w = buf;
    for (size_t i = 0; i < CAL_CHUNK / 8; i++)
        w[i] = wl_mix64(i + 1);
    uint64_t t0 = now_ns();
    for (uint64_t off = 0; off < bytes; off += CAL_CHUNK) {
        w[0] = off; /* distinct content per chunk */
        ssize_t n = pwrite(fd, buf, CAL_CHUNK, (off_t)off);
        if (n != (ssize_t)CAL_CHUNK) {
            snprintf(c->note, sizeof(c->note), "write: %s", n < 0 ? strerror(errno) : "short");
            free(buf);
            close(fd);
            return -1;
        }
    }
    fdatasync(fd);
    double s = (double)(now_ns() - t0) / 1e9;
    c->seq_write_mbps = (double)bytes / (1 << 20) / s;
    free(buf);
    close(fd);
    return 0;
}

static int
open_read(const char *path, int direct)
{
    int fd = open(path, O_RDONLY | (direct ? O_DIRECT : 0));
    if (fd >= 0 && !direct)
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); /* best effort without O_DIRECT */
    return fd;
}

static void
read_qd1(calib *c, const char *path, uint64_t nblk, double secs)
{
    int fd = open_read(path, c->direct);
    if (fd < 0)
        return;
    void *buf;
    if (posix_memalign(&buf, CAL_BLK, CAL_BLK) != 0) {
        close(fd);
        return;
    }
    lat_hist *h = malloc(sizeof(*h));
    if (!h) {
        free(buf);
        close(fd);
        return;
    }
    hist_reset(h);
    uint64_t x = 12345, n = 0, t0 = now_ns(), end = t0 + (uint64_t)(secs * 1e9), t = t0;
    while (t < end) {
        x = wl_mix64(x);
        off_t off = (off_t)((x % nblk) * CAL_BLK);
        if (pread(fd, buf, CAL_BLK, off) != (ssize_t)CAL_BLK)
            break;
        uint64_t t2 = now_ns();
        hist_add(h, t2 - t);
        t = t2;
        n++;
    }
    double s = (double)(t - t0) / 1e9;
    c->qd1_iops = s > 0 ? (double)n / s : 0;
    c->qd1_p50_us = (double)hist_quantile(h, 0.5) / 1e3;
    c->qd1_p99_us = (double)hist_quantile(h, 0.99) / 1e3;
    free(h);
    free(buf);
    close(fd);
}

static void
read_qd32(calib *c, const char *path, uint64_t nblk, double secs)
{
    int fd = open_read(path, c->direct);
    if (fd < 0)
        return;
    struct io_uring ring;
    if (io_uring_queue_init(CAL_QD, &ring, 0) != 0) {
        close(fd);
        c->qd32_uring = 0;
        return;
    }
    c->qd32_uring = 1;
    void *bufs;
    if (posix_memalign(&bufs, CAL_BLK, (size_t)CAL_BLK * CAL_QD) != 0) {
        io_uring_queue_exit(&ring);
        close(fd);
        return;
    }
    uint64_t x = 54321, done = 0, t0 = now_ns(), end = t0 + (uint64_t)(secs * 1e9);
    unsigned inflight = 0;
    int stop = 0, err = 0;
    for (unsigned i = 0; i < CAL_QD; i++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
        x = wl_mix64(x);
        io_uring_prep_read(sqe, fd, (char *)bufs + (size_t)i * CAL_BLK, CAL_BLK,
                           (x % nblk) * CAL_BLK);
        io_uring_sqe_set_data64(sqe, i);
        inflight++;
    }
    io_uring_submit(&ring);
    while (inflight > 0) {
        struct io_uring_cqe *cqe;
        if (io_uring_wait_cqe(&ring, &cqe) != 0)
            break;
        unsigned slot = (unsigned)io_uring_cqe_get_data64(cqe);
        if (cqe->res != (int)CAL_BLK)
            err = 1;
        io_uring_cqe_seen(&ring, cqe);
        inflight--;
        done++;
        if (!stop && (done & 31) == 0 && now_ns() >= end)
            stop = 1;
        if (!stop && !err) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
            x = wl_mix64(x);
            io_uring_prep_read(sqe, fd, (char *)bufs + (size_t)slot * CAL_BLK, CAL_BLK,
                               (x % nblk) * CAL_BLK);
            io_uring_sqe_set_data64(sqe, slot);
            inflight++;
            io_uring_submit(&ring);
        }
    }
    double s = (double)(now_ns() - t0) / 1e9;
    c->qd32_iops = s > 0 && !err ? (double)done / s : 0;
    if (err)
        snprintf(c->note, sizeof(c->note), "io_uring read error");
    free(bufs);
    io_uring_queue_exit(&ring);
    close(fd);
}

static void
sha_speed(calib *c, double secs)
{
    size_t len = CAL_CHUNK;
    unsigned char *buf = malloc(len), md[32];
    if (!buf)
        return;
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)wl_mix64(i);
    uint64_t t0 = now_ns(), end = t0 + (uint64_t)(secs * 1e9), n = 0;
    unsigned mdlen = 0;
    do {
        EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL);
        buf[0] = md[0];
        n++;
    } while (now_ns() < end);
    double s = (double)(now_ns() - t0) / 1e9;
    c->sha256_mbps = (double)n * (double)len / (1 << 20) / s;
    free(buf);
}

int
calibrate_run(calib *c, const char *dir, uint64_t file_mib, double secs)
{
    memset(c, 0, sizeof(*c));
    if (file_mib < 256)
        file_mib = 256;
    c->file_bytes = file_mib << 20;
    char path[4096];
    snprintf(path, sizeof(path), "%s/calibrate.%ld.tmp", dir, (long)getpid());
    int rc = make_file(c, path, c->file_bytes);
    if (rc == 0) {
        uint64_t nblk = c->file_bytes / CAL_BLK;
        read_qd1(c, path, nblk, secs);
        read_qd32(c, path, nblk, secs);
    }
    unlink(path);
    sha_speed(c, secs / 2 > 0.2 ? secs / 2 : 0.2);
    c->done = 1;
    if (!c->direct && !c->note[0])
        snprintf(c->note, sizeof(c->note), "O_DIRECT not supported here: buffered I/O used");
    return rc;
}
