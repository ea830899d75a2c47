/* SPDX-License-Identifier: Apache-2.0 */
/*
 * faultio.h -- a fault-injecting qm_io (src/io.h) for the reliability tests (tests/fault,
 * tests/crash). It wraps POSIX and can:
 *   - fail the n-th matching call with an errno (EIO, ENOSPC, ...), once or from then on;
 *   - make the n-th matching pwrite short (half the bytes), optionally failing the retry;
 *   - kill the process with SIGKILL before, in the middle of (a torn write) or after the n-th
 *     matching call (crash tests, in a forked child);
 *   - simulate a power loss: with undo logging on, every write, truncate and file creation not
 *     yet made durable by fsync (file data) or a directory fsync (creation) is recorded, and
 *     fio_powerloss() reverts a random subset of them. After a FIO_CRASH trigger every call
 *     fails with EIO until fio_uninstall(), as if the machine had stopped.
 * A call "matches" when its kind is the rule's and the file's path contains the rule's
 * substring (NULL matches every path).
 *
 * Two configurations (io.h): sequential (the default), where the engine runs without worker
 * pools, batched reads or block pipeline (for a database opened under the layer), so that the
 * n-th matching call is always the same one; and concurrent (fio_set_concurrent), where the
 * engine keeps its production configuration and the layer also sees every batched read
 * (io_uring or the pread pool) as a FIO_PREAD call that it may fail. Process-wide state
 * behind one mutex: calls may come from any thread; the fio_* functions are called by the
 * test's main thread.
 */
#ifndef QM_FAULTIO_H
#define QM_FAULTIO_H

#include <stdbool.h>
#include <stdint.h>

enum fio_op {
    FIO_ANY,
    FIO_OPEN,
    FIO_PREAD,
    FIO_PWRITE,
    FIO_FSYNC,
    FIO_FTRUNCATE,
    FIO_UNLINK,
    FIO_RENAME, /* matched on the source path */
    FIO_LOCK,   /* the directory lock (flock) at open */
};
enum fio_action {
    FIO_NONE,       /* count only */
    FIO_ERR,        /* return -err */
    FIO_SHORT,      /* pwrite: write half, return the count; if err != 0 the next write
                     * to the same descriptor (the write loop's retry) fails */
    FIO_KILL,       /* SIGKILL before the call (pwrite: after writing a torn prefix) */
    FIO_KILL_AFTER, /* SIGKILL after the call succeeded */
    FIO_CRASH,      /* power loss: pwrite writes a torn prefix; then every call fails */
};

typedef struct fio_rule {
    enum fio_op op;
    const char *path_sub; /* NULL: any file */
    long nth;             /* 1-based index of the matching call that triggers */
    enum fio_action action;
    int err;           /* positive errno for FIO_ERR / FIO_SHORT */
    bool sticky;       /* FIO_ERR: fail every matching call from the nth on */
    unsigned torn_pct; /* FIO_KILL / FIO_CRASH on pwrite: percent of bytes written first */
    const volatile bool *only_if; /* if set, calls count only while *only_if is true */
} fio_rule;

/* Whether fio_install installs the layer as a concurrent one (default false). */
void fio_set_concurrent(bool on);
/* Installs the wrapper (qm_io_set) with a rule (NULL: no fault) and resets counters. */
void fio_install(const fio_rule *rule, bool undo_log);
/* Restores POSIX I/O. Keeps the undo log for fio_powerloss(). */
void fio_uninstall(void);
/* Whether the layer is installed. */
bool fio_installed(void);
/* Whether the rule fired, and how many calls matched it so far. */
bool fio_triggered(void);
long fio_matches(void);
/* Reads that bypassed pread (batched reads, the hybrid indexer's page-cache probe) seen since
 * fio_install through qm_io.read_done, and how many of them the rule failed. */
long fio_batched_reads(void);
long fio_batched_faults(void);
/* Reverts each not-yet-durable change with probability drop_pct/100 (newest first), deletes
 * not-yet-durable new files with the same probability, then clears the log. Returns the number
 * of changes reverted. Call after fio_uninstall() and after closing the database. */
long fio_powerloss(uint64_t *rng, unsigned drop_pct);
/* Clears the undo log without reverting anything. */
void fio_reset(void);

#endif /* QM_FAULTIO_H */
