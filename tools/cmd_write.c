/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_write.c -- the `qmdb` subcommands that write: init (create a database), apply (an op
 * script, FORMAT.md §8, parsed line by line by tools/script.c, with a progress line on
 * stderr), and the one-shot put and del, each of which commits the next height. Every commit
 * prints "<height> <root>" on stdout once it is durable. Single-threaded.
 */
#include "cli.h"
#include "script.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int
cmd_init(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    a->create.indexer = cli_indexer;
    int rc = qmdb_create(a->pos[0], &a->create);
    return rc ? cli_db_fail(a->pos[0], rc, NULL) : 0;
}

static void
print_commit(bool json, uint64_t height, const unsigned char root[32])
{
    if (json) {
        cli_json_w w;
        json_begin(&w, stdout);
        json_u64(&w, "height", height);
        json_hex(&w, "root", root, 32);
        json_end(&w);
        return;
    }
    printf("%" PRIu64 " ", height);
    cli_print_hex(stdout, root, 32);
    printf("\n");
    fflush(stdout);
}

/* ---- apply: progress ----------------------------------------------------------------------- */

/* The progress of `qmdb apply` on stderr: blocks and operations per second over the last
 * interval, about once a second, and a summary at the end. On a terminal one line is
 * rewritten in place (\r); elsewhere (--progress into a file) each update is a line. When
 * stdout is the same terminal, the line is wiped before each "<height> <root>" and drawn
 * again after it, so that it stays below them. */
typedef struct progress {
    bool on, tty, share;  /* share: stdout is a terminal too */
    double start, last;   /* seconds (CLOCK_MONOTONIC) */
    uint64_t blocks, ops; /* since the start */
    uint64_t last_blocks, last_ops;
    char text[200]; /* the latest update ("" before the first) */
    int width;      /* of the line on screen (tty) */
} progress;

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
progress_show(progress *p, bool final)
{
    if (p->tty) {
        int n = fprintf(stderr, "\r%s", p->text) - 1;
        if (n < p->width) /* blank out the rest of a longer previous line */
            fprintf(stderr, "%*s", p->width - n, "");
        p->width = n;
        if (final)
            fputc('\n', stderr);
        cli_stderr_line_open = !final;
    } else {
        fprintf(stderr, "%s\n", p->text);
    }
    fflush(stderr);
}

/* Before a line on stdout: wipes the progress line if it shares the terminal. */
static void
progress_hide(progress *p)
{
    if (p->on && p->share && cli_stderr_line_open) {
        fprintf(stderr, "\r%*s\r", p->width, "");
        fflush(stderr);
        p->width = 0;
        cli_stderr_line_open = false;
    }
}

static void
progress_commit(progress *p, uint64_t height, size_t ops)
{
    p->blocks++;
    p->ops += ops;
    if (!p->on)
        return;
    double t = now_s(), dt = t - p->last;
    if (dt < 1.0) {
        if (p->share && p->text[0]) /* drawn again below the root line */
            progress_show(p, false);
        return;
    }
    snprintf(p->text, sizeof(p->text),
             "qmdb apply: height %" PRIu64 ", %" PRIu64 " blocks, %" PRIu64
             " ops; %.0f blocks/s, %.0f ops/s",
             height, p->blocks, p->ops, (double)(p->blocks - p->last_blocks) / dt,
             (double)(p->ops - p->last_ops) / dt);
    progress_show(p, false);
    p->last = t;
    p->last_blocks = p->blocks;
    p->last_ops = p->ops;
}

static void
progress_done(progress *p, bool ok)
{
    if (!p->on)
        return;
    double dt = now_s() - p->start;
    snprintf(p->text, sizeof(p->text),
             "qmdb apply: %s: %" PRIu64 " blocks, %" PRIu64
             " ops in %.1f s; %.0f blocks/s, %.0f ops/s",
             ok ? "done" : "stopped", p->blocks, p->ops, dt, dt > 0 ? (double)p->blocks / dt : 0.0,
             dt > 0 ? (double)p->ops / dt : 0.0);
    progress_show(p, true);
}

/* ---- apply: the script ---------------------------------------------------------------------- */

/* Script state (FORMAT.md §8). Lines are parsed by script_parse_line (tools/script.c). */
typedef struct script {
    const char *name;
    unsigned long line;
    qmdb_db *db;
    qmdb_batch *batch;
    bool in_block;
    uint64_t height;
    script_cmd cmd;
    progress prog;
} script;

static int
script_error(script *sc, int code, const char *msg, const char *tok)
{
    cli_error(code, "%s:%lu: %s%s%s%s", sc->name, sc->line, msg, tok ? " '" : "", tok ? tok : "",
              tok ? "'" : "");
    if (sc->in_block)
        cli_error(code, "block %" PRIu64 " was not committed", sc->height);
    return code;
}

static int
script_line(script *sc, const char *line, size_t len)
{
    script_cmd *c = &sc->cmd;
    if (script_parse_line(line, len, c) != 0)
        return script_error(sc, CLI_USAGE, c->err, NULL);
    if (c->kind == SCRIPT_NONE)
        return 0;
    if (c->kind == SCRIPT_BLOCK) {
        if (sc->in_block)
            return script_error(sc, CLI_USAGE, "'block' inside an uncommitted block", NULL);
        uint64_t want = qmdb_height(sc->db) + 1;
        if (c->height != want)
            return cli_error(CLI_USAGE,
                             "%s:%lu: block height %" PRIu64
                             " is not last committed height + 1 (%" PRIu64 ")",
                             sc->name, sc->line, c->height, want);
        sc->in_block = true;
        sc->height = c->height;
        qmdb_batch_reset(sc->batch);
        return 0;
    }
    if (!sc->in_block) {
        static const char *const names[] = {"", "block", "tx", "put", "del", "commit"};
        return script_error(sc, CLI_USAGE, "operation outside a block:", names[c->kind]);
    }
    int rc = 0;
    switch (c->kind) {
    case SCRIPT_TX:
        rc = qmdb_batch_tx(sc->batch);
        break;
    case SCRIPT_PUT:
        rc = qmdb_batch_put(sc->batch, c->key, c->klen, c->val, c->vlen);
        break;
    case SCRIPT_DEL:
        rc = qmdb_batch_del(sc->batch, c->key, c->klen);
        break;
    case SCRIPT_COMMIT: {
        unsigned char root[32];
        size_t ops = qmdb_batch_ops(sc->batch);
        rc = qmdb_commit(sc->db, sc->height, sc->batch, root);
        if (rc)
            return cli_db_fail("commit", rc, sc->db);
        sc->in_block = false;
        progress_hide(&sc->prog);
        print_commit(false, sc->height, root);
        progress_commit(&sc->prog, sc->height, ops);
        return 0;
    }
    default:
        break;
    }
    return rc ? script_error(sc, CLI_USAGE, qmdb_strerror(rc), NULL) : 0;
}

int
cmd_apply(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    const char *dir = a->pos[0], *path = a->pos[1];
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!in)
        return cli_error(CLI_USAGE, "cannot open %s: %s", path, strerror(errno));
    script sc = {0};
    sc.name = path;
    sc.prog.on = !a->quiet && (a->progress || isatty(STDERR_FILENO));
    sc.prog.tty = isatty(STDERR_FILENO);
    sc.prog.share = sc.prog.tty && isatty(STDOUT_FILENO);
    int rc = cli_open(dir, 0, &sc.db);
    if (rc) {
        if (in != stdin)
            fclose(in);
        return rc;
    }
    sc.prog.start = sc.prog.last = now_s();
    if (qmdb_batch_new(&sc.batch) != 0) {
        rc = cli_error(CLI_DB, "out of memory");
        goto out;
    }
    char *line = NULL;
    size_t cap = 0;
    for (;;) {
        errno = 0;
        ssize_t n = getline(&line, &cap, in);
        sc.line++;
        if (n < 0) {
            /* -1 is the end of the script only with the EOF flag set and no error: a read
             * error (EIO, EISDIR) or a line too long for memory (ENOMEM) stops here. */
            int err = errno;
            if (feof(in) && !ferror(in))
                break;
            char msg[160];
            snprintf(msg, sizeof(msg), "cannot read the script: %s",
                     err ? strerror(err) : "read error");
            rc = script_error(&sc, CLI_DB, msg, NULL);
            break;
        }
        rc = script_line(&sc, line, (size_t)n);
        if (rc)
            break;
    }
    free(line);
    if (!rc && sc.in_block)
        rc = script_error(&sc, CLI_USAGE, "end of script inside a block (missing 'commit')", NULL);
out:
    progress_done(&sc.prog, rc == 0);
    if (in != stdin)
        fclose(in);
    qmdb_batch_free(sc.batch);
    script_cmd_free(&sc.cmd);
    int crc = cli_close(sc.db);
    return rc ? rc : crc;
}

/* ---- put and del: one operation, one block ---------------------------------------------- */

static int
one_shot(cli_args *a, bool put)
{
    size_t klen, vlen = 0;
    unsigned char *key = cli_bytes("KEY", a->pos[1], a->key_str, QMDB_MAX_KEY_LEN, &klen);
    unsigned char *val = NULL;
    if (!key)
        return CLI_USAGE;
    if (put && !(val = cli_bytes("VALUE", a->pos[2], a->value_str, QMDB_MAX_VALUE_LEN, &vlen))) {
        free(key);
        return CLI_USAGE;
    }
    qmdb_db *db = NULL;
    qmdb_batch *b = NULL;
    int rc = cli_open(a->pos[0], 0, &db);
    if (rc)
        goto out;
    if (!put) {
        /* Deleting an absent key would commit a block that changes nothing but the height:
         * say so instead. Values are never empty, so a present key is BUFFER_TOO_SMALL. */
        size_t have;
        rc = qmdb_get(db, key, klen, NULL, 0, &have);
        if (rc == QMDB_NOTFOUND) {
            rc = cli_error(CLI_NOTFOUND, "not found (nothing committed)");
            goto out;
        }
        if (rc && rc != QMDB_BUFFER_TOO_SMALL) {
            rc = cli_db_fail("get", rc, db);
            goto out;
        }
    }
    if (qmdb_batch_new(&b) != 0) {
        rc = cli_error(CLI_DB, "out of memory");
        goto out;
    }
    rc = put ? qmdb_batch_put(b, key, klen, val, vlen) : qmdb_batch_del(b, key, klen);
    if (rc) {
        rc = cli_error(cli_exit_code(rc), "%s", qmdb_strerror(rc));
        goto out;
    }
    unsigned char root[32];
    uint64_t h = qmdb_height(db) + 1;
    rc = qmdb_commit(db, h, b, root);
    if (rc)
        rc = cli_db_fail("commit", rc, db);
    else
        print_commit(a->json, h, root);
out:
    qmdb_batch_free(b);
    free(key);
    free(val);
    if (db) {
        int crc = cli_close(db);
        rc = rc ? rc : crc;
    }
    return rc;
}

int
cmd_put(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    return one_shot(a, true);
}

int
cmd_del(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    return one_shot(a, false);
}

/* ---- rollback ------------------------------------------------------------------------------- */

int
cmd_rollback(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    uint64_t h;
    if (!script_parse_u64(a->pos[1], strlen(a->pos[1]), &h))
        return cli_error(CLI_USAGE, "HEIGHT '%s' is not a number (digits only, below 2^64)",
                         a->pos[1]);
    qmdb_db *db = NULL;
    int rc = cli_open(a->pos[0], 0, &db);
    if (rc)
        return rc;
    uint64_t from = qmdb_height(db);
    rc = qmdb_rollback(db, h);
    if (rc) {
        rc = cli_db_fail("rollback", rc, db);
    } else {
        unsigned char root[32];
        rc = qmdb_root(db, UINT64_MAX, root);
        if (rc) {
            rc = cli_db_fail("root", rc, db);
        } else if (a->json) {
            cli_json_w w;
            json_begin(&w, stdout);
            json_u64(&w, "height", h);
            json_hex(&w, "root", root, 32);
            json_u64(&w, "from_height", from);
            json_u64(&w, "blocks_undone", from - h);
            json_end(&w);
        } else {
            print_commit(false, h, root);
        }
    }
    int crc = cli_close(db);
    return rc ? rc : crc;
}
