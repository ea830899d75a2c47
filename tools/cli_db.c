/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_db.c -- how the `qmdb` tool opens and closes a database and turns the library's
 * return codes into its exit codes (the table in cli.h and man/qmdb.1). Every open goes
 * through cli_open, with the global --indexer and --salvage. Single-threaded.
 */
#include "cli.h"

int
cli_exit_code(int rc)
{
    switch (rc) {
    case 0:
        return CLI_OK;
    case QMDB_NOTFOUND:
    case QMDB_PRUNED:
        return CLI_NOTFOUND;
    case QMDB_INVALID:
    case QMDB_BAD_HEIGHT:
    case QMDB_EXISTS:
    case QMDB_NOTADB:
        return CLI_USAGE;
    case QMDB_BAD_PROOF:
        return CLI_BAD_PROOF;
    case QMDB_BUSY:
        return CLI_BUSY;
    default:
        return CLI_DB;
    }
}

int
cli_db_fail(const char *what, int rc, qmdb_db *db)
{
    const char *detail = db ? qmdb_last_error(db) : qmdb_open_error();
    bool has = detail && *detail;
    return cli_error(cli_exit_code(rc), "%s%s%s%s%s", what ? what : "", what ? ": " : "",
                     qmdb_strerror(rc), has ? ": " : "", has ? detail : "");
}

int
cli_open(const char *dir, uint32_t flags, qmdb_db **db)
{
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = flags | (cli_salvage ? QMDB_OPEN_SALVAGE : 0);
    o.indexer = cli_indexer;
    /* A read-only command with the hybrid indexer resumes it from the checkpoint the last
     * writer left (a verifying read-only open would rebuild it in DRAM instead). */
    if (cli_indexer == QMDB_INDEXER_HYBRID && (flags & QMDB_OPEN_RDONLY))
        o.flags |= QMDB_OPEN_FAST;
    int rc = qmdb_open(dir, &o, db);
    return rc ? cli_db_fail(dir, rc, NULL) : 0;
}

int
cli_close(qmdb_db *db)
{
    int rc = qmdb_close(db);
    if (rc == QMDB_NO_CHECKPOINT) {
        /* Every committed block is durable; only the index checkpoint is missing. */
        cli_warn("the index checkpoint was not written (%s); every committed block is durable, "
                 "and the next open rebuilds the index from the log",
                 *qmdb_open_error() ? qmdb_open_error() : "unknown cause");
        return 0;
    }
    return rc ? cli_db_fail("close", rc, NULL) : 0;
}
