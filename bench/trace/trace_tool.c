/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_tool.c -- the `qmdb-trace` command: gen (tracegen.c), info, import (text or JSON lines
 * -> QTRC), export-text (QTRC -> text) and export-ops (init bundle + trace -> a qmdb op script
 * with exactly the block/tx/put/del sequence that `qmdb-bench replay` sends to qmdb).
 * See docs/TRACE.md. Threads: single-threaded.
 * Owns: the qmdb-trace command line and the import/export formats.
 */
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char HEX[] = "0123456789abcdef";

static void
put_hex(FILE *f, const uint8_t *p, size_t n)
{
    char b[512];
    while (n) {
        size_t k = n > 256 ? 256 : n;
        for (size_t i = 0; i < k; i++) {
            b[2 * i] = HEX[p[i] >> 4];
            b[2 * i + 1] = HEX[p[i] & 15];
        }
        fwrite(b, 1, 2 * k, f);
        p += k;
        n -= k;
    }
}

static int
hexv(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Parses hex (optional 0x; odd length is left-padded with a zero nibble) into out (cap).
 * Returns the byte count, or -1. */
static long
parse_hex(const char *s, size_t n, uint8_t *out, size_t cap)
{
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2, n -= 2;
    size_t bytes = (n + 1) / 2;
    if (bytes > cap)
        return -1;
    size_t i = 0, o = 0;
    if (n % 2) {
        int v = hexv(s[0]);
        if (v < 0)
            return -1;
        out[o++] = (uint8_t)v;
        i = 1;
    }
    for (; i < n; i += 2) {
        int a = hexv(s[i]), b = hexv(s[i + 1]);
        if (a < 0 || b < 0)
            return -1;
        out[o++] = (uint8_t)(a << 4 | b);
    }
    return (long)o;
}

static const char *const OPNAME[] = {"r", "w", "c", "d"};

/* ---- info ------------------------------------------------------------------------------- */

static int
cmd_info(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: qmdb-trace info TRACE\n");
        return 2;
    }
    char err[600];
    trace_reader *r;
    if (tr_open(&r, argv[1], err, sizeof(err))) {
        fprintf(stderr, "qmdb-trace: %s\n", err);
        return 1;
    }
    printf("# header\n%s", tr_header(r));
    trace_block b;
    memset(&b, 0, sizeof(b));
    trace_stats s;
    memset(&s, 0, sizeof(s));
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    uint64_t max_tx = 0, min_tx = UINT64_MAX, max_ops = 0;
    int rc;
    while ((rc = tr_next(r, &b)) == 1) {
        if (!s.blocks)
            s.first_block = b.number;
        s.last_block = b.number;
        s.blocks++;
        s.txs += b.n_tx;
        s.ops += b.n_ops;
        max_tx = b.n_tx > max_tx ? b.n_tx : max_tx;
        min_tx = b.n_tx < min_tx ? b.n_tx : min_tx;
        max_ops = b.n_ops > max_ops ? b.n_ops : max_ops;
        uint8_t h[16];
        memcpy(h, &b.number, 8);
        memcpy(h + 8, &b.n_tx, 4);
        memcpy(h + 12, &b.n_ops, 4);
        EVP_DigestUpdate(md, h, sizeof(h));
        for (uint32_t t = 0; t < b.n_tx; t++) {
            uint32_t cnt = b.tx_start[t + 1] - b.tx_start[t];
            EVP_DigestUpdate(md, &cnt, 4);
            for (uint32_t k = b.tx_start[t]; k < b.tx_start[t + 1]; k++) {
                const trace_op *op = &b.ops[k];
                uint8_t oh[6] = {op->type, op->klen};
                memcpy(oh + 2, &op->vlen, 4);
                EVP_DigestUpdate(md, oh, 6);
                EVP_DigestUpdate(md, op->key, op->klen);
                if (op->vlen)
                    EVP_DigestUpdate(md, op->val, op->vlen);
                switch (op->type) {
                case TOP_READ:
                    s.reads++;
                    break;
                case TOP_WRITE:
                    s.writes++;
                    break;
                case TOP_CREATE:
                    s.creates++;
                    break;
                default:
                    s.deletes++;
                    break;
                }
                if (op->klen == TRACE_ADDR_LEN)
                    s.account_ops++;
                else
                    s.storage_ops++;
                if (op->type == TOP_WRITE || op->type == TOP_CREATE) {
                    s.value_bytes += op->vlen;
                    s.empty_writes += op->vlen == 0;
                }
            }
        }
    }
    uint8_t dg[32];
    unsigned dl = 0;
    EVP_DigestFinal_ex(md, dg, &dl);
    EVP_MD_CTX_free(md);
    if (rc < 0) {
        fprintf(stderr, "qmdb-trace: %s\n", tr_error(r));
        tr_close(r);
        trace_block_free(&b);
        return 1;
    }
    const trace_stats *e = tr_end_stats(r);
    int same = memcmp(e, &s, sizeof(s)) == 0;
    char txt[2048];
    size_t len = 0;
    trace_stats_text(&s, txt, sizeof(txt), &len);
    printf("# decoded (checksums verified)\n%s", txt);
    printf("min_txs_per_block=%" PRIu64 "\nmax_txs_per_block=%" PRIu64
           "\nmax_ops_per_block=%" PRIu64 "\nbytes=%" PRIu64 "\nbytes_per_op=%.2f\n",
           s.blocks ? min_tx : 0, max_tx, max_ops, tr_total_bytes(r),
           s.ops ? (double)tr_total_bytes(r) / (double)s.ops : 0.0);
    printf("content_sha256=");
    put_hex(stdout, dg, 32);
    printf("\nend_records=%s\n", same ? "match" : "MISMATCH");
    tr_close(r);
    trace_block_free(&b);
    return same ? 0 : 1;
}

/* ---- export-text ------------------------------------------------------------------------ */

static int
cmd_export_text(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: qmdb-trace export-text TRACE OUT|-\n");
        return 2;
    }
    char err[600];
    trace_reader *r;
    if (tr_open(&r, argv[1], err, sizeof(err))) {
        fprintf(stderr, "qmdb-trace: %s\n", err);
        return 1;
    }
    FILE *f = strcmp(argv[2], "-") == 0 ? stdout : fopen(argv[2], "w");
    if (!f) {
        fprintf(stderr, "qmdb-trace: cannot create %s: %s\n", argv[2], strerror(errno));
        tr_close(r);
        return 1;
    }
    trace_block b;
    memset(&b, 0, sizeof(b));
    int rc;
    fprintf(f, "# qmdb-trace text form (docs/TRACE.md); source %s\n", argv[1]);
    while ((rc = tr_next(r, &b)) == 1) {
        fprintf(f, "block %" PRIu64 "\n", b.number);
        for (uint32_t t = 0; t < b.n_tx; t++) {
            fputs("tx\n", f);
            for (uint32_t k = b.tx_start[t]; k < b.tx_start[t + 1]; k++) {
                const trace_op *op = &b.ops[k];
                fputs(OPNAME[op->type], f);
                fputc(' ', f);
                put_hex(f, op->key, TRACE_ADDR_LEN);
                if (op->klen > TRACE_ADDR_LEN) {
                    fputc(' ', f);
                    put_hex(f, op->key + TRACE_ADDR_LEN, TRACE_SLOT_LEN);
                }
                if (op->type == TOP_WRITE || op->type == TOP_CREATE) {
                    fputc(' ', f);
                    if (op->vlen)
                        put_hex(f, op->val, op->vlen);
                    else
                        fputc('-', f);
                }
                fputc('\n', f);
            }
        }
    }
    if (rc < 0)
        fprintf(stderr, "qmdb-trace: %s\n", tr_error(r));
    int bad = ferror(f);
    if (f != stdout)
        bad |= fclose(f) != 0;
    else
        fflush(f);
    tr_close(r);
    trace_block_free(&b);
    return rc < 0 || bad ? 1 : 0;
}

/* ---- export-ops ------------------------------------------------------------------------- */

/* Appends the op script of one trace (FORMAT.md §8) starting at *height + 1. */
static int
export_ops_one(const char *path, FILE *f, uint64_t *height)
{
    char err[600];
    trace_reader *r;
    if (tr_open(&r, path, err, sizeof(err))) {
        fprintf(stderr, "qmdb-trace: %s\n", err);
        return -1;
    }
    trace_block b;
    memset(&b, 0, sizeof(b));
    int rc;
    while ((rc = tr_next(r, &b)) == 1) {
        fprintf(f, "block %" PRIu64 " # trace block %" PRIu64 "\n", ++*height, b.number);
        for (uint32_t t = 0; t < b.n_tx; t++) {
            fputs("tx\n", f);
            for (uint32_t k = b.tx_start[t]; k < b.tx_start[t + 1]; k++) {
                const trace_op *op = &b.ops[k];
                if (op->type == TOP_READ)
                    continue;
                int put = op->type != TOP_DELETE && op->vlen > 0; /* empty value = delete */
                fputs(put ? "put " : "del ", f);
                put_hex(f, op->key, op->klen);
                if (put) {
                    fputc(' ', f);
                    put_hex(f, op->val, op->vlen);
                }
                fputc('\n', f);
            }
        }
        fputs("commit\n", f);
    }
    if (rc < 0)
        fprintf(stderr, "qmdb-trace: %s\n", tr_error(r));
    tr_close(r);
    trace_block_free(&b);
    return rc < 0 ? -1 : 0;
}

static int
cmd_export_ops(int argc, char **argv)
{
    const char *init = NULL, *trace = NULL, *out = "-";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--init") == 0)
            init = argv[i + 1];
        else if (strcmp(argv[i], "--trace") == 0)
            trace = argv[i + 1];
        else if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--out") == 0)
            out = argv[i + 1];
        else
            trace = NULL, i = argc;
    }
    if (!trace || argc % 2 == 0) {
        fprintf(stderr, "usage: qmdb-trace export-ops [--init INIT] --trace TRACE [-o OUT]\n");
        return 2;
    }
    FILE *f = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
    if (!f) {
        fprintf(stderr, "qmdb-trace: cannot create %s: %s\n", out, strerror(errno));
        return 1;
    }
    uint64_t h = 0;
    fprintf(f, "# op script from qmdb-trace export-ops: init %s, trace %s\n",
            init ? init : "(none)", trace);
    int rc = (init && export_ops_one(init, f, &h)) || export_ops_one(trace, f, &h);
    int bad = ferror(f);
    if (f != stdout)
        bad |= fclose(f) != 0;
    else
        fflush(f);
    return rc || bad ? 1 : 0;
}

/* ---- import ------------------------------------------------------------------------------ */

typedef struct imp {
    trace_writer *w;
    int in_block;
    uint64_t block;
    long long tx; /* JSON: current tx index in the block, -1 none */
    unsigned long line;
    uint8_t key[TRACE_KEY_MAX];
    uint8_t *val;
} imp;

static int
imp_fail(imp *m, const char *msg)
{
    fprintf(stderr, "qmdb-trace import: line %lu: %s\n", m->line, msg);
    return -1;
}

static int
imp_block(imp *m, uint64_t number)
{
    if (m->in_block && tw_block_end(m->w))
        return imp_fail(m, tw_error(m->w));
    m->in_block = 0;
    if (tw_block_begin(m->w, number))
        return imp_fail(m, tw_error(m->w));
    m->in_block = 1;
    m->block = number;
    m->tx = -1;
    return 0;
}

static int
op_type(const char *s, size_t n)
{
    static const char *const names[4][3] = {{"r", "read", "get"},
                                            {"w", "write", "update"},
                                            {"c", "create", "insert"},
                                            {"d", "delete", "del"}};
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 3; k++)
            if (strlen(names[t][k]) == n && strncmp(s, names[t][k], n) == 0)
                return t;
    return -1;
}

/* Adds one op given its fields as (pointer, length) strings; slot/val may be NULL. */
static int
imp_op(imp *m, int type, const char *a, size_t an, const char *s, size_t sn, const char *v,
       size_t vn)
{
    if (!m->in_block)
        return imp_fail(m, "operation before the first block");
    if (parse_hex(a, an, m->key, TRACE_ADDR_LEN) != TRACE_ADDR_LEN)
        return imp_fail(m, "address must be 20 bytes of hex");
    size_t kl = TRACE_ADDR_LEN;
    if (s) {
        uint8_t tmp[TRACE_SLOT_LEN];
        long sl = parse_hex(s, sn, tmp, TRACE_SLOT_LEN);
        if (sl < 0)
            return imp_fail(m, "slot must be at most 32 bytes of hex");
        memset(m->key + TRACE_ADDR_LEN, 0, TRACE_SLOT_LEN);
        memcpy(m->key + TRACE_KEY_MAX - sl, tmp, (size_t)sl);
        kl = TRACE_KEY_MAX;
    }
    long vl = 0;
    if (type == TOP_WRITE || type == TOP_CREATE) {
        if (!v)
            return imp_fail(m, "write/create needs a value (- or 0x for empty)");
        if (!(vn == 1 && v[0] == '-')) {
            vl = parse_hex(v, vn, m->val, TRACE_MAX_VALUE);
            if (vl < 0)
                return imp_fail(m, "value is not hex (or longer than 16 MiB)");
        }
    } else if (v) {
        return imp_fail(m, "read/delete take no value");
    }
    if (tw_op(m->w, type, m->key, kl, m->val, (size_t)vl))
        return imp_fail(m, tw_error(m->w));
    return 0;
}

static int
text_line(imp *m, char *line)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = 0;
    char *tok[5];
    int nt = 0;
    for (char *sv = NULL, *p = strtok_r(line, " \t\r\n", &sv); p;
         p = strtok_r(NULL, " \t\r\n", &sv)) {
        if (nt == 5)
            return imp_fail(m, "too many fields");
        tok[nt++] = p;
    }
    if (nt == 0)
        return 0;
    if (strcmp(tok[0], "block") == 0) {
        char *end;
        errno = 0;
        unsigned long long n = nt == 2 ? strtoull(tok[1], &end, 10) : 0;
        if (nt != 2 || errno || *end || tok[1][0] == '-')
            return imp_fail(m, "expected 'block <number>'");
        return imp_block(m, n);
    }
    if (strcmp(tok[0], "tx") == 0) {
        if (!m->in_block || nt != 1)
            return imp_fail(m, "'tx' outside a block or with arguments");
        return tw_tx(m->w) ? imp_fail(m, tw_error(m->w)) : 0;
    }
    int t = op_type(tok[0], strlen(tok[0]));
    if (t < 0)
        return imp_fail(m, "unknown command");
    int has_val = t == TOP_WRITE || t == TOP_CREATE;
    int nargs = nt - 1 - has_val; /* 1 = account, 2 = storage */
    if (nargs < 1 || nargs > 2)
        return imp_fail(m, has_val ? "expected '<w|c> ADDR [SLOT] VALUE'"
                                   : "expected '<r|d> ADDR [SLOT]'");
    const char *s = nargs == 2 ? tok[2] : NULL, *v = has_val ? tok[nt - 1] : NULL;
    return imp_op(m, t, tok[1], strlen(tok[1]), s, s ? strlen(s) : 0, v, v ? strlen(v) : 0);
}

/* Minimal flat JSON object: string or integer values only. Fills up to 8 fields. */
typedef struct jfield {
    const char *k, *v;
    size_t kn, vn;
    int is_str;
} jfield;

static int
json_flat(const char *p, jfield *f, int max)
{
    int n = 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '{')
        return -1;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '}')
            return n;
        if (*p++ != '"' || n == max)
            return -1;
        f[n].k = p;
        while (*p && *p != '"')
            p++;
        if (*p != '"')
            return -1;
        f[n].kn = (size_t)(p - f[n].k);
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p++ != ':')
            return -1;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '"') {
            f[n].v = ++p;
            while (*p && *p != '"')
                p++;
            if (*p != '"')
                return -1;
            f[n].vn = (size_t)(p - f[n].v);
            f[n].is_str = 1;
            p++;
        } else {
            f[n].v = p;
            while ((*p >= '0' && *p <= '9') || *p == '-' || (*p >= 'a' && *p <= 'z'))
                p++;
            f[n].vn = (size_t)(p - f[n].v);
            f[n].is_str = 0;
            if (!f[n].vn)
                return -1;
        }
        n++;
    }
}

static const jfield *
jget(const jfield *f, int n, const char *k1, const char *k2)
{
    for (int i = 0; i < n; i++)
        if ((strlen(k1) == f[i].kn && strncmp(f[i].k, k1, f[i].kn) == 0) ||
            (k2 && strlen(k2) == f[i].kn && strncmp(f[i].k, k2, f[i].kn) == 0))
            return &f[i];
    return NULL;
}

static int
jnum(const jfield *f, uint64_t *out)
{
    char b[32];
    if (!f || f->vn == 0 || f->vn >= sizeof(b))
        return -1;
    memcpy(b, f->v, f->vn);
    b[f->vn] = 0;
    char *end;
    errno = 0;
    *out = strtoull(b, &end, f->is_str && f->vn > 2 && b[1] == 'x' ? 16 : 10);
    return errno || *end || b[0] == '-' ? -1 : 0;
}

static int
json_line(imp *m, const char *line)
{
    jfield f[8];
    int n = json_flat(line, f, 8);
    if (n < 0)
        return imp_fail(m, "not a flat JSON object of strings and integers");
    uint64_t blk, tx = 0;
    if (jnum(jget(f, n, "block", "b"), &blk))
        return imp_fail(m, "missing or bad \"block\"");
    if (!m->in_block || blk != m->block) {
        if (imp_block(m, blk))
            return -1;
    }
    const jfield *jt = jget(f, n, "tx", "t");
    if (jt && jnum(jt, &tx))
        return imp_fail(m, "bad \"tx\"");
    if (jt) {
        if ((long long)tx < m->tx)
            return imp_fail(m, "\"tx\" indices must not decrease within a block");
        while (m->tx < (long long)tx) { /* gaps are empty transactions (they count) */
            if (tw_tx(m->w))
                return imp_fail(m, tw_error(m->w));
            m->tx++;
        }
    }
    const jfield *jo = jget(f, n, "op", "o");
    if (!jo)
        return 0; /* block or tx marker only */
    int t = op_type(jo->v, jo->vn);
    const jfield *ja = jget(f, n, "address", "addr"), *js = jget(f, n, "slot", "s"),
                 *jv = jget(f, n, "value", "v");
    if (t < 0 || !ja)
        return imp_fail(m, "bad \"op\" or missing \"address\"");
    if (m->tx < 0) { /* ops without "tx" all go to transaction 0 */
        if (tw_tx(m->w))
            return imp_fail(m, tw_error(m->w));
        m->tx = 0;
    }
    return imp_op(m, t, ja->v, ja->vn, js ? js->v : NULL, js ? js->vn : 0, jv ? jv->v : NULL,
                  jv ? jv->vn : 0);
}

static int
cmd_import(int argc, char **argv)
{
    const char *kind = "trace", *in = NULL, *out = NULL;
    uint64_t per_file = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc)
            kind = argv[++i];
        else if (strcmp(argv[i], "--blocks-per-file") == 0 && i + 1 < argc)
            per_file = strtoull(argv[++i], NULL, 10);
        else if (!in)
            in = argv[i];
        else if (!out)
            out = argv[i];
        else
            in = NULL, i = argc;
    }
    if (!in || !out || (strcmp(kind, "trace") != 0 && strcmp(kind, "init") != 0)) {
        fprintf(stderr, "usage: qmdb-trace import [--kind trace|init] [--blocks-per-file N] "
                        "IN.txt|IN.jsonl|- OUT\n");
        return 2;
    }
    FILE *f = strcmp(in, "-") == 0 ? stdin : fopen(in, "r");
    if (!f) {
        fprintf(stderr, "qmdb-trace import: cannot open %s: %s\n", in, strerror(errno));
        return 1;
    }
    imp m;
    memset(&m, 0, sizeof(m));
    m.val = malloc(TRACE_MAX_VALUE);
    char hdr[512], err[600];
    snprintf(hdr, sizeof(hdr), "kind=%s\ngenerator=qmdb-trace import\nsource=%s\n", kind, in);
    if (!m.val || tw_open(&m.w, out, per_file, hdr, err, sizeof(err))) {
        fprintf(stderr, "qmdb-trace import: %s\n", m.val ? err : "out of memory");
        free(m.val);
        if (f != stdin)
            fclose(f);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (!rc && getline(&line, &cap, f) >= 0) {
        m.line++;
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        rc = *p == '{' ? json_line(&m, p) : text_line(&m, line);
    }
    free(line);
    if (!rc && ferror(f))
        rc = imp_fail(&m, "read error");
    if (!rc && m.in_block && tw_block_end(m.w))
        rc = imp_fail(&m, tw_error(m.w));
    if (f != stdin)
        fclose(f);
    trace_stats s = *tw_stats(m.w);
    if (tw_close(m.w))
        rc = -1;
    free(m.val);
    if (!rc)
        fprintf(stderr, "imported %" PRIu64 " blocks, %" PRIu64 " txs, %" PRIu64 " ops -> %s\n",
                s.blocks, s.txs, s.ops, out);
    return rc ? 1 : 0;
}

static void
usage(FILE *f)
{
    fprintf(
        f,
        "usage: qmdb-trace COMMAND ...   (docs/TRACE.md)\n"
        "  gen --init-out PATH --trace-out PATH [--init-entries N] [--ops N | --blocks N] ...\n"
        "  info TRACE                       header, decoded statistics, checksums, content hash\n"
        "  import [--kind trace|init] [--blocks-per-file N] IN OUT   text or JSON lines -> QTRC\n"
        "  export-text TRACE OUT|-          QTRC -> text form\n"
        "  export-ops [--init INIT] --trace TRACE [-o OUT]   -> qmdb op script (qmdb apply)\n"
        "TRACE may be one .qtr file or a directory of *.qtr segment files.\n");
}

int
main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *c = argv[1];
    if (strcmp(c, "gen") == 0)
        return tracegen_cmd(argc - 1, argv + 1);
    if (strcmp(c, "info") == 0)
        return cmd_info(argc - 1, argv + 1);
    if (strcmp(c, "import") == 0)
        return cmd_import(argc - 1, argv + 1);
    if (strcmp(c, "export-text") == 0)
        return cmd_export_text(argc - 1, argv + 1);
    if (strcmp(c, "export-ops") == 0)
        return cmd_export_ops(argc - 1, argv + 1);
    fprintf(stderr, "qmdb-trace: unknown command '%s'\n", c);
    usage(stderr);
    return 2;
}
