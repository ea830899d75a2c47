/* SPDX-License-Identifier: Apache-2.0 */
/* test_hash.c -- SHA-256 backends (portable, SHA-NI) against OpenSSL; H2 and its batch form. */
#include "../test.h"
#include "hash.h"

#include <openssl/sha.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t
next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void
check_backend(int which, const char *name)
{
    if (qm_hash_set_backend(which) != 0) {
        printf("backend %s not supported here; skipped\n", name);
        return;
    }
    CHECK(strcmp(qm_hash_backend_name(), name) == 0);
    static unsigned char buf[5000];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)next();
    /* Every length around block boundaries, then random ones. */
    for (size_t len = 0; len < 300; len++) {
        unsigned char a[32], b[32];
        qm_sha256(buf, len, a);
        SHA256(buf, len, b);
        CHECK_MEM(a, b, 32);
    }
    for (int i = 0; i < 200; i++) {
        size_t len = next() % sizeof(buf), split = len ? next() % len : 0;
        unsigned char a[32], b[32], c[32];
        qm_sha256(buf, len, a);
        qm_sha256_2(buf, split, buf + split, len - split, c);
        SHA256(buf, len, b);
        CHECK_MEM(a, b, 32);
        CHECK_MEM(c, b, 32);
    }
    /* H2 = SHA256(level || L || R), single and batched. */
    qm_h2_job jobs[50];
    unsigned char out[50][32], in[50][64];
    for (int i = 0; i < 50; i++) {
        for (int k = 0; k < 64; k++)
            in[i][k] = (unsigned char)next();
        jobs[i] = (qm_h2_job){in[i], in[i] + 32, out[i], (unsigned char)(i + 3)};
    }
    qm_h2_batch(jobs, 50);
    for (int i = 0; i < 50; i++) {
        unsigned char msg[65], want[32], single[32];
        msg[0] = (unsigned char)(i + 3);
        memcpy(msg + 1, in[i], 64);
        SHA256(msg, 65, want);
        qm_h2((unsigned char)(i + 3), in[i], in[i] + 32, single);
        CHECK_MEM(out[i], want, 32);
        CHECK_MEM(single, want, 32);
    }
}

int
main(void)
{
    check_backend(QM_HASH_PORTABLE, "portable");
    check_backend(QM_HASH_SHANI, "sha-ni");
    qm_hash_set_backend(QM_HASH_AUTO);

    /* Known answer from vectors.json (upstream test_hash2): the hash of tag 8 followed by the
     * ASCII bytes "hello" and "world" (upstream's hash2 takes slices of any length). */
    char *json = test_slurp(QMDB_VECTORS_DIR "/vectors.json");
    REQUIRE(json != NULL);
    char hex[128];
    REQUIRE(test_json_str(json, "\"h2\"", "hash", hex, sizeof(hex)) == 0);
    unsigned char want[32], got[32], l[32] = {0}, r[32] = {0};
    REQUIRE(test_unhex(hex, want, 32) == 32);
    unsigned char msg[11] = {8, 'h', 'e', 'l', 'l', 'o', 'w', 'o', 'r', 'l', 'd'};
    qm_sha256(msg, sizeof(msg), got);
    CHECK_MEM(got, want, 32);
    qm_sha256_2(msg, 6, msg + 6, 5, got);
    CHECK_MEM(got, want, 32);
    /* Counting compressions: H2 costs exactly two. */
    uint64_t before = qm_hash_compressions();
    qm_h2(1, l, r, got);
    CHECK_EQ_U64(qm_hash_compressions() - before, 2);
    free(json);
    return test_report("test_hash");
}
