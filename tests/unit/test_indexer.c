/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_indexer.c -- the in-memory indexer against a brute-force list: find, predecessor
 * candidates, insert/erase/replace, bulk load, collisions on the 6-byte prefix, DRAM count.
 */
#include "../test.h"
#include "indexer.h"

typedef struct rec {
    unsigned char kh[32];
    uint64_t pos;
    int live;
} rec;

static uint64_t rng = 12345;
static uint64_t
next(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 17;
}

#define N 20000
static rec recs[N];

static void
random_kh(unsigned char *kh, int collide_with)
{
    for (int i = 0; i < 32; i++)
        kh[i] = (unsigned char)next();
    kh[0] = (kh[0] & 0x0f) | 0x30; /* shard 3 */
    kh[1] &= 0x07;                 /* few units: long arrays */
    if (collide_with >= 0)
        memcpy(kh, recs[collide_with].kh, 6); /* same 6-byte prefix, different tail */
}

int
main(void)
{
    static qm_index x;
    qm_index_init(&x);
    int n = 0;
    for (int round = 0; round < 3 * N; round++) {
        int op = (int)(next() % 10);
        if (op < 5 && n < N) {
            int col = (n > 10 && next() % 50 == 0) ? (int)(next() % n) : -1;
            random_kh(recs[n].kh, col);
            recs[n].pos = 8 * (uint64_t)(round + 1) + ((uint64_t)1 << 40);
            recs[n].live = 1;
            CHECK_OK(qm_index_insert(&x, recs[n].kh, recs[n].pos));
            n++;
        } else if (op < 7 && n > 0) {
            int i = (int)(next() % n);
            if (recs[i].live) {
                CHECK_OK(qm_index_erase(&x, recs[i].kh, recs[i].pos));
                recs[i].live = 0;
            } else {
                CHECK_RC(qm_index_erase(&x, recs[i].kh, recs[i].pos), QMDB_NOTFOUND);
            }
        } else if (op < 8 && n > 0) {
            int i = (int)(next() % n);
            if (recs[i].live) {
                uint64_t np = recs[i].pos + 8 * (uint64_t)N * 10;
                CHECK_OK(qm_index_replace(&x, recs[i].kh, recs[i].pos, np));
                recs[i].pos = np;
            }
        } else if (n > 0) {
            /* find: every live record with the same 6-byte prefix, nothing else. */
            int i = (int)(next() % n);
            uint64_t got[64];
            size_t cnt = qm_index_find(&x, recs[i].kh, got, 64);
            size_t want = 0;
            for (int j = 0; j < n; j++) {
                if (!recs[j].live || memcmp(recs[j].kh, recs[i].kh, 6) != 0)
                    continue;
                want++;
                int seen = 0;
                for (size_t k = 0; k < cnt && k < 64; k++)
                    seen |= got[k] == recs[j].pos;
                CHECK(seen);
            }
            CHECK_EQ_U64(cnt, want);
            /* Predecessor: the best live record below must be among the candidates. */
            int best = -1;
            for (int j = 0; j < n; j++)
                if (recs[j].live && recs[j].kh[0] == recs[i].kh[0] &&
                    recs[j].kh[1] == recs[i].kh[1] && memcmp(recs[j].kh, recs[i].kh, 32) < 0 &&
                    (best < 0 || memcmp(recs[j].kh, recs[best].kh, 32) > 0))
                    best = j;
            cnt = qm_index_pred_candidates(&x, recs[i].kh, got, 64);
            if (best >= 0) {
                int seen = 0;
                for (size_t k = 0; k < cnt && k < 64; k++)
                    seen |= got[k] == recs[best].pos;
                CHECK(seen);
            }
        }
    }
    size_t live = 0;
    for (int j = 0; j < n; j++)
        live += recs[j].live;
    CHECK_EQ_U64(x.count, live);
    uint64_t dram = qm_index_dram_bytes(&x);
    CHECK(dram >= live * QM_INDEX_REC);
    CHECK(dram <= sizeof(x) + live * QM_INDEX_REC * 5 / 4 + 4096 * 64);

    /* Bulk load gives the same answers as incremental inserts. */
    static qm_index y;
    qm_index_init(&y);
    for (int j = n - 1; j >= 0; j--)
        if (recs[j].live)
            CHECK_OK(qm_index_bulk_add(&y, recs[j].kh, recs[j].pos));
    qm_index_bulk_finish(&y);
    for (int j = 0; j < n; j += 7) {
        uint64_t a[64], b[64];
        size_t ca = qm_index_find(&x, recs[j].kh, a, 64), cb = qm_index_find(&y, recs[j].kh, b, 64);
        CHECK_EQ_U64(ca, cb);
    }
    qm_index_free(&x);
    qm_index_free(&y);
    CHECK_EQ_U64(x.count, 0);
    return test_report("test_indexer");
}
