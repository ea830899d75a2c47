/* SPDX-License-Identifier: Apache-2.0 */
/*
 * light_client.c -- a light client checks a value against a trusted state root with nothing
 * but the verifier: qmdb_proof_verify is pure (no database, no I/O, no allocation).
 *
 * The "full node" half (full_node) opens a database, commits a few blocks and serves a proof
 * together with the state root; the "light client" half (light_client) sees only bytes: the
 * proof, the trusted root, the key and the claimed value.
 *
 *   ./light_client DIR
 */
#include <qmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the light client: only the verifier ---------------------------------------------- */

static int
light_client(const uint8_t *proof, size_t len, const uint8_t root[QMDB_HASH_LEN], const char *key,
             const void *value, size_t vlen, uint64_t height)
{
    const char *why = NULL;
    uint64_t proved = 0;
    int rc =
        qmdb_proof_verify(proof, len, root, key, strlen(key), value, vlen, height, &proved, &why);
    if (rc == 0)
        printf("light client: %s %s at height %llu: valid\n", key,
               value ? "has the claimed value" : "is absent", (unsigned long long)proved);
    else
        printf("light client: %s: rejected (%s)\n", key, why ? why : qmdb_strerror(rc));
    return rc;
}

/* ---- the full node -------------------------------------------------------------------- */

static void
check(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "light_client: %s: %s\n", what, qmdb_strerror(rc));
        exit(1);
    }
}

int
main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "qmdb-light";
    check(qmdb_create(dir, NULL), "qmdb_create");
    qmdb_db *db;
    check(qmdb_open(dir, NULL, &db), "qmdb_open");
    qmdb_batch *b;
    check(qmdb_batch_new(&b), "qmdb_batch_new");
    for (uint64_t h = 1; h <= 3; h++) {
        char key[16], val[16];
        qmdb_batch_reset(b);
        for (int i = 0; i < 10; i++) {
            snprintf(key, sizeof(key), "k%llu-%d", (unsigned long long)h, i);
            snprintf(val, sizeof(val), "v%d", i);
            check(qmdb_batch_put(b, key, strlen(key), val, strlen(val)), "put");
        }
        check(qmdb_commit(db, h, b, NULL), "qmdb_commit");
    }
    qmdb_batch_free(b);
    uint8_t root[QMDB_HASH_LEN];
    check(qmdb_root(db, UINT64_MAX, root), "qmdb_root"); /* the root the client trusts */
    uint8_t *inc, *exc;
    size_t inc_len, exc_len;
    check(qmdb_prove(db, "k2-4", 4, UINT64_MAX, &inc, &inc_len), "qmdb_prove k2-4");
    check(qmdb_prove(db, "nobody", 6, UINT64_MAX, &exc, &exc_len), "qmdb_prove nobody");
    check(qmdb_close(db), "qmdb_close");

    /* From here on: bytes only. */
    int bad = 0;
    bad |= light_client(inc, inc_len, root, "k2-4", "v4", 2, 3) != 0;              /* inclusion */
    bad |= light_client(exc, exc_len, root, "nobody", NULL, 0, 3) != 0;            /* exclusion */
    bad |= light_client(inc, inc_len, root, "k2-4", "v5", 2, 3) != QMDB_BAD_PROOF; /* lie */
    inc[inc_len / 2] ^= 1;                                                         /* tampering */
    bad |= light_client(inc, inc_len, root, "k2-4", "v4", 2, 3) != QMDB_BAD_PROOF;
    qmdb_proof_free(inc);
    qmdb_proof_free(exc);
    if (bad)
        fprintf(stderr, "light_client: a verdict was wrong\n");
    return bad;
}
