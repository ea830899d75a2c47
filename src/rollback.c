/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rollback.c -- qmdb_rollback: takes the database from its latest height L back to an
 * earlier height h (a chain reorganization), so that other blocks h+1, h+2, ... can be
 * committed instead.
 *
 * What state h is. Entries are never rewritten: state h is the log, twig and twig-meta
 * files cut back to h's sizes, with the ActiveBits of h. Per shard, the discarded tail
 * (SNs next_sn(h) .. next_sn(L) - 1, log offsets entry_size(h) .. entry_size(L)) is read
 * once: every tail entry still live at L loses its index record; every SN below next_sn(h)
 * that a tail entry deactivated is live again at h, so its active bit is set and its index
 * record comes back. Its log position comes from the discarded blocks' deactivation-position
 * records (dpos.h: per block, the SN and offset of each entry it deactivated), accepted only
 * when the entry at that offset has that SN; an SN without such a record (a block committed
 * before the records existed, a lost or damaged record) is found by walking its twig from
 * the twig's first entry (the reactivated SNs are sorted and each twig is walked at most
 * once, only as far as its last such SN). So the cost is the tail, the records and one read
 * per reactivated entry. The twigs after h's youngest are dropped, the youngest twig's
 * left tree is rehashed from its entries, and next_sn, the compaction cursor and the live
 * count are those of h's record in STATES (states.h), which every commit writes before its
 * META. The recomputed shard roots must give the state root of h in ROOTS; otherwise the
 * rollback is refused with QMDB_CORRUPT (nothing durable changed; the handle is fatal
 * because its DRAM state was half undone).
 *
 * The window (docs/DESIGN.md "Rollback"): h is reachable from L when
 *   (a) L - h <= w = min(history_blocks at the file's creation, 2^20), and h's record is
 *       still in the STATES ring of 2w + 2 (a database made before STATES existed has
 *       records from the first commit after the upgrade on);
 *   (b) prune_max <= h: every twig pruned so far had its last deactivation at or before h,
 *       so every entry live at h is in an unpruned twig.
 * Both hold for h >= M - w, M the highest height ever committed (rolled-back blocks
 * included: pruning waits history_blocks after a twig's last deactivation, so prune_max <=
 * M - history_blocks, unless history_blocks was raised at open after the pruning).
 * Otherwise QMDB_PRUNED, nothing changed. h > L: QMDB_BAD_HEIGHT. h = L: nothing to do.
 *
 * Durability (crash at any point recovers exactly L or exactly h):
 *   1. DRAM only (writer lock held, readers wait): undo every shard; check the root.
 *   2. STATES: the record of h again, with the current prune_max (pruning done after h is
 *      not undone), fsynced. An open at L does not read it.
 *   3. META: the next sequence describes h (sizes and cursors of h, heads and first twigs of
 *      now), fsynced: the commit point. Before it an open recovers L (no file was cut);
 *      after it, h (an open cuts every file past h's sizes, and ROOTS past h).
 *   4. The tails are cut: entry log, twig file, twig-meta file (qm_hpfile_cut), ROOTS, and
 *      the dpos records above h (an open drops those too; they are never trusted anyway).
 *   5. Hybrid indexer, per shard (hrecover.c, qm_shard_hix_rollback), fsynced: when the run
 *      on disk reflects a state at or below h and no merge is pending, its journal is cut
 *      after the record reaching h; otherwise the undo's index changes and re-activated SNs,
 *      which step 1 collected in the journal's buffer like a block's, become an undo record
 *      from L down to h (hixj.h), which an open replays after the run (even one ahead of
 *      META). Before this step an open replays the journal only up to h, or finds the run
 *      ahead of META without an undo record and rebuilds from the log. Only with the journal
 *      off (after a checkpoint at close), or QMDB_ROLLBACK_CHECKPOINT=1: a checkpoint run of
 *      state h and a new journal generation from h+1. The DRAM overlay holds the undo in
 *      every case, so nothing here is proportional to the database.
 * A failure in 1 leaves L durable; in 2-3 L or h (a torn META slot: the other copy or slot);
 * in 4-5 h. Every failure after 1 began makes the handle fatal (QMDB_PANIC; reopen).
 *
 * In-flight blocks: qmdb_rollback first waits until every submitted block is durable (as
 * qmdb_prune does), so L is the last submitted height.
 *
 * Thread: a writer function (one thread at a time, like qmdb_commit). Readers on other
 * threads wait on the writer lock and see state L or state h, never a mixture.
 */
#include "db_int.h"
#include "entry.h"
#include "io.h"
#include "twigfile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Re-activated entries per twig from which they are read through the scanner (sequential
 * reads of the twig's bytes) rather than one pread each. */
#define RB_DENSE 64u

typedef struct rb_ctx {
    qmdb_db *db;
    u64 height, latest;
    const qm_states_rec *rec;
} rb_ctx;

static int
u64_cmp(const void *a, const void *b)
{
    u64 x = *(const u64 *)a, y = *(const u64 *)b;
    return x < y ? -1 : x > y;
}

static void
entry_kh(const qm_entry *e, u8 kh[32])
{
    qm_entry_key_hash(e->key, e->klen, e->vlen, kh);
}

/* Appends v to a growable array. */
static int
vec_push(u64 **v, size_t *n, size_t *cap, u64 x)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 1024;
        u64 *p = realloc(*v, c * sizeof(u64));
        if (!p)
            return -ENOMEM;
        *v = p;
        *cap = c;
    }
    (*v)[(*n)++] = x;
    return 0;
}

/* Reads the tail (SNs n_h .. next_sn - 1): erases the index records of its live entries and
 * collects the SNs below n_h that it deactivated. */
static int
undo_tail(qm_shard *s, qm_scan *sc, const qm_states_shard *r, u64 **re, size_t *nre)
{
    qm_tree *t = &s->tree;
    size_t cap = 0;
    u64 pos = r->entry_size;
    for (u64 sn = r->next_sn; sn < t->next_sn; sn++) {
        const u8 *p;
        u32 len;
        qm_entry e;
        QM_RET(qm_shard_scan_entry(s, sc, pos, sn, &p, &len, &e));
        if (qm_tree_is_active(t, sn)) {
            u8 kh[32];
            entry_kh(&e, kh);
            if (qm_ix_erase(&s->index, kh, pos) != 0)
                return QM_CORRUPT(s->err,
                                  "shard %u: live entry SN %" PRIu64 " at log offset %" PRIu64
                                  " is missing from the index",
                                  s->id, sn, pos);
        }
        for (u32 i = 0; i < e.ndsn; i++) {
            u64 d = qm_entry_dsn_at(&e, i);
            if (d >= sn)
                return QM_CORRUPT(s->err,
                                  "%s: entry at log offset %" PRIu64 " deactivates a later SN",
                                  s->entries.path_prefix, pos);
            if (d < r->next_sn)
                QM_RET(vec_push(re, nre, &cap, d));
        }
        pos += len;
    }
    if (pos != s->entries.size)
        return QM_CORRUPT(s->err,
                          "%s: the entries after height's end at log offset %" PRIu64
                          ", the log at %" PRIu64,
                          s->entries.path_prefix, pos, s->entries.size);
    return 0;
}

/* Reads the entry at log offset pos into *b when it is the entry with SN sn (which a dpos
 * record says); 1 if not (the record is wrong: the caller walks the twig instead). */
static int
read_at(qm_shard *s, const qm_states_shard *r, u64 pos, u64 sn, qm_ebuf *b, qm_entry *e)
{
    if (pos < s->entries.head || pos >= r->entry_size || r->entry_size - pos < QM_ENTRY_FIXED)
        return 1;
    size_t got = 0, want = QM_MAX(b->cap, (size_t)512);
    for (;;) {
        if (want > b->cap) {
            u8 *p = realloc(b->own, want);
            if (!p)
                return -ENOMEM;
            b->p = b->own = p;
            b->cap = want;
        }
        QM_RET(qm_hpfile_read_point(&s->entries, pos, b->p, b->cap, &got));
        if (got < QM_ENTRY_FIXED + 3)
            return 1;
        u32 len = qm_entry_len_from_header(b->p);
        if (len > r->entry_size - pos)
            return 1;
        if (len <= got)
            return qm_entry_decode(b->p, len, e) == 0 && e->sn == sn ? 0 : 1;
        want = len;
    }
}

/* read_at through the buffered scanner (a twig with many re-activated entries: their reads
 * come from the scanner's large sequential reads instead of one pread each). */
static int
scan_at(qm_shard *s, qm_scan *sc, const qm_states_shard *r, u64 pos, u64 sn, qm_entry *e)
{
    if (pos < s->entries.head || pos >= r->entry_size || r->entry_size - pos < QM_ENTRY_FIXED + 3)
        return 1;
    const u8 *p;
    QM_RET(qm_scan_get(sc, pos, QM_ENTRY_FIXED + 3, &p));
    u32 len = qm_entry_len_from_header(p);
    if (len > r->entry_size - pos)
        return 1;
    QM_RET(qm_scan_get(sc, pos, len, &p));
    return qm_entry_decode(p, len, e) == 0 && e->sn == sn ? 0 : 1;
}

/* The position of SN d in the sorted (SN, offset) pairs, or UINT64_MAX. */
static u64
pair_find(const u64 *pairs, size_t np, u64 d)
{
    size_t lo = 0, hi = np;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pairs[2 * mid] < d)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < np && pairs[2 * lo] == d ? pairs[2 * lo + 1] : UINT64_MAX;
}

static int
pair_cmp(const void *a, const void *b)
{
    return u64_cmp(a, b); /* by SN, the first of the two */
}

/* Makes the sorted SNs re[0..n) live again and puts their index records back. The entry of
 * each is read where the discarded blocks' dpos records (pairs, sorted by SN) say it is;
 * an SN without a record that leads to it is found by walking its twig from the twig's
 * first entry (each twig at most once, only as far as its last such SN). */
static int
undo_reactivate(qm_shard *s, qm_scan *sc, const qm_states_shard *r, const u64 *re, size_t n,
                const u64 *pairs, size_t np)
{
    qm_tree *t = &s->tree;
    qm_ebuf *b = &s->rb[0];
    u64 sn = UINT64_MAX, pos = 0; /* the walk: the entry at pos has SN sn */
    u64 twig = UINT64_MAX;        /* the twig of re[i], and whether it holds many of them */
    bool dense = false;
    for (size_t i = 0; i < n; i++) {
        u64 d = re[i];
        if ((d >> QM_TWIG_SHIFT) != twig) {
            twig = d >> QM_TWIG_SHIFT;
            size_t k = i;
            while (k < n && (re[k] >> QM_TWIG_SHIFT) == twig)
                k++;
            dense = k - i >= RB_DENSE;
        }
        if (i > 0 && re[i - 1] == d)
            return QM_CORRUPT(s->err, "shard %u: SN %" PRIu64 " is deactivated twice", s->id, d);
        if ((d >> QM_TWIG_SHIFT) < t->first_twig)
            return qm_err_set(s->err, QMDB_PRUNED, "shard %u: SN %" PRIu64 " lies in a pruned twig",
                              s->id, d);
        qm_entry e;
        u64 at = pair_find(pairs, np, d);
        int rc = at == UINT64_MAX ? 1
                 : dense          ? scan_at(s, sc, r, at, d, &e)
                                  : read_at(s, r, at, d, b, &e);
        if (rc < 0)
            return rc;
        s->rb_entries_read += at != UINT64_MAX;
        if (rc == 1) { /* no record leads to it: walk its twig */
            if (sn == UINT64_MAX || (sn >> QM_TWIG_SHIFT) != (d >> QM_TWIG_SHIFT) || sn > d) {
                sn = d & ~(u64)QM_TWIG_MASK;
                pos = qm_tree_first_pos(t, d >> QM_TWIG_SHIFT);
            }
            while (sn < d) {
                const u8 *p;
                QM_RET(qm_scan_get(sc, pos, 5, &p));
                pos += qm_entry_len_from_header(p);
                sn++;
                s->rb_entries_read++;
            }
            const u8 *p;
            u32 len;
            QM_RET(qm_shard_scan_entry(s, sc, pos, d, &p, &len, &e));
            s->rb_entries_read++;
            s->rb_walked++;
            at = pos;
            sn = d + 1;
            pos += len;
        }
        u8 kh[32];
        entry_kh(&e, kh);
        if (qm_tree_reactivate(t, d) != 0)
            return QM_CORRUPT(s->err, "shard %u: SN %" PRIu64 " cannot be made live again", s->id,
                              d);
        QM_RET(qm_ix_insert(&s->index, kh, at));
        if (s->index.hyb) /* for the journal's undo record (hixj.h) */
            qm_hixj_react(qm_hix_journal(s->index.hyb), d);
        s->rb_reactivated++;
    }
    return 0;
}

/* Undoes one shard's blocks after ctx->height in DRAM and rehashes its tree. */
static int
job_undo(void *arg, size_t i)
{
    rb_ctx *c = arg;
    qm_shard *s = &c->db->shard[i];
    qm_tree *t = &s->tree;
    const qm_states_shard *r = &c->rec->sh[i];
    u64 *re = NULL, *pairs = NULL;
    size_t nre = 0, np = 0;
    s->run_current = false;
    u8(*leaves)[32] = malloc(QM_TWIG_LEAVES * 32);
    qm_scan sc;
    int rc = qm_scan_init(&sc, &s->entries, 256 << 10); /* about one twig */
    if (!rc && !leaves)
        rc = -ENOMEM;
    if (rc)
        goto out;
    QM_TRY(undo_tail(s, &sc, r, &re, &nre));
    if (nre > 1)
        qsort(re, nre, sizeof(u64), u64_cmp);
    /* Where the discarded blocks' deactivated entries live (dpos.h); what is missing or
     * damaged there is found by the twig walk. */
    qm_dpos_found f;
    QM_TRY(qm_dpos_collect(&s->dpos, c->height, c->latest, r->next_sn, &pairs, &np, &f));
    if (np > 1)
        qsort(pairs, np, 2 * sizeof(u64), pair_cmp);
    QM_TRY(undo_reactivate(s, &sc, r, re, nre, pairs, np));
    /* The youngest twig of h: its leaves, rehashed from the log. */
    u64 y = r->next_sn >> QM_TWIG_SHIFT, pos = r->entry_size;
    if (r->next_sn & QM_TWIG_MASK)
        pos = qm_tree_first_pos(t, y);
    for (u64 sn = y << QM_TWIG_SHIFT; sn < r->next_sn; sn++) {
        const u8 *p;
        u32 len;
        qm_entry e;
        QM_TRY(qm_shard_scan_entry(s, &sc, pos, sn, &p, &len, &e));
        qm_entry_hash(p, leaves[sn & QM_TWIG_MASK]);
        pos += len;
    }
    if (pos != r->entry_size) {
        rc = QM_CORRUPT(s->err,
                        "%s: the entries of height %" PRIu64 " end at log offset %" PRIu64
                        ", its STATES record says %" PRIu64,
                        s->entries.path_prefix, c->height, pos, r->entry_size);
        goto out;
    }
    if (qm_tree_truncate(t, r->next_sn, c->height, (const u8(*)[32])leaves) != 0) {
        rc = QM_CORRUPT(s->err, "shard %u: next_sn %" PRIu64 " of height %" PRIu64 " is pruned",
                        s->id, r->next_sn, c->height);
        goto out;
    }
    s->sn_start = r->sn_start;
    s->sn_start_pos = r->sn_start_pos;
    s->live = r->live;
    if (qm_tree_live(t) != r->live || qm_ix_count(&s->index) != r->live) {
        rc = QM_CORRUPT(s->err,
                        "shard %u: %" PRIu64 " live entries (index: %" PRIu64
                        ") after the rollback, the record of height %" PRIu64 " says %" PRIu64,
                        s->id, qm_tree_live(t), qm_ix_count(&s->index), c->height, r->live);
        goto out;
    }
    QM_TRY(qm_tree_commit(t));
out:
    free(re);
    free(pairs);
    free(leaves);
    qm_scan_free(&sc);
    return rc;
}

/* Cuts the shard's files back to the sizes of h (after META of h is durable) and drops what
 * DRAM kept of the discarded positions. */
static int
job_cut(void *arg, size_t i)
{
    rb_ctx *c = arg;
    qm_shard *s = &c->db->shard[i];
    const qm_states_shard *r = &c->rec->sh[i];
    u64 nfull = r->next_sn >> QM_TWIG_SHIFT;
    s->cursor.len = 0; /* the compaction cursor's buffer may hold discarded bytes */
    pthread_mutex_lock(&s->warm_mu);
    qm_warm_clear(&s->warm);
    pthread_mutex_unlock(&s->warm_mu);
    qm_ix_memo_reset(&s->index);
    QM_RET(qm_hpfile_cut(&s->entries, r->entry_size));
    QM_RET(qm_hpfile_cut(&s->twigs, nfull * QM_TWIG_REC));
    QM_RET(qm_hpfile_cut(&s->tmeta, nfull * QM_TMETA_REC));
    qm_dpos_cut(&s->dpos, c->height); /* the discarded blocks' records (an open cuts them too) */
    if (s->index.hyb) /* the journal cut after h, or a run of state h (step 5 above) */
        QM_RET(qm_shard_hix_rollback(s, c->db->dir, c->latest, c->height));
    return 0;
}

/* Checks that `height` is in the window (see the top of this file); reads its record. */
static int
rb_window(qmdb_db *db, u64 height, qm_states_rec *rec)
{
    u64 L = db->meta.height;
    QM_RET(db_states_ready(db));
    u64 window = (db->states.cap - 2) / 2;
    if (L - height > window)
        return qm_err_set(&db->err, QMDB_PRUNED,
                          "height %" PRIu64 " is %" PRIu64
                          " blocks back; the rollback window is %" PRIu64 " blocks",
                          height, L - height, window);
    int rc = qm_states_read(&db->states, db->dir, height, rec, &db->err);
    if (rc == QMDB_NOTFOUND)
        return qm_err_set(&db->err, QMDB_PRUNED,
                          "%s/STATES holds no record of height %" PRIu64
                          " (recorded from height %" PRIu64
                          "; a record lasts until a height %" PRIu64 " blocks later is committed, "
                          "rolled-back blocks included)",
                          db->dir, height, db->states.first, db->states.cap);
    QM_RET(rc);
    u64 pm = db->prune_max;
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
        pm = QM_MAX(pm, db->shard[s].pruned_deact);
    if (pm > height)
        return qm_err_set(&db->err, QMDB_PRUNED,
                          "twigs pruned since held entries live at height %" PRIu64
                          " (the latest deactivation in a pruned twig is at height %" PRIu64 ")",
                          height, pm);
    for (unsigned s = 0; s < QM_SHARD_COUNT; s++) {
        const qm_shard *sh = &db->shard[s];
        const qm_states_shard *r = &rec->sh[s];
        u64 ft = QM_MAX(sh->tree.first_twig, db->meta.shard[s].first_twig);
        if (r->next_sn > sh->tree.next_sn || r->entry_size > sh->entries.size ||
            r->live > r->next_sn || r->sn_start > r->next_sn)
            return QM_CORRUPT(&db->err,
                              "%s/STATES: the record of height %" PRIu64
                              " does not fit shard %u (next_sn %" PRIu64 ", log size %" PRIu64 ")",
                              db->dir, height, s, r->next_sn, r->entry_size);
        if ((r->next_sn >> QM_TWIG_SHIFT) < ft)
            return qm_err_set(&db->err, QMDB_PRUNED,
                              "shard %u: the youngest twig of height %" PRIu64 " is pruned", s,
                              height);
    }
    return 0;
}

static double
rb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
qmdb_rollback(qmdb_db *db, uint64_t height)
{
    if (db_fatal(db))
        return QMDB_PANIC;
    if (db->par.rdonly)
        return qm_err_set(&db->err, QMDB_INVALID, "database was opened read-only");
    QM_RET(db_drain(db)); /* every submitted block is durable: L is the last one */
    u64 L = db->meta.height;
    if (height > L)
        return qm_err_set(&db->err, QMDB_BAD_HEIGHT,
                          "cannot roll back to height %" PRIu64 ": the latest is %" PRIu64, height,
                          L);
    if (height == L)
        return 0;
    qm_states_rec rec;
    QM_RET(rb_window(db, height, &rec));
    u8 want[32];
    QM_RET(db_root(db, height, want));

    /* From here on the DRAM state changes: any failure makes the handle fatal. */
    rb_ctx c = {db, height, L, &rec};
    qm_meta m = db->meta;
    pthread_rwlock_wrlock(&db->rw);
    double t[4] = {rb_now(), 0, 0, 0}; /* QMDB_ROLLBACK_TIMES=1: the phases on stderr */
    int rc = qm_pool_run(db_pool(db, false), QM_SHARD_COUNT, job_undo, &c);
    t[1] = rb_now();
    if (!rc) {
        global_root(db->shard, m.state_root);
        if (memcmp(m.state_root, want, 32) != 0)
            rc = QM_CORRUPT(&db->err,
                            "rolled back to height %" PRIu64
                            ", the recomputed state root differs from the root of that height in "
                            "ROOTS; nothing was written (reopen to continue at height %" PRIu64 ")",
                            height, L);
    }
    if (!rc) {
        m.seq = db->meta.seq + 1;
        m.height = height;
        m.history_blocks = db->par.history_blocks;
        for (unsigned s = 0; s < QM_SHARD_COUNT; s++) {
            qm_shard_meta *sm = &m.shard[s];
            const qm_states_shard *r = &rec.sh[s];
            sm->next_sn = r->next_sn;
            sm->sn_start = r->sn_start;
            sm->sn_start_pos = r->sn_start_pos;
            sm->live = r->live;
            sm->entry_size = r->entry_size;
            memcpy(sm->root, db->shard[s].tree.root, 32); /* heads, first twigs: as now */
        }
        /* prune_max stays: the twigs pruned after h stay pruned. h's record is not
         * rewritten (a torn write would lose it): the prune slot holds the value. */
        for (unsigned s = 0; s < QM_SHARD_COUNT; s++)
            db->prune_max = QM_MAX(db->prune_max, db->shard[s].pruned_deact);
        rc = qm_states_store_prune(&db->states, db->dir, db->prune_max, &db->err);
    }
    if (!rc)
        rc = qm_meta_store(db->dir, &db->meta_fd, &m, &db->err); /* the commit point */
    t[2] = rb_now();
    if (!rc) {
        pthread_mutex_lock(&db->mu);
        db->meta = m;
        __atomic_store_n(&db->durable, m.height, __ATOMIC_RELEASE);
        db->rollbacks++;
        db->submitted = db->hashed = height;
        pthread_cond_broadcast(&db->cv);
        pthread_mutex_unlock(&db->mu);
        for (unsigned k = 0; k < 2; k++)
            for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
                qm_undo_clear(&db->undo[k][i]);
        qm_proof_cache_free(db->proof_cache); /* it covers log tails that are gone */
        db->proof_cache = NULL;
        rc = qm_pool_run(db_pool(db, false), QM_SHARD_COUNT, job_cut, &c);
    }
    if (!rc) {
        rc = qm_io_get()->ftruncate(db->roots_fd, QM_ROOTS_REC * (height + 1));
        if (rc)
            qm_err_set(&db->err, rc, "%s/ROOTS: cannot cut back to height %" PRIu64 ": %s", db->dir,
                       height, qmdb_strerror(rc));
    }
    pthread_rwlock_unlock(&db->rw);
    t[3] = rb_now();
    if (getenv("QMDB_ROLLBACK_TIMES")) {
        u64 cut = 0, un = 0, ck = 0;
        for (unsigned i = 0; i < QM_SHARD_COUNT; i++) {
            cut += db->shard[i].hix_rb_cut;
            un += db->shard[i].hix_rb_undo;
            ck += db->shard[i].hix_rb_ckpt;
        }
        fprintf(stderr,
                "qmdb_rollback %" PRIu64 " -> %" PRIu64 ": undo %.3f s, STATES+META %.3f s, "
                "cut %.3f s (hybrid index since open: %" PRIu64 " journal cuts, %" PRIu64
                " undo records, %" PRIu64 " checkpoints)\n",
                L, height, t[1] - t[0], t[2] - t[1], t[3] - t[2], cut, un, ck);
    }
    if (rc)
        db_set_fatal(db);
    return rc;
}
