/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_witness.c -- `qmdb witness` (writes the witness of block H, qmdb_witness) and
 * `qmdb verify-block` (re-executes block H from an op script on a witness against a trusted
 * pre-state root and prints the post-state root, qmdb_witness_verify). Both read one block of
 * an op script (FORMAT.md §8: `block H`, `tx`, `put`, `del`, `commit`) with the script line
 * parser. The witness format is docs/PROOFS.md §10; this file reads only its compaction
 * parameters at their documented offsets (13, 21, 25). Single-threaded.
 */
#include "cli.h"
#include "script.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One block of a script: its height and operations (keys and values owned). */
typedef struct sblock {
    uint64_t height;
    qmdb_block_op *ops;
    size_t n, cap;
} sblock;

static void
sblock_free(sblock *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free((void *)b->ops[i].key);
        free((void *)b->ops[i].value);
    }
    free(b->ops);
    memset(b, 0, sizeof(*b));
}

static int
sblock_add(sblock *b, uint32_t tx, const script_cmd *c)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        qmdb_block_op *o = realloc(b->ops, cap * sizeof(*o));
        if (!o)
            return -ENOMEM;
        b->ops = o;
        b->cap = cap;
    }
    qmdb_block_op *op = &b->ops[b->n];
    memset(op, 0, sizeof(*op));
    op->tx = tx;
    op->klen = c->klen;
    void *k = malloc(c->klen);
    void *v = c->kind == SCRIPT_PUT ? malloc(c->vlen ? c->vlen : 1) : NULL;
    if (!k || (c->kind == SCRIPT_PUT && !v)) {
        free(k);
        free(v);
        return -ENOMEM;
    }
    memcpy(k, c->key, c->klen);
    if (v)
        memcpy(v, c->val, c->vlen);
    op->key = k;
    op->value = v;
    op->vlen = v ? c->vlen : 0;
    b->n++;
    return 0;
}

/* Reads block `height` (UINT64_MAX: the first block) of the script at path into b. Returns 0
 * or an exit code after cli_error. */
static int
read_block(const char *path, uint64_t height, sblock *b)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f)
        return cli_error(CLI_USAGE, "cannot open %s: %s", path, strerror(errno));
    script_cmd c;
    memset(&c, 0, sizeof(c));
    char *line = NULL;
    size_t lcap = 0, lineno = 0;
    ssize_t len;
    int rc = 0;
    bool in = false, want = false, done = false, any_op = false;
    uint32_t tx = 0;
    while (!done && (len = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        if (script_parse_line(line, (size_t)len, &c) != 0) {
            rc = cli_error(CLI_USAGE, "%s:%zu: %s", path, lineno, c.err);
            break;
        }
        if (c.kind == SCRIPT_NONE)
            continue;
        if (c.kind == SCRIPT_BLOCK) {
            if (in) {
                rc = cli_error(CLI_USAGE, "%s:%zu: 'block' inside an uncommitted block", path,
                               lineno);
                break;
            }
            in = true;
            want = height == UINT64_MAX || c.height == height;
            tx = 0;
            any_op = false;
            if (want)
                b->height = c.height;
            continue;
        }
        if (!in) {
            rc = cli_error(CLI_USAGE, "%s:%zu: operation outside a block", path, lineno);
            break;
        }
        if (c.kind == SCRIPT_COMMIT) {
            in = false;
            done = want;
        } else if (c.kind == SCRIPT_TX) {
            /* Directly after `block` it names the implicit transaction 0 (FORMAT.md §8). */
            if (any_op)
                tx++;
            any_op = true;
        } else {
            any_op = true;
            if (want && sblock_add(b, tx, &c) != 0) {
                rc = cli_error(CLI_DB, "out of memory");
                break;
            }
        }
    }
    if (!rc && !done)
        rc = height == UINT64_MAX
                 ? cli_error(CLI_USAGE, "%s holds no complete block", path)
                 : cli_error(CLI_USAGE, "%s holds no complete block %" PRIu64, path, height);
    free(line);
    script_cmd_free(&c);
    if (f != stdin)
        fclose(f);
    return rc;
}

int
cmd_witness(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    if (!a->has_height)
        return cli_error(CLI_USAGE, "needs --height H (the block to witness)");
    sblock b;
    memset(&b, 0, sizeof(b));
    int rc = 0;
    if (a->npos > 1 && (rc = read_block(a->pos[1], a->height, &b)) != 0)
        return rc;
    qmdb_db *db;
    rc = cli_open(a->pos[0], cli_read_flags(a), &db);
    if (rc) {
        sblock_free(&b);
        return rc;
    }
    uint8_t *w = NULL;
    size_t len = 0;
    const char *path = a->output;
    rc = qmdb_witness(db, a->height, b.ops, b.n, &w, &len);
    if (rc) {
        rc = cli_db_fail(NULL, rc, db);
        goto out;
    }
    if (!path && isatty(STDOUT_FILENO)) {
        rc = cli_error(CLI_USAGE, "the witness is binary: give -o FILE or redirect stdout");
        goto out;
    }
    if ((rc = cli_write_bytes(path, w, len)) != 0)
        goto out;
    fprintf(path ? stdout : stderr, "witness of block %" PRIu64 ": %zu bytes%s\n", a->height, len,
            a->npos > 1 ? "" : " (from the log: no deletes of absent keys covered)");
out:
    qmdb_proof_free(w);
    sblock_free(&b);
    int crc = cli_close(db);
    return rc ? rc : crc;
}

int
cmd_verify_block(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    if (!a->root)
        return cli_error(CLI_USAGE, "needs --pre-root HEX, WITNESS and SCRIPT");
    const char *r = strrchr(a->root, ' ');
    r = r ? r + 1 : a->root;
    if (r[0] == '0' && (r[1] == 'x' || r[1] == 'X'))
        r += 2;
    unsigned char pre[32], post[32];
    if (strlen(r) != 64 || cli_unhex(r, 64, pre) != 32)
        return cli_error(CLI_USAGE, "--pre-root must be 64 hex digits");
    sblock b;
    memset(&b, 0, sizeof(b));
    int rc = read_block(a->pos[1], a->has_height ? a->height : UINT64_MAX, &b);
    if (rc)
        return rc;
    unsigned char *buf = NULL;
    size_t len = 0;
    bool opened;
    int err = cli_read_all(a->pos[0], &buf, &len, &opened);
    if (err) {
        rc = cli_error(opened && err != EFBIG ? CLI_DB : CLI_USAGE, "cannot %s %s: %s",
                       opened ? "read" : "open", a->pos[0], strerror(err));
        goto out;
    }
    const char *why = NULL;
    int vrc = qmdb_witness_verify(buf, len, pre, b.height, b.ops, b.n, NULL, post, &why);
    if (vrc && vrc != QMDB_BAD_PROOF) {
        rc = cli_error(cli_exit_code(vrc), "%s", why && *why ? why : qmdb_strerror(vrc));
        goto out;
    }
    if (a->json) {
        cli_json_w w;
        json_begin(&w, stdout);
        json_bool(&w, "valid", vrc == 0);
        if (vrc)
            json_str(&w, "reason", why && *why ? why : qmdb_strerror(vrc));
        json_u64(&w, "height", b.height);
        json_u64(&w, "ops", b.n);
        json_hex(&w, "pre_root", pre, 32);
        if (vrc == 0)
            json_hex(&w, "post_root", post, 32);
        json_end(&w);
    } else if (vrc == 0) {
        printf("%" PRIu64 " ", b.height);
        cli_print_hex(stdout, post, 32);
        printf("\n");
    } else {
        printf("invalid: %s\n", why && *why ? why : qmdb_strerror(vrc));
    }
    rc = vrc ? CLI_BAD_PROOF : 0;
out:
    free(buf);
    sblock_free(&b);
    return rc;
}
