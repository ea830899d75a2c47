/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h -- what the files of the `qmdb` command-line tool share: exit codes, the command
 * table, the parsed arguments, error reporting, opening and closing a database, and the
 * JSON writer. The tool uses the public API (qmdb.h) only.
 *
 *   qmdb_cli.c    main: the command table with every help text, dispatch, `qmdb help`, the
 *                 JSON error object
 *   cli_args.c    the tool's global state and --version; the one argument parser
 *                 (getopt_long) for every subcommand, numbers, keys and values from the
 *                 command line, errors on stderr
 *   cli_db.c      opening and closing a database, library error codes to exit codes
 *   cli_json.c    a small JSON writer (one object per run, on stdout)
 *   cmd_write.c   init, apply (with progress), put, del
 *   cmd_read.c    root, get, stat, check
 *   cmd_proof.c   prove, verify
 *   cmd_sync.c    snapshot, restore, backup
 *   cmd_mproof.c  prove and verify of multi-key proofs (several KEYs)
 *   cmd_witness.c witness, verify-block (block witnesses)
 *
 * Single-threaded: one run, one command; the globals below belong to that run.
 * The manual (exit codes, options, JSON schemas) is man/qmdb.1.
 */
#ifndef QMDB_CLI_H
#define QMDB_CLI_H

#include "qmdb.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes: one table, documented in man/qmdb.1 and `qmdb --help`. */
enum {
    CLI_OK = 0,
    CLI_NOTFOUND = 1,  /* key absent, height above the latest, history pruned */
    CLI_USAGE = 2,     /* usage error or bad input (also: no database there, one exists) */
    CLI_DB = 3,        /* database or I/O error, corruption, failed check */
    CLI_BAD_PROOF = 4, /* the proof does not verify */
    CLI_BUSY = 5,      /* another process holds the database (QMDB_BUSY) */
};

/* Options every subcommand may accept; a command lists the ones it takes in a bit mask. */
typedef enum cli_opt {
    OPT_HELP,
    OPT_INDEXER,
    OPT_SALVAGE,
    OPT_JSON,
    OPT_STR,
    OPT_HEX,
    OPT_KEY_STR,
    OPT_VALUE_STR,
    OPT_HEIGHT,
    OPT_OUTPUT,
    OPT_COMPACT_THRES,
    OPT_UTILIZATION,
    OPT_HISTORY_BLOCKS,
    OPT_ENTRY_SEGMENT_BYTES,
    OPT_PROGRESS,
    OPT_QUIET,
    OPT_ROOT,
    OPT_KEY,
    OPT_VALUE,
    OPT_ABSENT,
    OPT_VERSION,
    OPT_VERIFY,
    OPT_PRE_ROOT,
    OPT_COUNT
} cli_opt;

#define CLI_OPT(o) (1u << (o))
/* Accepted by every subcommand: --help, and the global options also after the command. */
#define CLI_OPTS_COMMON (CLI_OPT(OPT_HELP) | CLI_OPT(OPT_INDEXER) | CLI_OPT(OPT_SALVAGE))
/* Keys (and values) as text or hex. */
#define CLI_OPTS_KEY (CLI_OPT(OPT_STR) | CLI_OPT(OPT_HEX) | CLI_OPT(OPT_KEY_STR))
#define CLI_OPTS_KV (CLI_OPTS_KEY | CLI_OPT(OPT_VALUE_STR))

#define CLI_MAX_POS 4097 /* prove DIR KEY...: up to 4096 keys */

/* The parsed command line of one subcommand. */
typedef struct cli_args {
    const char *pos[CLI_MAX_POS]; /* positional arguments, in order */
    int npos;
    bool json, key_str, value_str, progress, quiet, absent;
    bool verify; /* --verify: a verifying open (every unpruned entry hashed) */
    bool has_height;
    uint64_t height;                /* --height (has_height) */
    const char *output;             /* -o / --output */
    const char *root, *key, *value; /* verify: --root, --key, --value; verify-block: --pre-root */
    int next;                       /* stop_at_command: the index of the command in argv */
    qmdb_options create;            /* init: the creation options */
} cli_args;

struct cli_cmd;
typedef int (*cli_run_fn)(const struct cli_cmd *cmd, cli_args *a);

/* One subcommand: its options, positional arguments and help. */
typedef struct cli_cmd {
    const char *name;
    const char *args;    /* positional part of the synopsis, e.g. "DIR KEY" */
    const char *summary; /* one line, for `qmdb --help` */
    const char *help;    /* what it does, its options, its output (may be "") */
    const char *example;
    unsigned opts; /* CLI_OPT() bits it accepts */
    int min_pos, max_pos;
    cli_run_fn run;
    bool stop_at_command; /* the tool itself: options end at the first non-option */
} cli_cmd;

/* ---- the run's global state (qmdb_cli.c) ---------------------------------------------- */

extern const char *cli_name;      /* "qmdb" or "qmdb <command>", the prefix of every message */
extern uint32_t cli_indexer;      /* --indexer memory|hybrid (QMDB_INDEXER_*) */
extern bool cli_salvage;          /* --salvage */
extern bool cli_json;             /* --json: errors also as a JSON object on stdout */
extern bool cli_json_printed;     /* the command printed its own JSON object */
extern bool cli_stderr_line_open; /* a progress line without its newline is on stderr */

/* ---- cli_args.c ----------------------------------------------------------------------- */

/* Parses argv[1..argc) (argv[0] is the command's name) for cmd into a. Returns 0, CLI_USAGE
 * after printing why on stderr, or -1 when --help (or --version) printed the help on stdout
 * (exit 0). With cmd->stop_at_command, parsing stops at the first non-option, whose index is
 * then a->next. */
int cli_parse(const cli_cmd *cmd, int argc, char **argv, cli_args *a);
/* The help of cmd (synopsis, text, options, example) on f. */
void cli_print_help(const cli_cmd *cmd, FILE *f);
/* Parses --indexer's value; false after printing why. */
bool cli_parse_indexer(const char *s);

/* "qmdb CMD: <message>" on stderr; the first message of a run is kept for the JSON error
 * object. Returns code, so that `return cli_error(CLI_USAGE, ...)` reads naturally. */
int cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* As cli_error, but a warning: not kept, returns nothing. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The first error message of this run ("" if none). */
const char *cli_first_error(void);

/* Bytes from the command line: hex (optionally 0x-prefixed) or, with str, the text itself;
 * 1..max bytes. Returns a malloc'd buffer (caller frees) or NULL after cli_error(CLI_USAGE). */
unsigned char *cli_bytes(const char *what, const char *s, bool str, size_t max, size_t *len);
/* Decodes n hex digits into out (n/2 bytes); -1 if not even-length hex. */
long cli_unhex(const char *s, size_t n, unsigned char *out);
/* Lower-case hex of p[0..n) on f. */
void cli_print_hex(FILE *f, const unsigned char *p, size_t n);

/* ---- cli_db.c ------------------------------------------------------------------------- */

/* The exit code of a library return code (QMDB_BUSY -> CLI_BUSY, ...). */
int cli_exit_code(int rc);
/* Reports a library failure ("what: reason: detail"; what may be NULL) and returns its exit
 * code. db gives the detail (qmdb_last_error), or NULL for qmdb_open_error(). */
int cli_db_fail(const char *what, int rc, qmdb_db *db);
/* Opens dir with the global --indexer and --salvage; returns 0 or an exit code (reported). */
int cli_open(const char *dir, uint32_t flags, qmdb_db **db);
/* Closes db; QMDB_NO_CHECKPOINT is a warning (returns 0). Returns 0 or an exit code. */
int cli_close(qmdb_db *db);

/* ---- cli_json.c ----------------------------------------------------------------------- */

/* A JSON writer for one value on a stream: keys are given with each member (NULL inside
 * arrays and for the top-level value). Strings are escaped and made valid UTF-8 (invalid
 * bytes become U+FFFD); numbers are unsigned integers or finite doubles. */
typedef struct cli_json_w {
    FILE *f;
    int depth;
    bool first[16]; /* no member written yet at this depth */
} cli_json_w;

void json_begin(cli_json_w *w, FILE *f); /* starts the top-level object */
void json_end(cli_json_w *w);            /* ends it, with a newline; marks cli_json_printed */
void json_object(cli_json_w *w, const char *key);
void json_object_end(cli_json_w *w);
void json_array(cli_json_w *w, const char *key);
void json_array_end(cli_json_w *w);
void json_u64(cli_json_w *w, const char *key, uint64_t v);
void json_double(cli_json_w *w, const char *key, double v);
void json_bool(cli_json_w *w, const char *key, bool v);
void json_null(cli_json_w *w, const char *key);
void json_str(cli_json_w *w, const char *key, const char *s);
void json_strn(cli_json_w *w, const char *key, const char *s, size_t n);
void json_hex(cli_json_w *w, const char *key, const unsigned char *p, size_t n);
/* The error object {"error": msg, "code": code, "kind": ...} on stdout. */
void json_error(const char *msg, int code);

/* ---- the subcommands ------------------------------------------------------------------ */

int cmd_init(const cli_cmd *cmd, cli_args *a);
int cmd_apply(const cli_cmd *cmd, cli_args *a);
int cmd_put(const cli_cmd *cmd, cli_args *a);
int cmd_del(const cli_cmd *cmd, cli_args *a);
int cmd_rollback(const cli_cmd *cmd, cli_args *a);
int cmd_root(const cli_cmd *cmd, cli_args *a);
int cmd_get(const cli_cmd *cmd, cli_args *a);
int cmd_stat(const cli_cmd *cmd, cli_args *a);
int cmd_check(const cli_cmd *cmd, cli_args *a);
int cmd_prove(const cli_cmd *cmd, cli_args *a);
int cmd_verify(const cli_cmd *cmd, cli_args *a);
int cmd_snapshot(const cli_cmd *cmd, cli_args *a);
int cmd_restore(const cli_cmd *cmd, cli_args *a);
int cmd_backup(const cli_cmd *cmd, cli_args *a);
int cmd_help(const cli_cmd *cmd, cli_args *a); /* qmdb_cli.c */
/* cmd_mproof.c: prove with several KEYs (pos[1..]); verify with KEYs after FILE (buf, len:
 * the file's bytes); whether bytes are a multi-key proof (magic and key count). */
int cmd_prove_many(cli_args *a);
int cmd_verify_many(cli_args *a, const unsigned char root[32], const unsigned char *buf,
                    size_t len);
bool cli_is_mproof(const unsigned char *buf, size_t len);
int cmd_witness(const cli_cmd *cmd, cli_args *a);      /* cmd_witness.c */
int cmd_verify_block(const cli_cmd *cmd, cli_args *a); /* cmd_witness.c */
/* cmd_proof.c: reads all of path ("-": stdin), at most 64 MiB; 0 or an errno value, with
 * *opened telling whether the file could be opened at all. */
int cli_read_all(const char *path, unsigned char **out, size_t *outlen, bool *opened);
/* cmd_proof.c: writes len bytes to path, or to stdout when path is NULL; 0 or a CLI error. */
int cli_write_bytes(const char *path, const uint8_t *buf, size_t len);
void cli_print_version(void); /* cli_args.c */
/* Open flags of a read-only command: a fast open (the youngest twig hashed, not every
 * entry), or a verifying one with --verify. */
uint32_t cli_read_flags(const cli_args *a); /* cli_args.c */

#endif /* QMDB_CLI_H */
