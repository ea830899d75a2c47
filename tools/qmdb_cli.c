/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qmdb_cli.c -- the `qmdb` command-line tool. Uses the public API (qmdb.h) only.
 *
 *   qmdb init DIR [--compact-thres N] [--utilization R/D] [--history-blocks N]
 *                 [--entry-segment-bytes N]
 *   qmdb apply DIR SCRIPT        (SCRIPT may be - for stdin; prints "<height> <root>" per commit)
 *   qmdb root DIR [--height H]   (prints "<height> <root>")
 *   qmdb get DIR KEY [--str]     (prints the value in hex; exit 1 and "not found" if absent)
 *   qmdb stat DIR
 *   qmdb check DIR               (full offline check, qmdb_check(): prints each problem with its
 *                                 file and offset; exit 3 if there is any)
 *   qmdb prove DIR KEY [--height H] [-o FILE] [--str]
 *                                (writes a proof of KEY's value or absence; docs/PROOFS.md)
 *   qmdb verify --root HEX --key KEY [--value VAL | --absent] [--height H] [--str] FILE
 *                                (prints "valid", or "invalid: <reason>" and exits 4)
 *
 * Exit codes: 0 success; 1 not found; 2 usage error or bad input; 3 database or I/O error;
 * 4 proof does not verify. A hybrid-indexer checkpoint that could not be written at close
 * (QMDB_NO_CHECKPOINT) is a warning on stderr, not a failure: every printed height is durable.
 * Keys and values on the command line are hex (optionally 0x-prefixed); --str takes text.
 * Numbers (heights, N, R/D) are unsigned decimal: digits only, no blanks or sign, 64 bits.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qmdb.h"
#include "script.h"

enum { EXIT_NOTFOUND = 1, EXIT_USAGE = 2, EXIT_DB = 3 };

static void
usage(void)
{
    fprintf(stderr,
            "usage: qmdb [--indexer memory|hybrid] [--salvage] COMMAND ...\n"
            "  (--salvage: open although one META slot is damaged, at the older height; a\n"
            "   writing command then repairs the slot. Blocks after that height are lost.)\n"
            "  qmdb init DIR [--compact-thres N] [--utilization R/D] [--history-blocks N]\n"
            "                [--entry-segment-bytes N]\n"
            "  qmdb apply DIR SCRIPT\n"
            "  qmdb root DIR [--height H]\n"
            "  qmdb get DIR KEY [--str]\n"
            "  qmdb stat DIR\n"
            "  qmdb check DIR\n"
            "  qmdb prove DIR KEY [--height H] [-o FILE] [--str]\n"
            "  qmdb verify --root HEX --key KEY [--value VAL | --absent] [--height H]\n"
            "              [--str] FILE\n");
}

static int
db_fail(const char *what, int rc, qmdb_db *db)
{
    const char *detail = db ? qmdb_last_error(db) : qmdb_open_error();
    fprintf(stderr, "qmdb: %s: %s%s%s\n", what, qmdb_strerror(rc), detail && *detail ? ": " : "",
            detail ? detail : "");
    return rc == QMDB_NOTFOUND ? EXIT_NOTFOUND
           : (rc == QMDB_INVALID || rc == QMDB_BAD_HEIGHT || rc == QMDB_EXISTS ||
              rc == QMDB_NOTADB)
               ? EXIT_USAGE
               : EXIT_DB;
}

static int
hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes hex of length n into out (n/2 bytes). Returns the byte count or -1. */
static long
unhex(const char *s, size_t n, unsigned char *out)
{
    if (n % 2)
        return -1;
    for (size_t i = 0; i < n; i += 2) {
        int a = hexval(s[i]), b = hexval(s[i + 1]);
        if (a < 0 || b < 0)
            return -1;
        out[i / 2] = (unsigned char)(a * 16 + b);
    }
    return (long)(n / 2);
}

static void
print_hex(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
}

/* A number argument of option `opt`: digits only (script_parse_u64), at most max. Prints
 * why and returns false otherwise. */
static bool
arg_u64(const char *cmd, const char *opt, const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v;
    if (!s) {
        fprintf(stderr, "qmdb %s: %s needs a value\n", cmd, opt);
        return false;
    }
    if (!script_parse_u64(s, strlen(s), &v)) {
        fprintf(stderr,
                "qmdb %s: %s wants an unsigned decimal number (digits only, below 2^64), got "
                "'%s'\n",
                cmd, opt, s);
        return false;
    }
    if (v > max) {
        fprintf(stderr, "qmdb %s: %s %s is too large (at most %" PRIu64 ")\n", cmd, opt, s, max);
        return false;
    }
    *out = v;
    return true;
}

/* A block height (UINT64_MAX means "latest" in the API, so it is no height). */
static bool
arg_height(const char *cmd, const char *s, uint64_t *out)
{
    return arg_u64(cmd, "--height", s, UINT64_MAX - 1, out);
}

/* --utilization R/D: the engine compacts a shard once live/total <= R/D; a ratio above 1
 * would mean the same as 1/1, so only 1 <= R <= D (both 32-bit) is accepted. */
static bool
arg_utilization(const char *s, uint32_t *ratio, uint32_t *div)
{
    if (!s) {
        fprintf(stderr, "qmdb init: --utilization needs a value\n");
        return false;
    }
    const char *slash = strchr(s, '/');
    uint64_t r, d;
    if (!slash || !script_parse_u64(s, (size_t)(slash - s), &r) ||
        !script_parse_u64(slash + 1, strlen(slash + 1), &d) || r == 0 || r > d || d > UINT32_MAX) {
        fprintf(stderr,
                "qmdb init: --utilization wants R/D, unsigned decimal numbers with "
                "1 <= R <= D <= %" PRIu32 ", got '%s'\n",
                UINT32_MAX, s);
        return false;
    }
    *ratio = (uint32_t)r;
    *div = (uint32_t)d;
    return true;
}

/* Closes db. QMDB_NO_CHECKPOINT (a writer's close could not write the hybrid index
 * checkpoint) is a warning, not a failure: every committed block is durable. Returns 0 or
 * the exit code of another error. */
static int
close_db(const char *cmd, qmdb_db *db)
{
    int rc = qmdb_close(db);
    if (rc == QMDB_NO_CHECKPOINT) {
        fprintf(stderr,
                "qmdb %s: warning: the index checkpoint was not written (%s); every committed "
                "block is durable, and the next open rebuilds the index from the log\n",
                cmd, *qmdb_open_error() ? qmdb_open_error() : "unknown cause");
        return 0;
    }
    return rc ? db_fail("close", rc, NULL) : 0;
}

/* --indexer memory|hybrid (before the command): the indexer of every open. */
static uint32_t g_indexer = QMDB_INDEXER_AUTO;
/* --salvage (before the command): open although a META slot is damaged (QMDB_OPEN_SALVAGE). */
static bool g_salvage;

static int
open_db(const char *dir, uint32_t flags, qmdb_db **db)
{
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = flags | (g_salvage ? QMDB_OPEN_SALVAGE : 0);
    o.indexer = g_indexer;
    /* A read-only command with the hybrid indexer resumes it from the checkpoint the last
     * writer left (a verifying read-only open would rebuild it in DRAM instead). */
    if (g_indexer == QMDB_INDEXER_HYBRID && (flags & QMDB_OPEN_RDONLY))
        o.flags |= QMDB_OPEN_FAST;
    int rc = qmdb_open(dir, &o, db);
    if (rc)
        return db_fail(dir, rc, NULL);
    return 0;
}

static int
cmd_init(int argc, char **argv)
{
    if (argc < 1) {
        usage();
        return EXIT_USAGE;
    }
    qmdb_options o;
    qmdb_options_init(&o);
    o.indexer = g_indexer;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool good;
        if (strcmp(a, "--compact-thres") == 0) {
            good = arg_u64("init", a, v, UINT64_MAX, &o.compact_thres);
        } else if (strcmp(a, "--history-blocks") == 0) {
            good = arg_u64("init", a, v, UINT64_MAX, &o.history_blocks);
        } else if (strcmp(a, "--entry-segment-bytes") == 0) {
            good = arg_u64("init", a, v, UINT64_MAX, &o.entry_segment_bytes);
        } else if (strcmp(a, "--utilization") == 0) {
            good = arg_utilization(v, &o.utilization_ratio, &o.utilization_div);
        } else {
            fprintf(stderr, "qmdb init: unknown option '%s'\n", a);
            return EXIT_USAGE;
        }
        if (!good)
            return EXIT_USAGE;
        i++;
    }
    int rc = qmdb_create(argv[0], &o);
    if (rc)
        return db_fail(argv[0], rc, NULL);
    return 0;
}

/* Script state (FORMAT.md §8). Lines are parsed by script_parse_line (tools/script.c). */
typedef struct script {
    const char *name;
    unsigned long line;
    qmdb_db *db;
    qmdb_batch *batch;
    bool in_block;
    uint64_t height;
    script_cmd cmd;
} script;

static int
script_error(script *sc, const char *msg, const char *tok)
{
    fprintf(stderr, "qmdb apply: %s:%lu: %s%s%s%s\n", sc->name, sc->line, msg, tok ? " '" : "",
            tok ? tok : "", tok ? "'" : "");
    if (sc->in_block)
        fprintf(stderr, "qmdb apply: block %" PRIu64 " was not committed\n", sc->height);
    return EXIT_USAGE;
}

static int
script_line(script *sc, const char *line, size_t len)
{
    script_cmd *c = &sc->cmd;
    if (script_parse_line(line, len, c) != 0)
        return script_error(sc, c->err, NULL);
    if (c->kind == SCRIPT_NONE)
        return 0;
    if (c->kind == SCRIPT_BLOCK) {
        if (sc->in_block)
            return script_error(sc, "'block' inside an uncommitted block", NULL);
        uint64_t want = qmdb_height(sc->db) + 1;
        if (c->height != want) {
            fprintf(stderr, "qmdb apply: %s:%lu: block height %" PRIu64
                    " is not last committed height + 1 (%" PRIu64 ")\n",
                    sc->name, sc->line, c->height, want);
            return EXIT_USAGE;
        }
        sc->in_block = true;
        sc->height = c->height;
        qmdb_batch_reset(sc->batch);
        return 0;
    }
    if (!sc->in_block) {
        static const char *const names[] = {"", "block", "tx", "put", "del", "commit"};
        return script_error(sc, "operation outside a block:", names[c->kind]);
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
        rc = qmdb_commit(sc->db, sc->height, sc->batch, root);
        if (rc)
            return db_fail("commit", rc, sc->db);
        sc->in_block = false;
        printf("%" PRIu64 " ", sc->height);
        print_hex(root, 32);
        printf("\n");
        fflush(stdout);
        return 0;
    }
    default:
        break;
    }
    if (rc)
        return script_error(sc, qmdb_strerror(rc), NULL);
    return 0;
}

static int
cmd_apply(int argc, char **argv)
{
    if (argc != 2) {
        usage();
        return EXIT_USAGE;
    }
    FILE *in = strcmp(argv[1], "-") == 0 ? stdin : fopen(argv[1], "r");
    if (!in) {
        fprintf(stderr, "qmdb apply: cannot open %s: %s\n", argv[1], strerror(errno));
        return EXIT_USAGE;
    }
    script sc = {0};
    sc.name = argv[1];
    int rc = open_db(argv[0], 0, &sc.db);
    if (rc) {
        if (in != stdin)
            fclose(in);
        return rc;
    }
    if (qmdb_batch_new(&sc.batch) != 0) {
        fprintf(stderr, "qmdb apply: out of memory\n");
        rc = EXIT_DB;
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
            fprintf(stderr, "qmdb apply: %s:%lu: cannot read the script: %s\n", sc.name, sc.line,
                    err ? strerror(err) : "read error");
            if (sc.in_block)
                fprintf(stderr, "qmdb apply: block %" PRIu64 " was not committed\n", sc.height);
            rc = EXIT_DB;
            break;
        }
        rc = script_line(&sc, line, (size_t)n);
        if (rc)
            break;
    }
    free(line);
    if (!rc && sc.in_block) {
        rc = script_error(&sc, "end of script inside a block (missing 'commit')", NULL);
    }
out:
    if (in != stdin)
        fclose(in);
    qmdb_batch_free(sc.batch);
    script_cmd_free(&sc.cmd);
    int crc = close_db("apply", sc.db);
    return rc ? rc : crc;
}

static int
cmd_root(int argc, char **argv)
{
    uint64_t h = UINT64_MAX;
    if (argc == 3 && strcmp(argv[1], "--height") == 0) {
        if (!arg_height("root", argv[2], &h))
            return EXIT_USAGE;
    } else if (argc != 1) {
        usage();
        return EXIT_USAGE;
    }
    qmdb_db *db;
    int rc = open_db(argv[0], QMDB_OPEN_RDONLY, &db);
    if (rc)
        return rc;
    unsigned char root[32];
    if (h == UINT64_MAX)
        h = qmdb_height(db);
    rc = qmdb_root(db, h, root);
    if (rc) {
        rc = db_fail("root", rc, db);
    } else {
        printf("%" PRIu64 " ", h);
        print_hex(root, 32);
        printf("\n");
    }
    close_db("root", db);
    return rc;
}

static int
cmd_get(int argc, char **argv)
{
    bool str = false;
    if (argc == 3 && strcmp(argv[2], "--str") == 0)
        str = true;
    else if (argc != 2) {
        usage();
        return EXIT_USAGE;
    }
    unsigned char key[QMDB_MAX_KEY_LEN];
    long kn;
    const char *k = argv[1];
    if (str) {
        kn = (long)strlen(k);
        if (kn == 0 || kn > QMDB_MAX_KEY_LEN) {
            fprintf(stderr, "qmdb get: key must be 1..255 bytes\n");
            return EXIT_USAGE;
        }
        memcpy(key, k, (size_t)kn);
    } else {
        if (k[0] == '0' && (k[1] == 'x' || k[1] == 'X'))
            k += 2;
        size_t n = strlen(k);
        kn = (n == 0 || n > 2 * QMDB_MAX_KEY_LEN) ? -1 : unhex(k, n, key);
        if (kn <= 0) {
            fprintf(stderr, "qmdb get: key must be 1..255 bytes of even-length hex (or use --str)\n");
            return EXIT_USAGE;
        }
    }
    qmdb_db *db;
    int rc = open_db(argv[0], QMDB_OPEN_RDONLY, &db);
    if (rc)
        return rc;
    size_t vlen = 0;
    unsigned char small[256];
    rc = qmdb_get(db, key, (size_t)kn, small, sizeof(small), &vlen);
    unsigned char *val = small;
    if (rc == QMDB_BUFFER_TOO_SMALL) {
        val = malloc(vlen);
        rc = val ? qmdb_get(db, key, (size_t)kn, val, vlen, &vlen) : -ENOMEM;
    }
    if (rc == QMDB_NOTFOUND) {
        printf("not found\n");
        rc = EXIT_NOTFOUND;
    } else if (rc) {
        rc = db_fail("get", rc, db);
    } else {
        print_hex(val, vlen);
        printf("\n");
    }
    if (val != small)
        free(val);
    close_db("get", db);
    return rc;
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

static int
cmd_stat(int argc, char **argv, bool check)
{
    if (argc != 1) {
        usage();
        return EXIT_USAGE;
    }
    qmdb_db *db;
    int rc = open_db(argv[0], QMDB_OPEN_RDONLY, &db);
    if (rc)
        return rc;
    qmdb_stats st = QMDB_STATS_INIT;
    unsigned char root[32];
    rc = qmdb_stat(db, &st);
    if (!rc && check)
        rc = qmdb_root(db, UINT64_MAX, root);
    if (rc) {
        rc = db_fail(check ? "check" : "stat", rc, db);
        close_db(check ? "check" : "stat", db);
        return rc;
    }
    if (check) {
        printf("ok: height %" PRIu64 ", %" PRIu64 " entries verified, root ", st.height,
               st.unpruned_entries);
        print_hex(root, 32);
        printf("\n");
        close_db("check", db);
        return 0;
    }
    /* Per-entry figures: "n/a" without live entries (the sentries' fixed cost over zero). */
    uint64_t live = st.live_entries;
    char dram[32], ix_dram[32], tree[32], ix_ssd[32], ssd[32], efiles[32], tfiles[32];
    per_entry(dram, st.index_dram_bytes + st.tree_dram_bytes, live);
    per_entry(ix_dram, st.index_dram_bytes, live);
    per_entry(tree, st.tree_dram_bytes, live);
    per_entry(ix_ssd, st.index_ssd_bytes, live);
    per_entry(ssd, st.ssd_bytes, live);
    per_entry(efiles, st.entry_file_bytes, live);
    per_entry(tfiles, st.twig_file_bytes, live);
    printf("height: %" PRIu64 "\n", st.height);
    printf("live entries: %" PRIu64 " (plus %" PRIu64 " sentries)\n", st.live_entries,
           st.live_with_sentries - st.live_entries);
    printf("total entries: %" PRIu64 " (unpruned: %" PRIu64 ", pruned twigs: %" PRIu64 ")\n",
           st.total_entries, st.unpruned_entries, st.pruned_twigs);
    printf("dram bytes per live entry: %s (indexer %s, tree %s; total %" PRIu64 " bytes)\n", dram,
           ix_dram, tree, st.index_dram_bytes + st.tree_dram_bytes);
    printf("dram of per-block buffers: %" PRIu64 " bytes (warm caches, pre-images)\n",
           st.cache_dram_bytes);
    if (st.indexer == QMDB_INDEXER_HYBRID)
        printf("indexer: hybrid; dram %s and ssd %s bytes per live entry (run files %" PRIu64
               " bytes); resumed from its checkpoint in %u of 16 shards\n",
               ix_dram, ix_ssd, st.index_ssd_bytes, st.index_resumed_shards);
    else
        printf("indexer: memory; dram %s bytes per live entry%s\n", ix_dram,
               g_indexer == QMDB_INDEXER_HYBRID ? " (hybrid asked for, but a read-only open "
                                                  "without a valid checkpoint indexes in DRAM)"
                                                : "");
    printf("ssd bytes per live entry: %s (entry files %s, twig files %s, index runs %s; "
           "total %" PRIu64 " bytes)\n",
           ssd, efiles, tfiles, ix_ssd, st.ssd_bytes);
    printf("parameters: compact_thres %" PRIu64 ", utilization %u/%u, history_blocks %" PRIu64
           "\n",
           st.compact_thres, st.utilization_ratio, st.utilization_div, st.history_blocks);
    printf("batched reads: %s\n", st.io_uring ? "io_uring"
                                              : "pread thread pool (io_uring unavailable here, "
                                                "or QMDB_NO_URING=1)");
    close_db("stat", db);
    return 0;
}

/* ---- Proofs: qmdb prove / qmdb verify (docs/PROOFS.md) --------------------------------- */

#define EXIT_BAD_PROOF 4

/* Key or value from the command line: hex (optional 0x) or, with str, the text itself.
 * Returns a malloc'd buffer (caller frees) or NULL after printing an error. */
static unsigned char *
proof_arg_bytes(const char *cmd, const char *what, const char *s, bool str, size_t max,
                size_t *len)
{
    size_t n = strlen(s);
    unsigned char *out = NULL;
    if (str) {
        out = malloc(n ? n : 1);
        if (out)
            memcpy(out, s, n);
        *len = n;
    } else {
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
            s += 2;
            n -= 2;
        }
        out = malloc(n / 2 + 1);
        long got = out ? unhex(s, n, out) : -1;
        if (got < 0) {
            fprintf(stderr, "qmdb %s: %s must be even-length hex (or use --str)\n", cmd, what);
            free(out);
            return NULL;
        }
        *len = (size_t)got;
    }
    if (!out || *len == 0 || *len > max) {
        fprintf(stderr, "qmdb %s: %s must be 1..%zu bytes\n", cmd, what, max);
        free(out);
        return NULL;
    }
    return out;
}

static int
cmd_prove(int argc, char **argv)
{
    const char *dir = NULL, *keyarg = NULL, *outpath = NULL;
    uint64_t height = UINT64_MAX;
    bool str = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--height") == 0 && i + 1 < argc) {
            if (!arg_height("prove", argv[++i], &height))
                return EXIT_USAGE;
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            outpath = argv[++i];
        } else if (strcmp(argv[i], "--str") == 0) {
            str = true;
        } else if (!dir) {
            dir = argv[i];
        } else if (!keyarg) {
            keyarg = argv[i];
        } else {
            usage();
            return EXIT_USAGE;
        }
    }
    if (!dir || !keyarg) {
        usage();
        return EXIT_USAGE;
    }
    size_t klen;
    unsigned char *key = proof_arg_bytes("prove", "KEY", keyarg, str, QMDB_MAX_KEY_LEN, &klen);
    if (!key)
        return EXIT_USAGE;
    qmdb_db *db;
    int rc = open_db(dir, QMDB_OPEN_RDONLY | QMDB_OPEN_FAST, &db);
    if (rc) {
        free(key);
        return rc;
    }
    uint8_t *proof = NULL;
    size_t len = 0;
    rc = qmdb_prove(db, key, klen, height, &proof, &len);
    free(key);
    if (rc) {
        rc = db_fail("prove", rc, db);
        close_db("prove", db);
        return rc;
    }
    qmdb_proof_info info = QMDB_PROOF_INFO_INIT;
    qmdb_proof_info_get(proof, len, &info);
    FILE *f = outpath ? fopen(outpath, "wb") : stdout;
    if (!f || fwrite(proof, 1, len, f) != len || (outpath && fclose(f) != 0)) {
        fprintf(stderr, "qmdb prove: cannot write %s: %s\n", outpath ? outpath : "stdout",
                strerror(errno));
        rc = EXIT_DB;
    } else {
        fprintf(outpath ? stdout : stderr, "%s proof: height %" PRIu64 ", shard %u, %zu bytes%s\n",
                info.absent ? "exclusion" : "inclusion", info.height, info.shard, len,
                info.deactivated ? " (historical, through the deactivating entry)" : "");
    }
    if (!outpath)
        fflush(stdout);
    qmdb_proof_free(proof);
    close_db("prove", db);
    return rc;
}

static int
cmd_verify(int argc, char **argv)
{
    const char *rootarg = NULL, *keyarg = NULL, *valarg = NULL, *file = NULL;
    uint64_t height = UINT64_MAX;
    bool str = false, absent = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--root") == 0 && v) {
            rootarg = v;
            i++;
        } else if (strcmp(a, "--key") == 0 && v) {
            keyarg = v;
            i++;
        } else if (strcmp(a, "--value") == 0 && v) {
            valarg = v;
            i++;
        } else if (strcmp(a, "--height") == 0 && v) {
            if (!arg_height("verify", v, &height))
                return EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--absent") == 0) {
            absent = true;
        } else if (strcmp(a, "--str") == 0) {
            str = true;
        } else if (!file) {
            file = a;
        } else {
            usage();
            return EXIT_USAGE;
        }
    }
    if (!rootarg || !keyarg || !file || (absent == (valarg != NULL))) {
        fprintf(stderr, "qmdb verify: needs --root, --key, exactly one of --value/--absent, "
                        "and FILE\n");
        return EXIT_USAGE;
    }
    /* The root: 64 hex digits; "H HEX" as printed by `qmdb root` is accepted too. */
    const char *r = strrchr(rootarg, ' ');
    r = r ? r + 1 : rootarg;
    if (r[0] == '0' && (r[1] == 'x' || r[1] == 'X'))
        r += 2;
    unsigned char root[32];
    if (strlen(r) != 64 || unhex(r, 64, root) != 32) {
        fprintf(stderr, "qmdb verify: --root must be 64 hex digits\n");
        return EXIT_USAGE;
    }
    size_t klen, vlen = 0;
    unsigned char *key = proof_arg_bytes("verify", "--key", keyarg, str, QMDB_MAX_KEY_LEN, &klen);
    if (!key)
        return EXIT_USAGE;
    unsigned char *val = NULL;
    if (valarg) {
        val = proof_arg_bytes("verify", "--value", valarg, str, QMDB_MAX_VALUE_LEN, &vlen);
        if (!val) {
            free(key);
            return EXIT_USAGE;
        }
    }
    FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "rb");
    int rc = 0, err = f ? 0 : errno;
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    while (f) {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            unsigned char *nb = cap <= (64u << 20) ? realloc(buf, cap) : NULL;
            if (!nb) {
                err = cap <= (64u << 20) ? ENOMEM : EFBIG;
                break;
            }
            buf = nb;
        }
        errno = 0;
        size_t got = fread(buf + len, 1, cap - len, f);
        if (got == 0) {
            if (ferror(f)) /* EIO, EISDIR, ...: not the end of the proof */
                err = errno ? errno : EIO;
            break;
        }
        len += got;
    }
    if (err) {
        fprintf(stderr, "qmdb verify: cannot %s %s: %s\n", f ? "read" : "open", file,
                strerror(err));
        rc = f && err != EFBIG ? EXIT_DB : EXIT_USAGE;
    } else {
        const char *why = NULL;
        uint64_t ph = 0;
        rc = qmdb_proof_verify(buf, len, root, key, klen, val, vlen, height, &ph, &why);
        if (rc == 0) {
            printf("valid\n");
        } else {
            printf("invalid: %s\n", why && *why ? why : qmdb_strerror(rc));
            rc = rc == QMDB_INVALID ? EXIT_USAGE : EXIT_BAD_PROOF;
        }
    }
    if (f && f != stdin)
        fclose(f);
    free(buf);
    free(key);
    free(val);
    return rc;
}

/* ---- end of proofs ---------------------------------------------------------------------- */

static void
check_problem(void *arg, const char *problem)
{
    (void)arg;
    printf("problem: %s\n", problem);
}

/* qmdb check DIR: the deep check of check.c; "ok: ..." and exit 0 only if nothing is wrong. */
static int
cmd_check(int argc, char **argv)
{
    if (argc != 1) {
        usage();
        return EXIT_USAGE;
    }
    uint64_t problems = 0;
    int rc = qmdb_check(argv[0], check_problem, NULL, &problems);
    if (rc == QMDB_CORRUPT) {
        printf("FAILED: %" PRIu64 " problem%s in %s\n", problems, problems == 1 ? "" : "s",
               argv[0]);
        return EXIT_DB;
    }
    if (rc)
        return db_fail(argv[0], rc, NULL);
    return cmd_stat(argc, argv, true);
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        usage();
        return EXIT_USAGE;
    }
    while (argc >= 2 && (strcmp(argv[1], "--indexer") == 0 || strcmp(argv[1], "--salvage") == 0)) {
        if (strcmp(argv[1], "--salvage") == 0) {
            g_salvage = true;
            argc -= 1;
            argv += 1;
            continue;
        }
        if (argc < 3 || (strcmp(argv[2], "memory") != 0 && strcmp(argv[2], "hybrid") != 0)) {
            fprintf(stderr, "qmdb: --indexer wants 'memory' or 'hybrid'\n");
            return EXIT_USAGE;
        }
        g_indexer = strcmp(argv[2], "hybrid") == 0 ? QMDB_INDEXER_HYBRID : QMDB_INDEXER_MEMORY;
        argc -= 2;
        argv += 2;
    }
    if (argc < 2) {
        usage();
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0) {
        printf("qmdb %s (format %d)\n", qmdb_version(), QMDB_FORMAT_VERSION);
        return 0;
    }
    if (argc < 3) {
        usage();
        return EXIT_USAGE;
    }
    if (strcmp(cmd, "init") == 0)
        return cmd_init(argc - 2, argv + 2);
    if (strcmp(cmd, "apply") == 0)
        return cmd_apply(argc - 2, argv + 2);
    if (strcmp(cmd, "root") == 0)
        return cmd_root(argc - 2, argv + 2);
    if (strcmp(cmd, "get") == 0)
        return cmd_get(argc - 2, argv + 2);
    if (strcmp(cmd, "stat") == 0)
        return cmd_stat(argc - 2, argv + 2, false);
    if (strcmp(cmd, "check") == 0)
        return cmd_check(argc - 2, argv + 2);
    if (strcmp(cmd, "prove") == 0)
        return cmd_prove(argc - 2, argv + 2);
    if (strcmp(cmd, "verify") == 0)
        return cmd_verify(argc - 2, argv + 2);
    fprintf(stderr, "qmdb: unknown command '%s'\n", cmd);
    usage();
    return EXIT_USAGE;
}
