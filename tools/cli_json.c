/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_json.c -- the JSON writer of the `qmdb` tool's --json output: one value, written as it
 * goes (no tree in memory), on one line. Every string comes out as valid JSON text: '"', '\\'
 * and the control characters are escaped, valid UTF-8 is copied as it is, and what is not
 * valid UTF-8 (a file name can hold any byte) becomes U+FFFD, one for each maximal invalid
 * subpart (see utf8_seq).
 * Numbers are unsigned 64-bit integers (exact; a reader with IEEE doubles only, such as
 * JavaScript, loses precision above 2^53) or finite doubles. Bytes are lower-case hex strings.
 * Also the error object of a failed run. Single-threaded.
 */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* Starts a member (or array element): the comma, then "key": unless key is NULL. */
static void
member(cli_json_w *w, const char *key)
{
    if (!w->first[w->depth])
        fputs(", ", w->f);
    w->first[w->depth] = false;
    if (key) {
        fputc('"', w->f);
        fputs(key, w->f); /* keys are ours: plain ASCII names */
        fputs("\": ", w->f);
    }
}

static void
open_nested(cli_json_w *w, const char *key, char c)
{
    member(w, key);
    fputc(c, w->f);
    if (w->depth + 1 < (int)(sizeof(w->first) / sizeof(w->first[0])))
        w->depth++;
    w->first[w->depth] = true;
}

static void
close_nested(cli_json_w *w, char c)
{
    fputc(c, w->f);
    if (w->depth > 0)
        w->depth--;
}

void
json_begin(cli_json_w *w, FILE *f)
{
    memset(w, 0, sizeof(*w));
    w->f = f;
    w->first[0] = true;
    open_nested(w, NULL, '{');
}

void
json_end(cli_json_w *w)
{
    close_nested(w, '}');
    fputc('\n', w->f);
    fflush(w->f);
    cli_json_printed = true;
}

void
json_object(cli_json_w *w, const char *key)
{
    open_nested(w, key, '{');
}

void
json_object_end(cli_json_w *w)
{
    close_nested(w, '}');
}

void
json_array(cli_json_w *w, const char *key)
{
    open_nested(w, key, '[');
}

void
json_array_end(cli_json_w *w)
{
    close_nested(w, ']');
}

void
json_u64(cli_json_w *w, const char *key, uint64_t v)
{
    member(w, key);
    fprintf(w->f, "%" PRIu64, v);
}

void
json_double(cli_json_w *w, const char *key, double v)
{
    if (!isfinite(v)) {
        json_null(w, key);
        return;
    }
    member(w, key);
    fprintf(w->f, "%.2f", v);
}

void
json_bool(cli_json_w *w, const char *key, bool v)
{
    member(w, key);
    fputs(v ? "true" : "false", w->f);
}

void
json_null(cli_json_w *w, const char *key)
{
    member(w, key);
    fputs("null", w->f);
}

/* The UTF-8 sequence at p[0..n): its length (1..4) if it is valid, else minus the length of
 * its longest invalid start (1..3), which becomes one U+FFFD -- the "maximal subpart" rule of
 * Unicode (chapter 3, U+FFFD substitution), which Python's decode(errors="replace") follows
 * too. Valid means RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF. */
static int
utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    int len;
    unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        if (c == 0xf4)
            hi = 0x8f; /* above U+10FFFF */
    } else {
        return -1;
    }
    if (n < 2 || p[1] < lo || p[1] > hi)
        return -1;
    for (int i = 2; i < len; i++)
        if ((size_t)i >= n || p[i] < 0x80 || p[i] > 0xbf)
            return -i;
    return len;
}

void
json_strn(cli_json_w *w, const char *key, const char *s, size_t n)
{
    member(w, key);
    const unsigned char *p = (const unsigned char *)s;
    FILE *f = w->f;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        switch (c) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '\b':
            fputs("\\b", f);
            break;
        case '\f':
            fputs("\\f", f);
            break;
        default:
            if (c < 0x20 || c == 0x7f) {
                fprintf(f, "\\u%04x", c);
            } else {
                int len = utf8_seq(p + i, n - i);
                if (len < 0) {
                    fputs("\\ufffd", f);
                    i += (size_t)-len;
                } else {
                    fwrite(p + i, 1, (size_t)len, f);
                    i += (size_t)len;
                }
                continue;
            }
        }
        i++;
    }
    fputc('"', f);
}

void
json_str(cli_json_w *w, const char *key, const char *s)
{
    json_strn(w, key, s, strlen(s));
}

void
json_hex(cli_json_w *w, const char *key, const unsigned char *p, size_t n)
{
    member(w, key);
    fputc('"', w->f);
    cli_print_hex(w->f, p, n);
    fputc('"', w->f);
}

void
json_error(const char *msg, int code)
{
    static const char *const kinds[] = {"ok",       "not_found",     "usage",
                                        "database", "invalid_proof", "busy"};
    cli_json_w w;
    json_begin(&w, stdout);
    json_str(&w, "error", msg && *msg ? msg : "failed");
    json_u64(&w, "code", (uint64_t)code);
    json_str(&w, "kind", code >= 0 && code <= CLI_BUSY ? kinds[code] : "error");
    json_end(&w);
}
