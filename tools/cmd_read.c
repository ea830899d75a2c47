/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_read.c -- the `qmdb` subcommands that read a database and change no file: root, get,
 * stat and check (the deep offline check, qmdb_check). Each prints plain text, or with
 * --json one JSON object (schemas in man/qmdb.1). Single-threaded.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int
cmd_root(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    qmdb_db *db;
    int rc = cli_open(a->pos[0], cli_read_flags(a), &db);
    if (rc)
        return rc;
    unsigned char root[32];
    uint64_t h = a->has_height ? a->height : qmdb_height(db);
    rc = qmdb_root(db, h, root);
    if (rc) {
        rc = cli_db_fail(NULL, rc, db);
    } else if (a->json) {
        cli_json_w w;
        json_begin(&w, stdout);
        json_u64(&w, "height", h);
        json_hex(&w, "root", root, 32);
        json_end(&w);
    } else {
        printf("%" PRIu64 " ", h);
        cli_print_hex(stdout, root, 32);
        printf("\n");
    }
    int crc = cli_close(db);
    return rc ? rc : crc;
}

int
cmd_get(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    size_t klen;
    unsigned char *key = cli_bytes("KEY", a->pos[1], a->key_str, QMDB_MAX_KEY_LEN, &klen);
    if (!key)
        return CLI_USAGE;
    qmdb_db *db;
    int rc = cli_open(a->pos[0], cli_read_flags(a), &db);
    if (rc) {
        free(key);
        return rc;
    }
    size_t vlen = 0;
    unsigned char small[256];
    unsigned char *val = small;
    rc = qmdb_get(db, key, klen, small, sizeof(small), &vlen);
    if (rc == QMDB_BUFFER_TOO_SMALL) {
        val = malloc(vlen);
        rc = val ? qmdb_get(db, key, klen, val, vlen, &vlen) : -ENOMEM;
    }
    if (rc == QMDB_NOTFOUND) {
        rc = cli_error(CLI_NOTFOUND, "not found at height %" PRIu64, qmdb_height(db));
    } else if (rc) {
        rc = cli_db_fail(NULL, rc, db);
    } else if (a->json) {
        cli_json_w w;
        json_begin(&w, stdout);
        json_u64(&w, "height", qmdb_height(db));
        json_hex(&w, "key", key, klen);
        json_hex(&w, "value", val, vlen);
        json_u64(&w, "length", vlen);
        json_end(&w);
    } else {
        if (a->value_str)
            fwrite(val, 1, vlen, stdout);
        else
            cli_print_hex(stdout, val, vlen);
        printf("\n");
    }
    if (val != small)
        free(val);
    free(key);
    int crc = cli_close(db);
    return rc ? rc : crc;
}

/* bytes / live with two decimals, or "n/a" when there is no live entry. */
static void
per_entry(char out[32], uint64_t bytes, uint64_t live)
{
    if (live == 0)
        snprintf(out, 32, "n/a");
    else
        snprintf(out, 32, "%.2f", (double)bytes / (double)live);
}

/* As per_entry, a JSON number or null. */
static void
json_per_entry(cli_json_w *w, const char *key, uint64_t bytes, uint64_t live)
{
    if (live == 0)
        json_null(w, key);
    else
        json_double(w, key, (double)bytes / (double)live);
}

static void
stat_json(const qmdb_stats *st)
{
    uint64_t live = st->live_entries;
    cli_json_w w;
    json_begin(&w, stdout);
    json_u64(&w, "height", st->height);
    json_u64(&w, "live_entries", live);
    json_u64(&w, "sentries", st->live_with_sentries - live);
    json_u64(&w, "total_entries", st->total_entries);
    json_u64(&w, "unpruned_entries", st->unpruned_entries);
    json_u64(&w, "pruned_twigs", st->pruned_twigs);
    json_str(&w, "indexer", st->indexer == QMDB_INDEXER_HYBRID ? "hybrid" : "memory");
    json_u64(&w, "index_resumed_shards", st->index_resumed_shards);
    json_u64(&w, "index_dram_bytes", st->index_dram_bytes);
    json_u64(&w, "index_ssd_bytes", st->index_ssd_bytes);
    json_u64(&w, "tree_dram_bytes", st->tree_dram_bytes);
    json_u64(&w, "cache_dram_bytes", st->cache_dram_bytes);
    json_u64(&w, "ssd_bytes", st->ssd_bytes);
    json_u64(&w, "entry_file_bytes", st->entry_file_bytes);
    json_u64(&w, "twig_file_bytes", st->twig_file_bytes);
    json_object(&w, "per_live_entry");
    json_per_entry(&w, "dram_bytes", st->index_dram_bytes + st->tree_dram_bytes, live);
    json_per_entry(&w, "index_dram_bytes", st->index_dram_bytes, live);
    json_per_entry(&w, "tree_dram_bytes", st->tree_dram_bytes, live);
    json_per_entry(&w, "ssd_bytes", st->ssd_bytes, live);
    json_per_entry(&w, "entry_file_bytes", st->entry_file_bytes, live);
    json_per_entry(&w, "twig_file_bytes", st->twig_file_bytes, live);
    json_per_entry(&w, "index_ssd_bytes", st->index_ssd_bytes, live);
    json_object_end(&w);
    json_object(&w, "parameters");
    json_u64(&w, "compact_thres", st->compact_thres);
    json_u64(&w, "utilization_ratio", st->utilization_ratio);
    json_u64(&w, "utilization_div", st->utilization_div);
    json_u64(&w, "history_blocks", st->history_blocks);
    json_object_end(&w);
    json_str(&w, "batched_reads", st->io_uring ? "io_uring" : "pread");
    json_end(&w);
}

static void
stat_text(const qmdb_stats *st)
{
    /* Per-entry figures: "n/a" without live entries (the sentries' fixed cost over zero). */
    uint64_t live = st->live_entries;
    char dram[32], ix_dram[32], tree[32], ix_ssd[32], ssd[32], efiles[32], tfiles[32];
    per_entry(dram, st->index_dram_bytes + st->tree_dram_bytes, live);
    per_entry(ix_dram, st->index_dram_bytes, live);
    per_entry(tree, st->tree_dram_bytes, live);
    per_entry(ix_ssd, st->index_ssd_bytes, live);
    per_entry(ssd, st->ssd_bytes, live);
    per_entry(efiles, st->entry_file_bytes, live);
    per_entry(tfiles, st->twig_file_bytes, live);
    printf("height: %" PRIu64 "\n", st->height);
    printf("live entries: %" PRIu64 " (plus %" PRIu64 " sentries)\n", live,
           st->live_with_sentries - live);
    printf("total entries: %" PRIu64 " (unpruned: %" PRIu64 ", pruned twigs: %" PRIu64 ")\n",
           st->total_entries, st->unpruned_entries, st->pruned_twigs);
    printf("dram bytes per live entry: %s (indexer %s, tree %s; total %" PRIu64 " bytes)\n", dram,
           ix_dram, tree, st->index_dram_bytes + st->tree_dram_bytes);
    printf("dram of per-block buffers: %" PRIu64 " bytes (warm caches, pre-images)\n",
           st->cache_dram_bytes);
    if (st->indexer == QMDB_INDEXER_HYBRID)
        printf("indexer: hybrid; dram %s and ssd %s bytes per live entry (run files %" PRIu64
               " bytes); resumed from its checkpoint in %u of 16 shards\n",
               ix_dram, ix_ssd, st->index_ssd_bytes, st->index_resumed_shards);
    else
        printf("indexer: memory; dram %s bytes per live entry; loaded from its checkpoint in %u "
               "of 16 shards%s\n",
               ix_dram, st->index_resumed_shards,
               cli_indexer == QMDB_INDEXER_HYBRID ? " (hybrid asked for, but a read-only open "
                                                    "without a valid checkpoint indexes in DRAM)"
                                                  : "");
    printf("ssd bytes per live entry: %s (entry files %s, twig files %s, index runs %s; "
           "total %" PRIu64 " bytes)\n",
           ssd, efiles, tfiles, ix_ssd, st->ssd_bytes);
    printf("parameters: compact_thres %" PRIu64 ", utilization %u/%u, history_blocks %" PRIu64 "\n",
           st->compact_thres, st->utilization_ratio, st->utilization_div, st->history_blocks);
    printf("batched reads: %s\n", st->io_uring ? "io_uring"
                                               : "pread thread pool (io_uring unavailable here, "
                                                 "or QMDB_NO_URING=1)");
}

int
cmd_stat(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    qmdb_db *db;
    int rc = cli_open(a->pos[0], cli_read_flags(a), &db);
    if (rc)
        return rc;
    qmdb_stats st = QMDB_STATS_INIT;
    rc = qmdb_stat(db, &st);
    if (rc)
        rc = cli_db_fail(NULL, rc, db);
    else if (a->json)
        stat_json(&st);
    else
        stat_text(&st);
    int crc = cli_close(db);
    return rc ? rc : crc;
}

/* ---- check ------------------------------------------------------------------------------ */

/* The problems qmdb_check reports: printed as they come, or kept for the JSON object. */
typedef struct problems {
    bool json;
    char **msg;
    size_t n, cap;
} problems;

static void
check_problem(void *arg, const char *problem)
{
    problems *p = arg;
    if (!p->json) {
        printf("problem: %s\n", problem);
        return;
    }
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        char **nm = realloc(p->msg, cap * sizeof(*nm));
        if (!nm)
            return; /* the count from qmdb_check stays right */
        p->msg = nm;
        p->cap = cap;
    }
    char *copy = strdup(problem);
    if (copy)
        p->msg[p->n++] = copy;
}

/* qmdb check DIR: the deep check of check.c; "ok: ..." and exit 0 only if nothing is wrong,
 * else each problem, "FAILED: ..." and exit 3. */
int
cmd_check(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    const char *dir = a->pos[0];
    problems p = {.json = a->json};
    uint64_t count = 0;
    qmdb_db *db = NULL;
    qmdb_stats st = QMDB_STATS_INIT;
    unsigned char root[32];
    int rc = qmdb_check(dir, check_problem, &p, &count);
    bool healthy = rc == 0;
    if (rc && rc != QMDB_CORRUPT) {
        rc = cli_db_fail(dir, rc, NULL);
        goto out;
    }
    if (healthy) {
        if ((rc = cli_open(dir, QMDB_OPEN_RDONLY, &db)) != 0)
            goto out;
        rc = qmdb_stat(db, &st);
        if (!rc)
            rc = qmdb_root(db, UINT64_MAX, root);
        if (rc) {
            rc = cli_db_fail(NULL, rc, db);
            goto out;
        }
    }
    if (a->json) {
        cli_json_w w;
        json_begin(&w, stdout);
        json_bool(&w, "ok", healthy);
        json_u64(&w, "problem_count", count);
        json_array(&w, "problems");
        for (size_t i = 0; i < p.n; i++)
            json_str(&w, NULL, p.msg[i]);
        json_array_end(&w);
        if (healthy) {
            json_u64(&w, "height", st.height);
            json_u64(&w, "entries_verified", st.unpruned_entries);
            json_hex(&w, "root", root, 32);
        }
        json_end(&w);
    } else if (healthy) {
        printf("ok: height %" PRIu64 ", %" PRIu64 " entries verified, root ", st.height,
               st.unpruned_entries);
        cli_print_hex(stdout, root, 32);
        printf("\n");
    } else {
        printf("FAILED: %" PRIu64 " problem%s in %s\n", count, count == 1 ? "" : "s", dir);
    }
    if (!healthy)
        rc = cli_error(CLI_DB, "%" PRIu64 " problem%s in %s", count, count == 1 ? "" : "s", dir);
out:
    for (size_t i = 0; i < p.n; i++)
        free(p.msg[i]);
    free(p.msg);
    if (db) {
        int crc = cli_close(db);
        rc = rc ? rc : crc;
    }
    return rc;
}
