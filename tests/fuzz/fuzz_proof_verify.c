/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_proof_verify.c -- libFuzzer target for the proof verifier (qmdb_proof_verify and
 * qmdb_proof_info_get). Links only src/proof_verify.c and the hash module, like a light
 * client would.
 *
 * Input: a claim followed by proof bytes (the seeds in corpus/proof_verify are real proofs
 * with their true claims, written by tests/proof/test_proof with QMDB_PROOF_CORPUS=DIR):
 *   1 byte   flags: bit 0 = claim absence (value NULL); bit 1 = height UINT64_MAX ("current")
 *   32       trusted state root
 *   8        height (u64 LE)
 *   1        key length k, then k key bytes
 *   4        value length v (u32 LE), then v value bytes
 *   rest     proof bytes
 * Short inputs are padded with zeros. The verifier must never crash, read out of bounds or
 * return anything but 0, QMDB_BAD_PROOF or QMDB_INVALID; a reported success must be
 * reproducible and must name a reason of "valid".
 *
 * Build (clang): see tests/proof/run_fuzz_proof.sh. Replayed by CTest (test_fuzz_proof_replay).
 */
#include "qmdb.h"

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
    uint8_t flags = 0, root[32], hb[8], kl = 0, vb[4];
    take(&data, &size, &flags, 1);
    take(&data, &size, root, 32);
    take(&data, &size, hb, 8);
    take(&data, &size, &kl, 1);
    uint8_t key[256];
    size_t klen = take(&data, &size, key, kl);
    take(&data, &size, vb, 4);
    uint32_t vl = (uint32_t)vb[0] | ((uint32_t)vb[1] << 8) | ((uint32_t)vb[2] << 16) |
                  ((uint32_t)vb[3] << 24);
    size_t vlen = vl < size ? vl : size;
    const uint8_t *val = (flags & 1) ? NULL : data;
    if (!(flags & 1)) {
        data += vlen;
        size -= vlen;
    }
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--)
        h = (h << 8) | hb[i];
    if (flags & 2)
        h = UINT64_MAX;
    /* Copy the proof so that any over-read hits the allocation's end (ASan). */
    uint8_t *proof = malloc(size ? size : 1);
    if (!proof)
        return 0;
    memcpy(proof, data, size);
    const char *why = NULL;
    uint64_t ph = 0;
    /* A present claim with an empty value is a malformed claim: pass a 1-byte value then. */
    static const uint8_t one = 0;
    if (val && vlen == 0) {
        val = &one;
        vlen = 1;
    }
    int rc = qmdb_proof_verify(proof, size, root, key, klen ? klen : 1, val, vlen, h, &ph, &why);
    if (rc != 0 && rc != QMDB_BAD_PROOF && rc != QMDB_INVALID)
        abort();
    if (!why)
        abort();
    if (rc == 0) {
        qmdb_fuzz_valid_inputs++;
        if (strcmp(why, "valid") != 0)
            abort();
        if (h != UINT64_MAX && ph != h)
            abort();
        if (qmdb_proof_verify(proof, size, root, key, klen ? klen : 1, val, vlen, h, NULL, NULL) !=
            0)
            abort();
    }
    qmdb_proof_info info = QMDB_PROOF_INFO_INIT;
    int irc = qmdb_proof_info_get(proof, size, &info);
    if (irc != 0 && irc != QMDB_BAD_PROOF)
        abort();
    if (rc == 0 && irc != 0)
        abort(); /* a valid proof is well-formed */
    free(proof);
    return 0;
}
