/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_witness_verify.c -- libFuzzer target for the block witness verifier
 * (qmdb_witness_verify). Links only src/witness_verify.c and the hash module, like a
 * stateless validator would (CTest: test_fuzz_witness_replay).
 *
 * Input: the trusted pre-state root, the block and then the witness bytes (the seeds in
 * corpus/witness_verify are real witnesses with their blocks, written by
 * tests/proof/test_witness with QMDB_WITNESS_CORPUS=DIR):
 *   32       pre-state root
 *   8        height (u64 LE; 0 is passed as 1)
 *   1        number of operations n
 *   n times  1 byte tx (must not decrease), 1 byte key length k (0 is passed as 1), 1 byte
 *            value length v (0: a delete), then k key bytes and v value bytes
 *   rest     witness bytes
 * Short inputs are padded with zeros. The verifier must never crash, read out of bounds or
 * return anything but 0, QMDB_BAD_PROOF or QMDB_INVALID; a success must be reproducible (the
 * same post-state root) and name the reason "valid".
 */
#include "qmdb.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs that verified (the replay driver checks that the checked-in seeds do). */
unsigned long qmdb_fuzz_valid_inputs;

static size_t
take(const uint8_t **data, size_t *size, uint8_t *out, size_t n)
{
    size_t k = n < *size ? n : *size;
    memcpy(out, *data, k);
    memset(out + k, 0, n - k);
    *data += k;
    *size -= k;
    return k;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t pre[32], hb[8], n = 0;
    take(&data, &size, pre, 32);
    take(&data, &size, hb, 8);
    take(&data, &size, &n, 1);
    static uint8_t keys[255][255], vals[255][255];
    qmdb_block_op ops[255];
    for (size_t i = 0; i < n; i++) {
        uint8_t h3[3];
        take(&data, &size, h3, 3);
        ops[i].tx = h3[0];
        ops[i].klen = h3[1] ? h3[1] : 1;
        take(&data, &size, keys[i], ops[i].klen);
        ops[i].key = keys[i];
        ops[i].vlen = h3[2];
        ops[i].value = h3[2] ? vals[i] : NULL;
        take(&data, &size, vals[i], h3[2]);
    }
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--)
        h = (h << 8) | hb[i];
    if (h == 0)
        h = 1;
    /* Copy the witness so that any over-read hits the allocation's end (ASan). */
    uint8_t *w = malloc(size ? size : 1);
    if (!w)
        return 0;
    memcpy(w, data, size);
    uint8_t post[32], again[32];
    const char *why = NULL;
    int rc = qmdb_witness_verify(w, size, pre, h, ops, n, NULL, post, &why);
    if (rc != 0 && rc != QMDB_BAD_PROOF && rc != QMDB_INVALID && rc != -ENOMEM)
        abort();
    if (!why)
        abort();
    if (rc == 0) {
        qmdb_fuzz_valid_inputs++;
        if (strcmp(why, "valid") != 0)
            abort();
        if (qmdb_witness_verify(w, size, pre, h, ops, n, NULL, again, NULL) != 0 ||
            memcmp(post, again, 32) != 0)
            abort();
    }
    free(w);
    return 0;
}
