/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_proof.c -- `qmdb prove` (writes a proof of a key's value or absence, with its header
 * as a summary line or a JSON object) and `qmdb verify` (checks a proof file against a
 * trusted root and a claim). The proof format is docs/PROOFS.md §1; this file reads only its
 * header, through qmdb_proof_info_get, and the key hash at its documented offset. Several
 * KEYs (prove) or KEYs after FILE (verify) hand over to the multi-key forms in cmd_mproof.c.
 * Single-threaded.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* PROOFS.md §1: SHA256(K) at bytes 16..48 of a version-1 proof. */
#define PROOF_KEY_HASH_OFF 16

/* The header fields every JSON description of a proof carries. */
static void
json_proof_header(cli_json_w *w, const uint8_t *proof, size_t len, const qmdb_proof_info *info)
{
    json_str(w, "kind", info->absent ? "exclusion" : "inclusion");
    json_bool(w, "deactivated", info->deactivated);
    json_u64(w, "format_version", info->format_version);
    json_u64(w, "height", info->height);
    json_u64(w, "shard", info->shard);
    if (info->format_version == 1 && len >= PROOF_KEY_HASH_OFF + 32)
        json_hex(w, "key_hash", proof + PROOF_KEY_HASH_OFF, 32);
    else
        json_null(w, "key_hash");
    json_u64(w, "entries", info->entries);
    json_u64(w, "upper_levels", info->upper_levels);
    json_u64(w, "length", len);
}

/* Writes len bytes to path (created or truncated), or to stdout when path is NULL; 0, or the
 * CLI_DB error naming the file (printed). Shared by prove, multi-key prove and witness. */
int
cli_write_bytes(const char *path, const uint8_t *buf, size_t len)
{
    FILE *f = path ? fopen(path, "wb") : stdout;
    bool good = f && fwrite(buf, 1, len, f) == len;
    int err = errno;
    if (f && (path ? fclose(f) : fflush(f)) != 0 && good) {
        good = false;
        err = errno;
    }
    if (!good)
        return cli_error(CLI_DB, "cannot write %s: %s", path ? path : "stdout", strerror(err));
    return 0;
}

int
cmd_prove(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    if (a->npos > 2)
        return cmd_prove_many(a);
    size_t klen;
    unsigned char *key = cli_bytes("KEY", a->pos[1], a->key_str, QMDB_MAX_KEY_LEN, &klen);
    if (!key)
        return CLI_USAGE;
    qmdb_db *db;
    int rc = cli_open(a->pos[0], cli_read_flags(a), &db);
    if (rc) {
        free(key);
        return rc;
    }
    uint8_t *proof = NULL;
    size_t len = 0;
    qmdb_proof_info info = QMDB_PROOF_INFO_INIT;
    rc = qmdb_prove(db, key, klen, a->has_height ? a->height : UINT64_MAX, &proof, &len);
    if (!rc)
        rc = qmdb_proof_info_get(proof, len, &info);
    if (rc) {
        rc = cli_db_fail(NULL, rc, db);
        goto out;
    }
    /* The proof goes to -o FILE, else to stdout unless stdout carries the JSON object. */
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
    if (a->json) {
        cli_json_w w;
        json_begin(&w, stdout);
        json_proof_header(&w, proof, len, &info);
        json_hex(&w, "key", key, klen);
        if (path)
            json_str(&w, "file", path);
        else
            json_null(&w, "file");
        json_hex(&w, "proof", proof, len);
        json_end(&w);
    } else {
        fprintf(path ? stdout : stderr, "%s proof: height %" PRIu64 ", shard %u, %zu bytes%s\n",
                info.absent ? "exclusion" : "inclusion", info.height, info.shard, len,
                info.deactivated ? " (historical, through the deactivating entry)" : "");
    }
out:
    qmdb_proof_free(proof);
    free(key);
    int crc = cli_close(db);
    return rc ? rc : crc;
}

int
cli_read_all(const char *path, unsigned char **out, size_t *outlen, bool *opened)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    *opened = f != NULL;
    if (!f)
        return errno ? errno : EIO;
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    int err = 0;
    for (;;) {
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
    if (f != stdin)
        fclose(f);
    if (err) {
        free(buf);
        return err;
    }
    *out = buf;
    *outlen = len;
    return 0;
}

int
cmd_verify(const cli_cmd *cmd, cli_args *a)
{
    (void)cmd;
    const char *file = a->pos[0];
    bool many = a->npos > 1; /* KEYs after FILE: a multi-key proof */
    if (!a->root || (!many && (!a->key || a->absent == (a->value != NULL))))
        return cli_error(CLI_USAGE, "needs --root, --key, exactly one of --value/--absent, and "
                                    "FILE; or --root, FILE and the KEYs of a multi-key proof");
    /* The root: 64 hex digits; "H HEX" as printed by `qmdb root` is accepted too. */
    const char *r = strrchr(a->root, ' ');
    r = r ? r + 1 : a->root;
    if (r[0] == '0' && (r[1] == 'x' || r[1] == 'X'))
        r += 2;
    unsigned char root[32];
    if (strlen(r) != 64 || cli_unhex(r, 64, root) != 32)
        return cli_error(CLI_USAGE, "--root must be 64 hex digits");
    size_t klen, vlen = 0, len = 0;
    unsigned char *key = NULL, *val = NULL, *buf = NULL;
    bool opened;
    int err;
    if (many) {
        err = cli_read_all(file, &buf, &len, &opened);
        if (err)
            return cli_error(opened && err != EFBIG ? CLI_DB : CLI_USAGE, "cannot %s %s: %s",
                             opened ? "read" : "open", file, strerror(err));
        int rc = cmd_verify_many(a, root, buf, len);
        free(buf);
        return rc;
    }
    key = cli_bytes("--key", a->key, a->key_str, QMDB_MAX_KEY_LEN, &klen);
    if (!key)
        return CLI_USAGE;
    int rc = 0;
    if (a->value &&
        !(val = cli_bytes("--value", a->value, a->value_str, QMDB_MAX_VALUE_LEN, &vlen))) {
        rc = CLI_USAGE;
        goto out;
    }
    err = cli_read_all(file, &buf, &len, &opened);
    if (err) {
        /* A file that is not there or too big is bad input; a failed read is an I/O error. */
        rc = cli_error(opened && err != EFBIG ? CLI_DB : CLI_USAGE, "cannot %s %s: %s",
                       opened ? "read" : "open", file, strerror(err));
        goto out;
    }
    if (cli_is_mproof(buf, len)) {
        rc = cli_error(CLI_USAGE,
                       "%s is a multi-key proof: give its KEYs after FILE instead of "
                       "--key and --value/--absent",
                       file);
        goto out;
    }
    const char *why = NULL;
    uint64_t ph = 0;
    uint64_t claim = a->has_height ? a->height : UINT64_MAX;
    int vrc = qmdb_proof_verify(buf, len, root, key, klen, val, vlen, claim, &ph, &why);
    if (vrc && vrc != QMDB_BAD_PROOF) {
        rc = cli_error(cli_exit_code(vrc), "%s", why && *why ? why : qmdb_strerror(vrc));
        goto out;
    }
    const char *reason = why && *why ? why : qmdb_strerror(vrc);
    if (a->json) {
        cli_json_w w;
        qmdb_proof_info info = QMDB_PROOF_INFO_INIT;
        json_begin(&w, stdout);
        json_bool(&w, "valid", vrc == 0);
        if (vrc)
            json_str(&w, "reason", reason);
        json_hex(&w, "root", root, 32);
        json_hex(&w, "key", key, klen);
        if (val)
            json_hex(&w, "value", val, vlen);
        else
            json_null(&w, "value");
        if (vrc == 0 && qmdb_proof_info_get(buf, len, &info) == 0) {
            json_object(&w, "proof");
            json_proof_header(&w, buf, len, &info);
            json_object_end(&w);
            json_bool(&w, "height_checked", a->has_height);
        }
        json_end(&w);
    } else if (vrc == 0) {
        printf("valid\n");
    } else {
        printf("invalid: %s\n", reason);
    }
    rc = vrc ? CLI_BAD_PROOF : 0;
out:
    free(buf);
    free(key);
    free(val);
    return rc;
}
