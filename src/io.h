/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io.h -- the file-I/O seam. Every file operation of the engine goes through a qm_io vtable,
 * so that tests can inject EIO, short writes, ENOSPC or a simulated power loss. The default
 * implementation is plain POSIX. Functions return 0 or a negated errno, and loop over short
 * reads/writes themselves (a short read at end of file returns -EIO, except in
 * qm_io_pread_upto). Any thread.
 *
 * Under a layer that is not `concurrent` the engine runs sequentially (no worker pools, no
 * batched reads; a database opened under it has no block pipeline and the hybrid indexer
 * merges inline), so that the layer sees its calls in a deterministic order. A concurrent
 * layer gets the production configuration: it must be thread-safe, and it sees the reads that
 * bypass pread (batched reads over io_uring or the pread pool) through read_done.
 */
#ifndef QM_IO_H
#define QM_IO_H

#include "qm_internal.h"

#include <sys/types.h>

typedef struct qm_io {
    int (*open)(const char *path, int flags, int mode); /* fd >= 0 or -errno */
    int (*close)(int fd);
    ssize_t (*pread)(int fd, void *buf, size_t len, u64 off);        /* bytes or -errno */
    ssize_t (*pwrite)(int fd, const void *buf, size_t len, u64 off); /* bytes or -errno */
    int (*fsync)(int fd);
    int (*ftruncate)(int fd, u64 len);
    int (*unlink)(const char *path);
    int (*fsize)(int fd, u64 *size);
    int (*rename)(const char *from, const char *to);
    /* flock(fd): shared or exclusive, never waiting; -EWOULDBLOCK when another holds it. */
    int (*lock)(int fd, bool exclusive);
    /* A read of [off, off + len) of fd that bypassed pread (rio.c's batched reads, the hybrid
     * indexer's page-cache probe) completed with res (bytes or -errno); returns the result to
     * use (a test layer may turn it into an error). NULL: res as is. */
    ssize_t (*read_done)(int fd, u64 off, size_t len, ssize_t res);
    bool concurrent; /* the engine may use its threads and batched reads (see above) */
} qm_io;

/* The I/O implementation in use. Tests may replace it (process-wide; test-only hook). */
QM_HIDDEN const qm_io *qm_io_get(void);
QM_HIDDEN void qm_io_set(const qm_io *io); /* NULL restores POSIX */
QM_HIDDEN const qm_io *qm_io_posix(void);
/* Whether the layer in use lets the engine run concurrently (always true for POSIX). */
QM_HIDDEN bool qm_io_concurrent(void);
/* Whether files may be read through mappings: not under a test I/O layer (it must see every
 * read) and not when QMDB_NO_MMAP=1 (reads then go through pread, as on systems without
 * mmap). */
QM_HIDDEN bool qm_io_map_allowed(void);
/* The system's page size (4 KiB when it cannot be had). */
QM_HIDDEN uintptr_t qm_page_size(void);
/* Whether every page of [addr, addr + len), a range of a file mapping, is in the page cache
 * (mincore); false on any error. */
QM_HIDDEN bool qm_io_resident(const void *addr, size_t len);
/* How many residency questions (qm_io_resident with a range) the calling thread has asked;
 * tests use it to see that a trusted path stopped asking. */
QM_HIDDEN u64 qm_io_resident_asks(void);

/* Starts loading every 64-byte line of [addr, addr + len) after the first into the CPU
 * caches at once. A copy of an entry of a few lines out of the mapping (a 1 KiB value spans 17)
 * otherwise meets one demand miss after another until the hardware prefetcher has seen the
 * stream; issued together, the lines' loads overlap (1 KiB gets: medians 4% and 12% faster in
 * two series of ten alternated pairs; docs/BENCH.md, "1 KiB reads: every line at once"). For
 * ranges within a page or two: longer entries are not read through the mapping (shard.c). */
static inline void
qm_io_prefetch_lines(const void *addr, size_t len)
{
    const char *p = addr;
    for (size_t o = 64; o < len; o += 64)
        __builtin_prefetch(p + o);
}

/* A residency question (qm_io_resident) whose answers keep being yes is pure cost, a system
 * call per read. A qm_trust counts the yes answers in a row: after QM_TRUST_RUN of them,
 * qm_trust_skip tells the caller to ask only one time in QM_TRUST_EVERY, and after
 * QM_TRUST_LONG_RUN of them one time in QM_TRUST_LONG_EVERY; a no (qm_trust_note) starts the
 * count again. A wrong "yes" costs page faults that read from the device, never a wrong
 * answer: after a change of regime, at most about QM_TRUST_LONG_EVERY reads are served so
 * before one is asked about. Relaxed atomics, racy by design (a heuristic shared by threads).
 * Inline, on the read paths: the sampling tick is per thread and per source file, so the
 * entry log's questions (shard.c) and the index's (hindex.c) do not share one tick, where
 * calls that alternate between them could leave one counter never asked. */
typedef struct qm_trust {
    u32 run;
} qm_trust;
#define QM_TRUST_RUN 256u
#define QM_TRUST_EVERY 16u
#define QM_TRUST_LONG_RUN 1024u
#define QM_TRUST_LONG_EVERY 64u
/* True: assume resident without asking. */
static inline bool
qm_trust_skip(qm_trust *t)
{
    static __thread u32 tick;
    u32 run = __atomic_load_n(&t->run, __ATOMIC_RELAXED);
    if (run < QM_TRUST_RUN)
        return false;
    return ++tick % (run >= QM_TRUST_LONG_RUN ? QM_TRUST_LONG_EVERY : QM_TRUST_EVERY) != 0;
}

/* Records the answer of a question that was asked. */
static inline void
qm_trust_note(qm_trust *t, bool resident)
{
    u32 run = __atomic_load_n(&t->run, __ATOMIC_RELAXED);
    if (!resident)
        __atomic_store_n(&t->run, 0, __ATOMIC_RELAXED);
    else if (run < QM_TRUST_LONG_RUN)
        __atomic_store_n(&t->run, run + 1, __ATOMIC_RELAXED);
}

/* Whether [addr, addr + len) of a file mapping may be taken as resident: true without a
 * question where the counter skips it, else asks (qm_io_resident) and notes the answer. */
static inline bool
qm_trust_resident(qm_trust *t, const void *addr, size_t len)
{
    if (qm_trust_skip(t))
        return true;
    bool in = qm_io_resident(addr, len);
    qm_trust_note(t, in);
    return in;
}

/* Where memory is short, batched reads use O_DIRECT and skip the page cache, yet part of an
 * entry log is still cached: mostly its youngest pages, written through it a moment ago. A
 * question about one entry (qm_io_resident, about a microsecond here) pays where the answer
 * is often yes. A qm_cprobe keeps, per age class of a position (its distance from the log's
 * end: under 1 MiB, then one class per power of two of MiB, the last one 16 GiB and more),
 * how many questions were asked and how many answered yes, both halved every
 * QM_CPROBE_SPAN questions. A class is asked while it has had fewer than QM_CPROBE_LEARN
 * questions or answered yes at least one time in QM_CPROBE_PAY; otherwise one time in
 * QM_CPROBE_SAMPLE, so that a class cached again is noticed. Relaxed atomics, racy by design
 * (a heuristic shared by reader threads; a lost update only shifts an estimate). */
#define QM_CPROBE_CLASSES 16u
#define QM_CPROBE_LEARN 64u
#define QM_CPROBE_PAY 8u
#define QM_CPROBE_SAMPLE 32u
#define QM_CPROBE_SPAN 1024u
typedef struct qm_cprobe {
    u32 ask[QM_CPROBE_CLASSES], yes[QM_CPROBE_CLASSES];
    u64 taken; /* entries copied from the page cache instead of read from the device */
} qm_cprobe;

/* The age class of a position age bytes before the log's end. */
static inline unsigned
qm_cprobe_class(u64 age)
{
    u64 mib = age >> 20;
    unsigned c = mib ? 64u - (unsigned)__builtin_clzll(mib) : 0u;
    return c < QM_CPROBE_CLASSES ? c : QM_CPROBE_CLASSES - 1;
}

/* Whether to ask about a position of class c. */
static inline bool
qm_cprobe_ask(const qm_cprobe *p, unsigned c)
{
    static __thread u32 tick;
    u32 a = __atomic_load_n(&p->ask[c], __ATOMIC_RELAXED);
    u32 y = __atomic_load_n(&p->yes[c], __ATOMIC_RELAXED);
    if (a < QM_CPROBE_LEARN || (u64)y * QM_CPROBE_PAY >= a)
        return true;
    return ++tick % QM_CPROBE_SAMPLE == 0;
}

/* Records the answer to a question about class c. */
static inline void
qm_cprobe_note(qm_cprobe *p, unsigned c, bool yes)
{
    u32 a = __atomic_load_n(&p->ask[c], __ATOMIC_RELAXED);
    u32 y = __atomic_load_n(&p->yes[c], __ATOMIC_RELAXED);
    if (a >= QM_CPROBE_SPAN) {
        a /= 2;
        y /= 2;
    }
    __atomic_store_n(&p->ask[c], a + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&p->yes[c], y + (yes ? 1 : 0), __ATOMIC_RELAXED);
}

/* Offset, length and buffer alignment of reads that bypass the page cache (O_DIRECT): the
 * batched reads (rio.c) and the point reads that skip the cache (shard.c). */
#define QM_IO_ALIGN 4096u

/* The aligned window [*aoff, *aoff + *alen) that covers len bytes at off, for O_DIRECT. */
static inline void
qm_io_window(u64 off, u64 len, u64 *aoff, u64 *alen)
{
    *aoff = off & ~(u64)(QM_IO_ALIGN - 1);
    *alen = ((off + len + QM_IO_ALIGN - 1) & ~(u64)(QM_IO_ALIGN - 1)) - *aoff;
}

/* Helpers over the vtable. */
QM_HIDDEN int qm_io_pread_full(int fd, void *buf, size_t len, u64 off);
/* Reads up to len bytes; *got is set to what was read (may be short at end of file). */
QM_HIDDEN int qm_io_pread_upto(int fd, void *buf, size_t len, u64 off, size_t *got);
QM_HIDDEN int qm_io_pwrite_full(int fd, const void *buf, size_t len, u64 off);
/* fsync a directory (so that file creations and deletions in it are durable). */
QM_HIDDEN int qm_io_fsync_dir(const char *dir);

/* The same over a given implementation (a component that captured the I/O layer it was
 * created under, so that its background thread never switches layers mid-way). */
QM_HIDDEN int qm_iox_pread_upto(const qm_io *io, int fd, void *buf, size_t len, u64 off,
                                size_t *got);
QM_HIDDEN int qm_iox_pread_full(const qm_io *io, int fd, void *buf, size_t len, u64 off);
QM_HIDDEN int qm_iox_pwrite_full(const qm_io *io, int fd, const void *buf, size_t len, u64 off);
QM_HIDDEN int qm_iox_fsync_dir(const qm_io *io, const char *dir);

#endif /* QM_IO_H */
