/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_mproof_verify.c -- libFuzzer target for the multi-key proof verifier
 * (qmdb_proof_verify_many). Links only src/mproof_verify.c and the hash module, like a light
 * client would (CTest: test_fuzz_mproof_replay).
 *
 * Input: the key list and trusted root followed by proof bytes (the seeds in
 * corpus/mproof_verify are real proofs with their key lists, written by
 * tests/proof/test_mproof with QMDB_MPROOF_CORPUS=DIR):
 *   1 byte   flags: bit 0 = height UINT64_MAX ("at the root's height")
 *   32       trusted state root
 *   8        height (u64 LE)
 *   1        number of keys n (0 is passed as 1)
 *   n times  1 byte key length k (0 is passed as 1), then k key bytes
 *   rest     proof bytes
 * Short inputs are padded with zeros. The verifier must never crash, read out of bounds or
 * return anything but 0, QMDB_BAD_PROOF or QMDB_INVALID; a success must be reproducible,
 * name the reason "valid", and answer every key with a value inside the proof or absence.
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
    uint8_t flags = 0, root[32], hb[8], nk = 0;
    take(&data, &size, &flags, 1);
    take(&data, &size, root, 32);
    take(&data, &size, hb, 8);
    take(&data, &size, &nk, 1);
    size_t n = nk ? nk : 1;
    static uint8_t keys[255][255];
    const void *kp[255];
    size_t kl[255];
    for (size_t i = 0; i < n; i++) {
        uint8_t l = 0;
        take(&data, &size, &l, 1);
        kl[i] = l ? l : 1;
        take(&data, &size, keys[i], kl[i]);
        kp[i] = keys[i];
    }
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--)
        h = (h << 8) | hb[i];
    if (flags & 1)
        h = UINT64_MAX;
    /* Copy the proof so that any over-read hits the allocation's end (ASan). */
    uint8_t *proof = malloc(size ? size : 1);
    if (!proof)
        return 0;
    memcpy(proof, data, size);
    qmdb_proof_answer ans[255];
    const char *why = NULL;
    uint64_t ph = 0;
    int rc = qmdb_proof_verify_many(proof, size, root, kp, kl, n, h, &ph, ans, &why);
    if (rc != 0 && rc != QMDB_BAD_PROOF && rc != QMDB_INVALID && rc != -ENOMEM)
        abort();
    if (!why)
        abort();
    if (rc == 0) {
        qmdb_fuzz_valid_inputs++;
        if (strcmp(why, "valid") != 0)
            abort();
        if (h != UINT64_MAX && ph != h)
            abort();
        for (size_t i = 0; i < n; i++) {
            if (ans[i].present && (ans[i].value < proof || ans[i].vlen == 0 ||
                                   ans[i].value + ans[i].vlen > proof + size))
                abort();
            if (!ans[i].present && ans[i].value)
                abort();
        }
        if (qmdb_proof_verify_many(proof, size, root, kp, kl, n, h, NULL, ans, NULL) != 0)
            abort();
    }
    free(proof);
    return 0;
}
