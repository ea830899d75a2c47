/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check.c -- qmdb_check(): the full offline consistency check (`qmdb check DIR`).
 *
 * It reports every problem it finds (file and offset in each message) through a callback:
 *  1. META: both slots are decoded; a copy that is invalid is reported (corruption, or a torn
 *     write of the newest slot), and so is a blank or missing slot except slot 1 of a new
 *     database (the damage rule in meta.h).
 *  2. A read-only verifying open: every unpruned entry is decoded and hashed, every full
 *     twig's left tree is recomputed and compared with its twig-meta record and its twig-file
 *     record (CRC, id and all 4095 nodes), the ActiveBits are rebuilt from the DSNs, and every
 *     shard root and the state root are recomputed and compared with META and with ROOTS at
 *     the latest height (recover.c). A failure here is reported and ends the check.
 *  3. ROOTS: the file covers every height up to the latest and every record passes its CRC.
 *  4. Indexer against ActiveBits: every index record points at an entry whose SN is active
 *     and whose key hash has the record's prefix; each active SN is indexed exactly once.
 *  5. Key-hash chain: per shard, the live entries sorted by key hash, each one's
 *     next_key_hash is the next live key hash (the last one's is the next shard's first
 *     sentry, or 32 x 0xff for shard 15).
 *  6. Deactivation positions (dpos.h): the header and every record of each shard's
 *     sXX.dpos0 and sXX.dpos1 pass their checks (length, CRC, increasing heights). A rollback
 *     never trusts them (it checks every offset against the entry there), but damage is
 *     reported: such a rollback would walk twigs instead.
 * qmdb_check (db_open.c) runs check 1 (qm_check_meta), opens a read-only verifying handle
 * (check 2) and runs checks 3-6 on the view of it that db_read.c builds (qm_check_run).
 * Thread: the caller's.
 */
#include "check.h"

#include "codec.h"
#include "dpos.h"
#include "entry.h"
#include "io.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct chk {
    qmdb_check_fn fn;
    void *arg;
    u64 problems;
} chk;

static void report(chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
report(chk *c, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    c->problems++;
    if (c->fn)
        c->fn(c->arg, msg);
}

static void
check_meta_slots(chk *c, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/META", dir);
    const qm_io *io = qm_io_get();
    int fd = io->open(path, O_RDONLY, 0);
    if (fd < 0)
        return; /* the open below reports it */
    static u8 buf[2 * QM_META_SLOT];
    size_t got = 0;
    int rc = qm_io_pread_upto(fd, buf, sizeof(buf), 0, &got);
    io->close(fd);
    if (rc) {
        report(c, "%s: read error: %s", path, qmdb_strerror(rc));
        return;
    }
    for (unsigned k = 0; k < 2; k++) {
        size_t off = (size_t)k * QM_META_SLOT, n = got > off ? got - off : 0;
        if (n > QM_META_SLOT)
            n = QM_META_SLOT;
        bool blank = true;
        for (size_t i = 0; i < n && blank; i++)
            blank = buf[off + i] == 0;
        qm_meta m0;
        if (blank && k == 1 && got >= QM_META_LEN && qm_meta_decode(buf, got, &m0) == 0 &&
            m0.seq == 0)
            continue; /* never written: a new database has only slot 0 */
        if (blank) {
            report(c, "%s: metadata slot %u at offset %zu is %s: the record it held is lost", path,
                   k, off, n ? "blank" : "missing (file truncated)");
            continue;
        }
        /* Each slot holds two copies of the record (meta.h); the rest must be zero. */
        for (size_t i = 0; i < n; i++) {
            bool in_copy = i < QM_META_LEN || (i >= QM_META_COPY && i < QM_META_COPY + QM_META_LEN);
            if (!in_copy && buf[off + i] != 0) {
                report(c,
                       "%s: metadata slot %u has a nonzero byte at offset %zu outside its "
                       "records",
                       path, k, off + i);
                break;
            }
        }
        for (unsigned copy = 0; copy < 2; copy++) {
            size_t at = copy ? QM_META_COPY : 0;
            qm_meta m;
            if (n < at + QM_META_LEN || qm_meta_decode(buf + off + at, n - at, &m) != 0)
                report(c,
                       "%s: metadata slot %u, copy %u at offset %zu is invalid (bad CRC or "
                       "fields): corruption, or a torn write by a crash during a commit",
                       path, k, copy, off + at);
            else if ((m.seq & 1) != k)
                report(c,
                       "%s: metadata slot %u, copy %u at offset %zu holds sequence %" PRIu64
                       " (wrong slot)",
                       path, k, copy, off + at, m.seq);
        }
    }
}

static void
check_roots(chk *c, const qm_check_view *v)
{
    u64 h = v->meta->height, size = 0, need = QM_ROOTS_REC * (h + 1);
    if (qm_io_get()->fsize(v->roots_fd, &size) != 0 || size < need) {
        report(c, "%s/ROOTS: %" PRIu64 " bytes, height %" PRIu64 " needs %" PRIu64, v->dir, size, h,
               need);
        return;
    }
    static u8 buf[QM_ROOTS_REC * 1024];
    u8 root[32];
    u64 base = 0; /* a restored database: no roots below its snapshot's height */
    for (u64 off = 0; off < need; off += sizeof(buf)) {
        size_t n = (size_t)QM_MIN((u64)sizeof(buf), need - off);
        int rc = qm_io_pread_full(v->roots_fd, buf, n, off);
        if (rc) {
            report(c, "%s/ROOTS: read error at offset %" PRIu64 ": %s", v->dir, off,
                   qmdb_strerror(rc));
            return;
        }
        for (size_t i = 0; i < n; i += QM_ROOTS_REC) {
            u64 hh = (off + i) / QM_ROOTS_REC;
            if (hh == 0 && qm_roots_base_decode(buf, &base) && base <= h)
                continue;
            if (hh < base && qm_roots_unheld(buf + i))
                continue;
            if (qm_roots_decode(hh, buf + i, root) != 0)
                report(c,
                       "%s/ROOTS: the record of height %" PRIu64 " at offset %" PRIu64
                       " fails its check (damaged)",
                       v->dir, (off + i) / QM_ROOTS_REC, off + i);
        }
    }
}

/* One live entry for the key-hash chain. */
typedef struct link {
    u8 kh[32], next[32];
    u64 pos;
} link;

static int
link_cmp(const void *a, const void *b)
{
    return memcmp(((const link *)a)->kh, ((const link *)b)->kh, 32);
}

static void
seg_name(const qm_hpfile *f, u64 pos, char *out, size_t cap)
{
    snprintf(out, cap, "%s.%010" PRIu64 " offset %" PRIu64, f->path_prefix, pos / f->seg_size,
             pos % f->seg_size);
}

/* State of the index walk of one shard (items 4 and 5). */
typedef struct ixwalk {
    chk *c;
    qm_shard *s;
    u64 sn0, n, cap;
    u8 *seen;
    link *links;
    qm_ebuf buf;
    u8 prev[6];
    bool have_prev;
} ixwalk;

/* One index record: its entry must be live, carry the record's key hash, and be indexed once. */
static int
check_record(void *arg, const u8 key6[6], u64 pos)
{
    ixwalk *w = arg;
    chk *c = w->c;
    qm_shard *s = w->s;
    const qm_tree *t = &s->tree;
    char where[4200];
    if (w->have_prev && memcmp(w->prev, key6, 6) > 0)
        report(c, "shard %u index: records out of order at log offset %" PRIu64, s->id, pos);
    memcpy(w->prev, key6, 6);
    w->have_prev = true;
    seg_name(&s->entries, pos, where, sizeof(where));
    qm_entry e;
    int erc = qm_shard_read_entry(s, pos, &w->buf, &e);
    if (erc) {
        report(c, "%s: indexed entry unreadable: %s (%s)", where, qmdb_strerror(erc), s->err->msg);
        return 0;
    }
    u8 kh[32];
    qm_entry_key_hash(e.key, e.klen, e.vlen, kh);
    if ((kh[0] >> 4) != s->id || memcmp(kh, key6, 6) != 0)
        report(c,
               "%s: entry SN %" PRIu64 " has a key hash that does not match its "
               "index record (shard %u)",
               where, e.sn, s->id);
    if (e.sn < w->sn0 || e.sn >= t->next_sn || !qm_tree_is_active(t, e.sn)) {
        report(c, "%s: indexed entry SN %" PRIu64 " is not active in the ActiveBits", where, e.sn);
        return 0;
    }
    u64 k = e.sn - w->sn0;
    if (w->seen[k / 8] & (1u << (k % 8)))
        report(c, "%s: SN %" PRIu64 " is indexed twice", where, e.sn);
    w->seen[k / 8] |= (u8)(1u << (k % 8));
    if (w->n < w->cap) {
        memcpy(w->links[w->n].kh, kh, 32);
        memcpy(w->links[w->n].next, e.next_key_hash, 32);
        w->links[w->n].pos = pos;
        w->n++;
    }
    return 0;
}

/* Items 4 and 5 for one shard. */
static int
check_shard(chk *c, qm_shard *s)
{
    qm_tree *t = &s->tree;
    u64 sn0 = t->first_twig << QM_TWIG_SHIFT, nsn = t->next_sn - sn0;
    u64 count = qm_ix_count(&s->index);
    ixwalk w = {.c = c, .s = s, .sn0 = sn0, .cap = count};
    w.seen = calloc(nsn / 8 + 1, 1);
    w.links = malloc((count ? count : 1) * sizeof(link));
    link *links = w.links;
    int rc = 0;
    char where[4200];
    if (!w.seen || !links) {
        rc = -ENOMEM;
        goto out;
    }
    rc = qm_ix_foreach(&s->index, s->id, check_record, &w);
    if (rc) {
        report(c, "shard %u index: %s (%s)", s->id, qmdb_strerror(rc), s->err->msg);
        rc = 0;
    }
    u64 n = w.n;
    u64 active = 0;
    for (u64 id = t->first_twig; id < t->ntwigs; id++)
        active += qm_tree_twig(t, id)->nactive;
    if (active != count || active != s->live)
        report(c,
               "shard %u: %" PRIu64 " active bits, %" PRIu64 " index records, %" PRIu64
               " live entries in META: they must be equal",
               s->id, active, count, s->live);
    qsort(links, n, sizeof(link), link_cmp);
    for (u64 i = 0; i < n; i++) {
        u8 want[32];
        if (i + 1 < n) {
            memcpy(want, links[i + 1].kh, 32);
        } else if (s->id == QM_SHARD_COUNT - 1) {
            memset(want, 0xff, 32);
        } else {
            memset(want, 0, 32);
            want[0] = (u8)((s->id + 1) << 4);
        }
        if (memcmp(links[i].next, want, 32) != 0) {
            seg_name(&s->entries, links[i].pos, where, sizeof(where));
            report(c,
                   "%s: next_key_hash breaks the key-hash chain (it is not the next live "
                   "key hash)",
                   where);
        }
    }
    if (n > 0 && (links[0].kh[0] != (u8)(s->id << 4) || links[0].kh[1] != 0 ||
                  memcmp(links[0].kh + 2, (const u8[30]){0}, 30) != 0))
        report(c, "shard %u: its first sentry is not live", s->id);
out:
    free(w.seen);
    free(links);
    qm_ebuf_free(&w.buf);
    return rc;
}

/* Check 6: the shard's two deactivation-position files. */
static void
check_dpos(chk *c, const char *dir, unsigned shard)
{
    for (unsigned k = 0; k < 2; k++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/s%02x.dpos%u", dir, shard, k);
        u64 nrec = 0, bad = 0;
        int rc = qm_dpos_verify(path, shard, &nrec, &bad);
        if (rc == QMDB_CORRUPT)
            report(c,
                   "%s: the %s at offset %" PRIu64 " fails its check (damaged; %" PRIu64
                   " records before it are intact; a rollback over the blocks it covers walks "
                   "their twigs instead)",
                   path, bad == 0 ? "header" : "deactivation-position record", bad, nrec);
        else if (rc)
            report(c, "%s: cannot be read: %s", path, qmdb_strerror(rc));
    }
}

int
qm_check_run(const qm_check_view *v, qmdb_check_fn fn, void *arg, u64 *problems)
{
    chk c = {fn, arg, 0};
    check_roots(&c, v);
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        check_dpos(&c, v->dir, s);
    int rc = 0;
    for (unsigned s = 0; s < QM_SHARD_COUNT && !rc; s++)
        rc = check_shard(&c, &v->shards[s]);
    *problems += c.problems;
    return rc;
}

u64
qm_check_meta(const char *dir, qmdb_check_fn fn, void *arg)
{
    chk c = {fn, arg, 0};
    check_meta_slots(&c, dir);
    return c.problems;
}
