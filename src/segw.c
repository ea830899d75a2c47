/* SPDX-License-Identifier: Apache-2.0 */
/*
 * segw.c -- writes logical byte ranges into segment files (segw.h). Thread: the caller's.
 */
#include "segw.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

void
qm_segw_init(qm_segw *w, const char *dir, const char *name, u64 seg_size)
{
    snprintf(w->prefix, sizeof(w->prefix), "%s/%s", dir, name);
    w->seg_size = seg_size;
    w->cur = UINT64_MAX;
    w->fd = -1;
}

int
qm_segw_close(qm_segw *w)
{
    int rc = 0;
    if (w->fd >= 0) {
        if (fsync(w->fd) != 0)
            rc = -errno;
        close(w->fd);
    }
    w->fd = -1;
    w->cur = UINT64_MAX;
    return rc;
}

int
qm_segw_write(qm_segw *w, u64 off, const void *data, size_t len)
{
    const u8 *p = data;
    while (len > 0) {
        u64 seg = off / w->seg_size, in = off % w->seg_size;
        size_t n = (size_t)QM_MIN((u64)len, w->seg_size - in);
        if (seg != w->cur) {
            QM_RET(qm_segw_close(w));
            char path[4300];
            snprintf(path, sizeof(path), "%s.%010" PRIu64, w->prefix, seg);
            w->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
            if (w->fd < 0)
                return -errno;
            w->cur = seg;
        }
        size_t done = 0;
        while (done < n) {
            ssize_t r = pwrite(w->fd, p + done, n - done, (off_t)(in + done));
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                return -errno;
            done += (size_t)r;
        }
        p += n;
        off += n;
        len -= n;
    }
    return 0;
}
