/* SPDX-License-Identifier: Apache-2.0 */
/*
 * minimal_store.c -- the smallest useful qmdb program: create a database, commit one block
 * of puts, read a value back and print the state root.
 *
 *   cc minimal_store.c $(pkg-config --cflags --libs qmdb) -o minimal_store
 *   ./minimal_store /tmp/qmdb-minimal      (the directory must not hold a database yet)
 */
#include <qmdb.h>
#include <stdio.h>
#include <string.h>

static int
fail(const char *what, int rc)
{
    fprintf(stderr, "minimal_store: %s: %s\n", what, qmdb_strerror(rc));
    return 1;
}

int
main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "qmdb-minimal";
    int rc = qmdb_create(dir, NULL); /* default options */
    if (rc)
        return fail(qmdb_open_error(), rc);
    qmdb_db *db;
    if ((rc = qmdb_open(dir, NULL, &db)))
        return fail(qmdb_open_error(), rc);

    /* Block 1: one transaction with two puts. */
    qmdb_batch *b;
    if ((rc = qmdb_batch_new(&b)))
        return fail("qmdb_batch_new", rc);
    qmdb_batch_put(b, "alice", 5, "\x64", 1);
    qmdb_batch_put(b, "bob", 3, "\x07", 1);
    uint8_t root[QMDB_HASH_LEN];
    if ((rc = qmdb_commit(db, qmdb_height(db) + 1, b, root)))
        return fail("qmdb_commit", rc);
    qmdb_batch_free(b);

    uint8_t val[16];
    size_t vlen = 0;
    if ((rc = qmdb_get(db, "alice", 5, val, sizeof(val), &vlen)))
        return fail("qmdb_get alice", rc);
    if (vlen != 1 || val[0] != 0x64) {
        fprintf(stderr, "minimal_store: alice has the wrong value\n");
        return 1;
    }
    if (qmdb_get(db, "carol", 5, val, sizeof(val), &vlen) != QMDB_NOTFOUND) {
        fprintf(stderr, "minimal_store: carol should be absent\n");
        return 1;
    }
    printf("height %llu root ", (unsigned long long)qmdb_height(db));
    for (int i = 0; i < QMDB_HASH_LEN; i++)
        printf("%02x", root[i]);
    printf("\n");
    return qmdb_close(db) ? 1 : 0;
}
