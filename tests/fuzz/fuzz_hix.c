/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_hix.c -- fuzz target for the hybrid indexer's run-file decoder (src/hindex.c:
 * qm_hix_load, then the record pages through qm_hix_foreach / qm_hix_find / qm_hix_pred). The
 * input is the whole file: it is written as s03.hix in a per-process temporary directory and
 * loaded for shard 3; then again with the header's CRCs patched in (as far as the input holds
 * what they cover). Properties: load returns 0, QMDB_NOTFOUND or an errno code; a loaded run's
 * state and generation are the header's bytes [64, 152), its pages lie inside the file and
 * hold its nrec records, and its blob is the header's blob_len bytes from blob_off to the end;
 * lookups and
 * the walk return 0, QMDB_CORRUPT or an errno code; a complete walk yields qm_hix_count
 * records. The checkpoint decoders of the in-memory indexer (src/hrecover.c): a blob that
 * qm_ckpt_fits accepts against the run's own state holds exactly the state's twigs; a run
 * that qm_ckpt_load_index loads gives an in-memory index of qm_hix_count records, all in
 * shard 3, in key order, below the state's log size.
 */
#include "codec.h"
#include "fuzz.h"
#include "hindex.h"
#include "shard.h"

#include <string.h>
#include <unistd.h>

static char g_dir[64], g_path[96], g_tmp[104];

static void
cleanup(void)
{
    unlink(g_path);
    unlink(g_tmp);
    rmdir(g_dir);
}

static void
setup(void)
{
    if (g_dir[0])
        return;
    snprintf(g_dir, sizeof(g_dir), "/tmp/qmdb-fuzz-hix-XXXXXX");
    FUZZ_ASSERT(mkdtemp(g_dir) != NULL);
    snprintf(g_path, sizeof(g_path), "%s/s03.hix", g_dir);
    snprintf(g_tmp, sizeof(g_tmp), "%s.tmp", g_path);
    atexit(cleanup);
}

/* 0, a qmdb error code the decoder may return, or a negated errno. */
static int
ok_rc(int rc, int allowed)
{
    return rc == 0 || rc == allowed || (rc < 0 && rc > -4096);
}

static int
walk_fn(void *arg, const u8 key6[6], u64 pos)
{
    u64 *w = arg; /* records so far (order is not asserted: page CRCs are all that vouch for
                   * it, and a forged page would be a wrong answer, not a decoder fault) */
    (void)key6;
    FUZZ_ASSERT(pos % 8 == 0);
    w[0]++;
    return 0;
}

typedef struct ix_walk {
    u64 n, prev, entry_size;
} ix_walk;

static int
ix_fn(void *arg, const u8 key6[6], u64 pos)
{
    ix_walk *w = arg;
    u64 k = qm_get_u48be(key6);
    FUZZ_ASSERT(key6[0] >> 4 == 3 && k >= w->prev && pos < w->entry_size && pos % 8 == 0);
    w->prev = k;
    w->n++;
    return 0;
}

/* The in-memory indexer's checkpoint decoders on the loaded run (state st, blob). */
static void
ckpt(qm_hindex *x, const qm_hix_state *st, const u8 *blob, size_t blob_len)
{
    qm_shard_meta m;
    memset(&m, 0, sizeof(m));
    m.next_sn = st->next_sn;
    m.entry_size = st->entry_size;
    m.live = st->live;
    m.first_twig = st->first_twig;
    memcpy(m.root, st->root, 32);
    u64 ntw = 0;
    if (qm_ckpt_fits(st, blob, blob_len, &m, st->height, &ntw))
        FUZZ_ASSERT(blob_len == 16 + ntw * 264 && st->first_twig + ntw == (st->next_sn >> 11) + 1);
    qm_index ix;
    qm_index_init(&ix);
    int rc = qm_ckpt_load_index(x, 3, st->entry_size, &ix);
    FUZZ_ASSERT(ok_rc(rc, QMDB_NOTFOUND));
    if (rc == 0) {
        FUZZ_ASSERT(ix.count == qm_hix_count(x));
        ix_walk w = {0, 0, st->entry_size};
        FUZZ_ASSERT(qm_index_foreach(&ix, 3, ix_fn, &w) == 0 && w.n == ix.count);
    }
    qm_index_free(&ix);
}

static void
lookups(qm_hindex *x, const uint8_t *data, size_t size)
{
    /* Keys from the input: records 0, 1, 170 and 340 of record page 0, the first of pages 1, 2. */
    static const size_t at[] = {4096, 4108, 4096 + 12 * 170, 4096 + 12 * 340, 8192, 12288};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        if (at[i] + 6 > size)
            break;
        u8 kh[32] = {0};
        memcpy(kh, data + at[i], 6);
        kh[0] = (u8)(0x30 | (kh[0] & 0x0f));
        for (int d = 0; d < 2; d++) { /* the key, and the key plus one in its last byte */
            kh[5] = (u8)(kh[5] + d);
            u64 out[8];
            size_t n = 0;
            FUZZ_ASSERT(ok_rc(qm_hix_find(x, kh, out, 8, &n), QMDB_CORRUPT));
            FUZZ_ASSERT(ok_rc(qm_hix_pred(x, kh, out, 8, &n), QMDB_CORRUPT));
        }
    }
}

static void
check(const uint8_t *data, size_t size)
{
    unlink(g_path);
    unlink(g_tmp);
    FILE *f = fopen(g_path, "wb");
    FUZZ_ASSERT(f);
    FUZZ_ASSERT(size == 0 || fwrite(data, 1, size, f) == size);
    FUZZ_ASSERT(fclose(f) == 0);

    qm_hix_state st;
    u64 gen = 0;
    qm_hindex *x = NULL;
    u8 *blob = NULL;
    size_t blob_len = 0;
    qm_err err;
    int rc = qm_hix_load(g_dir, 3, 0, &st, &gen, &x, &blob, &blob_len, &err);
    FUZZ_ASSERT(ok_rc(rc, QMDB_NOTFOUND));
    if (rc != 0) {
        FUZZ_ASSERT(x == NULL && blob == NULL);
        return;
    }
    FUZZ_ASSERT(x && blob && size >= 4096);
    u64 v[6] = {st.height, st.next_sn, st.entry_size, st.entry_head, st.live, st.first_twig};
    for (int i = 0; i < 6; i++)
        FUZZ_ASSERT(v[i] == qm_get_u64le(data + 64 + 8 * i));
    FUZZ_ASSERT(memcmp(st.root, data + 112, 32) == 0 && gen == qm_get_u64le(data + 144));
    u64 boff = qm_get_u64le(data + 32);
    FUZZ_ASSERT(blob_len == qm_get_u64le(data + 40));
    FUZZ_ASSERT(boff <= size && blob_len == size - boff);
    FUZZ_ASSERT(memcmp(blob, data + boff, blob_len) == 0);
    u64 nrec = qm_get_u64le(data + 16), npages = qm_get_u64le(data + 24);
    FUZZ_ASSERT(qm_hix_count(x) == nrec);
    FUZZ_ASSERT(npages < size / 4096 && nrec <= npages * 341 && nrec + 341 > npages * 341);

    u64 w[2] = {0, 0};
    rc = qm_hix_foreach(x, walk_fn, w);
    FUZZ_ASSERT(ok_rc(rc, QMDB_CORRUPT));
    FUZZ_ASSERT(rc != 0 || w[0] == qm_hix_count(x));
    ckpt(x, &st, blob, blob_len);
    lookups(x, data, size);
    qm_hix_free(x);
    free(blob);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    check(data, size);
    if (size < 4096)
        return 0;
    /* Again with the CRCs of the sparse index and blob (where inside the input) and of the
     * header patched in, so that mutated header fields and sparse keys get past them. */
    u8 *c = malloc(size);
    FUZZ_ASSERT(c);
    memcpy(c, data, size);
    u64 npages = qm_get_u64le(c + 24), boff = qm_get_u64le(c + 32), blen = qm_get_u64le(c + 40);
    if (npages < size / 4096 && (npages + 1) * 4096 + npages * 6 <= size)
        qm_put_u32le(c + 52, qm_crc32c(0, c + (npages + 1) * 4096, npages * 6));
    if (boff <= size && blen <= size - boff)
        qm_put_u32le(c + 56, qm_crc32c(0, c + boff, blen));
    qm_put_u32le(c + 152, qm_crc32c(0, c, 152));
    if (memcmp(c, data, 156) != 0)
        check(c, size);
    free(c);
    return 0;
}
