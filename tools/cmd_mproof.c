/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_mproof.c -- the multi-key forms of `qmdb prove` (several KEYs: one proof for all of
 * them, qmdb_prove_many) and `qmdb verify` (KEYs after FILE: qmdb_proof_verify_many, printing
 * what the proof shows for each key). The format is docs/PROOFS.md §9; this file reads only
 * the header fields at their documented offsets (height at 5, key count at 13, entry count
 * at 17). Single-threaded.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* PROOFS.md §9: header offsets of a multi-key proof. */
#define MP_HEIGHT_OFF 5
#define MP_NKEYS_OFF 13
#define MP_NENT_OFF 17
#define MP_HDR 21

static uint64_t
le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t
le32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Keys from the positional arguments first..npos-1; NULL after cli_error. */
static unsigned char **
keys_from_args(const cli_args *a, int first, size_t *n, size_t **lens)
{
    *n = (size_t)(a->npos - first);
    unsigned char **k = calloc(*n, sizeof(*k));
    *lens = calloc(*n, sizeof(**lens));
    if (!k || !*lens) {
        free(k);
        free(*lens);
        cli_error(CLI_DB, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < *n; i++) {
        k[i] = cli_bytes("KEY", a->pos[first + (int)i], a->key_str, QMDB_MAX_KEY_LEN, &(*lens)[i]);
        if (!k[i]) {
            for (size_t j = 0; j < i; j++)
                free(k[j]);
            free(k);
            free(*lens);
            return NULL;
        }
    }
    return k;
}

static void
free_keys(unsigned char **k, size_t *lens, size_t n)
{
    for (size_t i = 0; k && i < n; i++)
        free(k[i]);
    free(k);
    free(lens);
}

int
cmd_prove_many(cli_args *a)
{
    size_t n, *lens;
    unsigned char **keys = keys_from_args(a, 1, &n, &lens);
    if (!keys)
        return CLI_USAGE;
    qmdb_db *db;
    int rc = cli_open(a->pos[0], cli_read_flags(a), &db);
    if (rc) {
        free_keys(keys, lens, n);
        return rc;
    }
    uint8_t *proof = NULL;
    size_t len = 0;
    rc = qmdb_prove_many(db, (const void *const *)keys, lens, n,
                         a->has_height ? a->height : UINT64_MAX, &proof, &len);
    if (rc) {
        rc = cli_db_fail(NULL, rc, db);
        goto out;
    }
    const char *path = a->output;
    if (!path && !a->json && isatty(STDOUT_FILENO)) {
        rc = cli_error(CLI_USAGE, "the proof is binary: give -o FILE, redirect stdout, or use "
                                  "--json (hex)");
        goto out;
    }
    if (path || !a->json) {
        if ((rc = cli_write_bytes(path, proof, len)) != 0)
            goto out;
    }
    uint64_t h = le64(proof + MP_HEIGHT_OFF);
    uint32_t ne = le32(proof + MP_NENT_OFF);
    if (a->json) {
        cli_json_w w;
        json_begin(&w, stdout);
        json_str(&w, "kind", "multi-key");
        json_u64(&w, "format_version", proof[4]);
        json_u64(&w, "height", h);
        json_u64(&w, "keys", n);
        json_u64(&w, "entries", ne);
        json_u64(&w, "length", len);
        if (path)
            json_str(&w, "file", path);
        else
            json_null(&w, "file");
        json_hex(&w, "proof", proof, len);
        json_end(&w);
    } else {
        fprintf(path ? stdout : stderr,
                "multi-key proof: height %" PRIu64 ", %zu keys, %" PRIu32 " entries, %zu bytes\n",
                h, n, ne, len);
    }
out:
    qmdb_proof_free(proof);
    free_keys(keys, lens, n);
    int crc = cli_close(db);
    return rc ? rc : crc;
}

static void
print_bytes(const unsigned char *p, size_t n, bool str)
{
    if (str)
        fwrite(p, 1, n, stdout);
    else
        cli_print_hex(stdout, p, n);
}

int
cmd_verify_many(cli_args *a, const unsigned char root[32], const unsigned char *buf, size_t len)
{
    if (a->key || a->value || a->absent)
        return cli_error(CLI_USAGE, "a multi-key proof takes its KEYs after FILE, not --key, "
                                    "--value or --absent");
    size_t n, *lens;
    unsigned char **keys = keys_from_args(a, 1, &n, &lens);
    if (!keys)
        return CLI_USAGE;
    qmdb_proof_answer *ans = calloc(n, sizeof(*ans));
    if (!ans) {
        free_keys(keys, lens, n);
        return cli_error(CLI_DB, "out of memory");
    }
    const char *why = NULL;
    uint64_t ph = 0;
    int vrc = qmdb_proof_verify_many(buf, len, root, (const void *const *)keys, lens, n,
                                     a->has_height ? a->height : UINT64_MAX, &ph, ans, &why);
    int rc = 0;
    if (vrc && vrc != QMDB_BAD_PROOF) {
        rc = cli_error(cli_exit_code(vrc), "%s", why && *why ? why : qmdb_strerror(vrc));
        goto out;
    }
    const char *reason = why && *why ? why : qmdb_strerror(vrc);
    if (a->json) {
        cli_json_w w;
        json_begin(&w, stdout);
        json_bool(&w, "valid", vrc == 0);
        if (vrc)
            json_str(&w, "reason", reason);
        json_hex(&w, "root", root, 32);
        if (vrc == 0) {
            json_u64(&w, "height", ph);
            json_bool(&w, "height_checked", a->has_height);
            json_array(&w, "answers");
            for (size_t i = 0; i < n; i++) {
                json_object(&w, NULL);
                json_hex(&w, "key", keys[i], lens[i]);
                json_bool(&w, "present", ans[i].present);
                if (ans[i].present)
                    json_hex(&w, "value", ans[i].value, ans[i].vlen);
                else
                    json_null(&w, "value");
                json_object_end(&w);
            }
            json_array_end(&w);
        }
        json_end(&w);
    } else if (vrc == 0) {
        for (size_t i = 0; i < n; i++) {
            print_bytes(keys[i], lens[i], a->key_str);
            if (ans[i].present) {
                fputc(' ', stdout);
                print_bytes(ans[i].value, ans[i].vlen, a->value_str);
                fputc('\n', stdout);
            } else {
                fputs(" absent\n", stdout);
            }
        }
        printf("valid (height %" PRIu64 ", %zu keys)\n", ph, n);
    } else {
        printf("invalid: %s\n", reason);
    }
    rc = vrc ? CLI_BAD_PROOF : 0;
out:
    free(ans);
    free_keys(keys, lens, n);
    return rc;
}

bool
cli_is_mproof(const unsigned char *buf, size_t len)
{
    return len >= MP_HDR && memcmp(buf, "QMMP", 4) == 0 && le32(buf + MP_NKEYS_OFF) > 0;
}
