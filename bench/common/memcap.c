/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memcap.c -- memory cgroup handling for qmdb-bench --mem-cap. See memcap.h.
 *
 * The capped group is created as a child of the cgroup the process is already in, so any
 * limit that already applies to the process still applies, and nothing outside that subtree
 * is touched. On cgroup v2 the parent must delegate the memory controller
 * (cgroup.subtree_control); when it cannot, the cap is not applied and the run says so.
 * Owns: the cgroup files of the capped group (see memcap.h for the whole list).
 * Threads: the main thread of qmdb-bench.
 */
#include "memcap.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* snprintf through a va_list: truncation of long cgroup paths is detected by the kernel
 * (the write fails), so the compiler's truncation analysis is not needed here. */
__attribute__((format(printf, 3, 4))) static void
fmt(char *buf, size_t n, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, n, f, ap);
    va_end(ap);
}

static int
write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = fputs(s, f) >= 0;
    if (fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

static uint64_t
read_u64_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long v = 0;
    if (fscanf(f, "%llu", &v) != 1)
        v = 0;
    fclose(f);
    return v;
}

/* Mount point of the cgroup2 fs (v2) or of the v1 hierarchy with the memory controller. */
static int
find_mount(int want_v2, char *out, size_t n)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f)
        return -1;
    char line[4096];
    int found = -1;
    while (found && fgets(line, sizeof(line), f)) {
        char mnt[1024], fstype[64], opts[1024] = "";
        char *sep = strstr(line, " - ");
        if (!sep || sscanf(line, "%*s %*s %*s %*s %1023s", mnt) != 1 ||
            sscanf(sep + 3, "%63s %*s %1023s", fstype, opts) < 1)
            continue;
        if (want_v2 && strcmp(fstype, "cgroup2") == 0) {
            fmt(out, n, "%s", mnt);
            found = 0;
        } else if (!want_v2 && strcmp(fstype, "cgroup") == 0) {
            for (char *tok = strtok(opts, ","); tok; tok = strtok(NULL, ","))
                if (strcmp(tok, "memory") == 0) {
                    fmt(out, n, "%s", mnt);
                    found = 0;
                }
        }
    }
    fclose(f);
    return found;
}

/* This process's path in the hierarchy: "0::/x" for v2, "N:...memory...:/x" for v1. */
static int
own_path(int v2, char *out, size_t n)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return -1;
    char line[2048];
    int found = -1;
    while (found && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = 0;
        const char *ctl = c1 + 1;
        int match = 0;
        if (v2)
            match = strcmp(line, "0") == 0 && ctl[0] == 0;
        else {
            char tmp[512];
            fmt(tmp, sizeof(tmp), "%s", ctl);
            for (char *tok = strtok(tmp, ","); tok; tok = strtok(NULL, ","))
                if (strcmp(tok, "memory") == 0)
                    match = 1;
        }
        if (match) {
            fmt(out, n, "%s", strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1);
            found = 0;
        }
    }
    fclose(f);
    return found;
}

static int
file_has_word(const char *path, const char *word)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    for (char *tok = strtok(buf, " \n"); tok; tok = strtok(NULL, " \n"))
        if (strcmp(tok, word) == 0)
            return 1;
    return 0;
}

static int
try_version(memcap *m, int v2, uint64_t bytes)
{
    char mnt[1024], own[1024], path[1200];
    if (find_mount(v2, mnt, sizeof(mnt)) != 0 || own_path(v2, own, sizeof(own)) != 0) {
        fmt(m->msg, sizeof(m->msg), "no cgroup %s memory hierarchy", v2 ? "v2" : "v1");
        return -1;
    }
    fmt(m->parent, sizeof(m->parent), "%s%s", mnt, own);
    if (v2) {
        fmt(path, sizeof(path), "%s/cgroup.controllers", m->parent);
        if (!file_has_word(path, "memory")) {
            fmt(m->msg, sizeof(m->msg), "cgroup v2 at %s has no memory controller", m->parent);
            return -1;
        }
    }
    fmt(m->dir, sizeof(m->dir), "%s/qmdb-bench-%ld", m->parent, (long)getpid());
    if (mkdir(m->dir, 0755) != 0 && errno != EEXIST) {
        fmt(m->msg, sizeof(m->msg), "mkdir %s: %s", m->dir, strerror(errno));
        return -1;
    }
    if (v2) {
        fmt(path, sizeof(path), "%s/cgroup.subtree_control", m->parent);
        if (!file_has_word(path, "memory") && write_file(path, "+memory") != 0) {
            fmt(m->msg, sizeof(m->msg), "cannot enable +memory in %s: %s", path, strerror(errno));
            rmdir(m->dir);
            return -1;
        }
    }
    char lim[32];
    fmt(lim, sizeof(lim), "%llu", (unsigned long long)bytes);
    fmt(path, sizeof(path), "%s/%s", m->dir, v2 ? "memory.max" : "memory.limit_in_bytes");
    if (write_file(path, lim) != 0) {
        fmt(m->msg, sizeof(m->msg), "write %s: %s", path, strerror(errno));
        rmdir(m->dir);
        return -1;
    }
    char pid[32];
    fmt(pid, sizeof(pid), "%ld", (long)getpid());
    fmt(path, sizeof(path), "%s/cgroup.procs", m->dir);
    if (write_file(path, pid) != 0) {
        fmt(m->msg, sizeof(m->msg), "move into %s: %s", m->dir, strerror(errno));
        rmdir(m->dir);
        return -1;
    }
    m->active = 1;
    m->version = v2 ? 2 : 1;
    m->limit = bytes;
    fmt(m->msg, sizeof(m->msg), "capped at %llu bytes in cgroup v%d group %s",
        (unsigned long long)bytes, m->version, m->dir);
    return 0;
}

int
memcap_apply(memcap *m, uint64_t bytes)
{
    memset(m, 0, sizeof(*m));
    if (geteuid() != 0) {
        fmt(m->msg, sizeof(m->msg), "not root: cannot create a memory cgroup");
        return -1;
    }
    char why2[512];
    if (try_version(m, 1, bytes) == 0)
        return 0;
    fmt(why2, sizeof(why2), "%s", m->msg);
    if (try_version(m, 0, bytes) == 0)
        return 0;
    char why1[512];
    fmt(why1, sizeof(why1), "%s", m->msg);
    fmt(m->msg, sizeof(m->msg), "%s; %s", why2, why1);
    return -1;
}

uint64_t
memcap_usage(const memcap *m)
{
    if (!m->active)
        return 0;
    char path[1200];
    fmt(path, sizeof(path), "%s/%s", m->dir,
        m->version == 2 ? "memory.current" : "memory.usage_in_bytes");
    return read_u64_file(path);
}

uint64_t
memcap_peak(const memcap *m)
{
    if (!m->active)
        return 0;
    char path[1200];
    fmt(path, sizeof(path), "%s/%s", m->dir,
        m->version == 2 ? "memory.peak" : "memory.max_usage_in_bytes");
    return read_u64_file(path);
}

void
memcap_release(memcap *m)
{
    if (!m->active)
        return;
    char path[1200], pid[32];
    fmt(pid, sizeof(pid), "%ld", (long)getpid());
    fmt(path, sizeof(path), "%s/cgroup.procs", m->parent);
    if (write_file(path, pid) != 0)
        fprintf(stderr, "warning: could not move back to %s: %s\n", m->parent, strerror(errno));
    if (rmdir(m->dir) != 0)
        fprintf(stderr, "warning: could not remove cgroup %s: %s\n", m->dir, strerror(errno));
    m->active = 0;
}
