/* SPDX-License-Identifier: Apache-2.0 */
/*
 * script.c -- op-script line parser (format in FORMAT.md §8, API in script.h). Pure; any
 * thread. Fuzzed by tests/fuzz/fuzz_script.c.
 */
#include "script.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 4

typedef struct tok {
    const char *p;
    size_t n;
} tok;

void
script_cmd_free(script_cmd *c)
{
    free(c->val);
    c->val = NULL;
    c->vcap = c->vlen = 0;
}

static int
fail(script_cmd *c, const char *msg, const tok *t)
{
    if (t) {
        /* Quote at most 40 bytes of the token, replacing non-printable bytes. */
        char q[44];
        size_t n = t->n < 40 ? t->n : 40;
        for (size_t i = 0; i < n; i++)
            q[i] = (t->p[i] >= 0x20 && t->p[i] < 0x7f) ? t->p[i] : '?';
        q[n] = '\0';
        snprintf(c->err, sizeof(c->err), "%s '%s%s'", msg, q, t->n > 40 ? "..." : "");
    } else {
        snprintf(c->err, sizeof(c->err), "%s", msg);
    }
    return -1;
}

static bool
is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

static int
hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Decodes t into out (t->n / 2 bytes); false if not even-length hex. */
static bool
unhex(const tok *t, unsigned char *out)
{
    if (t->n % 2)
        return false;
    for (size_t i = 0; i < t->n; i += 2) {
        int a = hexval(t->p[i]), b = hexval(t->p[i + 1]);
        if (a < 0 || b < 0)
            return false;
        out[i / 2] = (unsigned char)(a * 16 + b);
    }
    return true;
}

static bool
tok_is(const tok *t, const char *word)
{
    size_t n = strlen(word);
    return t->n == n && memcmp(t->p, word, n) == 0;
}

bool
script_parse_u64(const char *s, size_t n, uint64_t *out)
{
    if (!s || n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch < '0' || ch > '9')
            return false;
        unsigned d = (unsigned)(ch - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

int
script_parse_line(const char *line, size_t len, script_cmd *c)
{
    c->kind = SCRIPT_NONE;
    c->err[0] = '\0';
    c->klen = c->vlen = 0;
    /* '#' starts a comment anywhere on the line. */
    const char *hash = memchr(line, '#', len);
    if (hash)
        len = (size_t)(hash - line);
    tok t[MAX_TOKENS];
    int nt = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && is_space(line[i]))
            i++;
        if (i == len)
            break;
        size_t start = i;
        while (i < len && !is_space(line[i]))
            i++;
        tok cur = {line + start, i - start};
        if (nt == MAX_TOKENS)
            return fail(c, "too many fields", &cur);
        t[nt++] = cur;
    }
    if (nt == 0)
        return 0;
    if (tok_is(&t[0], "block")) {
        if (nt != 2 || !script_parse_u64(t[1].p, t[1].n, &c->height))
            return fail(c, "expected 'block <height>'", NULL);
        c->kind = SCRIPT_BLOCK;
        return 0;
    }
    if (tok_is(&t[0], "tx")) {
        if (nt != 1)
            return fail(c, "expected 'tx'", NULL);
        c->kind = SCRIPT_TX;
        return 0;
    }
    if (tok_is(&t[0], "commit")) {
        if (nt != 1)
            return fail(c, "expected 'commit'", NULL);
        c->kind = SCRIPT_COMMIT;
        return 0;
    }
    bool put = tok_is(&t[0], "put");
    if (!put && !tok_is(&t[0], "del"))
        return fail(c, "unknown command", &t[0]);
    if (nt != (put ? 3 : 2))
        return fail(c, put ? "expected 'put <keyhex> <valhex>'" : "expected 'del <keyhex>'", NULL);
    if (t[1].n == 0 || t[1].n > 2 * QMDB_MAX_KEY_LEN)
        return fail(c, "key must be 1..255 bytes:", &t[1]);
    if (!unhex(&t[1], c->key))
        return fail(c, "key is not even-length hex:", &t[1]);
    c->klen = t[1].n / 2;
    if (!put) {
        c->kind = SCRIPT_DEL;
        return 0;
    }
    size_t vn = t[2].n / 2;
    if (vn > QMDB_MAX_VALUE_LEN)
        return fail(c, "value longer than 16777215 bytes", NULL);
    if (vn > c->vcap) {
        unsigned char *nb = realloc(c->val, vn);
        if (!nb)
            return fail(c, "out of memory", NULL);
        c->val = nb;
        c->vcap = vn;
    }
    if (!unhex(&t[2], c->val))
        return fail(c, "value is not even-length hex", NULL);
    if (vn == 0)
        return fail(c, "empty value (reserved)", NULL);
    c->vlen = vn;
    c->kind = SCRIPT_PUT;
    return 0;
}
