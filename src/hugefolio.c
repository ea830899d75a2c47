/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hugefolio.c -- readies 2 MiB regions of the mapped logs as huge page-cache folios, and the
 * process-wide policy of when to (hugefolio.h). Thread: any; the state is atomic.
 */
#include "hugefolio.h"

#include "io.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

enum { HUGE_UNKNOWN = 0, HUGE_PROBING = 1, HUGE_ON = 2, HUGE_OFF = 3 };

static pthread_once_t huge_once = PTHREAD_ONCE_INIT;
static u64 huge_budget;                 /* bytes of open logs up to which regions are readied */
static u64 huge_min = QM_HUGE_MIN_LIVE; /* and from which */
static int huge_state;                  /* HUGE_* (atomic) */
static u64 huge_live; /* bytes of the open logs that ask (atomic; see qm_huge_account) */

/* The smallest memory.max on the process's cgroup v2 path, or UINT64_MAX. */
static u64
cgroup_memory_max(void)
{
    char line[4096], path[4200];
    u64 lim = UINT64_MAX;
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return lim;
    char *cg = NULL;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "0::", 3) == 0) {
            cg = line + 3;
            cg[strcspn(cg, "\n")] = '\0';
            break;
        }
    fclose(f);
    while (cg && cg[0] == '/') {
        snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max", cg);
        FILE *m = fopen(path, "re");
        unsigned long long v;
        if (m && fscanf(m, "%llu", &v) == 1 && v < lim)
            lim = v;
        if (m)
            fclose(m);
        char *slash = strrchr(cg, '/');
        if (!slash || slash == cg)
            break;
        *slash = '\0';
    }
    return lim;
}

static void
huge_init(void)
{
    const char *env = getenv("QMDB_NO_HUGE_FOLIOS");
    if (env && env[0] && strcmp(env, "0") != 0) {
        __atomic_store_n(&huge_state, HUGE_OFF, __ATOMIC_RELEASE);
        return;
    }
    const char *min = getenv("QMDB_HUGE_MIN_LIVE"); /* tests: small logs readied too */
    if (min && min[0])
        huge_min = strtoull(min, NULL, 10);
    long pages = sysconf(_SC_PHYS_PAGES), pg = sysconf(_SC_PAGESIZE);
    u64 mem = pages > 0 && pg > 0 ? (u64)pages * (u64)pg : 0;
    huge_budget = QM_MIN(mem, cgroup_memory_max()) / 2;
}

/* The FileHugePages line of /proc/meminfo, in KiB (-1 if it cannot be read). */
static long long
file_huge_kib(void)
{
    char line[256];
    long long v = -1;
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "FileHugePages: %lld", &v) == 1)
            break;
    fclose(f);
    return v;
}

bool
qm_huge_wanted(void)
{
    pthread_once(&huge_once, huge_init);
    int st = __atomic_load_n(&huge_state, __ATOMIC_ACQUIRE);
    u64 live = __atomic_load_n(&huge_live, __ATOMIC_RELAXED);
    return (st == HUGE_UNKNOWN || st == HUGE_ON) && live >= huge_min && live <= huge_budget;
}

bool
qm_huge_working(void)
{
    return __atomic_load_n(&huge_state, __ATOMIC_ACQUIRE) == HUGE_ON;
}

void
qm_huge_account(int64_t delta)
{
    __atomic_add_fetch(&huge_live, (u64)delta, __ATOMIC_RELAXED);
}

void
qm_huge_ready(int fd, u64 off)
{
    int expect = HUGE_UNKNOWN;
    bool probe = __atomic_compare_exchange_n(&huge_state, &expect, HUGE_PROBING, false,
                                             __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    if (!probe && expect != HUGE_ON)
        return; /* off, or another thread is probing: this region stays small */
    long long before = probe ? file_huge_kib() : 0;
    bool made = false;
    if (qm_io_get()->ftruncate(fd, off + QM_HUGE_REGION) == 0) {
        u8 *p = mmap(NULL, QM_HUGE_REGION, PROT_READ, MAP_SHARED, fd, (off_t)off);
        if (p != MAP_FAILED) {
            if (madvise(p, QM_HUGE_REGION, MADV_HUGEPAGE) == 0) {
                (void)*(volatile const u8 *)p;
                made = true;
            }
            munmap(p, QM_HUGE_REGION);
        }
    }
    if (probe) {
        long long after = file_huge_kib();
        bool works = made && before >= 0 && after >= before + (long long)(QM_HUGE_REGION >> 10);
        __atomic_store_n(&huge_state, works ? HUGE_ON : HUGE_OFF, __ATOMIC_RELEASE);
    }
}
