/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_sync.c -- `qmdb snapshot` (export the committed state as verifiable chunks and a
 * manifest) and `qmdb restore` (build a new database from them, trusting only a state root).
 * Formats: docs/SYNC.md. Single-threaded.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* ---- snapshot ------------------------------------------------------------------------------ */

int
cmd_snapshot(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    qmdb_db *db = NULL;
    /* A read-only handle: it exports the height it opened while a writer keeps committing. */
    int rc = cli_open(a->pos[0], QMDB_OPEN_RDONLY | cli_read_flags(a), &db);
    if (rc)
        return rc;
    qmdb_snapshot_stat st = QMDB_SNAPSHOT_STAT_INIT;
    rc = qmdb_snapshot_export(db, a->pos[1], a->has_height ? a->height : UINT64_MAX, 0, &st);
    if (rc) {
        rc = cli_db_fail("snapshot", rc, db);
        cli_close(db);
        return rc;
    }
    if (a->json) {
        cli_json_w w;
        json_begin(&w, stdout);
        json_u64(&w, "height", st.height);
        json_hex(&w, "root", st.root, 32);
        json_u64(&w, "chunks", st.chunks);
        json_u64(&w, "bytes", st.bytes);
        json_u64(&w, "live", st.live);
        json_end(&w);
    } else {
        printf("%llu ", (unsigned long long)st.height);
        cli_print_hex(stdout, st.root, 32);
        printf("\n");
        fprintf(stderr, "%s: %llu chunks, %llu bytes, %llu live entries\n", cli_name,
                (unsigned long long)st.chunks, (unsigned long long)st.bytes,
                (unsigned long long)st.live);
    }
    return cli_close(db);
}

/* ---- restore ------------------------------------------------------------------------------- */

static void
restore_report(void *arg, const char *chunk, int rc, const char *why)
{
    const cli_args *a = arg;
    if (rc == QMDB_BAD_PROOF)
        cli_warn("rejected %s: %s", chunk, why);
    else if (rc == QMDB_NOTFOUND && !a->quiet)
        cli_warn("missing %s: %s", chunk, why);
}

int
cmd_restore(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    if (!a->root)
        return cli_error(CLI_USAGE, "needs --root HEX (the trusted state root)");
    const char *r = strrchr(a->root, ' ');
    r = r ? r + 1 : a->root;
    unsigned char root[32];
    if (strlen(r) != 64 || cli_unhex(r, 64, root) != 32)
        return cli_error(CLI_USAGE, "--root must be 64 hex digits");
    qmdb_snapshot_stat st = QMDB_SNAPSHOT_STAT_INIT;
    int rc = qmdb_snapshot_restore(a->pos[0], a->pos[1], root,
                                   a->has_height ? a->height : UINT64_MAX, restore_report, a, &st);
    if (a->json) {
        cli_json_w w;
        json_begin(&w, stdout);
        json_bool(&w, "complete", rc == 0);
        json_u64(&w, "height", st.height);
        json_hex(&w, "root", st.root, 32);
        json_u64(&w, "chunks", st.chunks);
        json_u64(&w, "accepted", st.accepted);
        json_u64(&w, "rejected", st.rejected);
        json_u64(&w, "missing", st.missing);
        if (rc)
            json_str(&w, "error", qmdb_open_error());
        json_end(&w);
    }
    if (rc == QMDB_NOTFOUND) {
        cli_error(CLI_NOTFOUND,
                  "incomplete: %llu of %llu chunks kept, %llu missing; run again "
                  "when they arrived",
                  (unsigned long long)st.accepted, (unsigned long long)st.chunks,
                  (unsigned long long)st.missing);
        return CLI_NOTFOUND;
    }
    if (rc == QMDB_BAD_PROOF) {
        cli_error(CLI_BAD_PROOF,
                  "%s (the chunks that verified are kept; run again with good "
                  "copies)",
                  qmdb_open_error());
        return CLI_BAD_PROOF;
    }
    if (rc)
        return cli_db_fail("restore", rc, NULL);
    if (!a->json) {
        printf("%llu ", (unsigned long long)st.height);
        cli_print_hex(stdout, st.root, 32);
        printf("\n");
    }
    return CLI_OK;
}

/* ---- backup -------------------------------------------------------------------------------- */

int
cmd_backup(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    qmdb_db *db = NULL;
    /* Read-only: a writer may keep committing; the copy holds the height opened. */
    int rc = cli_open(a->pos[0], QMDB_OPEN_RDONLY | cli_read_flags(a), &db);
    if (rc)
        return rc;
    rc = qmdb_backup(db, a->pos[1]);
    if (rc) {
        rc = cli_db_fail("backup", rc, db);
        cli_close(db);
        return rc;
    }
    unsigned char root[32];
    uint64_t h = qmdb_height(db);
    rc = qmdb_root(db, UINT64_MAX, root);
    if (rc) {
        rc = cli_db_fail("root", rc, db);
        cli_close(db);
        return rc;
    }
    if (a->json) {
        cli_json_w w;
        json_begin(&w, stdout);
        json_u64(&w, "height", h);
        json_hex(&w, "root", root, 32);
        json_end(&w);
    } else {
        printf("%llu ", (unsigned long long)h);
        cli_print_hex(stdout, root, 32);
        printf("\n");
    }
    return cli_close(db);
}
