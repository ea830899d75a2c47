/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sync.c -- state sync through the public API (docs/SYNC.md).
 *
 * Round trips: a source database (default thresholds; compact_thres 1 with 7/10 and with 1/1;
 * a short history window so that twigs get pruned; the indexer from QMDB_INDEXER) is exported
 * one twig per chunk, the chunks are delivered to the restore in a shuffled order in three
 * rounds (half of them; then a tampered copy of one more, which is rejected by name while
 * the kept ones stay; then the rest), and the restored database must have the source's
 * height and root, every key's value, byte-identical proofs of a sample of keys, pass
 * qmdb_check, and give the source's root after each of 50 more identical blocks. Sparse
 * records make the restored log hold stubs (META of format 3): a snapshot of the restored
 * database equals the source's, a backup of it opens verified, proofs below the restore
 * height are refused, proofs at earlier heights from it on equal the source's, a rollback
 * within the window works, and with compaction of every dead entry and a short window the
 * restored database compacts past its stub twigs and prunes them (META of format 2 again).
 *
 * Damaged stubs (leaf hash, SN, zero bytes, key length) and a META without stub_end are
 * refused at open and reported by qmdb_check.
 *
 * Tampering (the verifier and the restore): every bit flip and every truncation of a chunk,
 * flips across the header and range proof of a full-twig chunk and spread over its entries,
 * entries and ActiveBits pages reordered, a sparse record's leaf hashes flipped, a live entry
 * replaced by its hash, a dead entry's bit set, the sparse kind in a version-1 chunk and for
 * the youngest twig, a chunk checked against another height, another
 * height's root and another database's root, and lying manifests (another root, another
 * height, a wrong digest, a chunk left out, two chunks' names swapped).
 *
 * QMDB_CHUNK_CORPUS=DIR writes fuzz seeds (root, height, chunk) for tests/fuzz.
 */
#include "../test.h"
#include "qmdb.h"

#include <dirent.h>
#include <openssl/sha.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[] = "/tmp/qmdb-sync-XXXXXX";

static void
path_of(char *out, size_t cap, const char *a, const char *b)
{
    int n = snprintf(out, cap, "%s/%s", a, b);
    REQUIRE(n > 0 && (size_t)n < cap);
}

static unsigned char *
read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)n + 1);
    REQUIRE(p && fread(p, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void
write_all(const char *path, const void *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    REQUIRE(f && fwrite(p, 1, len, f) == len);
    fclose(f);
}

static void
copy_file(const char *from, const char *to)
{
    size_t n;
    unsigned char *p = read_all(from, &n);
    REQUIRE(p);
    write_all(to, p, n);
    free(p);
}

static void
rm_rf(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    REQUIRE(system(cmd) == 0);
}

/* The chunk names of a snapshot's MANIFEST (in its order). */
static int
chunk_names(const char *snap, char names[][48], int cap)
{
    char path[4096], line[512];
    path_of(path, sizeof(path), snap, "MANIFEST");
    FILE *f = fopen(path, "r");
    REQUIRE(f);
    int n = 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "chunk ", 6) == 0 && n < cap)
            REQUIRE(sscanf(line, "chunk %47s", names[n++]) == 1);
    fclose(f);
    return n;
}

/* ---- the workload ------------------------------------------------------------------------ */

#define NKEYS 6000u

static void
key_of(unsigned i, char *k, size_t *kl)
{
    *kl = (size_t)snprintf(k, 16, "key%05u", i);
}

/* Block h of stream `seed`: ops random puts (values of 1..60 bytes) and deletes. */
static void
block(qmdb_db *db, uint64_t h, uint64_t seed, unsigned ops, unsigned char root[32])
{
    uint64_t s = seed * 1000003u + h * 7919u + 1;
    qmdb_batch *b;
    REQUIRE(qmdb_batch_new(&b) == 0);
    for (unsigned i = 0; i < ops; i++) {
        if (i % 64 == 63)
            CHECK_OK(qmdb_batch_tx(b));
        char k[16], v[64];
        size_t kl;
        key_of((unsigned)(test_xorshift(&s) % NKEYS), k, &kl);
        if (test_xorshift(&s) % 5 == 0) {
            CHECK_OK(qmdb_batch_del(b, k, kl));
        } else {
            size_t vl = 1 + test_xorshift(&s) % 60;
            for (size_t j = 0; j < vl; j++)
                v[j] = (char)('a' + (h + j) % 26);
            CHECK_OK(qmdb_batch_put(b, k, kl, v, vl));
        }
    }
    CHECK_OK(qmdb_commit(db, h, b, root));
    qmdb_batch_free(b);
}

static qmdb_db *
make_source(const char *dir, uint64_t thres, uint32_t ratio, uint32_t div, uint64_t history,
            unsigned blocks, unsigned ops)
{
    qmdb_options o;
    qmdb_options_init(&o);
    o.compact_thres = thres;
    o.utilization_ratio = ratio;
    o.utilization_div = div;
    o.history_blocks = history;
    REQUIRE(qmdb_create(dir, &o) == 0);
    qmdb_db *db = NULL;
    REQUIRE(qmdb_open(dir, NULL, &db) == 0);
    unsigned char r[32];
    for (uint64_t h = 1; h <= blocks; h++)
        block(db, h, 1, h == 1 ? NKEYS : ops, r);
    return db;
}

/* ---- restore reports --------------------------------------------------------------------- */

typedef struct seen {
    int accepted, rejected, missing;
    char last_rejected[64];
    char last_why[200];
} seen;

static void
on_chunk(void *arg, const char *chunk, int rc, const char *why)
{
    seen *s = arg;
    if (rc == 0)
        s->accepted++;
    else if (rc == QMDB_NOTFOUND)
        s->missing++;
    else {
        s->rejected++;
        snprintf(s->last_rejected, sizeof(s->last_rejected), "%s", chunk);
        snprintf(s->last_why, sizeof(s->last_why), "%s", why);
    }
}

static void corpus_seed(const char *name, const unsigned char root[32], uint64_t h,
                        const unsigned char *c, size_t len);

/* ---- round trip -------------------------------------------------------------------------- */

/* The format version of the newest META record of dir (FORMAT.md, META): 3 while the entry
 * log holds stubs of a restore, else 2. */
static unsigned
meta_version(const char *dir)
{
    char path[4200];
    path_of(path, sizeof(path), dir, "META");
    size_t len;
    unsigned char *m = read_all(path, &len);
    REQUIRE(m && len >= 24);
    uint64_t seq[2] = {0, 0};
    for (int k = 0; k < (len >= 4096 + 24 ? 2 : 1); k++)
        for (int i = 0; i < 8; i++)
            seq[k] |= (uint64_t)m[4096 * k + 16 + i] << (8 * i);
    const unsigned char *v = m + (seq[1] > seq[0] ? 4096 : 0) + 8;
    unsigned ver = v[0] | (unsigned)v[1] << 8 | (unsigned)v[2] << 16 | (unsigned)v[3] << 24;
    free(m);
    return ver;
}

/* Proofs of a sample of keys at height h: byte-identical on a and b. */
static void
compare_proofs_at(qmdb_db *a, qmdb_db *b, uint64_t h)
{
    unsigned proofs = 0;
    for (unsigned i = 0; i < NKEYS; i += 131) {
        char k[16];
        size_t kl;
        key_of(i, k, &kl);
        uint8_t *pa = NULL, *pb = NULL;
        size_t na = 0, nb = 0;
        int x = qmdb_prove(a, k, kl, h, &pa, &na);
        int y = qmdb_prove(b, k, kl, h, &pb, &nb);
        CHECK_OK(x);
        CHECK_OK(y);
        CHECK(x == 0 && y == 0 && na == nb && memcmp(pa, pb, na) == 0);
        qmdb_proof_free(pa);
        qmdb_proof_free(pb);
        proofs++;
    }
    CHECK(proofs > 40);
}

static void compare_dbs(qmdb_db *a, qmdb_db *b, const unsigned char root[32]);

/* Exports db (latest height, one twig per chunk) into snap and restores that into dst; the
 * restored root must be root. */
static void
reexport(qmdb_db *db, const char *snap, const char *dst, const unsigned char root[32])
{
    qmdb_snapshot_stat st = QMDB_SNAPSHOT_STAT_INIT, rs = QMDB_SNAPSHOT_STAT_INIT;
    CHECK_OK(qmdb_snapshot_export(db, snap, UINT64_MAX, 1, &st));
    CHECK_MEM(st.root, root, 32);
    CHECK_OK(qmdb_snapshot_restore(dst, snap, root, qmdb_height(db), NULL, NULL, &rs));
    if (test_failures)
        fprintf(stderr, "restore of a re-export: %s\n", qmdb_open_error());
    CHECK_EQ_U64(rs.live, st.live);
    /* Every live entry travels in stored form (and the youngest twig's dead ones too); one run
     * of the restore verified them all. */
    CHECK(st.entries >= st.live && st.live > 0);
    CHECK_EQ_U64(rs.entries, st.entries);
    qmdb_db *c = NULL;
    REQUIRE(qmdb_open(dst, NULL, &c) == 0);
    compare_dbs(db, c, root);
    CHECK_OK(qmdb_close(c));
}

static void
compare_dbs(qmdb_db *a, qmdb_db *b, const unsigned char root[32])
{
    unsigned char ra[32], rb[32];
    CHECK_OK(qmdb_root(a, UINT64_MAX, ra));
    CHECK_OK(qmdb_root(b, UINT64_MAX, rb));
    CHECK_MEM(ra, root, 32);
    CHECK_MEM(rb, root, 32);
    CHECK_EQ_U64(qmdb_height(a), qmdb_height(b));
    unsigned char va[64], vb[64];
    unsigned proofs = 0;
    for (unsigned i = 0; i < NKEYS + 50; i++) {
        char k[16];
        size_t kl, la = 0, lb = 0;
        key_of(i, k, &kl);
        int x = qmdb_get(a, k, kl, va, sizeof(va), &la);
        int y = qmdb_get(b, k, kl, vb, sizeof(vb), &lb);
        CHECK_EQ_U64((uint64_t)(int64_t)x, (uint64_t)(int64_t)y);
        if (x == 0 && y == 0) {
            CHECK_EQ_U64(la, lb);
            CHECK(memcmp(va, vb, la) == 0);
        }
        if (i % 97 == 0) {
            uint8_t *pa = NULL, *pb = NULL;
            size_t na = 0, nb = 0;
            CHECK_OK(qmdb_prove(a, k, kl, UINT64_MAX, &pa, &na));
            CHECK_OK(qmdb_prove(b, k, kl, UINT64_MAX, &pb, &nb));
            CHECK(na == nb && pa && pb && memcmp(pa, pb, na) == 0);
            const char *why = NULL;
            CHECK_OK(qmdb_proof_verify(pb, nb, root, k, kl, x == 0 ? vb : NULL, lb, UINT64_MAX,
                                       NULL, &why));
            qmdb_proof_free(pa);
            qmdb_proof_free(pb);
            proofs++;
        }
    }
    CHECK(proofs > 50);
}

static void
round_trip(const char *name, uint64_t thres, uint32_t ratio, uint32_t div, uint64_t history,
           bool want_pruned)
{
    char src[4096], snap[4096], in[4096], dst[4096];
    snprintf(src, sizeof(src), "%s/%s-src", base, name);
    snprintf(snap, sizeof(snap), "%s/%s-snap", base, name);
    snprintf(in, sizeof(in), "%s/%s-in", base, name);
    snprintf(dst, sizeof(dst), "%s/%s-dst", base, name);
    qmdb_db *db = make_source(src, thres, ratio, div, history, 40, 700);
    unsigned char root[32];
    REQUIRE(qmdb_root(db, UINT64_MAX, root) == 0);
    uint64_t H = qmdb_height(db);
    qmdb_snapshot_stat st = QMDB_SNAPSHOT_STAT_INIT;
    CHECK_OK(qmdb_snapshot_export(db, snap, UINT64_MAX, 1, &st));
    CHECK_EQ_U64(st.height, H);
    CHECK_MEM(st.root, root, 32);
    CHECK_RC(qmdb_snapshot_export(db, snap, UINT64_MAX, 1, NULL), QMDB_EXISTS);
    CHECK_RC(qmdb_snapshot_export(db, snap, H - 1, 1, NULL), QMDB_EXISTS);

    static char names[4096][48];
    int n = chunk_names(snap, names, 4096);
    CHECK_EQ_U64((uint64_t)n, st.chunks);
    REQUIRE(n >= 32);
    /* With pruning, shard 0's first chunk carries the pruned twigs as summaries. */
    {
        char p0[4200];
        size_t l0;
        path_of(p0, sizeof(p0), snap, "s00-000000000000.qmsc");
        unsigned char *c0 = read_all(p0, &l0);
        qmdb_chunk_info ci = QMDB_CHUNK_INFO_INIT;
        CHECK_OK(qmdb_chunk_verify(c0, l0, root, H, &ci, NULL));
        CHECK(want_pruned ? ci.summaries > 0 : ci.summaries == 0);
        if (want_pruned && l0 < 65536)
            corpus_seed("prefix-summaries", root, H, c0, l0);
        free(c0);
    }
    /* Shuffled delivery. */
    uint64_t s = 0x9e3779b97f4a7c15ull ^ thres;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(test_xorshift(&s) % (uint64_t)(i + 1));
        char t[48];
        memcpy(t, names[i], 48);
        memcpy(names[i], names[j], 48);
        memcpy(names[j], t, 48);
    }
    REQUIRE(mkdir(in, 0755) == 0);
    char from[4200], to[4200];
    path_of(from, sizeof(from), snap, "MANIFEST");
    path_of(to, sizeof(to), in, "MANIFEST");
    copy_file(from, to);
    int half = n / 2;
    for (int i = 0; i < half; i++) {
        path_of(from, sizeof(from), snap, names[i]);
        path_of(to, sizeof(to), in, names[i]);
        copy_file(from, to);
    }
    /* Round 1: half of the chunks. */
    seen sn = {0};
    qmdb_snapshot_stat rs = QMDB_SNAPSHOT_STAT_INIT;
    CHECK_RC(qmdb_snapshot_restore(dst, in, root, H, on_chunk, &sn, &rs), QMDB_NOTFOUND);
    CHECK_EQ_U64(rs.accepted, (uint64_t)half);
    CHECK_EQ_U64(rs.missing, (uint64_t)(n - half));
    CHECK_EQ_U64((uint64_t)sn.accepted, (uint64_t)half);
    /* Round 2: a damaged copy of one more chunk (a flipped byte in its entries). */
    path_of(from, sizeof(from), snap, names[half]);
    path_of(to, sizeof(to), in, names[half]);
    size_t len;
    unsigned char *p = read_all(from, &len);
    p[len - 9] ^= 0x20;
    write_all(to, p, len);
    free(p);
    memset(&sn, 0, sizeof(sn));
    CHECK_RC(qmdb_snapshot_restore(dst, in, root, H, on_chunk, &sn, &rs), QMDB_BAD_PROOF);
    CHECK_EQ_U64(sn.rejected, 1);
    CHECK(strcmp(sn.last_rejected, names[half]) == 0);
    CHECK_EQ_U64(rs.accepted, (uint64_t)half);
    /* Another root for the same directory is refused (its kept chunks are for this one). */
    unsigned char other[32];
    memcpy(other, root, 32);
    other[0] ^= 1;
    CHECK_RC(qmdb_snapshot_restore(dst, in, other, H, NULL, NULL, NULL), QMDB_BAD_PROOF);
    /* Round 3: the rest (the good copy too). */
    for (int i = half; i < n; i++) {
        path_of(from, sizeof(from), snap, names[i]);
        path_of(to, sizeof(to), in, names[i]);
        copy_file(from, to);
    }
    memset(&sn, 0, sizeof(sn));
    CHECK_OK(qmdb_snapshot_restore(dst, in, root, H, on_chunk, &sn, &rs));
    if (test_failures)
        fprintf(stderr, "restore: %s\n", qmdb_open_error());
    CHECK_EQ_U64((uint64_t)sn.accepted, (uint64_t)(n - half));
    CHECK_EQ_U64(rs.accepted, (uint64_t)n);
    CHECK_EQ_U64(rs.live, st.live);
    CHECK_RC(qmdb_snapshot_restore(dst, in, root, H, NULL, NULL, NULL), QMDB_EXISTS);
    uint64_t problems = 99;
    CHECK_OK(qmdb_check(dst, NULL, NULL, &problems));
    CHECK_EQ_U64(problems, 0);

    /* Dead entries of the sparse twigs were restored as stubs: META says so. */
    CHECK_EQ_U64(meta_version(dst), 3);
    qmdb_db *cp = NULL;
    REQUIRE(qmdb_open(dst, NULL, &cp) == 0);
    compare_dbs(db, cp, root);
    unsigned char r[32];
    CHECK_RC(qmdb_root(cp, H - 1, r), QMDB_PRUNED);
    CHECK_RC(qmdb_root(cp, 0, r), QMDB_PRUNED);
    {
        /* Proofs below the restore height are refused. */
        uint8_t *pp = NULL;
        size_t pn = 0;
        CHECK_RC(qmdb_prove(cp, "key00001", 8, H - 1, &pp, &pn), QMDB_PRUNED);
        qmdb_proof_free(pp);
    }
    /* A snapshot of the restored database (its stubs become leaf hashes again) is the
     * source's snapshot, byte for byte, and restores to the same root. */
    char snap3[4200], dst3[4200];
    snprintf(snap3, sizeof(snap3), "%s-re", snap);
    snprintf(dst3, sizeof(dst3), "%s-re", dst);
    reexport(cp, snap3, dst3, root);
    {
        char m1[4200], m2[4200];
        size_t l1, l2;
        path_of(m1, sizeof(m1), snap, "MANIFEST");
        path_of(m2, sizeof(m2), snap3, "MANIFEST");
        unsigned char *a = read_all(m1, &l1), *b = read_all(m2, &l2);
        CHECK(a && b && l1 == l2 && memcmp(a, b, l1) == 0);
        free(a);
        free(b);
    }
    rm_rf(snap3);
    rm_rf(dst3);
    /* A backup of the restored database keeps its stubs (META of format 3) and opens with
     * full verification to the same state. */
    {
        char bk[4200];
        snprintf(bk, sizeof(bk), "%s-backup", dst);
        CHECK_OK(qmdb_backup(cp, bk));
        CHECK_EQ_U64(meta_version(bk), 3);
        qmdb_db *b = NULL;
        REQUIRE(qmdb_open(bk, NULL, &b) == 0);
        compare_dbs(db, b, root);
        CHECK_OK(qmdb_close(b));
        rm_rf(bk);
    }
    /* The same 50 next blocks on both. */
    for (uint64_t h = H + 1; h <= H + 50; h++) {
        unsigned char ra[32], rb[32];
        block(db, h, 2, 300, ra);
        block(cp, h, 2, 300, rb);
        CHECK_MEM(rb, ra, 32);
    }
    REQUIRE(qmdb_root(db, UINT64_MAX, root) == 0);
    compare_dbs(db, cp, root);
    /* Historical proofs at heights from the restore height on, within the window. */
    compare_proofs_at(db, cp, history >= 100 ? H + 1 : H + 49);
    if (history >= 100)
        compare_proofs_at(db, cp, H + 25);
    /* A rollback within the window, and the same blocks again. */
    uint64_t back = H + 50 - (history >= 100 ? 8 : 2);
    CHECK_OK(qmdb_rollback(db, back));
    CHECK_OK(qmdb_rollback(cp, back));
    for (uint64_t h = back + 1; h <= H + 50; h++) {
        unsigned char ra[32], rb[32];
        block(db, h, 2, 300, ra);
        block(cp, h, 2, 300, rb);
        CHECK_MEM(rb, ra, 32);
    }
    {
        unsigned char ra[32];
        CHECK_OK(qmdb_root(db, UINT64_MAX, ra));
        CHECK_MEM(ra, root, 32);
    }
    /* With compaction of every dead entry and a short window, the restored database has
     * compacted past its stub twigs and pruned them: META is of the ordinary format again.
     * Otherwise its stubs remain. */
    if (want_pruned) {
        for (uint64_t h = H + 51; h <= H + 400 && meta_version(dst) == 3; h++) {
            unsigned char ra[32], rb[32];
            block(db, h, 4, 300, ra);
            block(cp, h, 4, 300, rb);
            CHECK_MEM(rb, ra, 32);
        }
        CHECK_EQ_U64(meta_version(dst), 2);
        REQUIRE(qmdb_root(db, UINT64_MAX, root) == 0);
        compare_dbs(db, cp, root);
    } else {
        CHECK_EQ_U64(meta_version(dst), 3);
    }
    /* A snapshot of the restored database after those blocks restores to the same root; so
     * does one of an earlier height of it (its stub twigs still unpruned without compaction). */
    reexport(cp, snap3, dst3, root);
    rm_rf(snap3);
    rm_rf(dst3);
    {
        uint64_t he = qmdb_height(cp) - 2;
        unsigned char rh[32], rr[32];
        CHECK_OK(qmdb_root(cp, he, rh));
        qmdb_snapshot_stat es = QMDB_SNAPSHOT_STAT_INIT;
        int xrc = qmdb_snapshot_export(cp, snap3, he, 1, &es);
        if (history >= 100)
            CHECK_OK(xrc); /* (with the 3-block window, pruning may have passed it) */
        if (xrc == 0) {
            CHECK_MEM(es.root, rh, 32);
            CHECK_OK(qmdb_snapshot_restore(dst3, snap3, rh, he, NULL, NULL, NULL));
            qmdb_db *c = NULL;
            REQUIRE(qmdb_open(dst3, NULL, &c) == 0);
            CHECK_OK(qmdb_root(c, UINT64_MAX, rr));
            CHECK_MEM(rr, rh, 32);
            CHECK_OK(qmdb_close(c));
        } else {
            CHECK_RC(xrc, QMDB_PRUNED);
        }
        rm_rf(snap3);
        rm_rf(dst3);
    }
    CHECK_OK(qmdb_close(cp));
    uint64_t H2 = qmdb_height(db);
    CHECK_OK(qmdb_close(db));
    problems = 99;
    CHECK_OK(qmdb_check(dst, NULL, NULL, &problems));
    CHECK_EQ_U64(problems, 0);

    /* An earlier height: exported from a read-only handle of the source, restored, then the
     * source rolled back to it and both given the same 20 blocks. */
    uint64_t h = H2 - (history >= 100 ? 10 : 2);
    char snap2[4200], dst2[4200];
    snprintf(snap2, sizeof(snap2), "%s-h", snap);
    snprintf(dst2, sizeof(dst2), "%s-h", dst);
    qmdb_options ro;
    qmdb_options_init(&ro);
    ro.flags |= QMDB_OPEN_RDONLY;
    REQUIRE(qmdb_open(src, &ro, &db) == 0);
    unsigned char rh[32];
    CHECK_OK(qmdb_root(db, h, rh));
    CHECK_RC(qmdb_snapshot_export(db, snap2, H2 + 1, 1, NULL), QMDB_NOTFOUND);
    int erc = qmdb_snapshot_export(db, snap2, h, 1, &st);
    CHECK_OK(qmdb_close(db));
    if (history >= 100)
        CHECK_OK(erc);
    if (erc == 0) {
        CHECK_EQ_U64(st.height, h);
        CHECK_MEM(st.root, rh, 32);
        CHECK_OK(qmdb_snapshot_restore(dst2, snap2, rh, h, NULL, NULL, &rs));
        if (test_failures)
            fprintf(stderr, "restore at %llu: %s\n", (unsigned long long)h, qmdb_open_error());
        CHECK_EQ_U64(rs.live, st.live);
        REQUIRE(qmdb_open(src, NULL, &db) == 0);
        REQUIRE(qmdb_open(dst2, NULL, &cp) == 0);
        unsigned char r2[32];
        CHECK_OK(qmdb_root(cp, UINT64_MAX, r2));
        CHECK_MEM(r2, rh, 32);
        int rbrc = qmdb_rollback(db, h);
        if (history >= 100)
            CHECK_OK(rbrc);
        if (rbrc == 0) {
            for (uint64_t hh = h + 1; hh <= h + 20; hh++) {
                unsigned char ra[32], rb[32];
                block(db, hh, 3, 300, ra);
                block(cp, hh, 3, 300, rb);
                CHECK_MEM(rb, ra, 32);
            }
            REQUIRE(qmdb_root(db, UINT64_MAX, root) == 0);
            compare_dbs(db, cp, root);
        }
        CHECK_OK(qmdb_close(cp));
        CHECK_OK(qmdb_close(db));
    }
    fprintf(stderr, "round trip %s at an earlier height %llu: export %d\n", name,
            (unsigned long long)h, erc);
    fprintf(stderr, "round trip %s: height %llu, %d chunks, %llu bytes, %llu live\n", name,
            (unsigned long long)H, n, (unsigned long long)st.bytes, (unsigned long long)st.live);
}

/* ---- tampering --------------------------------------------------------------------------- */

static int
verify(const unsigned char *c, size_t len, const unsigned char root[32], uint64_t h)
{
    qmdb_chunk_info info = QMDB_CHUNK_INFO_INIT;
    const char *why = NULL;
    int rc = qmdb_chunk_verify(c, len, root, h, &info, &why);
    REQUIRE(why != NULL);
    return rc;
}

static void
corpus_seed(const char *name, const unsigned char root[32], uint64_t h, const unsigned char *c,
            size_t len)
{
    const char *dir = getenv("QMDB_CHUNK_CORPUS");
    if (!dir)
        return;
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    unsigned char hb[8];
    for (int i = 0; i < 8; i++)
        hb[i] = (unsigned char)(h >> (8 * i));
    REQUIRE(fwrite(root, 1, 32, f) == 32 && fwrite(hb, 1, 8, f) == 8 &&
            fwrite(c, 1, len, f) == len);
    fclose(f);
}

/* Offset of a chunk's first twig record: the header and its range proof (snap_fmt.h). */
static size_t
records_off(const unsigned char *c)
{
    uint64_t a = 0, b = 0;
    for (int i = 0; i < 8; i++) {
        a |= (uint64_t)c[16 + i] << (8 * i);
        b |= (uint64_t)c[24 + i] << (8 * i);
    }
    size_t off = 576;
    for (unsigned L = 0; L < c[7]; L++) {
        off += (a & 1) ? 32 : 0;
        off += (b & 1) ? 32 : 0;
        a >>= 1;
        b = (b + 1) >> 1;
    }
    return off;
}

static void
tamper(void)
{
    char src[4096], snap[4096], other[4096], osnap[4096];
    snprintf(src, sizeof(src), "%s/t-src", base);
    snprintf(snap, sizeof(snap), "%s/t-snap", base);
    snprintf(other, sizeof(other), "%s/t-other", base);
    snprintf(osnap, sizeof(osnap), "%s/t-osnap", base);
    /* A small database: per shard two full twigs of sentries and a youngest twig of a few
     * dozen entries. */
    qmdb_options o;
    qmdb_options_init(&o);
    REQUIRE(qmdb_create(src, &o) == 0);
    qmdb_db *db = NULL;
    REQUIRE(qmdb_open(src, NULL, &db) == 0);
    unsigned char r1[32], root[32];
    block(db, 1, 5, 300, r1);
    block(db, 2, 5, 300, root);
    CHECK(memcmp(r1, root, 32) != 0);
    CHECK_OK(qmdb_snapshot_export(db, snap, UINT64_MAX, 1, NULL));
    REQUIRE(qmdb_create(other, &o) == 0);
    qmdb_db *db2 = NULL;
    REQUIRE(qmdb_open(other, NULL, &db2) == 0);
    unsigned char oroot[32];
    block(db2, 1, 6, 300, oroot);
    block(db2, 2, 6, 300, oroot);
    CHECK_OK(qmdb_snapshot_export(db2, osnap, UINT64_MAX, 1, NULL));

    char path[4200];
    size_t ylen, flen, olen;
    path_of(path, sizeof(path), snap, "s00-000000000002.qmsc");
    unsigned char *y = read_all(path, &ylen); /* the youngest twig of shard 0 */
    path_of(path, sizeof(path), snap, "s00-000000000000.qmsc");
    unsigned char *f = read_all(path, &flen); /* a full twig of sentries */
    path_of(path, sizeof(path), osnap, "s00-000000000002.qmsc");
    unsigned char *oc = read_all(path, &olen);
    REQUIRE(y && f && oc);
    REQUIRE(ylen < 16384);
    corpus_seed("youngest", root, 2, y, ylen);
    path_of(path, sizeof(path), snap, "s0f-000000000002.qmsc");
    size_t ylen15;
    unsigned char *y2 = read_all(path, &ylen15);
    corpus_seed("youngest-shard15", root, 2, y2, ylen15);
    free(y2);

    CHECK_OK(verify(y, ylen, root, 2));
    CHECK_OK(verify(f, flen, root, 2));
    CHECK_OK(verify(oc, olen, oroot, 2));
    qmdb_chunk_info info = QMDB_CHUNK_INFO_INIT;
    CHECK_OK(qmdb_chunk_verify(y, ylen, root, 2, &info, NULL));
    CHECK_EQ_U64(info.shard, 0);
    CHECK_EQ_U64(info.twig_begin, 2);
    CHECK_EQ_U64(info.twig_end, 3);
    CHECK(info.entries > 0 && info.entries < 2048);
    CHECK_EQ_U64(info.next_sn, 4096 + info.entries);

    /* Every bit flip and every truncation of the youngest-twig chunk. */
    /* The only header field the root does not bind is the tail's compaction cursor (bytes
     * 40..47; docs/SYNC.md): a flip there passes when it leaves no live entry of the chunk
     * below it. Every other flip must be rejected. */
    unsigned long accepted = 0, cursor_flips = 0;
    for (size_t i = 0; i < ylen * 8; i++) {
        y[i / 8] ^= (unsigned char)(1u << (i % 8));
        int rc = verify(y, ylen, root, 2);
        if (i / 8 >= 40 && i / 8 < 48)
            cursor_flips += rc == 0;
        else
            accepted += rc != QMDB_BAD_PROOF;
        y[i / 8] ^= (unsigned char)(1u << (i % 8));
    }
    CHECK_EQ_U64(accepted, 0);
    CHECK(cursor_flips <= 13); /* sn_start = 0 here: only 2^k <= 4096 (twig 2 starts there) */
    for (size_t l = 0; l < ylen; l++)
        accepted += verify(y, l, root, 2) != QMDB_BAD_PROOF;
    CHECK_EQ_U64(accepted, 0);
    unsigned char *longer = malloc(ylen + 8);
    memcpy(longer, y, ylen);
    memset(longer + ylen, 0, 8);
    CHECK_RC(verify(longer, ylen + 8, root, 2), QMDB_BAD_PROOF);
    free(longer);
    /* The full-twig chunk: every bit of the header, every 5th of the shard roots and range
     * proof, then every 4099th bit of its entries. */
    for (size_t i = 0; i < flen * 8; i += i < 8 * 64 ? 1 : i < 8 * 1024 ? 5 : 4099) {
        f[i / 8] ^= (unsigned char)(1u << (i % 8));
        accepted += verify(f, flen, root, 2) != QMDB_BAD_PROOF;
        f[i / 8] ^= (unsigned char)(1u << (i % 8));
    }
    CHECK_EQ_U64(accepted, 0);
    /* The full twig of sentries travels as a sparse record: ActiveBits, then each live
     * sentry (88 bytes) or a dead one's 32-byte leaf hash. */
    size_t r0 = records_off(f);
    REQUIRE(r0 < flen && f[r0] == 2);
    size_t b0 = r0 + 1, e0 = b0 + 256;
    size_t *offs = malloc(2049 * sizeof(size_t));
    REQUIRE(offs);
    int live_pair = -1, dead = -1, live1 = -1;
    offs[0] = e0;
    for (int i = 0; i < 2048; i++) {
        bool on = (f[b0 + i / 8] >> (i % 8)) & 1;
        offs[i + 1] = offs[i] + (on ? 88 : 32);
        if (!on && dead < 0)
            dead = i;
        if (on && live1 < 0)
            live1 = i;
        if (i > 0 && on && ((f[b0 + (i - 1) / 8] >> ((i - 1) % 8)) & 1) && live_pair < 0)
            live_pair = i - 1;
    }
    CHECK_EQ_U64(offs[2048], flen);
    REQUIRE(live_pair >= 0 && dead >= 0 && live1 >= 0);
    corpus_seed("sparse-sentries", root, 2, f, flen);
    /* Reordering: two live entries, and two ActiveBits pages. */
    unsigned char tmp[256];
    size_t ea = offs[live_pair];
    memcpy(tmp, f + ea, 88);
    memcpy(f + ea, f + ea + 88, 88);
    memcpy(f + ea + 88, tmp, 88);
    CHECK_RC(verify(f, flen, root, 2), QMDB_BAD_PROOF);
    memcpy(f + ea + 88, f + ea, 88);
    memcpy(f + ea, tmp, 88);
    CHECK_OK(verify(f, flen, root, 2));
    /* ActiveBits pages: swap two that differ (some sentries were deactivated by creates). */
    int pi = -1, pj = -1;
    for (int i = 0; i < 8 && pi < 0; i++)
        for (int j = i + 1; j < 8; j++)
            if (memcmp(f + b0 + 32 * i, f + b0 + 32 * j, 32) != 0) {
                pi = i;
                pj = j;
                break;
            }
    REQUIRE(pi >= 0);
    memcpy(tmp, f + b0 + 32 * pi, 32);
    memcpy(f + b0 + 32 * pi, f + b0 + 32 * pj, 32);
    memcpy(f + b0 + 32 * pj, tmp, 32);
    CHECK_RC(verify(f, flen, root, 2), QMDB_BAD_PROOF);
    memcpy(f + b0 + 32 * pj, f + b0 + 32 * pi, 32);
    memcpy(f + b0 + 32 * pi, tmp, 32);
    CHECK_OK(verify(f, flen, root, 2));
    /* Every bit of a dead entry's leaf hash. */
    for (size_t i = 0; i < 256; i++) {
        f[offs[dead] + i / 8] ^= (unsigned char)(1u << (i % 8));
        accepted += verify(f, flen, root, 2) != QMDB_BAD_PROOF;
        f[offs[dead] + i / 8] ^= (unsigned char)(1u << (i % 8));
    }
    CHECK_EQ_U64(accepted, 0);
    /* A live entry replaced by its leaf hash: with its active bit cleared (the twig root
     * changes), and with the bit left set (the hash does not parse as an entry). */
    unsigned char *g = malloc(flen);
    REQUIRE(g);
    size_t gl = 0, el = offs[live1];
    memcpy(g, f, el);
    unsigned char lh[32];
    size_t plen = 53 + (size_t)f[el] +
                  ((size_t)f[el + 1] | (size_t)f[el + 2] << 8 | (size_t)f[el + 3] << 16) +
                  8 * (size_t)f[el + 4];
    SHA256(f + el, plen, lh); /* its true leaf hash */
    memcpy(g + el, lh, 32);
    gl = el + 32;
    memcpy(g + gl, f + el + 88, flen - el - 88);
    gl += flen - el - 88;
    CHECK_RC(verify(g, gl, root, 2), QMDB_BAD_PROOF);
    g[b0 + live1 / 8] &= (unsigned char)~(1u << (live1 % 8));
    CHECK_RC(verify(g, gl, root, 2), QMDB_BAD_PROOF);
    /* A dead entry's hash where ActiveBits says live. */
    f[b0 + dead / 8] ^= (unsigned char)(1u << (dead % 8));
    CHECK_RC(verify(f, flen, root, 2), QMDB_BAD_PROOF);
    f[b0 + dead / 8] ^= (unsigned char)(1u << (dead % 8));
    /* The sparse kind in a version-1 chunk, and for the youngest twig. */
    f[4] = 1;
    CHECK_RC(verify(f, flen, root, 2), QMDB_BAD_PROOF);
    f[4] = 2;
    CHECK_OK(verify(f, flen, root, 2));
    size_t yr = records_off(y);
    REQUIRE(y[yr] == 1);
    y[yr] = 2;
    CHECK_RC(verify(y, ylen, root, 2), QMDB_BAD_PROOF);
    y[yr] = 1;
    /* A version-1 chunk (full records only) is still read. */
    y[4] = 1;
    CHECK_OK(verify(y, ylen, root, 2));
    y[4] = 2;
    free(g);
    free(offs);
    /* Another height, another height's root, another database. */
    CHECK_RC(verify(y, ylen, root, 3), QMDB_BAD_PROOF);
    CHECK_RC(verify(y, ylen, root, 1), QMDB_BAD_PROOF);
    CHECK_RC(verify(y, ylen, r1, 2), QMDB_BAD_PROOF);
    CHECK_RC(verify(oc, olen, root, 2), QMDB_BAD_PROOF);
    CHECK_RC(verify(y, ylen, oroot, 2), QMDB_BAD_PROOF);
    CHECK_RC(qmdb_chunk_verify(y, ylen, NULL, 2, NULL, NULL), QMDB_INVALID);

    /* Lying manifests. */
    char man[4200], mtext[1 << 16];
    path_of(man, sizeof(man), snap, "MANIFEST");
    size_t mlen;
    unsigned char *m = read_all(man, &mlen);
    REQUIRE(mlen < sizeof(mtext));
    memcpy(mtext, m, mlen);
    mtext[mlen] = 0;
    free(m);
    char dst[4200];
    seen sn;
    /* (a) another root: the manifest is refused, and named. */
    char *rootline = strstr(mtext, "\nroot ") + 6;
    char saved = rootline[0];
    rootline[0] = saved == '0' ? '1' : '0';
    write_all(man, mtext, mlen);
    snprintf(dst, sizeof(dst), "%s/t-dst-a", base);
    memset(&sn, 0, sizeof(sn));
    CHECK_RC(qmdb_snapshot_restore(dst, snap, root, 2, on_chunk, &sn, NULL), QMDB_BAD_PROOF);
    CHECK(strcmp(sn.last_rejected, "MANIFEST") == 0);
    rootline[0] = saved;
    /* (b) another height than the trusted one. */
    write_all(man, mtext, mlen);
    CHECK_RC(qmdb_snapshot_restore(dst, snap, root, 3, on_chunk, &sn, NULL), QMDB_BAD_PROOF);
    /* (c) a wrong digest: that chunk is rejected by name, the others are kept. */
    char *d = strstr(mtext, "s03-000000000001.qmsc ");
    REQUIRE(d);
    d = strchr(d + 22, ' ') + 1;
    char dsaved = d[5];
    d[5] = dsaved == 'a' ? 'b' : 'a';
    write_all(man, mtext, mlen);
    snprintf(dst, sizeof(dst), "%s/t-dst-c", base);
    memset(&sn, 0, sizeof(sn));
    CHECK_RC(qmdb_snapshot_restore(dst, snap, root, 2, on_chunk, &sn, NULL), QMDB_BAD_PROOF);
    CHECK_EQ_U64(sn.rejected, 1);
    CHECK(strcmp(sn.last_rejected, "s03-000000000001.qmsc") == 0);
    CHECK(sn.accepted == 47);
    d[5] = dsaved;
    /* (d) a chunk left out: every listed chunk verifies, the build finds the gap. */
    char cut[1 << 16];
    char *line = strstr(mtext, "chunk s07-000000000001.qmsc");
    char *eol = strchr(line, '\n') + 1;
    size_t pre = (size_t)(line - mtext);
    memcpy(cut, mtext, pre);
    strcpy(cut + pre, eol);
    char *end = strstr(cut, "\nend 48");
    REQUIRE(end);
    memcpy(end, "\nend 47", 7);
    write_all(man, cut, strlen(cut));
    snprintf(dst, sizeof(dst), "%s/t-dst-d", base);
    CHECK_RC(qmdb_snapshot_restore(dst, snap, root, 2, NULL, NULL, NULL), QMDB_BAD_PROOF);
    CHECK(strstr(qmdb_open_error(), "s07") != NULL);
    /* (e) two chunks' names swapped (digests and sizes swapped along): named mismatch. */
    char sw[1 << 16];
    memcpy(sw, mtext, mlen + 1);
    char *l1 = strstr(sw, "chunk s04-000000000002.qmsc"),
         *l2 = strstr(sw, "chunk s05-000000000002.qmsc");
    REQUIRE(l1 && l2);
    l1[8] = '5';
    l2[8] = '4';
    write_all(man, sw, mlen);
    char pa[4200], pb[4200], pt[4200];
    path_of(pa, sizeof(pa), snap, "s04-000000000002.qmsc");
    path_of(pb, sizeof(pb), snap, "s05-000000000002.qmsc");
    path_of(pt, sizeof(pt), snap, "swap.tmp");
    REQUIRE(rename(pa, pt) == 0 && rename(pb, pa) == 0 && rename(pt, pb) == 0);
    snprintf(dst, sizeof(dst), "%s/t-dst-e", base);
    memset(&sn, 0, sizeof(sn));
    CHECK_RC(qmdb_snapshot_restore(dst, snap, root, 2, on_chunk, &sn, NULL), QMDB_BAD_PROOF);
    CHECK_EQ_U64(sn.rejected, 2);
    if (sn.rejected != 2)
        fprintf(stderr, "(e) rejected %s: %s\n", sn.last_rejected, sn.last_why);
    REQUIRE(rename(pa, pt) == 0 && rename(pb, pa) == 0 && rename(pt, pb) == 0);
    /* A malformed manifest. */
    write_all(man, "qmdb-snapshot 1\nheight 2\n", 25);
    snprintf(dst, sizeof(dst), "%s/t-dst-f", base);
    CHECK_RC(qmdb_snapshot_restore(dst, snap, root, 2, NULL, NULL, NULL), QMDB_CORRUPT);
    /* (f) a tail chunk whose compaction cursor lies (0 -> 1): the verifier cannot see it
     * (section 5 of docs/SYNC.md), the build's cursor check does, names the chunk and drops
     * it. */
    {
        write_all(man, mtext, mlen);
        char tdir[1024], tp[4200], cmd[5200];
        snprintf(tdir, sizeof(tdir), "%s/t-cursor", base);
        snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s'", snap, tdir);
        REQUIRE(system(cmd) == 0);
        path_of(tp, sizeof(tp), tdir, "s00-000000000002.qmsc");
        size_t tl;
        unsigned char *tc = read_all(tp, &tl);
        unsigned char old_sha[32], new_sha[32];
        SHA256(tc, tl, old_sha);
        tc[40] ^= 1;
        CHECK_OK(verify(tc, tl, root, 2));
        SHA256(tc, tl, new_sha);
        write_all(tp, tc, tl);
        free(tc);
        char oh[65], nh[65], *mt = strdup(mtext);
        for (int i = 0; i < 32; i++) {
            snprintf(oh + 2 * i, 3, "%02x", old_sha[i]);
            snprintf(nh + 2 * i, 3, "%02x", new_sha[i]);
        }
        char *at = strstr(mt, oh);
        REQUIRE(at);
        memcpy(at, nh, 64);
        path_of(tp, sizeof(tp), tdir, "MANIFEST");
        write_all(tp, mt, mlen);
        free(mt);
        snprintf(dst, sizeof(dst), "%s/t-dst-cursor", base);
        memset(&sn, 0, sizeof(sn));
        CHECK_RC(qmdb_snapshot_restore(dst, tdir, root, 2, on_chunk, &sn, NULL), QMDB_BAD_PROOF);
        CHECK(strcmp(sn.last_rejected, "s00-000000000002.qmsc") == 0);
        CHECK(strstr(sn.last_why, "compaction") != NULL);
        /* The good copy: the next run completes. */
        char good[4200];
        path_of(good, sizeof(good), snap, "s00-000000000002.qmsc");
        path_of(tp, sizeof(tp), tdir, "s00-000000000002.qmsc");
        copy_file(good, tp);
        path_of(tp, sizeof(tp), tdir, "MANIFEST");
        write_all(tp, mtext, mlen);
        CHECK_OK(qmdb_snapshot_restore(dst, tdir, root, 2, NULL, NULL, NULL));
    }
    /* The honest manifest restores. */
    write_all(man, mtext, mlen);
    snprintf(dst, sizeof(dst), "%s/t-dst-g", base);
    memset(&sn, 0, sizeof(sn));
    CHECK_OK(qmdb_snapshot_restore(dst, snap, root, 2, on_chunk, &sn, NULL));
    if (sn.rejected)
        fprintf(stderr, "(g) rejected %s: %s\n", sn.last_rejected, sn.last_why);
    if (test_failures)
        fprintf(stderr, "restore: %s\n", qmdb_open_error());
    free(y);
    free(f);
    free(oc);
    CHECK_OK(qmdb_close(db));
    CHECK_OK(qmdb_close(db2));
}

/* The checked-in fuzz seeds (tests/fuzz/corpus/chunk_verify) are real chunks that verify. */
static void
corpus_verifies(void)
{
#ifdef QMDB_CHUNK_CORPUS_DIR
    DIR *d = opendir(QMDB_CHUNK_CORPUS_DIR);
    REQUIRE(d);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[4200];
        path_of(path, sizeof(path), QMDB_CHUNK_CORPUS_DIR, de->d_name);
        size_t len;
        unsigned char *p = read_all(path, &len);
        REQUIRE(p && len > 40);
        uint64_t h = 0;
        for (int i = 7; i >= 0; i--)
            h = (h << 8) | p[32 + i];
        const char *why = NULL;
        CHECK_OK(qmdb_chunk_verify(p + 40, len - 40, p, h, NULL, &why));
        free(p);
        n++;
    }
    closedir(d);
    CHECK(n >= 3);
#endif
}

/* ---- damaged stubs ----------------------------------------------------------------------- */

static uint32_t
crc32c(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
    }
    return ~c;
}

static void
put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Offset of the k-th stub (k = 0, 1, ...) in shard 0's first entry-log segment of dir. */
static size_t
find_stub(const char *dir, int k)
{
    char path[4200];
    path_of(path, sizeof(path), dir, "s00.entries.0000000000");
    size_t len;
    unsigned char *p = read_all(path, &len);
    REQUIRE(p);
    size_t off = 0;
    while (off + 56 <= len) {
        size_t kl = p[off], vl = p[off + 1] | (size_t)p[off + 2] << 8 | (size_t)p[off + 3] << 16;
        size_t rec = ((53 + kl + vl + 7) & ~(size_t)7) + 8 * (size_t)p[off + 4];
        if (kl == 0 && k-- == 0)
            break;
        off += rec;
    }
    REQUIRE(off + 56 <= len);
    free(p);
    return off;
}

/* A copy of the restored database dir with one change, which a verifying open and qmdb_check
 * must report as damage. */
static void
damaged_copy(const char *dir, const char *name, const char *file, size_t off, unsigned char x,
             const char *expect)
{
    char cp[4200], cmd[9000], path[4300];
    snprintf(cp, sizeof(cp), "%s-%s", dir, name);
    snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s'", dir, cp);
    REQUIRE(system(cmd) == 0);
    path_of(path, sizeof(path), cp, file);
    size_t len;
    unsigned char *p = read_all(path, &len);
    REQUIRE(p && off < len);
    p[off] ^= x;
    write_all(path, p, len);
    free(p);
    qmdb_db *db = NULL;
    CHECK_RC(qmdb_open(cp, NULL, &db), QMDB_CORRUPT);
    if (expect && !strstr(qmdb_open_error(), expect)) {
        fprintf(stderr, "%s: open error '%s' lacks '%s'\n", name, qmdb_open_error(), expect);
        CHECK(0);
    }
    if (db)
        qmdb_close(db);
    uint64_t problems = 0;
    (void)qmdb_check(cp, NULL, NULL, &problems);
    CHECK(problems > 0);
    rm_rf(cp);
}

/* A small source database in src (no compaction, 3 blocks), exported to snap with
 * twigs_per_chunk twigs per chunk, then closed; its root and height. */
static void
export_small(const char *src, const char *snap, uint64_t twigs_per_chunk, unsigned char root[32],
             uint64_t *height)
{
    qmdb_db *db = make_source(src, 20000000, 7, 10, 100000, 3, 400);
    REQUIRE(qmdb_root(db, UINT64_MAX, root) == 0);
    *height = qmdb_height(db);
    CHECK_OK(qmdb_snapshot_export(db, snap, UINT64_MAX, twigs_per_chunk, NULL));
    CHECK_OK(qmdb_close(db));
}

static void
corrupt_stubs(void)
{
    char src[4096], snap[4096], dst[4096];
    snprintf(src, sizeof(src), "%s/cs-src", base);
    snprintf(snap, sizeof(snap), "%s/cs-snap", base);
    snprintf(dst, sizeof(dst), "%s/cs-dst", base);
    unsigned char root[32];
    uint64_t H;
    export_small(src, snap, 2, root, &H);
    CHECK_OK(qmdb_snapshot_restore(dst, snap, root, H, NULL, NULL, NULL));
    CHECK_EQ_U64(meta_version(dst), 3);
    /* The sentries that creates deactivated are stubs in shard 0's first twig. */
    size_t st = find_stub(dst, 0);
    const char *log = "s00.entries.0000000000";
    damaged_copy(dst, "leaf", log, st + 20, 0x01, "does not hash");
    damaged_copy(dst, "sn", log, st + 8, 0x01, "bad entry");
    damaged_copy(dst, "pad", log, st + 50, 0x80, "damaged stub");
    damaged_copy(dst, "head", log, st + 6, 0x04, "damaged stub");
    /* A stub made to look like a key of length 1 (it no longer parses as an entry). */
    damaged_copy(dst, "klen", log, st, 0x01, NULL);
    /* META without stub_end (shard 0's, a version-2 record with a valid CRC): the scan meets
     * a stub where only entries may stand. */
    char cp[4200], cmd[9000], path[4300];
    snprintf(cp, sizeof(cp), "%s-meta", dst);
    snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s'", dst, cp);
    REQUIRE(system(cmd) == 0);
    path_of(path, sizeof(path), cp, "META");
    size_t len;
    unsigned char *m = read_all(path, &len);
    REQUIRE(m && len >= 2048 + 1644);
    for (int copy = 0; copy < 2; copy++) {
        unsigned char *r = m + 2048 * copy;
        memset(r + 104 + 56, 0, 8); /* shard 0's stub_end */
        bool others = false;
        for (int k = 1; k < 16; k++)
            for (int i = 0; i < 8; i++)
                others |= r[104 + 96 * k + 56 + i] != 0;
        put32(r + 8, others ? 3 : 2);
        put32(r + 1640, crc32c(r, 1640));
    }
    write_all(path, m, len);
    free(m);
    qmdb_db *x = NULL;
    CHECK_RC(qmdb_open(cp, NULL, &x), QMDB_CORRUPT);
    CHECK(strstr(qmdb_open_error(), "a stub where only entries may stand") != NULL);
    if (x)
        qmdb_close(x);
    rm_rf(cp);
    /* The undamaged restore opens, and passes qmdb_check. */
    uint64_t problems = 99;
    CHECK_OK(qmdb_check(dst, NULL, NULL, &problems));
    CHECK_EQ_U64(problems, 0);
    rm_rf(src);
    rm_rf(snap);
    rm_rf(dst);
}

/* The export takes a dead entry's leaf hash from its bytes in the log. A dead entry damaged
 * there is carried into the chunk, and the import rejects that chunk by name and keeps the
 * others: nothing damaged is accepted. qmdb_check finds the damage in the source. */
static void
export_damaged_log(void)
{
    char src[4096], snap[4096], bad[4096], dst[4096], path[4200];
    snprintf(src, sizeof(src), "%s/el-src", base);
    snprintf(snap, sizeof(snap), "%s/el-snap", base);
    snprintf(bad, sizeof(bad), "%s/el-bad", base);
    snprintf(dst, sizeof(dst), "%s/el-dst", base);
    unsigned char root[32];
    uint64_t H;
    export_small(src, snap, 1, root, &H);
    qmdb_db *db = NULL;
    /* Shard 0's first twig (sentries, some deactivated by the creates) is a sparse record:
     * its first dead entry. */
    size_t clen;
    path_of(path, sizeof(path), snap, "s00-000000000000.qmsc");
    unsigned char *c = read_all(path, &clen);
    REQUIRE(c);
    size_t r = records_off(c);
    REQUIRE(r + 257 <= clen && c[r] == 2); /* QM_SNAP_SPARSE */
    unsigned dead = 0;
    while (dead < 2048 && (c[r + 1 + dead / 8] >> (dead % 8)) & 1)
        dead++;
    REQUIRE(dead < 2048);
    free(c);
    size_t len;
    path_of(path, sizeof(path), src, "s00.entries.0000000000");
    unsigned char *p = read_all(path, &len);
    REQUIRE(p);
    size_t off = 0;
    for (unsigned i = 0; i <= dead; i++) {
        size_t kl = p[off], vl = p[off + 1] | (size_t)p[off + 2] << 8 | (size_t)p[off + 3] << 16;
        if (i == dead) {
            p[off + 5 + kl + vl] ^= 0x01; /* its next_key_hash */
            break;
        }
        off += ((53 + kl + vl + 7) & ~(size_t)7) + 8 * (size_t)p[off + 4];
        REQUIRE(off + 53 <= len);
    }
    write_all(path, p, len);
    free(p);
    /* A full open finds the damage; a fast one (the CLI's default) hashes only the youngest
     * twig, and the export does not hash the entries it copies. */
    CHECK_RC(qmdb_open(src, NULL, &db), QMDB_CORRUPT);
    CHECK(strstr(qmdb_open_error(), "does not hash to its Merkle leaf") != NULL);
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = QMDB_OPEN_FAST;
    REQUIRE(qmdb_open(src, &o, &db) == 0);
    CHECK_OK(qmdb_snapshot_export(db, bad, UINT64_MAX, 1, NULL));
    CHECK_OK(qmdb_close(db));
    seen sn = {0};
    CHECK_RC(qmdb_snapshot_restore(dst, bad, root, H, on_chunk, &sn, NULL), QMDB_BAD_PROOF);
    CHECK_EQ_U64((uint64_t)sn.rejected, 1);
    CHECK(strcmp(sn.last_rejected, "s00-000000000000.qmsc") == 0);
    CHECK(sn.accepted > 0);
    uint64_t problems = 0;
    (void)qmdb_check(src, NULL, NULL, &problems);
    CHECK(problems > 0);
    rm_rf(src);
    rm_rf(snap);
    rm_rf(bad);
    rm_rf(dst);
}

int
main(void)
{
    REQUIRE(mkdtemp(base) != NULL);
    corpus_verifies();
    tamper();
    corrupt_stubs();
    export_damaged_log();
    round_trip("default", 20000000, 7, 10, 100000, false);
    round_trip("tiny710", 1, 7, 10, 3, false);
    round_trip("tiny11", 1, 1, 1, 3, true);
    rm_rf(base);
    printf("test_sync: %d checks, %d failures\n", test_checks, test_failures);
    return test_failures ? 1 : 0;
}
