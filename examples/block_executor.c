/* SPDX-License-Identifier: Apache-2.0 */
/*
 * block_executor.c -- how a blockchain node drives qmdb: every block reads the accounts its
 * transactions touch in one batch (qmdb_get_many), computes the new balances
 * (read-modify-write), and hands the block to qmdb_submit, which returns as soon as the
 * block's writes are visible; hashing and fsync go on in the background while the next block
 * is executed. qmdb_wait collects the state root of a block once it is durable.
 *
 *   ./block_executor DIR [blocks]
 *
 * Accounts acct000..acct099 start with 1000 each; every block makes 50 transfers. The total
 * must stay 100,000: the program checks it at the end and exits 1 if it does not.
 */
#include <inttypes.h>
#include <qmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACCOUNTS 100
#define TRANSFERS 50

static int
fail(const char *what, int rc)
{
    fprintf(stderr, "block_executor: %s: %s\n", what, qmdb_strerror(rc));
    exit(1);
}

static void
acct_key(char key[8], unsigned i)
{
    snprintf(key, 8, "acct%03u", i);
}

int
main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "qmdb-executor";
    uint64_t blocks = argc > 2 ? strtoull(argv[2], NULL, 10) : 20;
    int rc;
    if ((rc = qmdb_create(dir, NULL)))
        fail(qmdb_open_error(), rc);
    qmdb_options opt;
    qmdb_options_init(&opt);
    opt.pipeline = 1; /* the default, said explicitly: submit overlaps hashing and fsync */
    qmdb_db *db;
    if ((rc = qmdb_open(dir, &opt, &db)))
        fail(qmdb_open_error(), rc);
    qmdb_batch *b;
    if ((rc = qmdb_batch_new(&b)))
        fail("qmdb_batch_new", rc);

    /* Genesis (block 1): every account gets 1000. */
    char key[8];
    for (unsigned i = 0; i < ACCOUNTS; i++) {
        uint64_t bal = 1000;
        acct_key(key, i);
        qmdb_batch_put(b, key, 7, &bal, sizeof(bal));
    }
    if ((rc = qmdb_commit(db, 1, b, NULL)))
        fail("commit genesis", rc);

    unsigned seed = 12345;
    char keys[2 * TRANSFERS][8];
    uint64_t vals[2 * TRANSFERS];
    qmdb_read reads[2 * TRANSFERS];
    for (uint64_t h = 2; h < 2 + blocks; h++) {
        /* Each transfer reads its two accounts (all reads of the block in one batch). */
        for (unsigned t = 0; t < 2 * TRANSFERS; t++) {
            seed = seed * 1103515245u + 12345u;
            acct_key(keys[t], (seed >> 16) % ACCOUNTS);
            reads[t] =
                (qmdb_read){.key = keys[t], .klen = 7, .buf = &vals[t], .cap = sizeof(vals[t])};
        }
        if ((rc = qmdb_get_many(db, reads, 2 * TRANSFERS)))
            fail("qmdb_get_many", rc);
        qmdb_batch_reset(b);
        for (unsigned t = 0; t < TRANSFERS; t++) {
            unsigned from = 2 * t, to = 2 * t + 1;
            if (reads[from].rc || reads[to].rc)
                fail("read of an account", reads[from].rc ? reads[from].rc : reads[to].rc);
            /* A later transfer in the block may touch an account an earlier one changed:
             * take the newest value from this block's own writes. */
            for (unsigned u = 0; u < 2 * t; u++) {
                if (strcmp(keys[u], keys[from]) == 0)
                    vals[from] = vals[u];
                if (strcmp(keys[u], keys[to]) == 0)
                    vals[to] = vals[u];
            }
            uint64_t amount = vals[from] / 10;
            if (strcmp(keys[from], keys[to]) == 0)
                amount = 0;
            vals[from] -= amount;
            vals[to] += amount;
            qmdb_batch_tx(b);
            qmdb_batch_put(b, keys[from], 7, &vals[from], sizeof(uint64_t));
            qmdb_batch_put(b, keys[to], 7, &vals[to], sizeof(uint64_t));
        }
        /* Returns once block h's writes are visible to reads; h-1 may still be hashing. */
        if ((rc = qmdb_submit(db, h, b)))
            fail("qmdb_submit", rc);
    }
    uint8_t root[QMDB_HASH_LEN];
    uint64_t last = 1 + blocks;
    if ((rc = qmdb_wait(db, last, root)))
        fail("qmdb_wait", rc);

    uint64_t total = 0;
    for (unsigned i = 0; i < ACCOUNTS; i++) {
        uint64_t bal;
        size_t vlen;
        acct_key(key, i);
        if ((rc = qmdb_get_committed(db, key, 7, &bal, sizeof(bal), &vlen)))
            fail("qmdb_get_committed", rc);
        total += bal;
    }
    printf("height %" PRIu64 " total %" PRIu64 " root %02x%02x%02x%02x...\n", qmdb_height(db),
           total, root[0], root[1], root[2], root[3]);
    if (qmdb_height(db) != last || total != 1000u * ACCOUNTS) {
        fprintf(stderr, "block_executor: expected height %" PRIu64 " and total %u\n", last,
                1000u * ACCOUNTS);
        return 1;
    }
    qmdb_batch_free(b);
    return qmdb_close(db) ? 1 : 0;
}
