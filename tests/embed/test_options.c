/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_options.c -- the embedding surface of qmdb.h: options the caller set are never replaced
 * by the environment, the environment decides the fields left at their defaults, library
 * threads carry their names, output structs are size-checked, the version number matches the
 * string.
 */
#include <dirent.h>
#include <qmdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                           \
        }                                                                         \
    } while (0)

static qmdb_stats
stats_of(qmdb_db *db)
{
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK(qmdb_stat(db, &st) == 0);
    return st;
}

/* 1 if a thread of this process has a name starting with prefix. */
static int
thread_named(const char *prefix)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int found = 0;
    while (d && (e = readdir(d)) && !found) {
        char path[300], name[64] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fgets(name, sizeof(name), f))
            found = strncmp(name, prefix, strlen(prefix)) == 0;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return found;
}

int
main(int argc, char **argv)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", argc > 1 ? argv[1] : "db_options");
    CHECK(qmdb_create(dir, NULL) == 0);

    /* Version: number and string agree, and the header matches the library. */
    int maj, min, pat;
    CHECK(sscanf(qmdb_version(), "%d.%d.%d", &maj, &min, &pat) == 3);
    CHECK(qmdb_version_number() == maj * 10000 + min * 100 + pat);
    CHECK(qmdb_version_number() == QMDB_VERSION_NUMBER);

    /* Defaults with no environment: pipeline on, the memory indexer, worker threads. */
    unsetenv("QMDB_PIPELINE");
    unsetenv("QMDB_NO_URING");
    unsetenv("QMDB_INDEXER");
    unsetenv("QMDB_THREADS");
    qmdb_db *db;
    CHECK(qmdb_open(dir, NULL, &db) == 0);
    qmdb_stats st = stats_of(db);
    CHECK(st.pipeline == 1);
    CHECK(st.indexer == QMDB_INDEXER_MEMORY);
    unsigned uring_possible = st.io_uring;
    CHECK(thread_named("qmdb-flush"));
    CHECK(thread_named("qmdb-pool-0") || !thread_named("qmdb-pool-")); /* 1-CPU machines */
    /* Output structs: struct_size is checked and reported. */
    qmdb_stats bad = {0};
    CHECK(qmdb_stat(db, &bad) == QMDB_INVALID);
    CHECK(st.struct_size == sizeof(qmdb_stats));
    /* A caller built before page_cache_reads: its fields filled, not one byte past them. */
    qmdb_stats old;
    memset(&old, 0xA5, sizeof(old));
    old.struct_size = offsetof(qmdb_stats, page_cache_reads);
    CHECK(qmdb_stat(db, &old) == 0);
    CHECK(old.struct_size == offsetof(qmdb_stats, page_cache_reads));
    CHECK(old.indexer == QMDB_INDEXER_MEMORY && old.pipeline == 1);
    const unsigned char *tail = (const unsigned char *)&old.page_cache_reads;
    CHECK(tail[0] == 0xA5 && tail[sizeof(old.page_cache_reads) - 1] == 0xA5);
    old.struct_size = offsetof(qmdb_stats, page_cache_reads) - 1;
    CHECK(qmdb_stat(db, &old) == QMDB_INVALID);
    CHECK(qmdb_close(db) == 0);

    /* The environment decides the fields left at their defaults. */
    setenv("QMDB_PIPELINE", "0", 1);
    setenv("QMDB_NO_URING", "1", 1);
    setenv("QMDB_INDEXER", "hybrid", 1);
    CHECK(qmdb_open(dir, NULL, &db) == 0);
    st = stats_of(db);
    CHECK(st.pipeline == 0);
    CHECK(st.io_uring == 0);
    CHECK(st.indexer == QMDB_INDEXER_HYBRID);
    CHECK(qmdb_close(db) == 0);

    /* ... but never replace a field the caller set. */
    qmdb_options o;
    qmdb_options_init(&o);
    CHECK(o.struct_size == sizeof(qmdb_options));
    CHECK(o.indexer == QMDB_INDEXER_AUTO && o.pipeline == QMDB_AUTO && o.io_uring == QMDB_AUTO);
    o.pipeline = 1;
    o.io_uring = 1;
    o.indexer = QMDB_INDEXER_MEMORY;
    CHECK(qmdb_open(dir, &o, &db) == 0);
    st = stats_of(db);
    CHECK(st.pipeline == 1);
    CHECK(st.io_uring == uring_possible);
    CHECK(st.indexer == QMDB_INDEXER_MEMORY);
    CHECK(qmdb_close(db) == 0);

    /* Explicitly off, with the environment unset. */
    unsetenv("QMDB_PIPELINE");
    unsetenv("QMDB_NO_URING");
    unsetenv("QMDB_INDEXER");
    qmdb_options_init(&o);
    o.pipeline = 0;
    o.io_uring = 0;
    o.worker_threads = 0;
    CHECK(qmdb_open(dir, &o, &db) == 0);
    st = stats_of(db);
    CHECK(st.pipeline == 0 && st.io_uring == 0);
    CHECK(!thread_named("qmdb-flush"));
    CHECK(qmdb_close(db) == 0);

    /* Bad values and contradictions are refused. */
    qmdb_options_init(&o);
    o.worker_threads = 16;
    CHECK(qmdb_open(dir, &o, &db) == QMDB_INVALID && db == NULL);
    qmdb_options_init(&o);
    o.pipeline = 1;
    o.flags = QMDB_OPEN_NO_PIPELINE;
    CHECK(qmdb_open(dir, &o, &db) == QMDB_INVALID);
    qmdb_options_init(&o);
    o.io_uring = 2;
    CHECK(qmdb_open(dir, &o, &db) == QMDB_INVALID);

    qmdb_proof_info info = {0};
    CHECK(qmdb_proof_info_get((const uint8_t *)"x", 1, &info) == QMDB_INVALID);

    if (failures)
        fprintf(stderr, "test_options: %d failure(s)\n", failures);
    else
        printf("test_options: ok\n");
    return failures != 0;
}
