/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test.h -- minimal assertion macros and helpers shared by the unit tests. Each test file is
 * its own executable (registered with CTest); a failed CHECK prints file:line and both values
 * and the process exits non-zero at the end (or at once for REQUIRE).
 */
#ifndef QM_TEST_H
#define QM_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures;
static int test_checks;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        test_checks++;                                                               \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            test_failures++;                                                         \
        }                                                                            \
    } while (0)

#define REQUIRE(cond)                                                                  \
    do {                                                                               \
        test_checks++;                                                                 \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                     \
    do {                                                                                       \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                       \
        test_checks++;                                                                         \
        if (a_ != b_) {                                                                        \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%" PRIu64 " vs %" PRIu64 ")\n", \
                    __FILE__, __LINE__, #a, #b, a_, b_);                                       \
            test_failures++;                                                                   \
        }                                                                                      \
    } while (0)

#define CHECK_RC(expr, want)                                                                      \
    do {                                                                                          \
        int rc_ = (expr);                                                                         \
        test_checks++;                                                                            \
        if (rc_ != (want)) {                                                                      \
            fprintf(stderr, "%s:%d: %s returned %d (%s), wanted %d\n", __FILE__, __LINE__, #expr, \
                    rc_, qmdb_strerror(rc_), (int)(want));                                        \
            test_failures++;                                                                      \
        }                                                                                         \
    } while (0)

#define CHECK_OK(expr) CHECK_RC(expr, 0)

#define CHECK_MEM(a, b, n)                                                                  \
    do {                                                                                    \
        test_checks++;                                                                      \
        if (memcmp((a), (b), (n)) != 0) {                                                   \
            fprintf(stderr, "%s:%d: bytes differ: %s vs %s\n", __FILE__, __LINE__, #a, #b); \
            test_hexdump("  got ", (const unsigned char *)(a), (n));                        \
            test_hexdump("  want", (const unsigned char *)(b), (n));                        \
            test_failures++;                                                                \
        }                                                                                   \
    } while (0)

/* A new empty directory $TMPDIR/qmdb-<what>-<tag>-XXXXXX (/tmp without TMPDIR); the caller
 * owns the returned string and passes it to test_remove_dir. */
static inline char *
test_make_dir(const char *what, const char *tag)
{
    char tmpl[256];
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpl, sizeof(tmpl), "%s/qmdb-%s-%s-XXXXXX", base, what, tag);
    char *d = mkdtemp(tmpl);
    REQUIRE(d != NULL);
    return strdup(d);
}

/* Removes directory d and everything in it, and frees d. */
static inline void
test_remove_dir(char *d)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", d);
    free(d);
}

/* xorshift64: the tests' deterministic random numbers (state must start nonzero). */
static inline uint64_t
test_xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline void
test_hexdump(const char *label, const unsigned char *p, size_t n)
{
    fprintf(stderr, "%s ", label);
    for (size_t i = 0; i < n && i < 128; i++)
        fprintf(stderr, "%02x", p[i]);
    fprintf(stderr, "%s\n", n > 128 ? "..." : "");
}

static inline int
test_unhex(const char *s, unsigned char *out, size_t cap)
{
    size_t n = strlen(s);
    if (n % 2 || n / 2 > cap)
        return -1;
    for (size_t i = 0; i < n; i += 2) {
        unsigned v;
        if (sscanf(s + i, "%2x", &v) != 1)
            return -1;
        out[i / 2] = (unsigned char)v;
    }
    return (int)(n / 2);
}

/* Reads a whole file into a NUL-terminated buffer (caller frees). */
static inline char *
test_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

/*
 * Tiny lookup in vectors.json: finds the first occurrence of `anchor` (e.g. "\"null_twig_root\""),
 * then the first `"field": "` after it, and copies the string value into out.
 */
static inline int
test_json_str(const char *json, const char *anchor, const char *field, char *out, size_t cap)
{
    const char *p = strstr(json, anchor);
    if (!p)
        return -1;
    char pat[128];
    snprintf(pat, sizeof(pat), "\"%s\": \"", field);
    p = strstr(p, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    const char *e = strchr(p, '"');
    if (!e || (size_t)(e - p) >= cap)
        return -1;
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = '\0';
    return 0;
}

static inline int
test_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, test_checks, test_failures);
    return test_failures ? 1 : 0;
}

#endif /* QM_TEST_H */
