/* SPDX-License-Identifier: Apache-2.0 */
/*
 * recover.c -- opening a shard from its committed metadata: cut files back to the committed
 * sizes, load the left roots of full twigs from the twig-meta file, scan the unpruned entry log
 * to rebuild ActiveBits, deactivation heights and the indexer, rebuild the youngest twig's
 * left tree, and check the recomputed shard root against the metadata.
 *
 * Unless QMDB_OPEN_FAST is given, every entry is hashed and each full twig's left root is
 * recomputed and compared with the twig-meta record and the twig file.
 *
 * Thread: the opening thread, before the handle is returned.
 */
#include "codec.h"
#include "entry.h"
#include "hash.h"
#include "hixj.h"
#include "io.h"
#include "shard.h"
#include "states.h"
#include "twigfile.h"

#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

/* Per scanned entry, kept until the scan ends: where it is and its key-hash head. */
typedef struct scan_rec {
    u64 pos;
    u8 kh[8];
} scan_rec;

static int
recover_twigs(qm_shard *s, const qm_shard_meta *m)
{
    qm_tree *t = &s->tree;
    u64 nfull = m->next_sn >> QM_TWIG_SHIFT, first = m->first_twig;
    /* The tree holds twigs first..nfull; the pruned ones only give the upper tree's left
     * edge (merkle.h), computed here from their left roots as they are read. */
    QM_RET(qm_tree_recover_begin(t, first, nfull + 1));
    t->next_sn = m->next_sn;
    qm_edge_builder eb = {0};
    u8 rec[QM_TMETA_REC * 64];
    for (u64 id = 0; id < nfull; id += 64) {
        u64 cnt = QM_MIN((u64)64, nfull - id);
        QM_RET(qm_hpfile_read(&s->tmeta, id * QM_TMETA_REC, rec, cnt * QM_TMETA_REC));
        for (u64 k = 0; k < cnt; k++) {
            u8 left[32];
            u64 first_pos;
            if (qm_tmeta_decode(rec + k * QM_TMETA_REC, QM_TMETA_REC, id + k, left, &first_pos) !=
                0)
                return QM_CORRUPT(s->err,
                                  "%s.0000000000: twig-meta record %" PRIu64 " at offset %" PRIu64
                                  " is corrupt (CRC)",
                                  s->tmeta.path_prefix, id + k, (id + k) * QM_TMETA_REC);
            if (id + k < first) {
                qm_tree_add_pruned(t, &eb, left);
            } else {
                qm_twig *tw = qm_tree_twig(t, id + k);
                memcpy(tw->left_root, left, 32);
                tw->first_pos = first_pos;
            }
        }
    }
    return 0;
}

/*
 * Recomputes the left tree of full twig `id` from its leaves and checks it (verify mode)
 * against the twig-meta left root and the twig-file record. On a mismatch, the twig record's
 * stored leaves (if its CRC holds) name the first entry whose bytes changed; recs[] gives the
 * entries' offsets (index sn - sn0).
 */
static int
verify_full_twig(qm_shard *s, u64 id, u8 (*nodes)[32], const scan_rec *recs, u64 sn0)
{
    qm_left_tree_update(nodes, 0, QM_TWIG_LEAVES);
    u8 *rec = s->twigrec;
    QM_RET(qm_hpfile_read(&s->twigs, id * QM_TWIG_REC, rec, QM_TWIG_REC));
    bool rec_ok = qm_twigrec_check(rec, QM_TWIG_REC, id) == 0;
    const qm_twig *tw = qm_tree_twig(&s->tree, id);
    if (memcmp(nodes[1], tw->left_root, 32) != 0) {
        for (unsigned i = 0; rec_ok && i < QM_TWIG_LEAVES; i++) {
            if (memcmp(rec + (size_t)(2047 + i) * 32, nodes[2048 + i], 32) != 0) {
                u64 sn = (id << QM_TWIG_SHIFT) + i, pos = recs[sn - sn0].pos;
                return QM_CORRUPT(s->err,
                                  "%s.%010" PRIu64 ": entry SN %" PRIu64 " at offset %" PRIu64
                                  " (log offset %" PRIu64 ") does not hash to its Merkle leaf",
                                  s->entries.path_prefix, pos / s->entries.seg_size, sn,
                                  pos % s->entries.seg_size, pos);
            }
        }
        return QM_CORRUPT(s->err,
                          "%s: entries of twig %" PRIu64
                          " do not hash to its recorded left root (log from offset %" PRIu64 ")",
                          s->entries.path_prefix, id, tw->first_pos);
    }
    if (!rec_ok || memcmp(rec, nodes[1], 4095 * 32) != 0)
        return QM_CORRUPT(
            s->err, "%s.%010" PRIu64 ": twig record %" PRIu64 " at offset %" PRIu64 " is corrupt",
            s->twigs.path_prefix, id * QM_TWIG_REC / s->twigs.seg_size, id,
            id * QM_TWIG_REC % s->twigs.seg_size);
    return 0;
}

static int
recover_scan(qm_shard *s, const qm_shard_meta *m)
{
    qm_tree *t = &s->tree;
    u64 sn0 = t->first_twig << QM_TWIG_SHIFT;
    u64 nrec = m->next_sn - sn0;
    u64 youngest = t->ntwigs - 1;
    u64 ysn = youngest << QM_TWIG_SHIFT;
    scan_rec *recs = malloc((nrec ? nrec : 1) * sizeof(scan_rec));
    u8(*vnodes)[32] = s->par->verify ? malloc(QM_LEFT_NODES * 32) : NULL;
    qm_scan sc;
    int rc = qm_scan_init(&sc, &s->entries, 1 << 20);
    if (!recs || (s->par->verify && !vnodes) || rc) {
        rc = rc ? rc : -ENOMEM;
        goto out;
    }
    /* Every unpruned twig starts all-zero; the scan sets and clears bits. */
    for (u64 id = t->first_twig; id <= youngest; id++) {
        qm_twig *tw = qm_tree_twig(t, id);
        memset(tw->active, 0, QM_ACTIVE_BYTES);
        tw->nactive = 0;
        tw->deact_height = 0;
    }
    u64 pos = m->entry_head, live = 0, height = 0;
    for (u64 sn = sn0; sn < m->next_sn; sn++) {
        const u8 *p;
        u32 len;
        qm_entry e;
        u8 leaf[32];
        rc = qm_shard_scan_rec(s, &sc, pos, sn, &p, &len, &e, leaf);
        if (rc < 0)
            goto out;
        bool stub = rc == 1;
        rc = 0;
        u64 id = sn >> QM_TWIG_SHIFT;
        unsigned bit = (unsigned)(sn & QM_TWIG_MASK);
        qm_twig *tw = qm_tree_twig(t, id);
        if (bit == 0 && id < youngest && tw->first_pos != pos) {
            rc = QM_CORRUPT(s->err,
                            "%s: twig %" PRIu64 " starts at log offset %" PRIu64
                            " but its twig-meta record says %" PRIu64,
                            s->entries.path_prefix, id, pos, tw->first_pos);
            goto out;
        }
        if (bit == 0)
            tw->first_pos = pos;
        if (stub) {
            /* A dead entry of a restored database: only its leaf. Stubs never stand in the
             * youngest twig (restore.c carries it whole). */
            if (sn >= ysn) {
                rc = QM_CORRUPT(s->err, "%s: a stub at log offset %" PRIu64 " in the youngest twig",
                                s->entries.path_prefix, pos);
                goto out;
            }
            recs[sn - sn0].pos = pos;
            memset(recs[sn - sn0].kh, 0, 8);
            if (vnodes) {
                memcpy(vnodes[2048 + bit], leaf, 32);
                if (bit == QM_TWIG_MASK)
                    QM_TRY(verify_full_twig(s, id, vnodes, recs, sn0));
            }
            pos += len;
            continue;
        }
        /* Entries are appended in block order, and every block's compaction copies follow an
         * entry carrying that block's height, so the running maximum of version>>24 is the
         * height at which each entry was appended. */
        if (e.version > 0 && (u64)e.version >> 24 > height)
            height = (u64)e.version >> 24;
        for (u32 i = 0; i < e.ndsn; i++) {
            u64 d = qm_entry_dsn_at(&e, i);
            if (d >= sn) {
                rc =
                    QM_CORRUPT(s->err, "%s: entry at log offset %" PRIu64 " deactivates a later SN",
                               s->entries.path_prefix, pos);
                goto out;
            }
            if (d < sn0)
                continue; /* in a pruned twig: already dead */
            if (!qm_tree_is_active(t, d)) {
                /* An entry the snapshot carried may name one it carried as a stub (dead). */
                if (sn < s->stub_end)
                    continue;
                rc = QM_CORRUPT(s->err,
                                "%s: entry at log offset %" PRIu64 " deactivates SN %" PRIu64
                                " which is not live",
                                s->entries.path_prefix, pos, d);
                goto out;
            }
            qm_tree_deactivate(t, d, height);
            live--;
        }
        tw->active[bit >> 3] |= (u8)(1u << (bit & 7));
        tw->nactive++;
        live++;
        u8 kh[32];
        qm_entry_key_hash(e.key, e.klen, e.vlen, kh);
        recs[sn - sn0].pos = pos;
        memcpy(recs[sn - sn0].kh, kh, 8);
        if (sn >= ysn || vnodes) {
            qm_entry_hash(p, leaf);
            if (sn >= ysn)
                memcpy(t->ltree[2048 + bit], leaf, 32);
            if (vnodes) {
                memcpy(vnodes[2048 + bit], leaf, 32);
                if (bit == QM_TWIG_MASK && id < youngest)
                    QM_TRY(verify_full_twig(s, id, vnodes, recs, sn0));
            }
        }
        pos += len;
    }
    QM_TRY(qm_shard_scan_end(s, pos, m));
    if (live != m->live) {
        rc = QM_CORRUPT(s->err, "shard %u: %" PRIu64 " live entries found, META says %" PRIu64,
                        s->id, live, m->live);
        goto out;
    }
    t->lt_lo = 0;
    t->lt_hi = (unsigned)(m->next_sn - ysn);
    for (u64 sn = sn0; sn < m->next_sn; sn++) {
        if (!qm_tree_is_active(t, sn))
            continue;
        u8 kh[32] = {0};
        memcpy(kh, recs[sn - sn0].kh, 8);
        QM_TRY(qm_ix_bulk_add(&s->index, kh, recs[sn - sn0].pos));
    }
    if (!s->index.hyb) /* the hybrid index's run is written by qm_shard_hix_rebuilt */
        qm_index_bulk_finish(&s->index.mem);
out:
    free(recs);
    free(vnodes);
    qm_scan_free(&sc);
    return rc;
}

/* A writable open with the in-memory indexer deletes the hybrid indexer's journals, whose
 * chain would miss the blocks it commits, and the run unless it loaded its index from it (a
 * checkpoint of exactly the committed state, stale once a block is committed: no open loads
 * it then, and no journal continues it). The directory is synced when something was deleted,
 * so that no journal reappears after a power loss. */
static int
drop_hybrid_files(const char *dir, unsigned id, bool keep_run)
{
    char path[4200];
    bool gone = false;
    for (unsigned k = keep_run ? 1 : 0; k < 3; k++) {
        if (k == 0)
            snprintf(path, sizeof(path), "%s/s%02x.hix", dir, id);
        else
            qm_hixj_path(dir, id, k - 1, path, sizeof(path));
        if (access(path, F_OK) == 0) { /* the common case, no file: no call through the seam */
            (void)qm_io_get()->unlink(path);
            gone = true;
        }
    }
    return gone ? qm_io_fsync_dir(dir) : 0;
}

int
qm_shard_open(qm_shard *s, unsigned id, const char *dir, const qm_params *par,
              const qm_shard_meta *m, qm_err *err)
{
    memset(s, 0, sizeof(*s));
    qm_shard_init_common(s);
    s->id = id;
    s->par = par;
    s->err = err;
    qm_index_init(&s->index.mem);
    QM_RET(qm_shard_open_files(s, dir, m));
    int rc;
    s->sn_start = m->sn_start;
    s->sn_start_pos = m->sn_start_pos;
    s->stub_end = m->stub_end;
    s->live = m->live;
    s->entry_head = m->entry_head;
    s->pending_first_twig = m->first_twig;
    QM_RET(recover_twigs(s, m));
    /* The hybrid indexer resumes from its run and journal when they lead to exactly this
     * state; the in-memory indexer loads the run when its state is exactly this one (the
     * checkpoint of a clean close). Fast opens only: a verifying open reads the whole log
     * anyway and rebuilds. */
    bool resumed = false;
    if (!par->verify) {
        rc = par->hybrid ? qm_shard_hix_resume(s, dir, m) : qm_shard_mem_resume(s, dir, m);
        if (rc && rc != QMDB_NOTFOUND)
            return rc;
        resumed = rc == 0;
    }
    if (!par->hybrid && !par->rdonly && (rc = drop_hybrid_files(dir, id, resumed)) != 0)
        return qm_err_set(err, rc, "%s: syncing the directory after deleting index files: %s", dir,
                          strerror(-rc));
    if (!resumed) {
        /* A read-only open may not write the run file: it indexes in DRAM. */
        if (par->hybrid && !par->rdonly)
            QM_RET(qm_hix_new(dir, id, par->hix_merge, &s->index.hyb, err));
        QM_RET(recover_scan(s, m));
        if (s->index.hyb)
            QM_RET(qm_shard_hix_rebuilt(s, m));
    }
    s->index_resumed = s->run_current = resumed;
    qm_tree_mark_all_dirty(&s->tree);
    QM_RET(qm_tree_commit(&s->tree));
    if (memcmp(s->tree.root, m->root, 32) != 0) {
        /* Full twigs were checked against their records (unless fast), so the damage is most
         * likely in the youngest twig's entries: name that range of the log. */
        u64 ypos = qm_tree_twig(&s->tree, s->tree.ntwigs - 1)->first_pos;
        if ((m->next_sn & QM_TWIG_MASK) == 0)
            ypos = m->entry_size;
        return QM_CORRUPT(err,
                          "shard %u: the root recomputed from the entry and twig files differs "
                          "from the root in META; suspect %s.%010" PRIu64 " from offset %" PRIu64
                          " (log offsets %" PRIu64 "..%" PRIu64 ", the youngest twig)",
                          id, s->entries.path_prefix, ypos / s->entries.seg_size,
                          ypos % s->entries.seg_size, ypos, m->entry_size);
    }
    /* The deactivation positions of the blocks a rollback may discard (never fails). */
    if (!par->rdonly)
        qm_dpos_open(&s->dpos, dir, id, par->height, qm_states_window(par->history_blocks));
    return 0;
}
