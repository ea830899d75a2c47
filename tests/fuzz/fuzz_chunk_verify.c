/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_chunk_verify.c -- libFuzzer target for the snapshot chunk verifier
 * (qmdb_chunk_verify, src/snap_verify.c; format in docs/SYNC.md).
 *
 * Input: 32 bytes trusted state root, 8 bytes height (u64 LE), then the chunk bytes (the
 * seeds in corpus/chunk_verify are real chunks with their true root and height, written by
 * tests/sync/test_sync with QMDB_CHUNK_CORPUS=DIR; test_sync checks that they verify). Short
 * inputs are padded with zeros. The verifier must never crash or read out of bounds, must
 * return 0 or QMDB_BAD_PROOF with a reason, and a success must be reproducible and describe
 * a chunk consistent with its bytes.
 *
 * Build (clang): scripts/fuzz.sh chunk_verify SECONDS. Replayed by CTest
 * (fuzz_replay_chunk_verify).
 */
#include "fuzz.h"
#include "qmdb.h"

#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t root[32] = {0}, hb[8] = {0};
    size_t k = size < 32 ? size : 32;
    memcpy(root, data, k);
    data += k;
    size -= k;
    k = size < 8 ? size : 8;
    memcpy(hb, data, k);
    data += k;
    size -= k;
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--)
        h = (h << 8) | hb[i];
    /* An exactly-sized copy, so that any over-read hits the allocation's end (ASan). */
    uint8_t *c = malloc(size ? size : 1);
    if (!c)
        return 0;
    memcpy(c, data, size);
    qmdb_chunk_info info = QMDB_CHUNK_INFO_INIT;
    const char *why = NULL;
    int rc = qmdb_chunk_verify(c, size, root, h, &info, &why);
    FUZZ_ASSERT(rc == 0 || rc == QMDB_BAD_PROOF);
    FUZZ_ASSERT(why != NULL && why[0] != 0);
    if (rc == 0) {
        FUZZ_ASSERT(strcmp(why, "valid") == 0);
        FUZZ_ASSERT(info.height == h && info.shard < 16);
        FUZZ_ASSERT(info.twig_begin < info.twig_end);
        FUZZ_ASSERT(info.log_bytes <= size && info.live <= info.entries);
        FUZZ_ASSERT(qmdb_chunk_verify(c, size, root, h, NULL, NULL) == 0);
        /* The same bytes under another height never verify. */
        FUZZ_ASSERT(qmdb_chunk_verify(c, size, root, h + 1, NULL, NULL) == QMDB_BAD_PROOF);
    }
    free(c);
    return 0;
}
