/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memcap.h -- --mem-cap support for qmdb-bench: put this process in a memory cgroup.
 *
 * Owns: finding the cgroup v2 (preferred, if its memory controller is available) or v1
 * memory hierarchy, creating a child group of the process's current group, setting the limit
 * (memory.max or memory.limit_in_bytes), moving the process in, reading the group's usage
 * (memory.current or memory.usage_in_bytes; page cache included), and moving back out and
 * removing the group at the end.
 * Threads: the main thread of qmdb-bench (the cap then covers every thread of the process).
 */
#ifndef BENCH_MEMCAP_H
#define BENCH_MEMCAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct memcap {
    int active;  /* 1 = process is in the capped group */
    int version; /* 1 or 2 */
    uint64_t limit;
    char dir[1024];    /* the group's directory */
    char parent[1024]; /* where to move back to */
    char msg[512];     /* what happened (for the log and the JSON) */
} memcap;

/* Tries to cap this process at `bytes`. Returns 0 when capped; -1 otherwise (with the
 * reason in m->msg; the run continues uncapped). */
int memcap_apply(memcap *m, uint64_t bytes);
/* Memory charged to the group (bytes), 0 if not capped. */
uint64_t memcap_usage(const memcap *m);
/* Peak charge (memory.peak / memory.max_usage_in_bytes), 0 if unknown. */
uint64_t memcap_peak(const memcap *m);
/* Moves the process back to its original group and removes the capped group. */
void memcap_release(memcap *m);

#endif /* BENCH_MEMCAP_H */
