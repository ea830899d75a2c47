/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_args.c -- the one argument parser of the `qmdb` tool, shared by every subcommand, and
 * what it needs: the option table, numbers (script_parse_u64: digits only), keys and values
 * from the command line (hex or text), and error messages on stderr.
 *
 * The parser is glibc's getopt_long in "return in order" mode (optstring "-:..."), so that
 * options and positional arguments mix in any order, also under POSIXLY_CORRECT. Each
 * command accepts only its own options (a bit mask in its cli_cmd); long options must be
 * written in full (an abbreviation would silently change meaning when an option is added),
 * as "--name VALUE" or "--name=VALUE"; "--" ends the options. Nothing here touches a
 * database, so a bad command line never creates or changes anything.
 *
 * Single-threaded (getopt keeps global state).
 */
#include "cli.h"
#include "script.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The tool's global state (cli.h): set by the parser and main, read by every command. */
const char *cli_name = "qmdb";
uint32_t cli_indexer = QMDB_INDEXER_AUTO;
bool cli_salvage;
bool cli_json;
bool cli_json_printed;
bool cli_stderr_line_open;

void
cli_print_version(void)
{
    printf("qmdb %s (on-disk format %d, proof format %d)\n", qmdb_version(), QMDB_FORMAT_VERSION,
           QMDB_PROOF_FORMAT_VERSION);
}

uint32_t
cli_read_flags(const cli_args *a)
{
    return QMDB_OPEN_RDONLY | (a->verify ? 0 : QMDB_OPEN_FAST);
}

static const struct {
    const char *name;
    int has_arg;
} opt_table[OPT_COUNT] = {
    [OPT_HELP] = {"help", no_argument},
    [OPT_INDEXER] = {"indexer", required_argument},
    [OPT_SALVAGE] = {"salvage", no_argument},
    [OPT_JSON] = {"json", no_argument},
    [OPT_STR] = {"str", no_argument},
    [OPT_HEX] = {"hex", no_argument},
    [OPT_KEY_STR] = {"key-str", no_argument},
    [OPT_VALUE_STR] = {"value-str", no_argument},
    [OPT_HEIGHT] = {"height", required_argument},
    [OPT_OUTPUT] = {"output", required_argument},
    [OPT_COMPACT_THRES] = {"compact-thres", required_argument},
    [OPT_UTILIZATION] = {"utilization", required_argument},
    [OPT_HISTORY_BLOCKS] = {"history-blocks", required_argument},
    [OPT_ENTRY_SEGMENT_BYTES] = {"entry-segment-bytes", required_argument},
    [OPT_PROGRESS] = {"progress", no_argument},
    [OPT_QUIET] = {"quiet", no_argument},
    [OPT_ROOT] = {"root", required_argument},
    [OPT_KEY] = {"key", required_argument},
    [OPT_VALUE] = {"value", required_argument},
    [OPT_ABSENT] = {"absent", no_argument},
    [OPT_VERSION] = {"version", no_argument},
    [OPT_VERIFY] = {"verify", no_argument},
    [OPT_PRE_ROOT] = {"pre-root", required_argument},
};

/* getopt_long's value for a long option: above every character. */
#define LONG_BASE 256

/* ---- messages ---------------------------------------------------------------------------- */

static char first_error[512];

static void vreport(bool keep, const char *prefix, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void
vreport(bool keep, const char *prefix, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (cli_stderr_line_open) {
        fputc('\n', stderr);
        cli_stderr_line_open = false;
    }
    fprintf(stderr, "%s: %s%s\n", cli_name, prefix, msg);
    if (keep && !first_error[0])
        snprintf(first_error, sizeof(first_error), "%s", msg);
}

int
cli_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(true, "", fmt, ap);
    va_end(ap);
    return code;
}

void
cli_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(false, "warning: ", fmt, ap);
    va_end(ap);
}

const char *
cli_first_error(void)
{
    return first_error;
}

/* ---- bytes and numbers ------------------------------------------------------------------- */

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

long
cli_unhex(const char *s, size_t n, unsigned char *out)
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

void
cli_print_hex(FILE *f, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", p[i]);
}

unsigned char *
cli_bytes(const char *what, const char *s, bool str, size_t max, size_t *len)
{
    size_t n = strlen(s);
    unsigned char *out = malloc(n ? n : 1);
    if (!out) {
        cli_error(CLI_USAGE, "out of memory");
        return NULL;
    }
    if (str) {
        memcpy(out, s, n);
        *len = n;
    } else {
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
            s += 2;
            n -= 2;
        }
        long got = cli_unhex(s, n, out);
        if (got < 0) {
            free(out);
            cli_error(CLI_USAGE, "%s must be even-length hex (or use --str)", what);
            return NULL;
        }
        *len = (size_t)got;
    }
    if (*len == 0 || *len > max) {
        free(out);
        cli_error(CLI_USAGE, "%s must be 1..%zu bytes", what, max);
        return NULL;
    }
    return out;
}

/* A number argument of option `opt`: digits only (script_parse_u64), at most max. */
static bool
arg_u64(const char *opt, const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v;
    if (!script_parse_u64(s, strlen(s), &v)) {
        cli_error(CLI_USAGE,
                  "%s wants an unsigned decimal number (digits only, below 2^64), got '%s'", opt,
                  s);
        return false;
    }
    if (v > max) {
        cli_error(CLI_USAGE, "%s %s is too large (at most %" PRIu64 ")", opt, s, max);
        return false;
    }
    *out = v;
    return true;
}

/* --utilization R/D: the engine compacts a shard once live/total <= R/D; a ratio above 1
 * would mean the same as 1/1, so only 1 <= R <= D (both 32-bit) is accepted. */
static bool
arg_utilization(const char *s, uint32_t *ratio, uint32_t *div)
{
    const char *slash = strchr(s, '/');
    uint64_t r, d;
    if (!slash || !script_parse_u64(s, (size_t)(slash - s), &r) ||
        !script_parse_u64(slash + 1, strlen(slash + 1), &d) || r == 0 || r > d || d > UINT32_MAX) {
        cli_error(CLI_USAGE,
                  "--utilization wants R/D, unsigned decimal numbers with 1 <= R <= D <= "
                  "%" PRIu32 ", got '%s'",
                  UINT32_MAX, s);
        return false;
    }
    *ratio = (uint32_t)r;
    *div = (uint32_t)d;
    return true;
}

bool
cli_parse_indexer(const char *s)
{
    if (strcmp(s, "memory") == 0)
        cli_indexer = QMDB_INDEXER_MEMORY;
    else if (strcmp(s, "hybrid") == 0)
        cli_indexer = QMDB_INDEXER_HYBRID;
    else
        return cli_error(CLI_USAGE, "--indexer wants 'memory' or 'hybrid', got '%s'", s), false;
    return true;
}

/* ---- help -------------------------------------------------------------------------------- */

void
cli_print_help(const cli_cmd *cmd, FILE *f)
{
    if (cmd->stop_at_command) { /* the tool's own help */
        fputs(cmd->help, f);
        return;
    }
    fprintf(f, "usage: qmdb %s [OPTIONS] %s\n%s\n", cmd->name, cmd->args, cmd->summary);
    if (cmd->help[0])
        fprintf(f, "\n%s", cmd->help);
    fprintf(f, "\n  -h, --help             this help\n"
               "  --indexer memory|hybrid, --salvage\n"
               "                         global options (qmdb --help); accepted here too\n");
    fprintf(f, "\nExample:\n%s", cmd->example);
}

/* The name of positional argument k: the synopsis ends with the max_pos positional words
 * ("DIR KEY VALUE", or "... FILE" after verify's options). A synopsis with a repeated last
 * argument ("DIR KEY...", "... FILE KEY...)") names one word before it and then that word. */
static void
arg_word(const cli_cmd *cmd, int k, char out[32])
{
    int words = 1;
    for (const char *q = cmd->args; *q; q++)
        words += *q == ' ';
    int skip0 = words - cmd->max_pos + k;
    const char *dots = strstr(cmd->args, "...");
    if (dots && cmd->max_pos > words) {
        int at = 0; /* index of the word holding "..." */
        for (const char *q = cmd->args; q < dots; q++)
            at += *q == ' ';
        skip0 = at - 1 + (k > 0 ? 1 : 0);
    }
    const char *p = cmd->args;
    for (int skip = skip0; skip > 0 && p; skip--) {
        p = strchr(p, ' ');
        p = p ? p + 1 : NULL;
    }
    size_t n = p ? strcspn(p, " .()|") : 0;
    snprintf(out, 32, "%.*s", (int)(n < 31 ? n : 31), p ? p : "");
}

static int
usage_error(const cli_cmd *cmd)
{
    if (cmd->stop_at_command) {
        fprintf(stderr, "usage: qmdb [OPTIONS] COMMAND [ARGS]  (qmdb --help for more)\n");
        return CLI_USAGE;
    }
    fprintf(stderr, "usage: qmdb %s [OPTIONS] %s\n(qmdb %s --help for more)\n", cmd->name,
            cmd->args, cmd->name);
    return CLI_USAGE;
}

/* ---- the parser -------------------------------------------------------------------------- */

/* Applies option o (with its value v, or NULL) to a. */
static bool
apply_opt(cli_opt o, const char *v, cli_args *a)
{
    switch (o) {
    case OPT_INDEXER:
        return cli_parse_indexer(v);
    case OPT_SALVAGE:
        cli_salvage = true;
        break;
    case OPT_VERIFY:
        a->verify = true;
        break;
    case OPT_JSON:
        a->json = cli_json = true;
        break;
    case OPT_STR:
        a->key_str = a->value_str = true;
        break;
    case OPT_HEX:
        a->key_str = a->value_str = false;
        break;
    case OPT_KEY_STR:
        a->key_str = true;
        break;
    case OPT_VALUE_STR:
        a->value_str = true;
        break;
    case OPT_HEIGHT:
        /* UINT64_MAX means "latest" in the API, so it is no height. */
        a->has_height = true;
        return arg_u64("--height", v, UINT64_MAX - 1, &a->height);
    case OPT_OUTPUT:
        a->output = v;
        break;
    case OPT_COMPACT_THRES:
        return arg_u64("--compact-thres", v, UINT64_MAX, &a->create.compact_thres);
    case OPT_HISTORY_BLOCKS:
        return arg_u64("--history-blocks", v, UINT64_MAX, &a->create.history_blocks);
    case OPT_ENTRY_SEGMENT_BYTES:
        return arg_u64("--entry-segment-bytes", v, UINT64_MAX, &a->create.entry_segment_bytes);
    case OPT_UTILIZATION:
        return arg_utilization(v, &a->create.utilization_ratio, &a->create.utilization_div);
    case OPT_PROGRESS:
        a->progress = true;
        break;
    case OPT_QUIET:
        a->quiet = true;
        break;
    case OPT_ROOT:
    case OPT_PRE_ROOT:
        a->root = v;
        break;
    case OPT_KEY:
        a->key = v;
        break;
    case OPT_VALUE:
        a->value = v;
        break;
    case OPT_ABSENT:
        a->absent = true;
        break;
    case OPT_HELP:
    case OPT_VERSION:
    case OPT_COUNT:
        break;
    }
    return true;
}

/* True if argument s spells long option `name` in full ("--name" or "--name=..."). */
static bool
spelled_in_full(const char *s, const char *name)
{
    size_t n = strlen(name);
    return strncmp(s, "--", 2) == 0 && strncmp(s + 2, name, n) == 0 &&
           (s[2 + n] == '\0' || s[2 + n] == '=');
}

int
cli_parse(const cli_cmd *cmd, int argc, char **argv, cli_args *a)
{
    struct option lo[OPT_COUNT + 1];
    int n = 0;
    /* In order (or, for the tool itself, up to the command); a missing value is ':'. */
    char shorts[8];
    strcpy(shorts, cmd->stop_at_command ? "+:" : "-:");
    for (int o = 0; o < OPT_COUNT; o++) {
        if (!(cmd->opts & CLI_OPT(o)))
            continue;
        lo[n++] = (struct option){opt_table[o].name, opt_table[o].has_arg, NULL, LONG_BASE + o};
        if (o == OPT_HELP)
            strcat(shorts, "h");
        if (o == OPT_OUTPUT)
            strcat(shorts, "o:");
    }
    lo[n] = (struct option){0};
    memset(a, 0, sizeof(*a));
    qmdb_options_init(&a->create);
    a->json = cli_json;
    optind = 0; /* a full reset of getopt's state */
    opterr = 0;
    for (;;) {
        int at = optind ? optind : 1; /* the argument being looked at (in-order mode) */
        int li = -1;
        optopt = 0;
        int c = getopt_long(argc, argv, shorts, lo, &li);
        if (c == -1)
            break;
        if (c == 1) { /* a positional argument */
            if (a->npos == cmd->max_pos || a->npos == CLI_MAX_POS) {
                cli_error(CLI_USAGE, "unexpected argument '%s'", optarg);
                return usage_error(cmd);
            }
            a->pos[a->npos++] = optarg;
            continue;
        }
        if (c == '?') {
            if (optopt >= LONG_BASE)
                cli_error(CLI_USAGE, "--%s takes no value", opt_table[optopt - LONG_BASE].name);
            else if (optopt)
                cli_error(CLI_USAGE, "unknown option '-%c'", optopt);
            else
                cli_error(CLI_USAGE, "unknown option '%s'", argv[at]);
            return usage_error(cmd);
        }
        if (c == ':') {
            int o = optopt >= LONG_BASE ? optopt - LONG_BASE : OPT_OUTPUT;
            cli_error(CLI_USAGE, "--%s needs a value", opt_table[o].name);
            return usage_error(cmd);
        }
        int o = c == 'h' ? OPT_HELP : c == 'o' ? OPT_OUTPUT : c - LONG_BASE;
        if (li >= 0 && !spelled_in_full(argv[at], opt_table[o].name)) {
            cli_error(CLI_USAGE, "unknown option '%s' (long options are written in full)",
                      argv[at]);
            return usage_error(cmd);
        }
        if (o == OPT_HELP || o == OPT_VERSION) {
            if (o == OPT_HELP)
                cli_print_help(cmd, stdout);
            else
                cli_print_version();
            return -1;
        }
        if (!apply_opt((cli_opt)o, optarg, a))
            return CLI_USAGE;
    }
    if (cmd->stop_at_command) {
        a->next = optind;
        return 0;
    }
    for (; optind < argc; optind++) { /* after "--" */
        if (a->npos == cmd->max_pos || a->npos == CLI_MAX_POS) {
            cli_error(CLI_USAGE, "unexpected argument '%s'", argv[optind]);
            return usage_error(cmd);
        }
        a->pos[a->npos++] = argv[optind];
    }
    if (a->npos < cmd->min_pos) {
        char w[32];
        arg_word(cmd, a->npos, w);
        cli_error(CLI_USAGE, "missing %s", w);
        return usage_error(cmd);
    }
    return 0;
}
