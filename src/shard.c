/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shard.c -- the updater of one shard: put/delete semantics with versions, predecessor
 * handling, the deterministic compaction rule (FORMAT.md §6-§7), appends to the entry log and
 * the twig files, and pruning decisions. Recovery lives in recover.c.
 *
 * Invariants (cited in code as "Invariant (n)"):
 *  (1) An entry's bytes are appended to the entry log before its leaf enters the tree and
 *      before the indexer points at it.
 *  (2) The indexer holds exactly one record per live entry, at that entry's position.
 *  (3) Entry SNs are dense and in file order: the entry at sn_start_pos has SN sn_start.
 *  (4) A twig is pruned only when it has no live entry, every older twig is pruned, and its
 *      last deactivation is at least history_blocks old; roots never depend on pruning.
 *
 * Thread: the shard's writer.
 */
#include "shard.h"

#include "codec.h"
#include "entry.h"
#include "hash.h"
#include "hugefolio.h"
#include "twigfile.h"
#include "undo.h"

#include <inttypes.h>
#include <stdlib.h>

/* First read of an entry: enough for typical entries (53 bytes + key + value), or the
 * length of the latest long entry of the shard (seen_len) up to SHARD_READ_MAX. */
#define SHARD_READ_GUESS 256u
#define SHARD_READ_MAX (1u << 20)

void
qm_ebuf_free(qm_ebuf *b)
{
    free(b->own);
    b->p = b->own = NULL;
    b->cap = 0;
}

static int
ebuf_reserve(qm_ebuf *b, size_t n)
{
    if (n <= b->cap)
        return 0;
    size_t cap = QM_MAX(n, (size_t)SHARD_READ_GUESS);
    u8 *p = realloc(b->own, cap);
    if (!p)
        return -ENOMEM;
    b->p = b->own = p;
    b->cap = cap;
    return 0;
}

void
qm_shard_init_common(qm_shard *s)
{
    pthread_mutex_init(&s->warm_mu, NULL);
    qm_dpos_init(&s->dpos);
}

u32
qm_shard_seen_len(const qm_shard *s)
{
    return __atomic_load_n(&s->seen_len, __ATOMIC_RELAXED);
}

void
qm_shard_saw_len(qm_shard *s, u32 len)
{
    if (len > 512 && len != qm_shard_seen_len(s))
        __atomic_store_n(&s->seen_len, len, __ATOMIC_RELAXED);
}

void
qm_shard_warm_put(qm_shard *s, u64 pos, const u8 *bytes, u32 len, const u8 *kh)
{
    pthread_mutex_lock(&s->warm_mu);
    qm_warm_put(&s->warm, pos, bytes, len);
    if (kh)
        qm_warm_key_add(&s->warm, kh);
    pthread_mutex_unlock(&s->warm_mu);
}

bool
qm_shard_warm_has(qm_shard *s, u64 pos)
{
    u32 len;
    pthread_mutex_lock(&s->warm_mu);
    bool has = qm_warm_peek(&s->warm, pos, &len) != NULL;
    pthread_mutex_unlock(&s->warm_mu);
    return has;
}

size_t
qm_shard_op_positions(qm_shard *s, const u8 kh[32], enum qm_pred pred, u64 *out, size_t cap,
                      size_t *nkey)
{
    size_t n;
    if (qm_ix_find(&s->index, kh, out, cap, &n) != 0) {
        *nkey = SIZE_MAX; /* the caller's synchronous lookup reports the error */
        return 0;
    }
    if (n > cap)
        n = SIZE_MAX; /* more records than fit: the caller reads synchronously */
    *nkey = n;
    if (n == SIZE_MAX)
        return 0;
    /* No record with the key's prefix: a put of it is a create, which reads the predecessor;
     * a delete reads it too. */
    if (pred == QM_PRED_ALWAYS || (pred == QM_PRED_IF_ABSENT && n == 0)) {
        u64 pc[16];
        size_t m = 0;
        if (qm_ix_pred(&s->index, kh, pc, 16, &m) != 0)
            m = 0; /* the update stage's own lookup reports the error */
        m = QM_MIN(m, (size_t)16);
        for (size_t i = 0; i < m && n < cap; i++) {
            bool dup = false;
            for (size_t j = 0; j < n && !dup; j++)
                dup = out[j] == pc[i];
            if (!dup)
                out[n++] = pc[i];
        }
    }
    return n;
}

/* Who reads an entry, and so where it looks first (shard_read_entry). */
enum {
    RD_UPDATER, /* the update stage: warm cache, mapping, pread; e points into b */
    RD_CLIENT,  /* a client or the prover: mapping, warm cache, pread; e points into b */
    RD_VIEW,    /* as RD_CLIENT, but an entry served by the mapping is decoded in place */
};

/* Long entries: those over this many bytes. Neither a client nor the update stage reads one
 * through the mapping; one pread through the page cache reads the entry whole. Through the mapping,
 * an entry not yet in the process's page tables (every entry, on its first read after it was
 * written) costs a page fault per 64 KiB (fault-around) plus a mincore question, where a pread
 * costs one system call and the same copy (64 KiB values uncapped, three alternating pairs: updates
 * 6,178-6,517/s against 4,762-4,900, reads 93,552-98,174 against 69,623-80,898; docs/BENCH.md,
 * "Long entries: one pread, pre-images by offset"). When the logs do not fit (qm_logs_fit), the
 * update stage read a long entry through the mapping if all its pages were resident (mincore):
 * pages mapped by the process stayed cached after their entry died, and the page cache held fewer
 * live entries (64 KiB values in 128 MiB: with pread and the dead entries' pages dropped,
 * shard_forget, updates ran about a third faster and gets about a fifth; docs/BENCH.md, "Long
 * entries under a memory cap: dead pages leave the cache"). Every pread of an entry goes through
 * the segment's point-read descriptor (qm_hpfile_read_point), whose read-ahead is off: through the
 * main one, a pread of resident pages started the kernel's readahead past the entry (64 KiB values
 * in 128 MiB: deletes read 367 KB per delete instead of 64 KB, before the mapping served them), and
 * under that cap a get read 68 KB. The exception: a long entry written at once while the logs
 * were small (qm_logs_small: a quarter of the memory the process may use), whose pages the
 * writer mapped into the process as it wrote them (qm_hpfile_populate, qm_hpfile_populated):
 * the mapping has it without a fault, and a get copies it once, straight to the caller, where
 * pread copies it into a buffer and then out (64 KiB values uncapped, four alternating pairs:
 * gets 81,888-84,485/s against 122,441-128,909; docs/BENCH.md, "Long entries mapped as they
 * are written"). */
#define SHARD_MAP_MAX 4096
/* Entries longer than this have all their lines prefetched when read from the mapping
 * (qm_io_prefetch_lines); shorter ones, four lines at most, are left to the copy. */
#define SHARD_PF_LINES_MIN 256

/* Whether the header of the entry at pos, mapped at h, may be touched. A fault on the
 * mapping reads one page. So in a shard that has met entries over 512 bytes (seen_len), a
 * client read of an entry whose first seen_len bytes would run onto another page touches the
 * mapping only if the header's page is resident: else one pread (sized to seen_len) reads all
 * of it, where the mapping would cost a fault for the header's page and then one for the
 * next, one after the other. The update stage does not ask (its entries were prefetched), nor
 * does a client read that trusts the shard's pages (trusted). *asked: whether the question was
 * asked. */
static bool
shard_may_touch(qm_shard *s, u64 pos, const u8 *h, int who, bool trusted, bool *asked)
{
    u32 seen = qm_shard_seen_len(s);
    uintptr_t page = qm_page_size();
    *asked = false;
    if (who == RD_UPDATER || trusted || !seen || (uintptr_t)h % page + seen <= page)
        return true;
    *asked = true;
    return qm_hpfile_resident(&s->entries, pos, QM_ENTRY_FIXED + 3);
}

/* Decodes the entry at pos from the log's read mapping (hpfile.h): 1 when done, 0 when the
 * mapping cannot serve it (unmapped, buffered, across a segment end, a long entry that goes
 * to pread: SHARD_MAP_MAX, or pages that may not be touched: shard_may_touch). Client reads feed
 * the shard's counter s->res once per read, so a shard trusts its pages after QM_TRUST_RUN reads in
 * a row found them resident, and then asks in one read of QM_TRUST_EVERY (later of
 * QM_TRUST_LONG_EVERY; io.h). who: RD_VIEW decodes in place (e points into the mapping, valid under
 * the database's reader lock); else the entry is copied into b. */
static int
shard_read_mapped(qm_shard *s, u64 pos, qm_ebuf *b, qm_entry *e, int who)
{
    qm_hpfile *f = &s->entries;
    if (who != RD_UPDATER && !qm_logs_fit())
        return 0; /* mostly not resident: pread (hugefolio.h) */
    /* Long entries: pread, unless written with their pages mapped (qm_hpfile_populated; the
     * entry's length is not known yet: the shard's latest long one stands for it). */
    u32 seen = qm_shard_seen_len(s);
    if (seen > SHARD_MAP_MAX && !qm_hpfile_populated(f, pos, seen))
        return 0;
    const u8 *h = qm_hpfile_view(f, pos, QM_ENTRY_FIXED + 3);
    if (!h)
        return 0;
    /* One decision per client read: trusted, or the question asked and its answer noted once.
     * The updater's answers are not noted. */
    bool trusted = who != RD_UPDATER && qm_trust_skip(&s->res);
    bool note = who != RD_UPDATER;
    bool asked;
    if (!shard_may_touch(s, pos, h, who, trusted, &asked)) {
        if (note)
            qm_trust_note(&s->res, false);
        return 0;
    }
    if (asked && note)
        qm_trust_note(&s->res, true);
    u32 len = qm_entry_len_from_header(h);
    if (len > SHARD_MAP_MAX && !qm_hpfile_populated(f, pos, len)) {
        qm_shard_saw_len(s, len);
        return 0;
    }
    const u8 *p = qm_hpfile_view(f, pos, len);
    if (!p)
        return 0;
    qm_shard_saw_len(s, len);
    /* The decode and the copy then find every line of the entry loading. */
    if (len > SHARD_PF_LINES_MIN)
        qm_io_prefetch_lines(p, len);
    if (who != RD_VIEW) {
        QM_RET(ebuf_reserve(b, len));
        memcpy(b->p, p, len);
        p = b->p;
    }
    if (qm_entry_decode(p, len, e) != 0)
        return QM_CORRUPT(s->err, "shard %u entry log: malformed entry at offset %" PRIu64, s->id,
                          pos);
    return 1;
}

/* Whether a client read of guess bytes at pos reads past the page cache: the handle reads
 * with O_DIRECT (s->point_direct, QMDB_OPEN_DIRECT_IO), the logs do not fit in memory, the
 * entry's header lies in a file and in pos's segment, and the pages of the guessed bytes there
 * are not resident (an entry that goes on past them is read again: qm_hpfile_read_point).
 * Random point reads then leave the page cache to what it holds (log pages written a moment
 * ago, the hybrid indexer's run pages), as the batched reads do, and the reading thread
 * reclaims no page per read. */
static bool
shard_read_direct(qm_shard *s, u64 pos, u32 guess)
{
    qm_hpfile *f = &s->entries;
    if (!s->point_direct || qm_logs_fit() ||
        qm_hpfile_span(f, pos, QM_ENTRY_FIXED + 3) < QM_ENTRY_FIXED + 3)
        return false;
    return !qm_hpfile_resident(f, pos, qm_hpfile_span(f, pos, guess));
}

/* Reads the entry at pos: client reads (RD_CLIENT, RD_VIEW) look in the log's mapping first,
 * where an entry costs no lock and no system call; the updater looks in the warm cache first,
 * where the prefetch stage put the entries it read (from the device, bypassing the page cache
 * under O_DIRECT). Then the other, then pread. */
static int
shard_read_entry(qm_shard *s, u64 pos, qm_ebuf *b, qm_entry *e, int who)
{
    int m = 0;
    if (who != RD_UPDATER && (m = shard_read_mapped(s, pos, b, e, who)) != 0)
        return m < 0 ? m : 0;
    u32 wlen = 0;
    const u8 *w = NULL;
    int rc = 0;
    if (!qm_warm_none(&s->warm)) { /* empty: no lock (qm_warm_none) */
        pthread_mutex_lock(&s->warm_mu);
        w = qm_warm_get(&s->warm, pos, &wlen);
        if (w) {
            rc = ebuf_reserve(b, wlen);
            if (!rc)
                memcpy(b->p, w, wlen);
        }
        pthread_mutex_unlock(&s->warm_mu);
        QM_RET(rc);
    }
    if (w) { /* read by the client or the prefetcher for this block: no second log read */
        if (qm_entry_decode(b->p, wlen, e) != 0)
            return QM_CORRUPT(s->err, "shard %u: cached entry at offset %" PRIu64 " is malformed",
                              s->id, pos);
        return 0;
    }
    if (who == RD_UPDATER && (m = shard_read_mapped(s, pos, b, e, who)) != 0)
        return m < 0 ? m : 0;
    u32 guess = QM_MIN(QM_MAX(qm_shard_seen_len(s), SHARD_READ_GUESS), SHARD_READ_MAX);
    QM_RET(ebuf_reserve(b, guess));
    size_t got;
    if (who != RD_UPDATER && shard_read_direct(s, pos, guess))
        QM_RET(qm_hpfile_read_direct(&s->entries, pos, b->p, guess, &got));
    else
        QM_RET(qm_hpfile_read_point(&s->entries, pos, b->p, guess, &got));
    if (got < QM_ENTRY_FIXED + 3)
        return QM_CORRUPT(s->err, "shard %u entry log: truncated entry at offset %" PRIu64, s->id,
                          pos);
    u32 len = qm_entry_len_from_header(b->p);
    qm_shard_saw_len(s, len);
    if (len > got) {
        QM_RET(ebuf_reserve(b, len));
        QM_RET(qm_hpfile_read_point(&s->entries, pos, b->p, len, &got));
        if (got < len)
            return QM_CORRUPT(s->err,
                              "shard %u entry log: entry at offset %" PRIu64 " runs past the end",
                              s->id, pos);
    }
    if (qm_entry_decode(b->p, len, e) != 0)
        return QM_CORRUPT(s->err, "shard %u entry log: malformed entry at offset %" PRIu64, s->id,
                          pos);
    return 0;
}

int
qm_shard_read_entry(qm_shard *s, u64 pos, qm_ebuf *b, qm_entry *e)
{
    return shard_read_entry(s, pos, b, e, RD_UPDATER);
}

int
qm_shard_read_entry_client(qm_shard *s, u64 pos, qm_ebuf *b, qm_entry *e)
{
    return shard_read_entry(s, pos, b, e, RD_CLIENT);
}

int
qm_shard_read_pre(qm_shard *s, u64 pos, const u8 *key, u32 klen, qm_ebuf *b, qm_entry *e)
{
    QM_RET(shard_read_entry(s, pos, b, e, RD_CLIENT));
    if (e->klen != klen || memcmp(e->key, key, klen) != 0)
        return QM_CORRUPT(s->err,
                          "shard %u: the entry a key had before an in-flight block (offset %" PRIu64
                          ") holds another key",
                          s->id, pos);
    return 0;
}

/* Key hash of a decoded entry. */
static void
entry_kh(const qm_entry *e, u8 out[32])
{
    qm_entry_key_hash(e->key, e->klen, e->vlen, out);
}

/* qm_shard_get_in; who: as shard_read_entry's. */
static int
shard_get_in(qm_shard *s, const u64 *cand, size_t n, const u8 *key, u32 klen, qm_ebuf *buf,
             qm_entry *e, u64 *pos, int who)
{
    for (size_t i = 0; i < n; i++) {
        QM_RET(shard_read_entry(s, cand[i], buf, e, who));
        /* Sentries (empty value) are never user keys. */
        if (e->vlen > 0 && e->klen == klen && memcmp(e->key, key, klen) == 0) {
            *pos = cand[i];
            return 0;
        }
    }
    return QMDB_NOTFOUND;
}

int
qm_shard_get_in(qm_shard *s, const u64 *cand, size_t n, const u8 *key, u32 klen, qm_ebuf *buf,
                qm_entry *e, u64 *pos)
{
    return shard_get_in(s, cand, n, key, klen, buf, e, pos, RD_UPDATER);
}

/* A client's point read heard from the hybrid indexer that the entry at pos may be the one it
 * reads next: start loading its first line from the log's mapping, as shard_read_mapped would
 * read it, while the indexer checks the position against its overlays. */
static void
shard_entry_hint(void *arg, u64 pos)
{
    qm_shard *s = arg;
    const u8 *h = qm_logs_fit() ? qm_hpfile_view(&s->entries, pos, QM_ENTRY_FIXED + 3) : NULL;
    if (h)
        __builtin_prefetch(h);
}

/* qm_shard_get and qm_shard_get_client. */
static int
shard_get(qm_shard *s, const u8 kh[32], const u8 *key, u32 klen, qm_ebuf *buf, qm_entry *e,
          u64 *pos, int who)
{
    u64 cand[16];
    size_t n;
    QM_RET(who == RD_UPDATER ? qm_ix_find(&s->index, kh, cand, QM_ARRAY_LEN(cand), &n)
                             : qm_ix_find_point(&s->index, kh, cand, QM_ARRAY_LEN(cand), &n,
                                                shard_entry_hint, s));
    if (n > QM_ARRAY_LEN(cand))
        return QM_CORRUPT(s->err, "shard %u: %zu index records share one key-hash prefix", s->id,
                          n);
    return shard_get_in(s, cand, n, key, klen, buf, e, pos, who);
}

int
qm_shard_get(qm_shard *s, const u8 kh[32], const u8 *key, u32 klen, qm_ebuf *buf, qm_entry *e,
             u64 *pos)
{
    return shard_get(s, kh, key, klen, buf, e, pos, RD_UPDATER);
}

int
qm_shard_get_client(qm_shard *s, const u8 kh[32], const u8 *key, u32 klen, qm_ebuf *buf,
                    qm_entry *e, u64 *pos, bool in_place)
{
    return shard_get(s, kh, key, klen, buf, e, pos, in_place ? RD_VIEW : RD_CLIENT);
}

/* Finds the live predecessor of kh: the entry with the largest key hash below kh. Returns
 * it decoded in *e, its position, and its key hash in pkh (the caller needs it for the
 * indexer; computing it here once saves a SHA-256 per create and delete). */
static int
shard_pred(qm_shard *s, const u8 kh[32], qm_ebuf *buf, qm_entry *e, u64 *pos, u8 pkh[32])
{
    u64 cand[16];
    size_t n;
    QM_RET(qm_ix_pred(&s->index, kh, cand, QM_ARRAY_LEN(cand), &n));
    if (n == 0 || n > QM_ARRAY_LEN(cand))
        return QM_CORRUPT(s->err, "shard %u: no usable predecessor candidates (%zu)", s->id, n);
    if (n == 1) {
        QM_RET(qm_shard_read_entry(s, cand[0], buf, e));
        entry_kh(e, pkh);
        if (memcmp(pkh, kh, 32) >= 0)
            return QM_CORRUPT(s->err, "shard %u: predecessor at %" PRIu64 " is not below the key",
                              s->id, cand[0]);
        *pos = cand[0];
        return 0;
    }
    /* Several candidates: compare full key hashes. */
    u8 best[32];
    int have = 0;
    u64 best_pos = 0;
    for (size_t i = 0; i < n; i++) {
        QM_RET(qm_shard_read_entry(s, cand[i], buf, e));
        u8 ckh[32];
        entry_kh(e, ckh);
        if (memcmp(ckh, kh, 32) < 0 && (!have || memcmp(ckh, best, 32) > 0)) {
            memcpy(best, ckh, 32);
            best_pos = cand[i];
            have = 1;
        }
    }
    if (!have)
        return QM_CORRUPT(s->err, "shard %u: no live predecessor in the index", s->id);
    *pos = best_pos;
    memcpy(pkh, best, 32);
    return qm_shard_read_entry(s, best_pos, buf, e);
}

static const char *const KIND_NAMES[] = {"create",      "create-pred", "update",
                                         "delete-pred", "compact",     "sentry"};
enum { K_CREATE, K_CREATE_PRED, K_UPDATE, K_DELETE_PRED, K_COMPACT, K_SENTRY };

static void
shard_trace(qm_shard *s, int kind, u64 sn, u64 pos, const u8 *bytes, u32 len, const u8 leaf[32])
{
    fprintf(s->trace, "%" PRIu64 " %u %" PRIu64 " %s %" PRIu64 " ", s->height, s->id, sn,
            KIND_NAMES[kind], pos);
    for (int i = 0; i < 32; i++)
        fprintf(s->trace, "%02x", leaf[i]);
    fputc(' ', s->trace);
    for (u32 i = 0; i < len; i++)
        fprintf(s->trace, "%02x", bytes[i]);
    fputc('\n', s->trace);
}

/* Persists the twig that was just filled: its record and its twig-meta record. */
static int
shard_persist_full_twig(qm_shard *s, u64 twig_id)
{
    qm_twigrec_encode(s->twigrec, twig_id, qm_tree_full_nodes(&s->tree));
    u64 pos;
    QM_RET(qm_hpfile_append(&s->twigs, s->twigrec, QM_TWIG_REC, &pos));
    if (pos != twig_id * QM_TWIG_REC)
        return QM_CORRUPT(s->err, "shard %u twig file: record %" PRIu64 " at offset %" PRIu64,
                          s->id, twig_id, pos);
    u8 rec[QM_TMETA_REC];
    const qm_twig *tw = qm_tree_twig(&s->tree, twig_id);
    qm_tmeta_encode(rec, twig_id, tw->left_root, tw->first_pos);
    QM_RET(qm_hpfile_append(&s->tmeta, rec, QM_TMETA_REC, &pos));
    return qm_tree_start_next_twig(&s->tree);
}

/*
 * Appends an entry with SN next_sn. Invariant (1): bytes first, then leaf, then (by the
 * caller) the indexer. Sets the entry's active bit and clears those of its DSNs, whose
 * entries lie at log offsets dpos[0..ndsn) (recorded in the dpos file, dpos.h).
 */
static int
shard_append(qm_shard *s, int kind, const u8 *key, u32 klen, const u8 *val, u32 vlen,
             const u8 nkh[32], i64 version, const u64 *dsn, const u64 *dpos, u32 ndsn, u64 *pos_out)
{
    u32 len = qm_entry_stored_len(klen, vlen, ndsn);
    if (len > s->enc_cap) {
        u8 *p = realloc(s->enc, len);
        if (!p)
            return -ENOMEM;
        s->enc = p;
        s->enc_cap = len;
    }
    u64 sn = s->tree.next_sn;
    qm_entry_encode(s->enc, key, klen, val, vlen, nkh, version, sn, dsn, ndsn);
    u8 leaf[32];
    qm_entry_hash(s->enc, leaf);
    u64 pos;
    QM_RET(qm_hpfile_append(&s->entries, s->enc, len, &pos));
    if (s->trace)
        shard_trace(s, kind, sn, pos, s->enc, len, leaf);
    bool full;
    QM_RET(qm_tree_append(&s->tree, leaf, pos, &full));
    if (full)
        QM_RET(shard_persist_full_twig(s, sn >> QM_TWIG_SHIFT));
    for (u32 i = 0; i < ndsn; i++) {
        if (!qm_tree_is_active(&s->tree, dsn[i]))
            return QM_CORRUPT(s->err, "shard %u: deactivating SN %" PRIu64 " which is not live",
                              s->id, dsn[i]);
        qm_tree_deactivate(&s->tree, dsn[i], s->height);
        if (s->index.hyb)
            qm_hix_note_deact(s->index.hyb, dsn[i]);
        qm_dpos_note(&s->dpos, dsn[i], dpos[i]); /* for a rollback of this block */
    }
    *pos_out = pos;
    return 0;
}

int
qm_shard_open_files(qm_shard *s, const char *dir, const qm_shard_meta *m)
{
    const qm_params *par = s->par;
    u64 nfull = m ? m->next_sn >> QM_TWIG_SHIFT : 0;
    bool create = m == NULL, ro = par->rdonly;
    char e[32], t[32], tm[32];
    snprintf(e, sizeof(e), "s%02x.entries", s->id);
    snprintf(t, sizeof(t), "s%02x.twig", s->id);
    snprintf(tm, sizeof(tm), "s%02x.tmeta", s->id);
    qm_hpfile_cfg ce = {
        dir, e,   par->entry_seg, m ? m->entry_head : 0, m ? m->entry_size : 0, 1 << 20, create,
        ro,  true}; /* mapped for point reads (hpfile.h) */
    qm_hpfile_cfg ct = {
        dir,    t,  par->twig_seg, m ? m->first_twig * QM_TWIG_REC : 0, nfull * QM_TWIG_REC, 0,
        create, ro, true}; /* mapped for the prover's paths (proof.c) */
    qm_hpfile_cfg cm = {dir,    tm, 1ull << 30, 0, nfull * QM_TMETA_REC, 64 * QM_TMETA_REC,
                        create, ro, false};
    QM_RET(qm_hpfile_open(&s->entries, &ce, s->err));
    QM_RET(qm_hpfile_open(&s->twigs, &ct, s->err));
    QM_RET(qm_hpfile_open(&s->tmeta, &cm, s->err));
    QM_RET(qm_tree_init(&s->tree));
    QM_RET(qm_scan_init(&s->cursor, &s->entries, 64 * 1024));
    s->twigrec = malloc(QM_TWIG_REC);
    return s->twigrec ? 0 : -ENOMEM;
}

int
qm_shard_create(qm_shard *s, unsigned id, const char *dir, const qm_params *par, qm_err *err)
{
    memset(s, 0, sizeof(*s));
    qm_shard_init_common(s);
    s->id = id;
    s->par = par;
    s->err = err;
    qm_index_init(&s->index.mem);
    if (par->hybrid)
        QM_RET(qm_hix_new(dir, id, par->hix_merge, &s->index.hyb, err));
    QM_RET(qm_shard_open_files(s, dir, NULL));
    int rc;
    u8 buf[128];
    for (unsigned i = 0; i < QM_SENTRIES_PER_SHARD; i++) {
        u32 len = qm_sentry_encode(id, i, buf);
        u8 leaf[32], kh[32];
        qm_entry_hash(buf, leaf);
        u64 pos;
        QM_RET(qm_hpfile_append(&s->entries, buf, len, &pos));
        bool full;
        QM_RET(qm_tree_append(&s->tree, leaf, pos, &full));
        if (full)
            QM_RET(shard_persist_full_twig(s, i >> QM_TWIG_SHIFT));
        qm_entry_key_hash(buf + 5, 32, 0, kh);
        if ((rc = qm_ix_insert(&s->index, kh, pos)) != 0)
            return rc;
    }
    s->live = QM_SENTRIES_PER_SHARD;
    s->sn_start = 0;
    s->sn_start_pos = 0;
    return 0;
}

void
qm_shard_close(qm_shard *s)
{
    qm_hpfile_close(&s->entries);
    qm_hpfile_close(&s->twigs);
    qm_hpfile_close(&s->tmeta);
    qm_tree_free(&s->tree);
    qm_ix_free(&s->index);
    qm_dpos_close(&s->dpos);
    qm_scan_free(&s->cursor);
    qm_warm_free(&s->warm);
    pthread_mutex_destroy(&s->warm_mu);
    for (unsigned i = 0; i < QM_ARRAY_LEN(s->rb); i++)
        qm_ebuf_free(&s->rb[i]);
    free(s->enc);
    free(s->forget);
    free(s->twigrec);
    if (s->trace)
        fclose(s->trace);
    memset(s, 0, sizeof(*s));
}

/* When the logs do not fit in memory, a dead entry's whole pages leave the page cache, which
 * then holds more live entries: with 64 KiB values in 128 MiB, it otherwise kept the pages of
 * entries that updates had just replaced. Entries shorter than a page free nothing, and only
 * bytes of earlier blocks are dropped (synced: written out, their fsync done by the next
 * block). The drop waits for the next block: the update stage has just read the entry, and
 * pages read a moment ago may still sit in the kernel's per-CPU lists, which a drop then drains
 * on every CPU (a drop at once was not measured with these pread reads). */
static void
shard_forget(qm_shard *s, u64 pos, u32 len)
{
    if (len < qm_page_size() || pos + len > s->entries.synced || qm_logs_fit())
        return;
    if (s->nforget + 2 > s->forget_cap) {
        size_t cap = s->forget_cap ? 2 * s->forget_cap : 256;
        u64 *p = realloc(s->forget, cap * sizeof(*p));
        if (!p)
            return; /* a hint: skipped */
        s->forget = p;
        s->forget_cap = cap;
    }
    s->forget[s->nforget++] = pos;
    s->forget[s->nforget++] = len;
}

/* Drops the pages of the dead entries the previous block noted (shard_forget). */
static void
shard_forget_run(qm_shard *s)
{
    for (size_t i = 0; i + 1 < s->nforget; i += 2)
        qm_hpfile_drop(&s->entries, s->forget[i], s->forget[i + 1]);
    s->nforget = 0;
}

static bool
shard_compactible(const qm_shard *s)
{
    const qm_params *p = s->par;
    if (s->live < p->compact_thres)
        return false;
    unsigned __int128 lhs = (unsigned __int128)s->live * p->util_div;
    unsigned __int128 rhs = (unsigned __int128)(s->tree.next_sn - s->sn_start) * p->util_ratio;
    return lhs <= rhs;
}

/* One compaction step (FORMAT.md §7): re-append the oldest live entry unchanged. */
static int
shard_compact_step(qm_shard *s)
{
    u64 sn = s->sn_start, pos = s->sn_start_pos;
    /* Twigs below first_twig are pruned and wholly dead: the scan may skip them. */
    u64 min_sn = s->tree.first_twig << QM_TWIG_SHIFT;
    if (sn < min_sn) {
        sn = min_sn;
        pos = s->entry_head;
    }
    for (;;) {
        if (sn >= s->tree.next_sn)
            return QM_CORRUPT(s->err, "shard %u: compaction found no live entry", s->id);
        const u8 *p;
        u32 len;
        qm_entry e;
        u8 sleaf[32];
        int r = qm_shard_scan_rec(s, &s->cursor, pos, sn, &p, &len, &e, sleaf);
        if (r < 0)
            return r;
        if (r == 1 && qm_tree_is_active(&s->tree, sn))
            return QM_CORRUPT(s->err, "shard %u: the stub of SN %" PRIu64 " is live", s->id, sn);
        if (!qm_tree_is_active(&s->tree, sn)) { /* dead entries and stubs are not moved */
            sn++;
            pos += len;
            continue;
        }
        /* Copy out: the append below may reuse the scan buffer. */
        qm_ebuf *b = &s->rb[3];
        QM_RET(ebuf_reserve(b, len));
        memcpy(b->p, p, len);
        QM_RET(qm_entry_decode(b->p, len, &e));
        u8 kh[32];
        entry_kh(&e, kh);
        u64 npos = 0;
        u64 dsn = sn;
        QM_RET(shard_append(s, K_COMPACT, e.key, e.klen, e.value, e.vlen, e.next_key_hash,
                            e.version, &dsn, &pos, 1, &npos));
        if (qm_ix_replace(&s->index, kh, pos, npos) != 0)
            return QM_CORRUPT(s->err, "shard %u: live entry at %" PRIu64 " missing from index",
                              s->id, pos);
        shard_forget(s, pos, len);
        s->sn_start = sn + 1;
        s->sn_start_pos = pos + len;
        s->compactions++;
        return 0;
    }
}

static int
shard_op(qm_shard *s, const qm_op *op)
{
    i64 version = (i64)((s->height << 24) + op->tx);
    qm_entry e, p;
    u64 epos = 0, ppos = 0, npos = 0, pnew = 0;
    int rc = qm_shard_get(s, op->kh, op->key, op->klen, &s->rb[0], &e, &epos);
    if (rc && rc != QMDB_NOTFOUND)
        return rc;
    bool found = (rc == 0);
    if (s->undo) /* the key's value before the block, for readers of the durable state */
        QM_RET(qm_undo_put(s->undo, op->kh, found ? epos : QM_UNDO_ABSENT));
    if (op->vlen > 0 && found) { /* update */
        u64 dsn = e.sn;
        QM_RET(shard_append(s, K_UPDATE, op->key, op->klen, op->val, op->vlen, e.next_key_hash,
                            version, &dsn, &epos, 1, &npos));
        QM_RET(qm_ix_replace(&s->index, op->kh, epos, npos));
        shard_forget(s, epos, e.stored_len);
        if (shard_compactible(s))
            QM_RET(shard_compact_step(s));
    } else if (op->vlen > 0) { /* create */
        u8 pkh[32];
        QM_RET(shard_pred(s, op->kh, &s->rb[1], &p, &ppos, pkh));
        QM_RET(shard_append(s, K_CREATE, op->key, op->klen, op->val, op->vlen, p.next_key_hash,
                            version, NULL, NULL, 0, &npos));
        QM_RET(qm_ix_insert(&s->index, op->kh, npos));
        u64 dsn = p.sn;
        QM_RET(shard_append(s, K_CREATE_PRED, p.key, p.klen, p.value, p.vlen, op->kh, version, &dsn,
                            &ppos, 1, &pnew));
        QM_RET(qm_ix_replace(&s->index, pkh, ppos, pnew));
        shard_forget(s, ppos, p.stored_len);
        s->live++;
        if (shard_compactible(s)) {
            QM_RET(shard_compact_step(s));
            QM_RET(shard_compact_step(s));
        }
    } else if (found) { /* delete */
        u8 pkh[32];
        QM_RET(shard_pred(s, op->kh, &s->rb[1], &p, &ppos, pkh));
        u64 dsn[2] = {e.sn, p.sn}, dpos[2] = {epos, ppos};
        QM_RET(shard_append(s, K_DELETE_PRED, p.key, p.klen, p.value, p.vlen, e.next_key_hash,
                            version, dsn, dpos, 2, &pnew));
        QM_RET(qm_ix_erase(&s->index, op->kh, epos));
        QM_RET(qm_ix_replace(&s->index, pkh, ppos, pnew));
        shard_forget(s, epos, e.stored_len);
        shard_forget(s, ppos, p.stored_len);
        s->live--;
    }
    return 0;
}

void
qm_shard_prefetch_entry(qm_shard *s, u64 pos)
{
    if (!qm_logs_fit())
        return;
    const u8 *p = qm_hpfile_view(&s->entries, pos, 128);
    if (p) {
        __builtin_prefetch(p);
        qm_io_prefetch_lines(p, 128); /* the lines after the first */
    }
}

/* The update stage starts loading the hybrid memo slot an op's lookup probes a few ops ahead
 * (qm_hint_ahead): the block's batched reads or prefetch filled the memo at random slots, so
 * each probe waited for one (docs/BENCH.md, "The hybrid memo's slot loaded a few keys ahead").
 * The in-memory indexer takes no hint here: the batched reads left its records in the caches
 * ("Lookups that start loading a few keys ahead"). */
int
qm_shard_apply(qm_shard *s, u64 height, const qm_op *ops, size_t n)
{
    s->height = height;
    size_t d = s->index.hyb ? qm_hint_ahead() : 0;
    for (size_t i = 0; i < n; i++) {
        if (d && i + d < n)
            qm_hix_prefetch(s->index.hyb, ops[i + d].kh);
        QM_RET(shard_op(s, &ops[i]));
    }
    return 0;
}

int
qm_shard_seal(qm_shard *s)
{
    return qm_tree_commit(&s->tree);
}

void
qm_shard_plan_prune(qm_shard *s, u64 height)
{
    qm_tree *t = &s->tree;
    u64 youngest = t->ntwigs - 1;
    u64 id = QM_MAX(t->first_twig, s->pending_first_twig);
    while (id < youngest) {
        const qm_twig *tw = qm_tree_twig(t, id);
        /* Kept while height - deact_height < history_blocks (no overflow for a huge
         * history_blocks, which must keep everything). */
        if (tw->nactive != 0 || tw->deact_height > height ||
            height - tw->deact_height < s->par->history_blocks)
            break;
        s->pruned_deact = QM_MAX(s->pruned_deact, tw->deact_height); /* rollback window */
        id++;                                                        /* Invariant (4) */
    }
    s->pending_first_twig = id;
}

/* Entry-log offset where twig `id` starts. */
static u64
shard_twig_start(const qm_shard *s, u64 id)
{
    const qm_tree *t = &s->tree;
    if (id == t->ntwigs - 1 && (t->next_sn & QM_TWIG_MASK) == 0)
        return s->entries.size;
    return qm_tree_twig(t, id)->first_pos;
}

void
qm_shard_meta_fill(const qm_shard *s, qm_shard_meta *m)
{
    u64 ft = QM_MAX(s->tree.first_twig, s->pending_first_twig);
    m->next_sn = s->tree.next_sn;
    m->sn_start = s->sn_start;
    m->sn_start_pos = s->sn_start_pos;
    m->live = s->live;
    m->entry_size = s->entries.size;
    m->entry_head = ft > 0 ? shard_twig_start(s, ft) : 0;
    m->first_twig = ft;
    /* Once the stub twigs are pruned, the database is of the ordinary format again. */
    m->stub_end = (ft << QM_TWIG_SHIFT) >= s->stub_end ? 0 : s->stub_end;
    memcpy(m->root, s->tree.root, 32);
}

int
qm_shard_after_commit(qm_shard *s, u64 ft)
{
    if (ft <= s->tree.first_twig)
        return 0;
    u64 head = shard_twig_start(s, ft);
    for (u64 id = s->tree.first_twig; id < ft; id++)
        qm_tree_prune_twig(&s->tree, id);
    s->entry_head = head;
    /* Try both files even if one fails (a failure leaves segments for the next open). */
    int rc = qm_hpfile_prune_head(&s->entries, head);
    int rc2 = qm_hpfile_prune_head(&s->twigs, ft * QM_TWIG_REC);
    return rc ? rc : rc2;
}

void
qm_shard_begin_block(qm_shard *s, struct qm_undo *undo)
{
    s->undo = undo;
}

int
qm_shard_update(qm_shard *s, u64 height, const qm_op *ops, size_t n)
{
    qm_hpfile_close_cold(&s->entries);
    qm_hpfile_close_cold(&s->twigs);
    /* While the logs fit in memory, long entries are read through the mapping: map their
     * pages as they are written (SHARD_MAP_MAX). */
    qm_hpfile_populate(&s->entries, qm_logs_small());
    shard_forget_run(s);
    s->run_current = false;
    int rc = qm_shard_apply(s, height, ops, n);
    pthread_mutex_lock(&s->warm_mu);
    qm_warm_clear(&s->warm);
    pthread_mutex_unlock(&s->warm_mu);
    return rc;
}

void
qm_shard_end_update(qm_shard *s)
{
    if (s->index.hyb) /* the next block's lookups then see the run its update stage uses */
        qm_hix_install(s->index.hyb);
    qm_ix_memo_reset(&s->index);
}

int
qm_shard_sync_begin(qm_shard *s, qm_hp_ticket t[3])
{
    QM_RET(qm_hpfile_sync_begin(&s->entries, &t[0]));
    QM_RET(qm_hpfile_sync_begin(&s->twigs, &t[1]));
    return qm_hpfile_sync_begin(&s->tmeta, &t[2]);
}

int
qm_shard_sync_finish(qm_shard *s, const qm_hp_ticket t[3])
{
    QM_RET(qm_hpfile_sync_finish(&s->entries, &t[0]));
    QM_RET(qm_hpfile_sync_finish(&s->twigs, &t[1]));
    return qm_hpfile_sync_finish(&s->tmeta, &t[2]);
}

void
qm_shard_add_stats(qm_shard *s, qmdb_stats *st)
{
    st->live_with_sentries += s->live;
    st->total_entries += s->tree.next_sn;
    st->unpruned_entries += s->tree.next_sn - (s->tree.first_twig << QM_TWIG_SHIFT);
    qm_ix_add_stats(&s->index, st);
    st->index_resumed_shards += s->index_resumed;
    st->index_replayed_blocks += s->hix_replayed_blocks;
    st->index_replayed_changes += s->hix_replayed_changes;
    st->tree_dram_bytes += qm_tree_dram_bytes(&s->tree);
    st->entry_file_bytes += qm_hpfile_disk_bytes(&s->entries);
    st->twig_file_bytes += qm_hpfile_disk_bytes(&s->twigs) + qm_hpfile_disk_bytes(&s->tmeta);
    st->compactions += s->compactions;
    st->rollback_reactivated += s->rb_reactivated;
    st->rollback_entries_read += s->rb_entries_read;
    st->rollback_walked += s->rb_walked;
    st->page_cache_reads += __atomic_load_n(&s->cprobe.taken, __ATOMIC_RELAXED);
    pthread_mutex_lock(&s->warm_mu);
    st->warm_hits += s->warm.hits;
    st->cache_dram_bytes += qm_warm_dram_bytes(&s->warm);
    pthread_mutex_unlock(&s->warm_mu);
    st->cache_dram_bytes += qm_dpos_dram_bytes(&s->dpos);
    if (s->index.hyb)
        st->cache_dram_bytes += qm_hix_memo_bytes(s->index.hyb);
}

/* ---- Log scans (recovery, the hybrid indexer's resume) ------------------------------ */

/* Reads and decodes the entry at log offset pos, which must carry serial number sn; *p points
 * at its bytes (valid until the next scan call) and *len is its stored length. */
int
qm_shard_scan_entry(qm_shard *s, qm_scan *sc, u64 pos, u64 sn, const u8 **p, u32 *len, qm_entry *e)
{
    QM_RET(qm_scan_get(sc, pos, QM_ENTRY_FIXED + 3, p));
    *len = qm_entry_len_from_header(*p);
    QM_RET(qm_scan_get(sc, pos, *len, p));
    if (qm_entry_decode(*p, *len, e) != 0 || e->sn != sn)
        return QM_CORRUPT(s->err,
                          "%s.%010" PRIu64 ": bad entry at offset %" PRIu64 " (log offset %" PRIu64
                          ", expected SN %" PRIu64 ")",
                          s->entries.path_prefix, pos / s->entries.seg_size,
                          pos % s->entries.seg_size, pos, sn);
    return 0;
}

_Static_assert(QM_ENTRY_FIXED + 3 == QM_STUB_LEN, "a stub is read whole with an entry header");

/* Like qm_shard_scan_entry, but the record may also be a stub when sn < s->stub_end: returns
 * 0 for an entry (*e decoded), 1 for a stub (leaf = its leaf hash, *e untouched). */
int
qm_shard_scan_rec(qm_shard *s, qm_scan *sc, u64 pos, u64 sn, const u8 **p, u32 *len, qm_entry *e,
                  u8 leaf[32])
{
    QM_RET(qm_scan_get(sc, pos, QM_ENTRY_FIXED + 3, p));
    if (!qm_entry_is_stub(*p))
        return qm_shard_scan_entry(s, sc, pos, sn, p, len, e);
    u64 ssn;
    *len = QM_STUB_LEN;
    if (sn >= s->stub_end || qm_stub_decode(*p, QM_STUB_LEN, &ssn, leaf) != 0 || ssn != sn)
        return QM_CORRUPT(
            s->err,
            "%s.%010" PRIu64 ": bad entry at offset %" PRIu64 " (log offset %" PRIu64
            ", expected SN %" PRIu64 "%s)",
            s->entries.path_prefix, pos / s->entries.seg_size, pos % s->entries.seg_size, pos, sn,
            sn >= s->stub_end ? ": a stub where only entries may stand" : ": a damaged stub");
    return 1;
}

/* The scan must end exactly at the committed size of the log. */
int
qm_shard_scan_end(qm_shard *s, u64 pos, const qm_shard_meta *m)
{
    if (pos == m->entry_size)
        return 0;
    return QM_CORRUPT(s->err,
                      "%s: entries end at log offset %" PRIu64
                      " but the committed size in META is %" PRIu64,
                      s->entries.path_prefix, pos, m->entry_size);
}

/* Hashes the youngest twig's entries (from log offset pos) into its left tree. */
int
qm_shard_youngest_leaves(qm_shard *s, const qm_shard_meta *m, u64 pos)
{
    qm_tree *t = &s->tree;
    u64 ysn = (t->ntwigs - 1) << QM_TWIG_SHIFT;
    if (ysn >= m->next_sn)
        pos = m->entry_size; /* the youngest twig has no entry yet */
    else
        qm_tree_twig(t, t->ntwigs - 1)->first_pos = pos;
    qm_scan sc;
    QM_RET(qm_scan_init(&sc, &s->entries, 1 << 20));
    int rc = 0;
    for (u64 sn = ysn; sn < m->next_sn && !rc; sn++) {
        const u8 *p;
        u32 elen;
        qm_entry e;
        rc = qm_shard_scan_entry(s, &sc, pos, sn, &p, &elen, &e);
        if (!rc) {
            qm_entry_hash(p, t->ltree[2048 + (sn & QM_TWIG_MASK)]);
            pos += elen;
        }
    }
    qm_scan_free(&sc);
    QM_RET(rc);
    QM_RET(qm_shard_scan_end(s, pos, m));
    t->lt_lo = 0;
    t->lt_hi = (unsigned)(m->next_sn - ysn);
    return 0;
}
