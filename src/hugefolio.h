/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hugefolio.h -- 2 MiB page-cache folios for the mapped append-only logs.
 *
 * Point reads take entries from a read mapping of the entry log (hpfile.h). Written through
 * pwrite in pieces, a log lands in the page cache as small folios, each mapped by its own
 * page-table entry on first touch; a random read over a multi-GiB log then pays a mapping
 * fault (and a TLB miss) on most pages, which on a virtual machine with shadowed page tables
 * costs several microseconds. A 2 MiB region that is filled into one huge folio is mapped by
 * one entry instead.
 *
 * The kernel gives a file region a huge folio only when it fills the region at once (a read
 * fault with huge pages asked for, or one write of the whole aligned region). So before the
 * writer's first byte enters a new 2 MiB region of a segment, qm_huge_ready extends the
 * segment file over the region (a hole: no block is allocated and nothing is written to the
 * device) and faults it in through a short-lived mapping asking for huge pages: the kernel
 * fills the region with one zeroed huge folio, with no I/O, and the writes that follow land in
 * it. The segment file may thus be longer than the data, with a hole at its end; the metadata
 * holds the committed size and the open cuts every segment back to it (hpfile.h).
 *
 * When: only while the process's open logs (the bytes [head, size) of every mapped, writable
 * log, qm_huge_account) are at least 512 MiB and fit in half the memory the process may use (the
 * machine's RAM, or less where a cgroup caps it: qm_huge_mem_limit, read once per process).
 * Beyond that the log no longer fits in the page cache and 2 MiB is too coarse a unit to
 * cache: a folio kept for one hot entry would hold 511 cold pages. Below 512 MiB the 2 MiB
 * zero fill of each readied region (1.4-3.2 ms on memory fresh from a hypervisor) was
 * measured to cost more than it saves (docs/BENCH.md). The file decides the rest (hpfile.h:
 * records of at most 4 KiB on average). The first region readied in a process also checks
 * that the kernel made a huge folio (the `FileHugePages` line of /proc/meminfo grew); a
 * kernel or file system without large folios turns the readying off for the process.
 * `QMDB_NO_HUGE_FOLIOS=1` turns it off; QMDB_HUGE_MIN_LIVE=N (bytes) lowers the 512 MiB
 * and QMDB_MEM_LIMIT=N (bytes) the memory the process may use (tests).
 *
 * Thread: any (each log's writer calls it); the process-wide state is atomic.
 */
#ifndef QM_HUGEFOLIO_H
#define QM_HUGEFOLIO_H

#include "qm_internal.h"

#define QM_HUGE_REGION (2u << 20)
/* Open logs smaller than this are not readied (see "When" above). */
#define QM_HUGE_MIN_LIVE (512ull << 20)

/* Whether new regions should be readied now: allowed, working, and within the budget. */
QM_HIDDEN bool qm_huge_wanted(void);
/* Whether the process's open logs (as counted for the budget) fit in the memory it may use.
 * When they do not, most of a log is not in the page cache, and a point read through the
 * mapping costs a fault that maps the page into the process (several microseconds on a
 * virtual machine) and later a reclaim that unmaps it, where pread copies it: then readers
 * use pread (shard.c). */
QM_HIDDEN bool qm_logs_fit(void);
/* Whether they fit in a quarter of it: room enough to keep pages mapped into the process
 * that reclaim would otherwise have to unmap (hpfile.c, qm_hpfile_populate). */
QM_HIDDEN bool qm_logs_small(void);
/* Readies the region [off, off + QM_HUGE_REGION) of the file fd, which holds no byte of it
 * yet (off aligned to QM_HUGE_REGION): extends the file over it and faults it in as one huge
 * folio. Best effort: on any failure the region is left to small folios (the file may still
 * have been extended). */
QM_HIDDEN void qm_huge_ready(int fd, u64 off);
/* Whether this process has seen the kernel make a huge folio for a readied region (tests):
 * false while unknown, when turned off, or when the kernel did not. */
QM_HIDDEN bool qm_huge_working(void);
/* Adds delta (may be negative) to the process-wide bytes of open logs (every mapped, writable
 * log: hpfile.c), which both qm_huge_wanted and qm_logs_fit weigh. */
QM_HIDDEN void qm_huge_account(int64_t delta);
/* The smallest memory limit set for the process's cgroups and their ancestors, or UINT64_MAX:
 * `memory.max` along its cgroup v2 path and `memory.limit_in_bytes` along its path in a
 * cgroup v1 hierarchy with the memory controller, each found through the mount table
 * (mountinfo, in the format of /proc/self/mountinfo) and the process's cgroup list (cgroup,
 * that of /proc/self/cgroup). Files that cannot be read count as no limit. */
QM_HIDDEN u64 qm_huge_mem_limit(const char *mountinfo, const char *cgroup);

#endif
