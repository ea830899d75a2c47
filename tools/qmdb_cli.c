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
 *   qmdb check DIR               (opens read-only, hashing every entry; reports any damage)
 *
 * Exit codes: 0 success; 1 not found; 2 usage error or bad input; 3 database or I/O error.
 * Keys and values on the command line are hex (optionally 0x-prefixed); --str takes text.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qmdb.h"

enum { EXIT_NOTFOUND = 1, EXIT_USAGE = 2, EXIT_DB = 3 };

static void
usage(void)
{
    fprintf(stderr,
            "usage:\n"
            "  qmdb init DIR [--compact-thres N] [--utilization R/D] [--history-blocks N]\n"
            "                [--entry-segment-bytes N]\n"
            "  qmdb apply DIR SCRIPT\n"
            "  qmdb root DIR [--height H]\n"
            "  qmdb get DIR KEY [--str]\n"
            "  qmdb stat DIR\n"
            "  qmdb check DIR\n");
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

static bool
parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static int
open_db(const char *dir, uint32_t flags, qmdb_db **db)
{
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = flags;
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
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--compact-thres") == 0 && parse_u64(v, &o.compact_thres)) {
            i++;
        } else if (strcmp(a, "--history-blocks") == 0 && parse_u64(v, &o.history_blocks)) {
            i++;
        } else if (strcmp(a, "--entry-segment-bytes") == 0 &&
                   parse_u64(v, &o.entry_segment_bytes)) {
            i++;
        } else if (strcmp(a, "--utilization") == 0 && v) {
            unsigned r, d;
            char extra;
            if (sscanf(v, "%u/%u%c", &r, &d, &extra) != 2 || r == 0 || d == 0) {
                fprintf(stderr, "qmdb: --utilization wants R/D with R, D >= 1, got '%s'\n", v);
                return EXIT_USAGE;
            }
            o.utilization_ratio = r;
            o.utilization_div = d;
            i++;
        } else {
            fprintf(stderr, "qmdb init: bad or incomplete option '%s'\n", a);
            return EXIT_USAGE;
        }
    }
    int rc = qmdb_create(argv[0], &o);
    if (rc)
        return db_fail(argv[0], rc, NULL);
    return 0;
}

/* Script parsing state (FORMAT.md §8). */
typedef struct script {
    const char *name;
    unsigned long line;
    qmdb_db *db;
    qmdb_batch *batch;
    bool in_block;
    uint64_t height;
    unsigned char *kbuf, *vbuf;
    size_t vcap;
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
script_line(script *sc, char *line)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *tok[4];
    int nt = 0;
    for (char *p = strtok(line, " \t\r\n"); p; p = strtok(NULL, " \t\r\n")) {
        if (nt == 4)
            return script_error(sc, "too many fields", p);
        tok[nt++] = p;
    }
    if (nt == 0)
        return 0;
    const char *cmd = tok[0];
    if (strcmp(cmd, "block") == 0) {
        uint64_t h;
        if (nt != 2 || !parse_u64(tok[1], &h))
            return script_error(sc, "expected 'block <height>'", NULL);
        if (sc->in_block)
            return script_error(sc, "'block' inside an uncommitted block", NULL);
        uint64_t want = qmdb_height(sc->db) + 1;
        if (h != want) {
            fprintf(stderr, "qmdb apply: %s:%lu: block height %" PRIu64
                    " is not last committed height + 1 (%" PRIu64 ")\n",
                    sc->name, sc->line, h, want);
            return EXIT_USAGE;
        }
        sc->in_block = true;
        sc->height = h;
        qmdb_batch_reset(sc->batch);
        return 0;
    }
    if (!sc->in_block)
        return script_error(sc, "operation outside a block:", cmd);
    if (strcmp(cmd, "tx") == 0) {
        if (nt != 1)
            return script_error(sc, "expected 'tx'", NULL);
        int rc = qmdb_batch_tx(sc->batch);
        if (rc)
            return script_error(sc, qmdb_strerror(rc), NULL);
        return 0;
    }
    if (strcmp(cmd, "put") == 0 || strcmp(cmd, "del") == 0) {
        bool put = cmd[0] == 'p';
        if (nt != (put ? 3 : 2))
            return script_error(sc, put ? "expected 'put <keyhex> <valhex>'" : "expected 'del <keyhex>'",
                                NULL);
        size_t kl = strlen(tok[1]);
        if (kl == 0 || kl > 2 * QMDB_MAX_KEY_LEN)
            return script_error(sc, "key must be 1..255 bytes:", tok[1]);
        long kn = unhex(tok[1], kl, sc->kbuf);
        if (kn < 0)
            return script_error(sc, "key is not even-length hex:", tok[1]);
        int rc;
        if (put) {
            size_t vl = strlen(tok[2]);
            if (vl / 2 > QMDB_MAX_VALUE_LEN)
                return script_error(sc, "value longer than 16777215 bytes", NULL);
            if (vl / 2 > sc->vcap) {
                unsigned char *nb = realloc(sc->vbuf, vl / 2 + 1);
                if (!nb)
                    return script_error(sc, "out of memory", NULL);
                sc->vbuf = nb;
                sc->vcap = vl / 2 + 1;
            }
            long vn = unhex(tok[2], vl, sc->vbuf);
            if (vn < 0)
                return script_error(sc, "value is not even-length hex", NULL);
            if (vn == 0)
                return script_error(sc, "empty value (reserved)", NULL);
            rc = qmdb_batch_put(sc->batch, sc->kbuf, (size_t)kn, sc->vbuf, (size_t)vn);
        } else {
            rc = qmdb_batch_del(sc->batch, sc->kbuf, (size_t)kn);
        }
        if (rc)
            return script_error(sc, qmdb_strerror(rc), NULL);
        return 0;
    }
    if (strcmp(cmd, "commit") == 0) {
        if (nt != 1)
            return script_error(sc, "expected 'commit'", NULL);
        unsigned char root[32];
        int rc = qmdb_commit(sc->db, sc->height, sc->batch, root);
        if (rc)
            return db_fail("commit", rc, sc->db);
        sc->in_block = false;
        printf("%" PRIu64 " ", sc->height);
        print_hex(root, 32);
        printf("\n");
        fflush(stdout);
        return 0;
    }
    return script_error(sc, "unknown command", cmd);
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
    sc.kbuf = malloc(QMDB_MAX_KEY_LEN + 1);
    if (!sc.kbuf || qmdb_batch_new(&sc.batch) != 0) {
        fprintf(stderr, "qmdb apply: out of memory\n");
        rc = EXIT_DB;
        goto out;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, in) >= 0) {
        sc.line++;
        rc = script_line(&sc, line);
        if (rc)
            break;
    }
    free(line);
    if (!rc && ferror(in)) {
        fprintf(stderr, "qmdb apply: read error on %s\n", argv[1]);
        rc = EXIT_USAGE;
    }
    if (!rc && sc.in_block) {
        sc.line++;
        rc = script_error(&sc, "end of script inside a block (missing 'commit')", NULL);
    }
out:
    if (in != stdin)
        fclose(in);
    qmdb_batch_free(sc.batch);
    free(sc.kbuf);
    free(sc.vbuf);
    int crc = qmdb_close(sc.db);
    if (!rc && crc)
        rc = db_fail("close", crc, NULL);
    return rc;
}

static int
cmd_root(int argc, char **argv)
{
    uint64_t h = UINT64_MAX;
    if (argc == 3 && strcmp(argv[1], "--height") == 0) {
        if (!parse_u64(argv[2], &h)) {
            fprintf(stderr, "qmdb root: bad height '%s'\n", argv[2]);
            return EXIT_USAGE;
        }
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
    qmdb_close(db);
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
    qmdb_close(db);
    return rc;
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
    qmdb_stats st;
    qmdb_stat(db, &st);
    if (check) {
        unsigned char root[32];
        qmdb_root(db, UINT64_MAX, root);
        printf("ok: height %" PRIu64 ", %" PRIu64 " entries verified, root ", st.height,
               st.unpruned_entries);
        print_hex(root, 32);
        printf("\n");
        qmdb_close(db);
        return 0;
    }
    double live = st.live_entries ? (double)st.live_entries : 1.0;
    printf("height: %" PRIu64 "\n", st.height);
    printf("live entries: %" PRIu64 " (plus %" PRIu64 " sentries)\n", st.live_entries,
           st.live_with_sentries - st.live_entries);
    printf("total entries: %" PRIu64 " (unpruned: %" PRIu64 ", pruned twigs: %" PRIu64 ")\n",
           st.total_entries, st.unpruned_entries, st.pruned_twigs);
    printf("dram bytes per live entry: %.2f (indexer %.2f, tree %.2f)\n",
           (double)(st.index_dram_bytes + st.tree_dram_bytes) / live,
           (double)st.index_dram_bytes / live, (double)st.tree_dram_bytes / live);
    printf("ssd bytes per live entry: %.2f (entry files %.2f, twig files %.2f; total %" PRIu64
           " bytes)\n",
           (double)st.ssd_bytes / live, (double)st.entry_file_bytes / live,
           (double)st.twig_file_bytes / live, st.ssd_bytes);
    printf("parameters: compact_thres %" PRIu64 ", utilization %u/%u, history_blocks %" PRIu64
           "\n",
           st.compact_thres, st.utilization_ratio, st.utilization_div, st.history_blocks);
    qmdb_close(db);
    return 0;
}

int
main(int argc, char **argv)
{
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
        return cmd_stat(argc - 2, argv + 2, true);
    fprintf(stderr, "qmdb: unknown command '%s'\n", cmd);
    usage();
    return EXIT_USAGE;
}
