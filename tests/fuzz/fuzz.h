/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz.h -- shared bits of the fuzz targets in tests/fuzz: the libFuzzer entry point
 * prototype and FUZZ_ASSERT, which aborts (a finding) when a decoder property is violated.
 * Each target is built two ways: with clang -fsanitize=fuzzer (scripts/fuzz.sh) and with
 * replay_main.c, which CTest uses to replay the checked-in corpus.
 */
#ifndef QM_FUZZ_H
#define QM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                                    \
    do {                                                                                  \
        if (!(c)) {                                                                       \
            fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

#endif /* QM_FUZZ_H */
