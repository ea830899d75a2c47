/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_manifest.c -- libFuzzer target for the snapshot manifest parser (qm_manifest_parse,
 * src/manifest.c; format in docs/SYNC.md). Input: the manifest text. The parser must never
 * crash, must return 0 or QMDB_CORRUPT, and a parsed manifest must hold what the format
 * allows (positive utilization terms and segment sizes, distinct chunk names of at most 39
 * characters without '/').
 *
 * Build (clang): scripts/fuzz.sh manifest SECONDS. Replayed by CTest (fuzz_replay_manifest).
 */
#include "fuzz.h"
#include "manifest.h"

#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *t = malloc(size ? size : 1);
    if (!t)
        return 0;
    memcpy(t, data, size);
    qm_manifest m;
    qm_err err = {{0}};
    int rc = qm_manifest_parse(t, size, &m, &err);
    FUZZ_ASSERT(rc == 0 || rc == QMDB_CORRUPT);
    if (rc == 0) {
        FUZZ_ASSERT(m.util_ratio > 0 && m.util_div > 0 && m.entry_seg > 0 && m.twig_seg > 0);
        for (u64 i = 0; i < m.nchunks; i++) {
            FUZZ_ASSERT(strlen(m.chunks[i].name) < QM_CHUNK_NAME_MAX);
            FUZZ_ASSERT(strchr(m.chunks[i].name, '/') == NULL);
            for (u64 j = 0; j < i; j++)
                FUZZ_ASSERT(strcmp(m.chunks[i].name, m.chunks[j].name) != 0);
        }
        qm_manifest_free(&m);
    } else {
        FUZZ_ASSERT(err.msg[0] != 0);
    }
    free(t);
    return 0;
}
