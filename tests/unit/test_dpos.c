/* SPDX-License-Identifier: Apache-2.0 */
/* test_dpos.c -- the deactivation-position records of one shard: an outsized block's pairs
 * are recorded and collected exactly; its buffers are given back after the next, small block
 * (qm_dpos_dram_bytes drops below the keep size) without losing a pair of either block; a
 * reopen at a lower height drops the later records. */
#include "../test.h"
#include "dpos.h"

#include <stdlib.h>
#include <unistd.h>

/* Pairs of block h: n entries with SN = h * 1e6 + i at offset 8 * SN. */
static void
note_block(qm_dpos *d, u64 h, u64 n)
{
    for (u64 i = 0; i < n; i++)
        qm_dpos_note(d, h * 1000000 + i, 8 * (h * 1000000 + i));
    qm_dpos_block(d, h);
}

/* Collects the pairs of heights h+1 .. L and checks that they are exactly blocks h+1 .. L of
 * sizes n[]. */
static void
check_collect(qm_dpos *d, u64 h, u64 L, const u64 *n)
{
    u64 *out = NULL;
    size_t nout = 0;
    qm_dpos_found f;
    memset(&f, 0, sizeof(f));
    CHECK_OK(qm_dpos_collect(d, h, L, UINT64_MAX, &out, &nout, &f));
    CHECK(f.complete);
    CHECK_EQ_U64(f.damaged, 0);
    u64 want = 0;
    for (u64 b = h + 1; b <= L; b++)
        want += n[b];
    CHECK_EQ_U64(nout, want);
    /* every pair is one of the blocks' and appears once */
    u64 sum = 0, bad = 0;
    for (size_t i = 0; i < nout; i++) {
        u64 sn = out[2 * i], pos = out[2 * i + 1], b = sn / 1000000;
        if (pos != 8 * sn || b <= h || b > L || sn % 1000000 >= n[b])
            bad++;
        sum += sn % 1000000;
    }
    CHECK_EQ_U64(bad, 0);
    u64 wsum = 0;
    for (u64 b = h + 1; b <= L; b++)
        wsum += n[b] * (n[b] - 1) / 2;
    CHECK_EQ_U64(sum, wsum);
    free(out);
}

int
main(void)
{
    char dir[] = "/tmp/qmdb-test-dpos-XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    qm_dpos d;
    qm_dpos_init(&d);
    qm_dpos_open(&d, dir, 3, 0, 100);
    REQUIRE(d.on);
    const u64 n[5] = {0, 100, 50000, 7, 9};
    note_block(&d, 1, n[1]);
    u64 small = qm_dpos_dram_bytes(&d);
    CHECK(small > 0 && small < (256u << 10));
    /* An outsized block: 50,000 pairs (800 KB of pairs, as much again encoded). */
    note_block(&d, 2, n[2]);
    CHECK(qm_dpos_dram_bytes(&d) >= 2 * 16 * n[2]);
    check_collect(&d, 1, 2, n);
    /* The next small block gives the outsized buffers back. */
    note_block(&d, 3, n[3]);
    CHECK(qm_dpos_dram_bytes(&d) < (256u << 10));
    note_block(&d, 4, n[4]);
    CHECK(d.on);
    check_collect(&d, 0, 4, n);
    check_collect(&d, 2, 4, n);
    qm_dpos_close(&d);
    /* Reopened at height 3 (block 4 discarded): only blocks 1..3 remain. */
    qm_dpos_init(&d);
    qm_dpos_open(&d, dir, 3, 3, 100);
    REQUIRE(d.on);
    check_collect(&d, 0, 3, n);
    qm_dpos_close(&d);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return test_report("test_dpos");
}
