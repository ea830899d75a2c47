/* SPDX-License-Identifier: Apache-2.0 */
/*
 * registry.c -- the engine registry (engine_lookup), the engine-list parser and the
 * process-wide globals of qmdb-bench. See registry.h.
 * Threads: the main thread; bench_stop is also set from signal handlers.
 * Owns: the registry table of engine names and the three globals.
 */
#include "registry.h"

#include "engines.h"

#include <stdio.h>
#include <string.h>

volatile sig_atomic_t bench_stop;
char bench_disk[64];
memcap bench_memcap;

int
engine_lookup(const char *name, bench_engine *e)
{
    memset(e, 0, sizeof(*e));
    if (strcmp(name, "qmdb") == 0 || strcmp(name, "qmdb-seq") == 0 ||
        strcmp(name, "qmdb-hybrid") == 0) {
#ifdef QMDB_BENCH_HAVE_QMDB
        engine_qmdb_init(e);
        /* seq: pipeline off; hybrid: the hybrid indexer */
        e->name = strcmp(name, "qmdb") == 0       ? "qmdb"
                  : strcmp(name, "qmdb-seq") == 0 ? "qmdb-seq"
                                                  : "qmdb-hybrid";
        return 0;
#else
        snprintf(e->err, sizeof(e->err),
                 "engine qmdb: this qmdb-bench was built without "
                 "the qmdb library (qmdb_lib target missing)");
        return -2;
#endif
    }
    if (strcmp(name, "rocksdb") == 0 || strcmp(name, "rocksdb-default") == 0 ||
        strcmp(name, "rocksdb-blob") == 0) {
        engine_rocksdb_init(e, strcmp(name, "rocksdb") == 0        ? 1
                               : strcmp(name, "rocksdb-blob") == 0 ? 2
                                                                   : 0);
        return 0;
    }
    if (strcmp(name, "lmdb") == 0) {
        engine_lmdb_init(e);
        return 0;
    }
    if (strcmp(name, "mpt") == 0) { /* Merkle Patricia trie on RocksDB (mpt/mpt.c) */
        engine_mpt_init(e);
        return 0;
    }
    snprintf(e->err, sizeof(e->err), "unknown engine '%s'", name);
    return -1;
}

int
bench_parse_engine_list(const char *list, char (*names)[32], int *n, const char *who)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", list);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        bench_engine e;
        int rc = engine_lookup(tok, &e);
        if (rc == -1) {
            fprintf(stderr,
                    "%s: %s (choose qmdb, rocksdb, rocksdb-default, rocksdb-blob, lmdb, mpt)\n",
                    who, e.err);
            return -1;
        }
        if (*n == BENCH_MAX_ENGINES) {
            fprintf(stderr, "%s: too many engines\n", who);
            return -1;
        }
        for (int i = 0; i < *n; i++)
            if (strcmp(names[i], tok) == 0) {
                fprintf(stderr, "%s: engine %s given twice\n", who, tok);
                return -1;
            }
        snprintf(names[(*n)++], 32, "%s", tok);
    }
    return *n ? 0 : -1;
}

int
bench_is_qmdb(const char *name)
{
    return strncmp(name, "qmdb", 4) == 0;
}

int
bench_fastest_rival(const char *const *names, const double *rates, int n, int s)
{
    int q = 0, best = -1;
    for (int i = 0; i < n; i++)
        q |= bench_is_qmdb(names[i]);
    for (int i = 0; i < n; i++)
        if (i != s && !(q && bench_is_qmdb(names[i])) && rates[i] > 0 &&
            (best < 0 || rates[i] > rates[best]))
            best = i;
    return best;
}
