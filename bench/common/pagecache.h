/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pagecache.h -- dropping the Linux page cache before a measured run (main run, `ycsb`).
 * Owns: sync + /proc/sys/vm/drop_caches. Threads: the main thread of qmdb-bench.
 */
#ifndef BENCH_PAGECACHE_H
#define BENCH_PAGECACHE_H

/* Syncs and writes "3" to /proc/sys/vm/drop_caches. With root_only, a process that is not
 * root skips both and returns 0. Returns 1 when the cache was dropped, 0 when the write or
 * close failed (or root_only and not root), -1 when drop_caches could not be opened. */
int bench_drop_page_cache(int root_only);

#endif /* BENCH_PAGECACHE_H */
