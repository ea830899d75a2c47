/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_entry_twig.c -- entry codec and decoder validation, sentries, null entry, and the twig
 * and upper-tree null tables and ActiveBits hashing, against ../shared/vectors/vectors.json.
 */
#include "../test.h"
#include "entry.h"
#include "hash.h"
#include "twig.h"

static char *json;

static void
want_hex(const char *anchor, const char *field, unsigned char *out, size_t n)
{
    char hex[600];
    REQUIRE(test_json_str(json, anchor, field, hex, sizeof(hex)) == 0);
    REQUIRE(test_unhex(hex, out, n) == (int)n);
}

static void
test_entry_vector(void)
{
    unsigned char bytes[96], hash[32], nkh[32], buf[128];
    want_hex("\"entry_encoding\"", "bytes", bytes, 96);
    want_hex("\"entry_encoding\"", "entry_hash", hash, 32);
    memset(nkh, 0xab, 32);
    uint64_t dsn[4] = {0xf1, 0xf2, 0xf3, 0xf4};
    uint32_t n = qm_entry_encode(buf, (const u8 *)"key", 3, (const u8 *)"value", 5, nkh, 12345,
                                 99999, dsn, 4);
    CHECK_EQ_U64(n, 96);
    CHECK_MEM(buf, bytes, 96);
    unsigned char h[32];
    qm_entry_hash(buf, h);
    CHECK_MEM(h, hash, 32);

    qm_entry e;
    CHECK_OK(qm_entry_decode(buf, 96, &e));
    CHECK_EQ_U64(e.klen, 3);
    CHECK_EQ_U64(e.vlen, 5);
    CHECK_EQ_U64(e.version, 12345);
    CHECK_EQ_U64(e.sn, 99999);
    CHECK_EQ_U64(e.ndsn, 4);
    CHECK_EQ_U64(e.dsn[1], 0xf2);
    CHECK_EQ_U64(e.stored_len, 96);
    CHECK(memcmp(e.key, "key", 3) == 0 && memcmp(e.value, "value", 5) == 0);

    /* Truncated input, nonzero padding, zero key length: all rejected. */
    for (size_t len = 0; len < 96; len++)
        CHECK_RC(qm_entry_decode(buf, len, &e), QMDB_CORRUPT);
    unsigned char bad[96];
    memcpy(bad, buf, 96);
    bad[95] = 1; /* padding byte: stored length 96, payload 93 */
    CHECK_RC(qm_entry_decode(bad, 96, &e), QMDB_CORRUPT);
    memcpy(bad, buf, 96);
    bad[0] = 0;
    CHECK_RC(qm_entry_decode(bad, 96, &e), QMDB_CORRUPT);
    memcpy(bad, buf, 96);
    bad[3] = 0x10; /* value length > buffer */
    CHECK_RC(qm_entry_decode(bad, 96, &e), QMDB_CORRUPT);
}

static void
test_sentry(void)
{
    unsigned char key[32], kh[32], nkh[32], hash[32], buf[128];
    want_hex("\"sentry_example\"", "key", key, 32);
    want_hex("\"sentry_example\"", "key_hash", kh, 32);
    want_hex("\"sentry_example\"", "next_key_hash", nkh, 32);
    want_hex("\"sentry_example\"", "entry_hash", hash, 32);
    uint32_t n = qm_sentry_encode(2, 5, buf);
    CHECK_EQ_U64(n, 88);
    qm_entry e;
    CHECK_OK(qm_entry_decode(buf, n, &e));
    CHECK_MEM(e.key, key, 32);
    CHECK_MEM(e.next_key_hash, nkh, 32);
    unsigned char h[32], k[32];
    qm_entry_hash(buf, h);
    CHECK_MEM(h, hash, 32);
    qm_entry_key_hash(e.key, e.klen, e.vlen, k);
    CHECK_MEM(k, kh, 32);
    /* The last sentry of the last shard points at 32 x 0xff. */
    n = qm_sentry_encode(15, 4095, buf);
    CHECK_OK(qm_entry_decode(buf, n, &e));
    unsigned char ff[32];
    memset(ff, 0xff, 32);
    CHECK_MEM(e.next_key_hash, ff, 32);
}

static void
test_nulls(void)
{
    unsigned char want[32];
    want_hex("\"null_entry_hash\"", "hash", want, 32);
    CHECK_MEM(qm_null_entry_hash(), want, 32);
    want_hex("\"null_twig_root\"", "hash", want, 32);
    CHECK_MEM(qm_null_node(12), want, 32);
    /* Heap node 2^k of the null left tree is at level 11-k. */
    static const char *nodes[] = {"\"1\"",   "\"2\"",   "\"4\"",    "\"8\"",
                                  "\"16\"",  "\"32\"",  "\"64\"",   "\"128\"",
                                  "\"256\"", "\"512\"", "\"1024\"", "\"2048\""};
    const char *sect = strstr(json, "\"null_left_tree_nodes\"");
    REQUIRE(sect);
    for (int k = 0; k < 12; k++) {
        const char *p = strstr(sect, nodes[k]);
        REQUIRE(p);
        char hex[65];
        REQUIRE(sscanf(p + strlen(nodes[k]), ": \"%64[0-9a-f]\"", hex) == 1);
        REQUIRE(test_unhex(hex, want, 32) == 32);
        CHECK_MEM(qm_null_left((unsigned)(11 - k)), want, 32);
    }
    static const int levels[] = {13, 14, 20, 40, 63};
    const char *up = strstr(json, "\"null_upper_nodes\"");
    REQUIRE(up);
    for (int i = 0; i < 5; i++) {
        char key[16], hex[65];
        snprintf(key, sizeof(key), "\"%d\"", levels[i]);
        const char *p = strstr(up, key);
        REQUIRE(p);
        REQUIRE(sscanf(p + strlen(key), ": \"%64[0-9a-f]\"", hex) == 1);
        REQUIRE(test_unhex(hex, want, 32) == 32);
        CHECK_MEM(qm_null_node((unsigned)levels[i]), want, 32);
    }
    /* A null left-tree heap has the null left root at node 1. */
    static unsigned char heap[4096][32];
    qm_left_tree_null(heap);
    CHECK_MEM(heap[1], qm_null_left(11), 32);
    CHECK_MEM(heap[4095], qm_null_entry_hash(), 32);
}

static void
test_twig_right_side(void)
{
    unsigned char bits[256], left[32], want[32], got[32];
    for (int i = 0; i < 255; i++)
        bits[i] = (unsigned char)i;
    bits[255] = 0;
    memset(left, 0x58, 32);
    /* L1[0] = H2(8, page0, page1). */
    const char *sect = strstr(json, "\"twig_right_side\"");
    REQUIRE(sect);
    const char *l1 = strstr(sect, "\"L1\"");
    REQUIRE(l1);
    l1 = strchr(l1, '[');
    REQUIRE(l1);
    for (int i = 0; i < 4; i++) {
        char hex[65];
        l1 = strchr(l1, '"');
        REQUIRE(l1 && sscanf(l1, "\"%64[0-9a-f]\"", hex) == 1);
        l1 = strchr(l1 + 1, '"') + 1;
        REQUIRE(test_unhex(hex, want, 32) == 32);
        qm_h2(8, bits + 64 * i, bits + 64 * i + 32, got);
        CHECK_MEM(got, want, 32);
    }
    want_hex("\"twig_right_side\"", "L3", want, 32);
    qm_active_root(bits, got);
    CHECK_MEM(got, want, 32);
    want_hex("\"twig_right_side\"", "twig_root", want, 32);
    qm_twig_root(left, bits, got);
    CHECK_MEM(got, want, 32);
}

static void
test_left_tree_update(void)
{
    /* Incremental updates of a left tree equal a full rebuild. */
    static unsigned char a[4096][32], b[4096][32];
    qm_left_tree_null(a);
    qm_left_tree_null(b);
    for (unsigned i = 0; i < 2048; i++) {
        unsigned char leaf[32];
        qm_sha256(&i, sizeof(i), leaf);
        memcpy(a[2048 + i], leaf, 32);
        memcpy(b[2048 + i], leaf, 32);
        if (i % 97 == 0)
            qm_left_tree_update(a, i > 96 ? i - 96 : 0, i + 1);
    }
    qm_left_tree_update(a, 1940, 2048);
    qm_left_tree_update(b, 0, 2048);
    CHECK_MEM(a[1], b[1], 32);
    CHECK(memcmp(a, b, sizeof(a)) == 0);
}

/* Stubs (entry.h): 56 bytes, stepped over by the length header, refused by the decoder. */
static void
test_stub(void)
{
    unsigned char leaf[32], st[QM_STUB_LEN], got[32];
    for (int i = 0; i < 32; i++)
        leaf[i] = (unsigned char)(i * 7 + 1);
    qm_stub_encode(st, 123456789, leaf);
    CHECK(qm_entry_is_stub(st));
    CHECK_EQ_U64(qm_entry_len_from_header(st), QM_STUB_LEN);
    u64 sn = 0;
    CHECK_OK(qm_stub_decode(st, sizeof(st), &sn, got));
    CHECK_EQ_U64(sn, 123456789);
    CHECK(memcmp(got, leaf, 32) == 0);
    qm_entry e;
    CHECK_RC(qm_entry_decode(st, sizeof(st), &e), QMDB_CORRUPT);
    CHECK_RC(qm_stub_decode(st, sizeof(st) - 1, &sn, got), QMDB_CORRUPT);
    for (unsigned i = 0; i < QM_STUB_LEN; i++) {
        if (i >= 8 && i < 48)
            continue;
        st[i] ^= 0x10;
        CHECK_RC(qm_stub_decode(st, sizeof(st), &sn, got), QMDB_CORRUPT);
        st[i] ^= 0x10;
    }
}

int
main(void)
{
    json = test_slurp(QMDB_VECTORS_DIR "/vectors.json");
    REQUIRE(json != NULL);
    test_entry_vector();
    test_sentry();
    test_nulls();
    test_twig_right_side();
    test_left_tree_update();
    test_stub();
    free(json);
    return test_report("test_entry_twig");
}
