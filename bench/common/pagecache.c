/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pagecache.c -- bench_drop_page_cache (see pagecache.h). Threads: the main thread.
 * Owns: bench_drop_page_cache.
 */
#include "pagecache.h"

#include <stdio.h>
#include <unistd.h>

int
bench_drop_page_cache(int root_only)
{
    if (root_only && geteuid() != 0)
        return 0;
    sync();
    FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
    if (!f)
        return -1;
    int ok = fputs("3", f) >= 0;
    return fclose(f) == 0 && ok;
}
