/* SPDX-License-Identifier: Apache-2.0 */
/* test_warm.c -- the warm-entry cache: put/get by position across table growth, duplicates,
 * the byte bound, clearing, hit counting, and the looked-up key set. */
#include "../test.h"
#include "warm.h"

int
main(void)
{
    qm_warm w;
    memset(&w, 0, sizeof(w));
    unsigned char buf[300];
    uint32_t len;
    CHECK(qm_warm_get(&w, 8, &len) == NULL);
    CHECK(qm_warm_none(&w)); /* readers then skip the lock */
    for (uint64_t i = 0; i < 5000; i++) {
        memset(buf, (int)(i & 0xff), sizeof(buf));
        qm_warm_put(&w, i * 8 + 4096, buf, (uint32_t)(56 + i % 200));
    }
    CHECK_EQ_U64(w.n, 5000);
    CHECK(!qm_warm_none(&w));
    for (uint64_t i = 0; i < 5000; i += 7) {
        const unsigned char *p = qm_warm_get(&w, i * 8 + 4096, &len);
        REQUIRE(p != NULL);
        CHECK_EQ_U64(len, 56 + i % 200);
        CHECK(p[0] == (unsigned char)(i & 0xff) && p[len - 1] == (unsigned char)(i & 0xff));
    }
    CHECK(qm_warm_get(&w, 4, &len) == NULL);
    CHECK_EQ_U64(w.hits, 715);
    /* A second put at the same position keeps the first copy (bytes never change). */
    memset(buf, 0xee, sizeof(buf));
    qm_warm_put(&w, 4096, buf, 56);
    CHECK(qm_warm_get(&w, 4096, &len)[0] == 0);
    CHECK_EQ_U64(w.n, 5000);
    qm_warm_clear(&w);
    CHECK(qm_warm_none(&w));
    CHECK(qm_warm_get(&w, 4096, &len) == NULL);
    /* The byte bound: puts beyond QM_WARM_MAX_BYTES are skipped, never an error. */
    static unsigned char big[1 << 20];
    for (uint64_t i = 0; i < 40; i++)
        qm_warm_put(&w, i << 24, big, sizeof(big));
    CHECK(w.alen <= QM_WARM_MAX_BYTES);
    CHECK(w.n >= QM_WARM_MAX_BYTES / sizeof(big) - 1 && w.n <= QM_WARM_MAX_BYTES / sizeof(big));
    CHECK(qm_warm_get(&w, (uint64_t)39 << 24, &len) == NULL);
    CHECK(qm_warm_peek(&w, 0, &len) != NULL && len == sizeof(big));

    /* The key set: membership by the first 8 key-hash bytes, across growth; cleared with the
     * cache; bounded. */
    unsigned char kh[32] = {0};
    for (uint32_t i = 0; i < 3000; i++) {
        memcpy(kh, &i, 4);
        kh[7] = 0x5a;
        qm_warm_key_add(&w, kh);
        qm_warm_key_add(&w, kh); /* duplicates count once */
    }
    CHECK_EQ_U64(w.kn, 3000);
    uint32_t absent = 3001, present = 1234;
    memcpy(kh, &present, 4);
    CHECK(qm_warm_key_has(&w, kh));
    memcpy(kh, &absent, 4);
    CHECK(!qm_warm_key_has(&w, kh));
    kh[20] ^= 1; /* bytes past the first 8 do not matter */
    memcpy(kh, &present, 4);
    CHECK(qm_warm_key_has(&w, kh));
    qm_warm_clear(&w);
    CHECK(!qm_warm_key_has(&w, kh));
    CHECK_EQ_U64(w.kn, 0);
    qm_warm_free(&w);
    return test_report("test_warm");
}
