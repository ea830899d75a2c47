/* SPDX-License-Identifier: Apache-2.0 */
/*
 * script.h -- the op-script line parser (FORMAT.md §8), shared by `qmdb apply` and the
 * fuzz target tests/fuzz/fuzz_script.c.
 *
 * script_parse_line() is a pure function: one line of bytes in, one parsed command (or an error
 * message) out. It knows nothing about the database; block-height sequencing and the
 * "operation outside a block" rule stay with the caller (tools/cmd_write.c).
 *
 * Thread: any; a script_cmd is owned by one caller.
 */
#ifndef QMDB_SCRIPT_H
#define QMDB_SCRIPT_H

#include "qmdb.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum script_kind {
    SCRIPT_NONE,   /* blank line or comment only */
    SCRIPT_BLOCK,  /* block <height> */
    SCRIPT_TX,     /* tx */
    SCRIPT_PUT,    /* put <keyhex> <valhex> */
    SCRIPT_DEL,    /* del <keyhex> */
    SCRIPT_COMMIT, /* commit */
} script_kind;

typedef struct script_cmd {
    script_kind kind;
    uint64_t height;                     /* SCRIPT_BLOCK */
    unsigned char key[QMDB_MAX_KEY_LEN]; /* SCRIPT_PUT, SCRIPT_DEL */
    size_t klen;
    unsigned char *val; /* SCRIPT_PUT; grown as needed, reused across calls */
    size_t vlen, vcap;
    char err[160]; /* set when script_parse_line returns -1 */
} script_cmd;

/* Zero-initialise before first use; frees the value buffer. */
void script_cmd_free(script_cmd *c);

/*
 * Parses line[0..len) (no terminator needed; a trailing newline is whitespace). Returns 0 with
 * c->kind set, or -1 with c->err holding a message such as "key is not even-length hex: 'zz'".
 * Every byte sequence is accepted as input; nothing is read outside [line, line+len).
 */
int script_parse_line(const char *line, size_t len, script_cmd *c);

/*
 * The one parser of unsigned decimal numbers, for script heights and every number on the
 * `qmdb` command line: s[0..n) must be one or more digits 0-9 and nothing else (no blanks, no
 * sign, no "0x"), and the value must fit in 64 bits. Returns false otherwise (*out unchanged).
 */
bool script_parse_u64(const char *s, size_t n, uint64_t *out);

#endif /* QMDB_SCRIPT_H */
