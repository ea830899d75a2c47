/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qmdb_cli.c -- main of the `qmdb` command-line tool: the global options, the table of
 * subcommands with every help text, dispatch, `qmdb help`, --version, and the JSON error
 * object of a failed --json run. The other files of the tool are listed in cli.h; its manual
 * (subcommands, options, exit codes, JSON schemas) is man/qmdb.1. Uses the public API
 * (qmdb.h) only. Single-threaded.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char tool_help[] =
    "usage: qmdb [GLOBAL OPTIONS] COMMAND [OPTIONS] ARGS...\n"
    "A verifiable key-value store: every committed block has a Merkle state root.\n"
    "\n"
    "Commands:\n"
    "  init DIR             create an empty database (height 0)\n"
    "  apply DIR SCRIPT     apply an op script ('-': stdin); \"<height> <root>\" per commit\n"
    "  put DIR KEY VALUE    commit one put as the next height; prints \"<height> <root>\"\n"
    "  del DIR KEY          commit one delete as the next height; prints \"<height> <root>\"\n"
    "  rollback DIR HEIGHT  go back to block HEIGHT (a reorg); prints \"<height> <root>\"\n"
    "  root DIR             print \"<height> <root>\" of the latest (or --height H) block\n"
    "  get DIR KEY          print KEY's value\n"
    "  stat DIR             entries, DRAM and SSD bytes per live entry, parameters\n"
    "  check DIR            full offline check of every file\n"
    "  prove DIR KEY...     write a proof of the KEYs' values or absence\n"
    "  verify FILE          check a proof against a trusted state root\n"
    "  snapshot DIR OUTDIR  write the committed state as verifiable chunks and a manifest\n"
    "  restore NEWDIR INDIR build a database from a snapshot, trusting only --root\n"
    "  backup DIR OUTDIR    a consistent, verified copy of a (live) database\n"
    "  witness DIR          write the witness of a block (stateless validation)\n"
    "  verify-block W S     recompute a block's post-state root from its witness\n"
    "  help [COMMAND]       this help, or the help of COMMAND\n"
    "\n"
    "Global options (before or after the command):\n"
    "  --indexer memory|hybrid\n"
    "                       the indexer of every open (default memory); roots never depend on it\n"
    "  --salvage            open although one META slot is damaged, at the older height; a\n"
    "                       writing command then repairs the slot (blocks after it are lost)\n"
    "  -h, --help           this help ('qmdb COMMAND --help' for a command's)\n"
    "  --json               JSON output, for the commands that have it (also after them)\n"
    "  --version            the library version and the on-disk format version\n"
    "\n"
    "Options and arguments mix in any order; long options are written in full, as --name VALUE\n"
    "or --name=VALUE; '--' ends the options. Keys and values are hex (optionally 0x-prefixed)\n"
    "unless --str, --key-str or --value-str says text. Numbers are unsigned decimal: digits\n"
    "only, no blanks, sign or 0x, below 2^64.\n"
    "\n"
    "Exit codes:\n"
    "  0  success\n"
    "  1  not found: a key, a height above the latest, pruned history\n"
    "  2  usage error or bad input (also: no database in DIR, or one already there)\n"
    "  3  database or I/O error: corruption, a failed check, a script that cannot be read\n"
    "  4  the proof does not verify\n"
    "  5  busy: another writer has the database open (readers never are busy, unless a\n"
    "     writer changed the database during each of 50 attempts to open it)\n"
    "With --json, a failure also prints {\"error\": MESSAGE, \"code\": EXIT, \"kind\": NAME}\n"
    "on stdout. Manual: man qmdb (man/qmdb.1).\n";

static const cli_cmd tool = {
    .name = "qmdb",
    .args = "COMMAND",
    .summary = "",
    .help = tool_help,
    .example = "",
    .opts = CLI_OPTS_COMMON | CLI_OPT(OPT_VERSION) | CLI_OPT(OPT_JSON),
    .min_pos = 0,
    .max_pos = 0,
    .stop_at_command = true,
};

static const cli_cmd commands[] = {
    {"init", "DIR", "Creates an empty database (height 0) in DIR (made if missing).",
     "The creation options are stored with the database and change its roots:\n"
     "  --compact-thres N        a shard is compacted once it has N live entries or more\n"
     "                           and its utilization is at most R/D (default 20000000)\n"
     "  --utilization R/D        1 <= R <= D (default 7/10)\n"
     "  --history-blocks N       blocks of history kept for historical proofs (default 100000)\n"
     "  --entry-segment-bytes N  size of one entry-file segment: a multiple of 4096, at least\n"
     "                           65536 (default 1073741824)\n"
     "Prints nothing. Exit 2 if DIR already holds a database.\n",
     "  qmdb init /var/lib/qmdb --history-blocks 1000\n",
     CLI_OPTS_COMMON | CLI_OPT(OPT_COMPACT_THRES) | CLI_OPT(OPT_UTILIZATION) |
         CLI_OPT(OPT_HISTORY_BLOCKS) | CLI_OPT(OPT_ENTRY_SEGMENT_BYTES),
     1, 1, cmd_init, false},
    {"apply", "DIR SCRIPT",
     "Applies the op script SCRIPT ('-': stdin) block by block; prints \"<height> <root>\" on\n"
     "stdout as each block is durable.",
     "Script lines: 'block H', 'tx', 'put KEYHEX VALHEX', 'del KEYHEX', 'commit', '#' comments.\n"
     "A bad line is reported with its line number and nothing of its block is committed.\n"
     "  --progress   blocks and ops per second on stderr, about once a second, and a\n"
     "               summary at the end (the default when stderr is a terminal)\n"
     "  --quiet      no progress, even on a terminal\n",
     "  qmdb apply /var/lib/qmdb blocks.ops --progress\n"
     "  printf 'block 1\\nput 616c696365 08\\ncommit\\n' | qmdb apply /var/lib/qmdb -\n",
     CLI_OPTS_COMMON | CLI_OPT(OPT_PROGRESS) | CLI_OPT(OPT_QUIET), 2, 2, cmd_apply, false},
    {"put", "DIR KEY VALUE",
     "Commits one block, the next height, that puts VALUE under KEY; prints\n"
     "\"<height> <root>\".",
     "  --str        KEY and VALUE are text (default: hex, optionally 0x-prefixed)\n"
     "  --hex        KEY and VALUE are hex (the default)\n"
     "  --key-str    KEY is text\n"
     "  --value-str  VALUE is text\n"
     "  --json       {\"height\": H, \"root\": HEX}\n",
     "  qmdb put /var/lib/qmdb alice 'hello world' --str\n",
     CLI_OPTS_COMMON | CLI_OPTS_KV | CLI_OPT(OPT_JSON), 3, 3, cmd_put, false},
    {"del", "DIR KEY",
     "Commits one block, the next height, that deletes KEY; prints \"<height> <root>\".\n"
     "If KEY has no value, nothing is committed and the exit code is 1.",
     "  --str, --key-str  KEY is text (default: hex, optionally 0x-prefixed)\n"
     "  --hex             KEY is hex (the default)\n"
     "  --json            {\"height\": H, \"root\": HEX}\n",
     "  qmdb del /var/lib/qmdb alice --str\n", CLI_OPTS_COMMON | CLI_OPTS_KEY | CLI_OPT(OPT_JSON),
     2, 2, cmd_del, false},
    {"rollback", "DIR HEIGHT",
     "Rolls the database back to committed block HEIGHT (a chain reorganization): the blocks\n"
     "after it are discarded, and the next block to commit is HEIGHT + 1. Prints\n"
     "\"<height> <root>\" of HEIGHT once that is durable (one atomic step: after a crash the\n"
     "database is at the old height or at HEIGHT).",
     "The window: HEIGHT must be at most history-blocks blocks (and 2^20) below the highest\n"
     "height ever committed, blocks discarded by earlier rollbacks included (their pruning\n"
     "is not undone). Exit 1 if HEIGHT is outside the window, 2 if it is above the latest\n"
     "(nothing changed in either case).\n"
     "HEIGHT equal to the latest changes nothing.\n"
     "  --json       {\"height\": H, \"root\": HEX, \"from_height\": L, \"blocks_undone\": N}\n",
     "  qmdb rollback /var/lib/qmdb 41\n", CLI_OPTS_COMMON | CLI_OPT(OPT_JSON), 2, 2, cmd_rollback,
     false},
    {"root", "DIR", "Prints \"<height> <root>\": the state root of the latest committed block.",
     "  --height H   the root of block H instead (exit 1 if H is above the latest)\n"
     "  --json       {\"height\": H, \"root\": HEX}\n"
     "  --verify     hash every unpruned entry at open, as `check` does (default: a fast open)\n",
     "  qmdb root /var/lib/qmdb --height 2\n",
     CLI_OPTS_COMMON | CLI_OPT(OPT_HEIGHT) | CLI_OPT(OPT_JSON) | CLI_OPT(OPT_VERIFY), 1, 1,
     cmd_root, false},
    {"get", "DIR KEY",
     "Prints the value of KEY in hex; exit 1 and \"not found\" on stderr if it has none.",
     "  --str        KEY is text, and the value is printed as it is (raw bytes, then a newline)\n"
     "  --hex        KEY is hex and the value is printed in hex (the default)\n"
     "  --key-str    KEY is text (the value stays hex)\n"
     "  --value-str  the value is printed as it is\n"
     "  --json       {\"key\": HEX, \"value\": HEX, \"length\": N}\n"
     "  --verify     hash every unpruned entry at open, as `check` does (default: a fast open)\n",
     "  qmdb get /var/lib/qmdb alice --key-str\n",
     CLI_OPTS_COMMON | CLI_OPTS_KV | CLI_OPT(OPT_JSON) | CLI_OPT(OPT_VERIFY), 2, 2, cmd_get, false},
    {"stat", "DIR",
     "Prints the height, live and total entries, pruned twigs, DRAM and SSD bytes per live\n"
     "entry (n/a without live entries), the indexer and the creation parameters.",
     "  --json       one object; per-entry figures are numbers, or null without live entries\n"
     "  --verify     hash every unpruned entry at open, as `check` does (default: a fast open)\n",
     "  qmdb stat /var/lib/qmdb --json\n",
     CLI_OPTS_COMMON | CLI_OPT(OPT_JSON) | CLI_OPT(OPT_VERIFY), 1, 1, cmd_stat, false},
    {"check", "DIR",
     "Checks every file of the database offline: both META slots, every unpruned entry and\n"
     "root, ROOTS, the index. Prints \"ok: ...\" (exit 0), or each problem with its file and\n"
     "offset and \"FAILED: ...\" (exit 3).",
     "  --json       {\"ok\": BOOL, \"problem_count\": N, \"problems\": [TEXT...], ...}\n",
     "  qmdb check /var/lib/qmdb\n", CLI_OPTS_COMMON | CLI_OPT(OPT_JSON), 1, 1, cmd_check, false},
    {"prove", "DIR KEY...",
     "Writes a proof of KEY's value (inclusion) or absence (exclusion) at the latest height,\n"
     "or at --height H, against the latest root; a summary line goes to stdout with -o, else\n"
     "to stderr. Several KEYs (up to 4096) give one multi-key proof that answers each of them\n"
     "and holds every shared entry and node once. docs/PROOFS.md describes both formats.",
     "  -o, --output FILE  write the proof to FILE (default: stdout, not a terminal)\n"
     "  --height H         the proof is about block H (history)\n"
     "  --str, --key-str   KEY is text (default: hex)\n"
     "  --hex              KEY is hex (the default)\n"
     "  --json             the proof's header, and the proof in hex, as one object on stdout\n"
     "  --verify           hash every unpruned entry at open (default: a fast open)\n",
     "  qmdb prove /var/lib/qmdb alice --str -o alice.proof\n"
     "  qmdb prove /var/lib/qmdb alice bob carol --str --height 7 -o abc.proof\n",
     CLI_OPTS_COMMON | CLI_OPTS_KEY | CLI_OPT(OPT_HEIGHT) | CLI_OPT(OPT_OUTPUT) |
         CLI_OPT(OPT_JSON) | CLI_OPT(OPT_VERIFY),
     2, CLI_MAX_POS, cmd_prove, false},
    {"verify", "--root HEX (--key KEY (--value VALUE | --absent) FILE | FILE KEY...)",
     "Checks the proof in FILE ('-': stdin) against the trusted state root: prints \"valid\",\n"
     "or \"invalid: <reason>\" and exits 4. A multi-key proof is checked for the KEYs given\n"
     "after FILE (the list it was made for, in order): each valid answer prints a line \"KEY\n"
     "VALUE\" or \"KEY absent\", then \"valid (height H, N keys)\".",
     "  --root HEX        the trusted root: 64 hex digits, or \"<height> <root>\" as qmdb root\n"
     "                    prints it\n"
     "  --key KEY         the key the proof is about\n"
     "  --value VALUE     claim: KEY has this value\n"
     "  --absent          claim: KEY has no value\n"
     "  --height H        claim: ... at block H (default: at the root's height)\n"
     "  --str             KEY and VALUE are text (default: hex); --key-str, --value-str: one\n"
     "  --hex             KEY and VALUE are hex (the default)\n"
     "  --json            {\"valid\": BOOL, ...}\n",
     "  qmdb verify --root \"$(qmdb root /var/lib/qmdb)\" --key alice --value 08 --key-str \\\n"
     "      alice.proof\n"
     "  qmdb verify --root \"$(qmdb root /var/lib/qmdb)\" --height 7 --str abc.proof alice bob \\\n"
     "      carol\n",
     CLI_OPTS_COMMON | CLI_OPTS_KV | CLI_OPT(OPT_HEIGHT) | CLI_OPT(OPT_ROOT) | CLI_OPT(OPT_KEY) |
         CLI_OPT(OPT_VALUE) | CLI_OPT(OPT_ABSENT) | CLI_OPT(OPT_JSON),
     1, CLI_MAX_POS, cmd_verify, false},
    {"snapshot", "DIR OUTDIR",
     "Writes the committed state of DIR (its latest height, or --height H) into OUTDIR as\n"
     "chunks, each\n"
     "verifiable on its own against the state root, and a MANIFEST listing them; prints\n"
     "\"<height> <root>\". A writer may keep committing meanwhile: the snapshot holds the\n"
     "height DIR had when it was opened. docs/SYNC.md describes the format.",
     "  --height H   export block H instead: H must lie in the rollback window (exit 1 if\n"
     "               it does not, or if it is above the latest)\n"
     "  --json       {\"height\": H, \"root\": HEX, \"chunks\": N, \"bytes\": N, \"live\": N}\n"
     "  --verify     hash every unpruned entry at open (default: a fast open)\n",
     "  qmdb snapshot /var/lib/qmdb /srv/snap\n",
     CLI_OPTS_COMMON | CLI_OPT(OPT_HEIGHT) | CLI_OPT(OPT_JSON) | CLI_OPT(OPT_VERIFY), 2, 2,
     cmd_snapshot, false},
    {"restore", "NEWDIR --root HEX INDIR",
     "Builds the new database NEWDIR from the snapshot in INDIR, trusting only the state root\n"
     "given (from a block header): every chunk is checked against it before it is kept, in\n"
     "any order; a rejected chunk is named on stderr (exit 4) and the good ones stay kept;\n"
     "with chunks missing it exits 1, and a later run continues. Once every chunk is kept\n"
     "the database is built, opened with full verification, and \"<height> <root>\" printed.",
     "  --root HEX   the trusted root: 64 hex digits, or \"<height> <root>\"\n"
     "  --height H   the trusted height (default: the manifest's)\n"
     "  --quiet      do not name the missing chunks\n"
     "  --json       {\"complete\": BOOL, \"height\": H, \"accepted\": N, ...}\n",
     "  qmdb restore /var/lib/qmdb2 --root \"$(qmdb root /var/lib/qmdb)\" /srv/snap\n",
     CLI_OPTS_COMMON | CLI_OPT(OPT_HEIGHT) | CLI_OPT(OPT_ROOT) | CLI_OPT(OPT_JSON) |
         CLI_OPT(OPT_QUIET),
     2, 2, cmd_restore, false},
    {"backup", "DIR OUTDIR",
     "Writes a consistent copy of DIR into OUTDIR (created; it must not hold a database) and\n"
     "prints \"<height> <root>\" of the copy. DIR is opened read-only: a writer may keep\n"
     "committing, and the copy holds the height DIR had when it was opened. The copy is\n"
     "opened with full verification before the command succeeds. Not copied: the rollback\n"
     "records (the copy rolls back only to heights it commits itself) and the index\n"
     "checkpoint (rebuilt at the copy's first open).",
     "  --json       {\"height\": H, \"root\": HEX}\n"
     "  --verify     hash every unpruned entry of DIR at open (default: a fast open)\n",
     "  qmdb backup /var/lib/qmdb /backup/qmdb-$(date +%F)\n",
     CLI_OPTS_COMMON | CLI_OPT(OPT_JSON) | CLI_OPT(OPT_VERIFY), 2, 2, cmd_backup, false},
    {"witness", "DIR [SCRIPT]",
     "Writes the witness of block H (--height): what a verifier without the database needs\n"
     "to recompute the block's post-state root from the root of H-1 (docs/PROOFS.md §10).\n"
     "SCRIPT holds block H as an op script (the form `qmdb apply` reads); without it the\n"
     "witness is built from the log and does not cover deletes of absent keys.",
     "  --height H         the block to witness (required; H-1 must be in the history window)\n"
     "  -o, --output FILE  write the witness to FILE (default: stdout, not a terminal)\n"
     "  --verify           hash every unpruned entry at open (default: a fast open)\n",
     "  qmdb witness /var/lib/qmdb --height 7 -o b7.witness b7.ops\n",
     CLI_OPTS_COMMON | CLI_OPT(OPT_HEIGHT) | CLI_OPT(OPT_OUTPUT) | CLI_OPT(OPT_VERIFY), 1, 2,
     cmd_witness, false},
    {"verify-block", "--pre-root HEX WITNESS SCRIPT",
     "Re-executes the block in SCRIPT (an op script; with --height H its block H, else its\n"
     "first block) on WITNESS against the trusted root of the height before it, and prints\n"
     "the post-state root as \"<height> <root>\" (exit 0), or \"invalid: <reason>\" (exit 4).\n"
     "Needs no database. The compaction parameters come from the witness (the state root\n"
     "does not commit to them); --json shows them with the result.",
     "  --pre-root HEX     the trusted root of height H-1: 64 hex digits, or \"<height> <root>\"\n"
     "  --height H         the block of SCRIPT to check (default: its first block)\n"
     "  --json             {\"valid\": BOOL, \"post_root\": HEX, ...}\n",
     "  qmdb verify-block --pre-root \"$(qmdb root /var/lib/qmdb --height 6)\" b7.witness \\\n"
     "      b7.ops\n",
     CLI_OPTS_COMMON | CLI_OPT(OPT_PRE_ROOT) | CLI_OPT(OPT_HEIGHT) | CLI_OPT(OPT_JSON), 2, 2,
     cmd_verify_block, false},
    {"help", "[COMMAND]", "Prints the help of the tool, or of COMMAND, on stdout.", "",
     "  qmdb help prove\n", CLI_OPTS_COMMON, 0, 1, cmd_help, false},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const cli_cmd *
find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

int
cmd_help(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    if (a->npos == 0) {
        cli_print_help(&tool, stdout);
        return 0;
    }
    const cli_cmd *c = find_command(a->pos[0]);
    if (!c)
        return cli_error(CLI_USAGE, "unknown command '%s' (qmdb --help lists them)", a->pos[0]);
    cli_print_help(c, stdout);
    return 0;
}

/* --json anywhere before "--": known before parsing, so that even a usage error of this run
 * gets its JSON error object. */
static bool
wants_json(const cli_cmd *c, int argc, char **argv)
{
    if (!(c->opts & CLI_OPT(OPT_JSON)))
        return false;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--json") == 0)
            return true;
    return false;
}

int
main(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse(&tool, argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (a.next >= argc) {
        cli_error(CLI_USAGE, "no command given");
        fprintf(stderr, "usage: qmdb [OPTIONS] COMMAND [ARGS]  (qmdb --help for more)\n");
        return CLI_USAGE;
    }
    const cli_cmd *c = find_command(argv[a.next]);
    if (!c)
        return cli_error(CLI_USAGE, "unknown command '%s' (qmdb --help lists them)", argv[a.next]);
    static char name[32];
    snprintf(name, sizeof(name), "qmdb %s", c->name);
    cli_name = name;
    int cargc = argc - a.next;
    char **cargv = argv + a.next;
    if (a.json && !(c->opts & CLI_OPT(OPT_JSON)))
        return cli_error(CLI_USAGE, "'%s' has no --json output", c->name);
    cli_json = a.json || wants_json(c, cargc, cargv);
    rc = cli_parse(c, cargc, cargv, &a);
    if (rc < 0)
        return 0;
    if (rc == 0)
        rc = c->run(c, &a);
    if (rc && cli_json && !cli_json_printed)
        json_error(cli_first_error(), rc);
    return rc;
}
