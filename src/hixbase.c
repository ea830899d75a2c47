/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hixbase.c -- small pieces the hybrid indexer's files share (hindex_int.h): buffers mapped
 * and unmapped directly, run handles and their ids (the set of erased positions is posset.c).
 * Depends on nothing else of the hybrid indexer.
 *
 * Thread: any; the caller owns the objects (run ids are atomic).
 */
#include "hindex_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#if defined(__SANITIZE_THREAD__)
#define QM_NO_MREMAP 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define QM_NO_MREMAP 1
#endif
#endif

/* Buffers of merges and rebuilds (megabytes, short-lived, often on the merger thread) are
 * mapped and unmapped directly, so that their pages go back to the system at once instead
 * of staying resident in a per-thread malloc arena. They grow by mremap, which moves the
 * pages without copying them or holding both copies resident; ThreadSanitizer does not
 * intercept mremap (pages moved onto addresses another thread once used keep that thread's
 * shadow state and read as a race), so under TSan they grow by map, copy and unmap. */
void *
hix_big_realloc(void *p, size_t old, size_t n)
{
    void *q;
#ifndef QM_NO_MREMAP
    if (p) {
        q = mremap(p, old, n, MREMAP_MAYMOVE);
        return q == MAP_FAILED ? NULL : q;
    }
#endif
    q = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED)
        return NULL;
    if (p) {
        memcpy(q, p, QM_MIN(old, n));
        munmap(p, old);
    }
    return q;
}

void
hix_big_free(void *p, size_t n)
{
    if (p)
        munmap(p, n);
}

int
hix_set_paths(qm_hindex *x, const char *dir, unsigned shard)
{
    size_t d = strlen(dir) + 1, p = d + 8; /* "/sXX.hix" */
    char *b = malloc(d + p + p + 4);
    if (!b)
        return -ENOMEM;
    x->dir = b;
    x->path = b + d;
    x->tmp = b + d + p;
    memcpy(x->dir, dir, d);
    snprintf(x->path, p, "%s/s%02x.hix", dir, shard);
    snprintf(x->tmp, p + 4, "%s.tmp", x->path);
    x->shard = shard;
    return 0;
}

void
hix_run_map(run *r)
{
    if (r->fd < 0 || r->npages == 0 || r->map || !qm_io_map_allowed())
        return;
    size_t len = (size_t)(r->npages + 1) * QM_HIX_PAGE;
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, r->fd, 0);
    if (m == MAP_FAILED)
        return;
    /* Lookups touch one page each: a fault reads that page only, as the pread did. */
    (void)madvise(m, len, MADV_RANDOM);
    r->map = m;
    r->map_len = len;
    r->checked = calloc((r->npages + 63) / 64, sizeof(u64)); /* NULL: check every time */
}

void
hix_run_close(const qm_io *io, run *r)
{
    if (r->map)
        munmap((void *)r->map, r->map_len);
    free(r->checked);
    if (r->fd >= 0)
        io->close(r->fd);
    free(r->first);
    memset(r, 0, sizeof(*r));
    r->fd = -1;
}

static u64 g_run_ids; /* atomic; ids start at 1 */

u64
hix_new_run_id(void)
{
    return __atomic_add_fetch(&g_run_ids, 1, __ATOMIC_RELAXED);
}
