/* SPDX-License-Identifier: Apache-2.0 */
/*
 * restore.c -- qmdb_snapshot_restore: builds a new database from a snapshot (docs/SYNC.md)
 * trusting only a state root and its height.
 *
 * Two phases, both restartable:
 *  1. Keep: every chunk of the MANIFEST that newdir/restore/ does not hold yet is read from
 *     the input directory, checked against the manifest's size and SHA-256 (to name a damaged
 *     transfer) and then with qmdb_chunk_verify against the trusted root and height; only a
 *     chunk that passes is copied into newdir/restore/ (.tmp, fsync, rename). Rejected and
 *     missing chunks are reported; the kept ones stay for the next call. newdir/restore/TARGET
 *     records the height and root the kept chunks were verified against.
 *  2. Build (once every chunk is kept): per shard, the chunks must tile twigs 0..youngest with
 *     one tail (which states next_sn and the compaction cursor), summaries only before the
 *     first full twig and no live entry below the cursor; a chunk that breaks this is named
 *     and dropped from newdir/restore/. The entry log (from offset 0), twig file and
 *     twig-meta file are written at their logical offsets (segw.h), then ROOTS (record 0
 *     names H, the root of H at 40*H, zeros between) and last META, which makes newdir a
 *     database. It is then opened with full
 *     verification (every entry hashed, every root recomputed) and its root must equal the
 *     trusted one; then newdir/restore/ is removed. A crash before META leaves phase 1's
 *     chunks, and the next call builds again.
 *
 * Thread: the caller's; touches no open handle.
 */
#include "codec.h"
#include "db_int.h"
#include "entry.h"
#include "hash.h"
#include "manifest.h"
#include "segw.h"
#include "snap_fmt.h"
#include "twig.h"
#include "twigfile.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct rs_ctx {
    const char *newdir, *indir;
    const u8 *root;
    u64 height;
    qmdb_restore_fn fn;
    void *arg;
    qm_err err;
    qm_manifest man;
    qmdb_snapshot_stat st;
} rs_ctx;

static void
rs_report(rs_ctx *c, const char *chunk, int rc, const char *why)
{
    if (c->fn)
        c->fn(c->arg, chunk, rc, why);
}

static int
rs_read_file(const char *path, u8 **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    size_t n = (size_t)sb.st_size, done = 0;
    u8 *p = malloc(n ? n : 1);
    if (!p) {
        close(fd);
        return -ENOMEM;
    }
    while (done < n) {
        ssize_t r = read(fd, p + done, n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? -errno : -EIO;
            free(p);
            close(fd);
            return e;
        }
        done += (size_t)r;
    }
    close(fd);
    *out = p;
    *len = n;
    return 0;
}

static int
rs_write_file(const char *path, const void *p, size_t len)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    size_t done = 0;
    int rc = 0;
    while (done < len) {
        ssize_t n = write(fd, (const u8 *)p + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        done += (size_t)n;
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    close(fd);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    return rc;
}

static void
rs_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* ---- Phase 1: keep verified chunks -------------------------------------------------------- */

/* The staging directory must be for this root and height (or new). */
static int
rs_target(rs_ctx *c)
{
    char path[4096], want[128], hex[65];
    qm_hex(c->root, 32, hex);
    snprintf(want, sizeof(want), "%" PRIu64 " %s\n", c->height, hex);
    snprintf(path, sizeof(path), "%s/restore/TARGET", c->newdir);
    u8 *have = NULL;
    size_t len = 0;
    int rc = rs_read_file(path, &have, &len);
    if (rc == -ENOENT)
        return rs_write_file(path, want, strlen(want));
    if (rc)
        return qm_err_set(&c->err, rc, "%s: %s", path, strerror(-rc));
    bool same = len == strlen(want) && memcmp(have, want, len) == 0;
    free(have);
    if (!same)
        return qm_err_set(&c->err, QMDB_INVALID,
                          "%s: this directory holds a restore of another height or root", path);
    return 0;
}

static int
rs_keep_one(rs_ctx *c, const qm_mchunk *mc)
{
    char src[4200], dst[4200];
    snprintf(dst, sizeof(dst), "%s/restore/%s", c->newdir, mc->name);
    if (access(dst, F_OK) == 0) {
        c->st.accepted++;
        return 0;
    }
    snprintf(src, sizeof(src), "%s/%s", c->indir, mc->name);
    u8 *p = NULL;
    size_t len = 0;
    int rc = rs_read_file(src, &p, &len);
    if (rc == -ENOENT) {
        c->st.missing++;
        rs_report(c, mc->name, QMDB_NOTFOUND, "not in the input directory (yet)");
        return 0;
    }
    if (rc)
        return qm_err_set(&c->err, rc, "%s: %s", src, strerror(-rc));
    const char *why = NULL;
    u8 sha[32];
    qm_sha256(p, len, sha);
    qmdb_chunk_info info = QMDB_CHUNK_INFO_INIT;
    char name[QM_CHUNK_NAME_MAX];
    if (len != mc->bytes || memcmp(sha, mc->sha, 32) != 0) {
        rc = QMDB_BAD_PROOF;
        why = "size or SHA-256 differs from the manifest (damaged or replaced)";
    } else if ((rc = qmdb_chunk_verify(p, len, c->root, c->height, &info, &why)) == 0) {
        snprintf(name, sizeof(name), "s%02x-%012" PRIu64 ".qmsc", info.shard, info.twig_begin);
        if (strcmp(name, mc->name) != 0) {
            rc = QMDB_BAD_PROOF;
            why = "chunk's shard and first twig differ from its name";
        }
    }
    if (rc == 0)
        rc = rs_write_file(dst, p, len);
    free(p);
    if (rc == QMDB_BAD_PROOF || rc == QMDB_INVALID) {
        c->st.rejected++;
        rs_report(c, mc->name, QMDB_BAD_PROOF, why);
        return 0;
    }
    if (rc)
        return qm_err_set(&c->err, rc, "%s: %s", dst, strerror(-rc));
    c->st.accepted++;
    c->st.bytes += len;
    c->st.entries += info.entries;
    rs_report(c, mc->name, 0, "verified and kept");
    return 0;
}

/* ---- Phase 2: build the database ---------------------------------------------------------- */

/* One kept chunk's header fields (verified in phase 1). */
typedef struct rs_chunk {
    const qm_mchunk *mc;
    unsigned shard;
    bool tail;
    unsigned U;
    u64 next_sn, sn_start, t0, t1;
    u8 sroots[16][32];
} rs_chunk;

static int
rs_chunk_cmp(const void *a, const void *b)
{
    const rs_chunk *x = a, *y = b;
    if (x->shard != y->shard)
        return x->shard < y->shard ? -1 : 1;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* A kept chunk that the build cannot use: it is dropped from newdir/restore/ (the next call
 * fetches it again) and named. */
static int
rs_bad(rs_ctx *c, const rs_chunk *k, const char *why)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/restore/%s", c->newdir, k->mc->name);
    (void)unlink(path);
    rs_report(c, k->mc->name, QMDB_BAD_PROOF, why);
    return qm_err_set(&c->err, QMDB_BAD_PROOF, "%s: %s", k->mc->name, why);
}

/* Offset of the twig records in a chunk: after the range proof. */
static size_t
rs_records_off(const rs_chunk *k)
{
    u64 a = k->t0, b = k->t1;
    size_t off = QM_SNAP_HDR;
    for (unsigned L = 12; L < 12 + k->U; L++) {
        off += 32 * (size_t)((a & 1) + (b & 1));
        a >>= 1;
        b = (b + 1) >> 1;
    }
    return off;
}

/* Checks that the chunks ks[0..n) of shard s (sorted by t0) tile twigs 0..youngest, with
 * exactly one tail (which fixes next_sn and the cursor). Blames the chunk that breaks it. */
static int
rs_tiling(rs_ctx *c, unsigned s, rs_chunk *ks, u64 n, const rs_chunk **tail)
{
    *tail = NULL;
    for (u64 i = 0; i < n; i++)
        if (ks[i].tail) {
            if (*tail)
                return rs_bad(c, &ks[i], "a second tail chunk for the shard");
            *tail = &ks[i];
        }
    if (!*tail)
        return qm_err_set(&c->err, QMDB_BAD_PROOF, "shard %u: no chunk holds the youngest twig", s);
    u64 expect = 0;
    for (u64 i = 0; i < n; i++) {
        if (ks[i].t1 <= ks[i].t0 || ks[i].U > 51)
            return rs_bad(c, &ks[i], "kept chunk is damaged (it is fetched again)");
        if (ks[i].t0 != expect)
            return rs_bad(c, &ks[i], "chunks of the shard overlap or leave a gap");
        if (ks[i].t1 > (*tail)->t1)
            return rs_bad(c, &ks[i], "chunk reaches past the shard's youngest twig");
        expect = ks[i].t1;
    }
    return expect == (*tail)->t1
               ? 0
               : qm_err_set(&c->err, QMDB_BAD_PROOF,
                            "shard %u: the chunks do not reach the youngest twig", s);
}

/* Writes the files of one shard from its chunks ks[0..n) (sorted by t0). */
static int
rs_build_shard(rs_ctx *c, unsigned s, rs_chunk *ks, u64 n, u8 (*nodes)[32], u8 *twigrec,
               qm_shard_meta *out)
{
    const rs_chunk *tk;
    QM_RET(rs_tiling(c, s, ks, n, &tk));
    u64 next_sn = tk->next_sn, y = next_sn >> QM_TWIG_SHIFT, sn_start = tk->sn_start;
    char name[64];
    qm_segw ent, twg, tm;
    snprintf(name, sizeof(name), "s%02x.entries", s);
    qm_segw_init(&ent, c->newdir, name, c->man.entry_seg);
    snprintf(name, sizeof(name), "s%02x.twig", s);
    qm_segw_init(&twg, c->newdir, name, c->man.twig_seg);
    snprintf(name, sizeof(name), "s%02x.tmeta", s);
    qm_segw_init(&tm, c->newdir, name, 1ull << 30);
    /* The entry log starts at offset 0: offsets are not part of any root. */
    u64 pos = 0, live = 0, sn_start_pos = 0, F = UINT64_MAX;
    int rc = 0;
    u8 *p = NULL;
    /* The cursor check (docs/SYNC.md, section 5): the content digest (key, value,
     * next_key_hash, version) of every entry from dbase on identifies compaction copies: an
     * entry with one DSN whose content equals the deactivated entry's. */
    u8(*dig)[16] = NULL;
    u8 *known = NULL; /* per SN from dbase: 1 = its digest is known (0: a stub) */
    u64 dbase = 0, last_copy = 0;
    bool have_copy = false, stubs = false;
    for (u64 i = 0; i < n; i++) {
        const rs_chunk *k = &ks[i];
        char path[4200];
        snprintf(path, sizeof(path), "%s/restore/%s", c->newdir, k->mc->name);
        size_t len;
        free(p);
        p = NULL;
        QM_TRY(rs_read_file(path, &p, &len));
        /* The kept bytes were verified in phase 1; bounds are checked again in case they
         * were damaged on this disk since (the verifying open at the end checks the rest). */
        static const char damaged[] = "kept chunk is damaged (it is fetched again)";
        size_t off = rs_records_off(k);
        for (u64 t = k->t0; t < k->t1; t++) {
            u8 rec[QM_TMETA_REC];
            if (off >= len ||
                (p[off] != QM_SNAP_SUMMARY && p[off] != QM_SNAP_FULL &&
                 (p[off] != QM_SNAP_SPARSE || t == y)) ||
                len - off - 1 < (p[off] == QM_SNAP_SUMMARY ? 32u : QM_ACTIVE_BYTES)) {
                rc = rs_bad(c, k, damaged);
                goto out;
            }
            bool sparse = p[off] == QM_SNAP_SPARSE;
            if (p[off++] == QM_SNAP_SUMMARY) {
                /* Summaries (all entries dead) only before the first full twig: they become
                 * the pruned prefix. */
                if (F != UINT64_MAX || t == y) {
                    rc = rs_bad(c, k, "a twig without entries after one with entries");
                    goto out;
                }
                qm_tmeta_encode(rec, t, p + off, 0);
                QM_TRY(qm_segw_write(&tm, t * QM_TMETA_REC, rec, sizeof(rec)));
                off += 32;
                continue;
            }
            if (F == UINT64_MAX) {
                F = t;
                dbase = QM_MAX(sn_start > 0 ? sn_start - 1 : 0, F << QM_TWIG_SHIFT);
                dig = malloc(16 * (size_t)(next_sn > dbase ? next_sn - dbase : 1));
                known = calloc((size_t)(next_sn > dbase ? next_sn - dbase : 1), 1);
                if (!dig || !known) {
                    rc = -ENOMEM;
                    goto out;
                }
            }
            const u8 *bits = p + off;
            off += QM_ACTIVE_BYTES;
            unsigned cnt = t < y ? QM_TWIG_LEAVES : (unsigned)(next_sn & QM_TWIG_MASK);
            u64 first = pos;
            qm_left_tree_null(nodes);
            for (unsigned e = 0; e < cnt; e++) {
                u64 sn = (t << QM_TWIG_SHIFT) + e;
                if (((bits[e >> 3] >> (e & 7)) & 1) && sn < sn_start) {
                    rc = rs_bad(c, tk, "live entry below the tail's compaction cursor");
                    goto out;
                }
                const u8 *q = p + off;
                if (sparse && !((bits[e >> 3] >> (e & 7)) & 1)) {
                    /* A dead entry carried as its leaf hash: a stub in the log. */
                    if (len - off < 32) {
                        rc = rs_bad(c, k, damaged);
                        goto out;
                    }
                    u8 stub[QM_STUB_LEN];
                    memcpy(nodes[QM_TWIG_LEAVES + e], q, 32);
                    qm_stub_encode(stub, sn, q);
                    if (sn == sn_start)
                        sn_start_pos = pos;
                    QM_TRY(qm_segw_write(&ent, pos, stub, sizeof(stub)));
                    pos += sizeof(stub);
                    off += 32;
                    stubs = true;
                    continue;
                }
                if (len - off < QM_ENTRY_FIXED) {
                    rc = rs_bad(c, k, damaged);
                    goto out;
                }
                u32 kl = q[0], vl = (u32)q[1] | ((u32)q[2] << 8) | ((u32)q[3] << 16), nd = q[4];
                u32 slen = qm_entry_stored_len(kl, vl, nd);
                if (len - off < slen) {
                    rc = rs_bad(c, k, damaged);
                    goto out;
                }
                qm_sha256(q, qm_entry_payload_len(kl, vl, nd), nodes[QM_TWIG_LEAVES + e]);
                u8 cd[32];
                qm_sha256(q + 5, kl + vl + 40, cd);
                if (sn >= dbase) {
                    memcpy(dig[sn - dbase], cd, 16);
                    known[sn - dbase] = 1;
                }
                if (nd == 1) {
                    u64 d = qm_get_u64le(q + 53 + kl + vl);
                    if (d >= dbase && d < sn && known[d - dbase] &&
                        memcmp(dig[d - dbase], cd, 16) == 0) {
                        have_copy = true;
                        last_copy = QM_MAX(last_copy, d);
                    }
                }
                if (sn == sn_start)
                    sn_start_pos = pos;
                QM_TRY(qm_segw_write(&ent, pos, q, slen));
                pos += slen;
                off += slen;
            }
            for (unsigned b = 0; b < QM_ACTIVE_BYTES; b++)
                live += (unsigned)__builtin_popcount(bits[b]);
            if (t < y) {
                qm_left_tree_update(nodes, 0, QM_TWIG_LEAVES);
                qm_twigrec_encode(twigrec, t, (const u8(*)[32])nodes);
                QM_TRY(qm_segw_write(&twg, t * QM_TWIG_REC, twigrec, QM_TWIG_REC));
                qm_tmeta_encode(rec, t, nodes[1], first);
                QM_TRY(qm_segw_write(&tm, t * QM_TMETA_REC, rec, sizeof(rec)));
            }
        }
    }
    if (stubs) {
        /* Sparse twigs carry dead entries as leaf hashes, so a copy or its source may be out of
         * sight: only the copies in sight are checked (docs/SYNC.md, section 5). */
        if (have_copy && last_copy >= sn_start) {
            rc = rs_bad(c, tk, "a compaction copy's source lies at or above the compaction cursor");
            goto out;
        }
    } else if (sn_start > 0 && sn_start - 1 >= (F << QM_TWIG_SHIFT)) {
        if (!have_copy || last_copy != sn_start - 1) {
            rc = rs_bad(c, tk,
                        "compaction cursor is not one past the source of the newest "
                        "compaction copy");
            goto out;
        }
    } else if (have_copy) {
        rc = rs_bad(c, tk, "a compaction copy's source lies at or above the compaction cursor");
        goto out;
    }
    if (sn_start >= next_sn)
        sn_start_pos = pos;
    else if (sn_start < (F << QM_TWIG_SHIFT))
        sn_start_pos = 0; /* in the pruned prefix: the cursor starts at the head */
    *out = (qm_shard_meta){.next_sn = next_sn,
                           .sn_start = sn_start,
                           .sn_start_pos = sn_start_pos,
                           .live = live,
                           .entry_size = pos,
                           .entry_head = 0,
                           .first_twig = F,
                           .stub_end = stubs ? next_sn : 0};
    memcpy(out->root, tk->sroots[s], 32);
    c->st.live += live;
out:
    free(p);
    free(dig);
    free(known);
    int r1 = qm_segw_close(&ent), r2 = qm_segw_close(&twg), r3 = qm_segw_close(&tm);
    if (rc == 0)
        rc = r1 ? r1 : r2 ? r2 : r3;
    return rc;
}

static int
rs_remove_staging(const char *newdir)
{
    char dir[4096], path[4400];
    snprintf(dir, sizeof(dir), "%s/restore", newdir);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        (void)unlink(path);
    }
    closedir(d);
    (void)rmdir(dir);
    rs_fsync_dir(newdir);
    return 0;
}

static int
rs_build(rs_ctx *c)
{
    u64 n = c->man.nchunks;
    rs_chunk *ks = calloc(n ? n : 1, sizeof(*ks));
    u8(*nodes)[32] = malloc(QM_LEFT_NODES * 32);
    u8 *twigrec = malloc(QM_TWIG_REC);
    int rc = 0;
    if (!ks || !nodes || !twigrec) {
        rc = -ENOMEM;
        goto out;
    }
    for (u64 i = 0; i < n; i++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/restore/%s", c->newdir, c->man.chunks[i].name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        u8 h[QM_SNAP_HDR];
        if (fd < 0 || pread(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
            rc = qm_err_set(&c->err, fd < 0 ? -errno : -EIO, "%s: cannot read", path);
            if (fd >= 0)
                close(fd);
            goto out;
        }
        close(fd);
        rs_chunk *k = &ks[i];
        k->mc = &c->man.chunks[i];
        k->shard = h[5];
        k->tail = h[6] & QM_SNAP_TAIL;
        k->U = h[7];
        k->t0 = qm_get_u64le(h + 16);
        k->t1 = qm_get_u64le(h + 24);
        k->next_sn = qm_get_u64le(h + 32);
        k->sn_start = qm_get_u64le(h + 40);
        memcpy(k->sroots, h + QM_SNAP_OFF_ROOTS, sizeof(k->sroots));
    }
    qsort(ks, n, sizeof(*ks), rs_chunk_cmp);
    qm_meta m;
    memset(&m, 0, sizeof(m));
    m.seq = 0;
    m.height = c->height;
    m.compact_thres = c->man.compact_thres;
    m.util_ratio = c->man.util_ratio;
    m.util_div = c->man.util_div;
    m.history_blocks = c->man.history_blocks;
    m.entry_seg = c->man.entry_seg;
    m.twig_seg = c->man.twig_seg;
    memcpy(m.state_root, c->root, 32);
    u64 i = 0;
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++) {
        u64 j = i;
        while (j < n && ks[j].shard == s)
            j++;
        if (j == i) {
            rc = qm_err_set(&c->err, QMDB_BAD_PROOF, "shard %u: no chunk in the snapshot", s);
            goto out;
        }
        QM_TRY(rs_build_shard(c, s, ks + i, j - i, nodes, twigrec, &m.shard[s]));
        i = j;
    }
    rs_fsync_dir(c->newdir);
    /* ROOTS: the root of H; the records of lower heights stay all-zero (not held). */
    char path[4200];
    snprintf(path, sizeof(path), "%s/ROOTS", c->newdir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = qm_err_set(&c->err, -errno, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (ftruncate(fd, (off_t)(QM_ROOTS_REC * c->height)) != 0) {
        rc = qm_err_set(&c->err, -errno, "%s: %s", path, strerror(errno));
        close(fd);
        goto out;
    }
    if (c->height > 0) {
        u8 rec[QM_ROOTS_REC];
        qm_roots_base_encode(c->height, rec);
        if (pwrite(fd, rec, sizeof(rec), 0) != (ssize_t)sizeof(rec)) {
            rc = qm_err_set(&c->err, -EIO, "%s: write failed", path);
            close(fd);
            goto out;
        }
    }
    rc = qm_roots_store(fd, c->newdir, c->height, c->root, &c->err);
    close(fd);
    if (rc)
        goto out;
    int mfd = -1;
    rc = qm_meta_store(c->newdir, &mfd, &m, &c->err);
    if (mfd >= 0)
        close(mfd);
    if (rc)
        goto out;
    rs_fsync_dir(c->newdir);
    /* The end-to-end check: a verifying open recomputes every root from the files. */
    qmdb_db *db = NULL;
    qmdb_options opt;
    qmdb_options_init(&opt);
    rc = qmdb_open(c->newdir, &opt, &db);
    if (rc) {
        rc = qm_err_set(&c->err, rc, "the restored database does not open: %s", qmdb_open_error());
        goto out;
    }
    u8 got[32];
    rc = qmdb_root(db, UINT64_MAX, got);
    if (rc == 0 && (qmdb_height(db) != c->height || memcmp(got, c->root, 32) != 0))
        rc = qm_err_set(&c->err, QMDB_CORRUPT,
                        "the restored database's height or root differs from the trusted one");
    int rc2 = qmdb_close(db);
    if (rc == 0 && rc2 != 0 && rc2 != QMDB_NO_CHECKPOINT)
        rc = rc2;
    if (rc == 0)
        rs_remove_staging(c->newdir);
out:
    free(ks);
    free(nodes);
    free(twigrec);
    return rc;
}

int
qmdb_snapshot_restore(const char *newdir, const char *indir, const uint8_t root[32],
                      uint64_t height, qmdb_restore_fn fn, void *arg, qmdb_snapshot_stat *st)
{
    if (!newdir || !indir || !root || (st && st->struct_size < sizeof(*st)))
        return QMDB_INVALID;
    rs_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->newdir = newdir;
    c->indir = indir;
    c->root = root;
    c->fn = fn;
    c->arg = arg;
    int rc = 0;
    char path[4200];
    snprintf(path, sizeof(path), "%s/META", newdir);
    if (access(path, F_OK) == 0) {
        rc = qm_err_set(&c->err, QMDB_EXISTS, "%s: already a database", newdir);
        goto out;
    }
    QM_TRY(qm_manifest_read(indir, &c->man, &c->err));
    if (memcmp(c->man.root, root, 32) != 0) {
        rs_report(c, QM_MANIFEST_NAME, QMDB_BAD_PROOF, "manifest is for another state root");
        rc = qm_err_set(&c->err, QMDB_BAD_PROOF, "%s/MANIFEST is for another state root", indir);
        goto out;
    }
    c->height = height == UINT64_MAX ? c->man.height : height;
    if (c->man.height != c->height) {
        rs_report(c, QM_MANIFEST_NAME, QMDB_BAD_PROOF, "manifest is for another height");
        rc = qm_err_set(&c->err, QMDB_BAD_PROOF, "%s/MANIFEST is for another height", indir);
        goto out;
    }
    snprintf(path, sizeof(path), "%s/restore", newdir);
    if ((mkdir(newdir, 0755) != 0 && errno != EEXIST) ||
        (mkdir(path, 0755) != 0 && errno != EEXIST)) {
        rc = qm_err_set(&c->err, -errno, "%s: %s", path, strerror(errno));
        goto out;
    }
    QM_TRY(rs_target(c));
    c->st.chunks = c->man.nchunks;
    for (u64 i = 0; i < c->man.nchunks; i++)
        QM_TRY(rs_keep_one(c, &c->man.chunks[i]));
    rs_fsync_dir(path);
    if (c->st.rejected)
        rc = qm_err_set(&c->err, QMDB_BAD_PROOF, "%" PRIu64 " chunk(s) rejected", c->st.rejected);
    else if (c->st.missing)
        rc = qm_err_set(&c->err, QMDB_NOTFOUND, "%" PRIu64 " chunk(s) missing", c->st.missing);
    else
        rc = rs_build(c);
out:
    if (st) {
        c->st.struct_size = sizeof(*st);
        c->st.height = c->height;
        memcpy(c->st.root, root, 32);
        *st = c->st;
    }
    if (rc)
        qm_open_error_set(c->err.msg);
    qm_manifest_free(&c->man);
    free(c);
    return rc;
}
