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
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { HUGE_UNKNOWN = 0, HUGE_PROBING = 1, HUGE_ON = 2, HUGE_OFF = 3 };

static pthread_once_t huge_once = PTHREAD_ONCE_INIT;
static u64 huge_budget;                 /* bytes of open logs up to which regions are readied */
static u64 huge_min = QM_HUGE_MIN_LIVE; /* and from which */
static int huge_state;                  /* HUGE_* (atomic) */
static u64 huge_live;                   /* bytes of the open logs (atomic; see qm_huge_account) */
static u64 proc_mem; /* the memory the process may use: RAM, or a cgroup's limit below it */

/* Whether the comma-separated list holds tok. */
static bool
list_has(const char *list, const char *tok)
{
    size_t n = strlen(tok);
    for (const char *p = list;; p++) {
        if (strncmp(p, tok, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return true;
        if (!(p = strchr(p, ',')))
            return false;
    }
}

/* The smallest value of file in the cgroup directory of path cg (the process's path from
 * /proc/self/cgroup) and in each of its ancestors, below a hierarchy mounted at mnt whose
 * mount root is root; UINT64_MAX where none is set ("max", or no file). */
static u64
limit_along(const char *mnt, const char *root, const char *cg, const char *file)
{
    char rel[4096], path[8400];
    size_t rn = strlen(root);
    if (strcmp(root, "/") != 0 && strncmp(cg, root, rn) == 0 && (cg[rn] == '/' || !cg[rn]))
        cg += rn; /* a mount of a sub-tree (containers): paths are below its root */
    snprintf(rel, sizeof(rel), "%s", cg);
    u64 lim = UINT64_MAX;
    for (;;) {
        snprintf(path, sizeof(path), "%s%s/%s", mnt, strcmp(rel, "/") == 0 ? "" : rel, file);
        FILE *m = fopen(path, "re");
        unsigned long long v;
        if (m && fscanf(m, "%llu", &v) == 1 && v < lim)
            lim = v;
        if (m)
            fclose(m);
        char *slash = strrchr(rel, '/');
        if (!slash || (slash == rel && !rel[1]))
            break;
        slash[slash == rel ? 1 : 0] = '\0'; /* "/a" -> "/", "/a/b" -> "/a" */
    }
    return lim;
}

u64
qm_huge_mem_limit(const char *mountinfo, const char *cgroup)
{
    char line[4096], v1[4096] = "", v2[4096] = ""; /* the paths; "" where absent */
    FILE *f = fopen(cgroup, "re");
    if (!f)
        return UINT64_MAX;
    /* Lines "id:controllers:path": "0::path" for the v2 hierarchy, and for v1 the one whose
     * controllers include memory. */
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = '\0';
        if (strcmp(line, "0") == 0 && c2 == c1 + 1)
            snprintf(v2, sizeof(v2), "%s", c2 + 1);
        else if (list_has(c1 + 1, "memory"))
            snprintf(v1, sizeof(v1), "%s", c2 + 1);
    }
    fclose(f);
    u64 lim = UINT64_MAX;
    if (!(f = fopen(mountinfo, "re")))
        return lim;
    /* "id parent dev root mountpoint options [tags] - fstype source superoptions" */
    while (fgets(line, sizeof(line), f)) {
        char root[1024], mnt[1024], fstype[64], sopts[1024];
        char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) != 2 ||
            sscanf(dash + 3, "%63s %*s %1023s", fstype, sopts) != 2)
            continue;
        u64 l = UINT64_MAX;
        if (v2[0] && strcmp(fstype, "cgroup2") == 0)
            l = limit_along(mnt, root, v2, "memory.max");
        else if (v1[0] && strcmp(fstype, "cgroup") == 0 && list_has(sopts, "memory"))
            l = limit_along(mnt, root, v1, "memory.limit_in_bytes");
        lim = QM_MIN(lim, l);
    }
    fclose(f);
    return lim;
}

static void
huge_init(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), pg = sysconf(_SC_PAGESIZE);
    u64 mem = pages > 0 && pg > 0 ? (u64)pages * (u64)pg : UINT64_MAX; /* MAX: unknown */
    proc_mem = QM_MIN(mem, qm_huge_mem_limit("/proc/self/mountinfo", "/proc/self/cgroup"));
    const char *lim = getenv("QMDB_MEM_LIMIT"); /* tests: a smaller memory */
    if (lim && lim[0])
        proc_mem = QM_MIN(proc_mem, strtoull(lim, NULL, 10));
    /* Memory unknown: the mapping is kept for reads, and no region is readied. */
    huge_budget = proc_mem == UINT64_MAX ? 0 : proc_mem / 2;
    const char *min = getenv("QMDB_HUGE_MIN_LIVE"); /* tests: small logs readied too */
    if (min && min[0])
        huge_min = strtoull(min, NULL, 10);
    if (qm_env_flag("QMDB_NO_HUGE_FOLIOS"))
        __atomic_store_n(&huge_state, HUGE_OFF, __ATOMIC_RELEASE);
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
qm_logs_fit(void)
{
    pthread_once(&huge_once, huge_init);
    return __atomic_load_n(&huge_live, __ATOMIC_RELAXED) <= proc_mem;
}

bool
qm_logs_small(void)
{
    pthread_once(&huge_once, huge_init);
    return __atomic_load_n(&huge_live, __ATOMIC_RELAXED) <= proc_mem / 4;
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
