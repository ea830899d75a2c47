/* SPDX-License-Identifier: Apache-2.0 */
/*
 * db_read.c -- the read side of the handle (db_int.h): qmdb_get and its batched and
 * committed forms, heights and roots, qmdb_stat, and the facades that hand the prover
 * (qmdb_prove -> qm_prove) and the checker (qm_db_check_view) their views of the handle.
 *
 * Thread: qmdb_get*, qmdb_height and qmdb_root from any thread (under `rw` shared or `mu`);
 * qmdb_stat, qmdb_prove and the check view are writer functions.
 */
#include "check.h"
#include "db.h"
#include "db_int.h"
#include "hash.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

const char *
qmdb_last_error(qmdb_db *db)
{
    return db ? db->err.msg : "";
}

uint64_t
qmdb_height(qmdb_db *db)
{
    pthread_mutex_lock(&db->mu);
    u64 h = db->meta.height;
    pthread_mutex_unlock(&db->mu);
    return h;
}

int
qmdb_root(qmdb_db *db, uint64_t height, uint8_t out[32])
{
    if (db_fatal(db))
        return QMDB_PANIC;
    return db_root(db, height, out);
}

int
qmdb_shard_root(qmdb_db *db, unsigned shard, uint8_t out[32])
{
    if (db_fatal(db))
        return QMDB_PANIC;
    if (shard >= QM_SHARD_COUNT)
        return QMDB_INVALID;
    pthread_mutex_lock(&db->mu);
    memcpy(out, db->meta.shard[shard].root, 32);
    pthread_mutex_unlock(&db->mu);
    return 0;
}

/* Hands a found value to the caller: copied, or QMDB_BUFFER_TOO_SMALL with *vlen set. */
static int
get_value(const u8 *v, u32 vl, void *buf, size_t cap, size_t *vlen)
{
    *vlen = vl;
    if (cap < vl)
        return QMDB_BUFFER_TOO_SMALL;
    memcpy(buf, v, vl);
    return 0;
}

/* The point reads. committed: the durable state (the pre-images of in-flight blocks answer
 * for the keys they hold), else the applied state. Under the reader lock only: the pre-image
 * maps of blocks durable+1 .. submitted stay intact while it is held (they are cleared by an
 * update stage), `submitted` changes only under the writer lock, and `durable` is read
 * without mu (it may only be older than the flusher's latest, which answers from the state of
 * a height that was durable when the read began). Entries come from the log's read mapping
 * (qm_shard_get_client), so a read of a page-cache-resident entry takes no other lock, makes
 * no system call and allocates nothing; it is decoded where it lies in the mapping and its
 * value copied once, straight to the caller, before the reader lock is released. */
static int
db_get_one(qmdb_db *db, const void *key, size_t klen, void *buf, size_t cap, size_t *vlen,
           bool committed)
{
    if (db_fatal(db))
        return QMDB_PANIC;
    if (!key || klen == 0 || klen > QMDB_MAX_KEY_LEN || (cap > 0 && !buf) || !vlen)
        return QMDB_INVALID;
    u8 kh[32];
    qm_sha256(key, klen, kh);
    qm_shard *s = &db->shard[qm_shard_of(kh)];
    qm_entry e;
    u64 pos;
    u8 stackbuf[512];
    qm_ebuf eb = {stackbuf, sizeof(stackbuf), NULL};
    pthread_rwlock_rdlock(&db->rw);
    if (committed) {
        u64 durable = __atomic_load_n(&db->durable, __ATOMIC_ACQUIRE);
        for (u64 h = durable + 1; h <= db->submitted && h <= durable + 2; h++) {
            u64 ppos;
            int got = qm_undo_get(&db->undo[h & 1][s->id], kh, &ppos);
            if (got < 0)
                continue;
            int rc = got == 0 ? QMDB_NOTFOUND : qm_shard_read_pre(s, ppos, key, (u32)klen, &eb, &e);
            if (got > 0 && !rc)
                rc = get_value(e.value, e.vlen, buf, cap, vlen);
            pthread_rwlock_unlock(&db->rw);
            qm_ebuf_free(&eb);
            return rc;
        }
    }
    int rc = qm_shard_get_client(s, kh, key, (u32)klen, &eb, &e, &pos, true);
    /* A read between blocks is usually the read of a read-modify-write: keep the entry so
     * that applying the write in the next block does not read it from the device again.
     * Not needed when the log is mapped: this read left the entry's page in the page cache,
     * where the next block's prefetch finds it (and the entry may lie in the mapping, not in
     * eb). */
    if (!rc && !committed && !db->par.rdonly && !qm_hpfile_mapped(&s->entries))
        qm_shard_warm_put(s, pos, eb.p, e.stored_len, kh);
    if (!rc) /* e may point into the mapping: copy under the reader lock */
        rc = get_value(e.value, e.vlen, buf, cap, vlen);
    pthread_rwlock_unlock(&db->rw);
    qm_ebuf_free(&eb);
    return rc;
}

int
qmdb_get(qmdb_db *db, const void *key, size_t klen, void *buf, size_t cap, size_t *vlen)
{
    return db_get_one(db, key, klen, buf, cap, vlen, false);
}

/* Batched reads; committed: the durable state (pre-images of in-flight blocks first). */
static int
db_get_many(qmdb_db *db, qmdb_read *reads, size_t n, bool committed)
{
    if (db_fatal(db))
        return QMDB_PANIC;
    if (n > 0 && !reads)
        return QMDB_INVALID;
    pthread_rwlock_rdlock(&db->rw);
    qm_undo *pre[2][QM_SHARD_COUNT];
    unsigned npre = 0;
    if (committed) {
        /* Blocks durable+1 .. submitted are in flight (at most two); their maps stay intact
         * while the reader lock is held. */
        pthread_mutex_lock(&db->mu);
        for (u64 h = db->meta.height + 1; h <= db->submitted && npre < 2; h++, npre++)
            for (unsigned i = 0; i < QM_SHARD_COUNT; i++)
                pre[npre][i] = &db->undo[h & 1][i];
        pthread_mutex_unlock(&db->mu);
    }
    /* Reads of the applied state in a writable database are the next block's reads. */
    qm_rio *rio = qm_io_concurrent() ? db->rio : NULL;
    int rc = qm_get_many(db->shard, rio, reads, n, pre, npre, !committed && !db->par.rdonly);
    pthread_rwlock_unlock(&db->rw);
    return rc;
}

int
qmdb_get_many(qmdb_db *db, qmdb_read *reads, size_t n)
{
    return db_get_many(db, reads, n, false);
}

int
qmdb_get_many_committed(qmdb_db *db, qmdb_read *reads, size_t n)
{
    return db_get_many(db, reads, n, true);
}

int
qmdb_get_committed(qmdb_db *db, const void *key, size_t klen, void *buf, size_t cap, size_t *vlen)
{
    return db_get_one(db, key, klen, buf, cap, vlen, true);
}

/* Callers built against an older qmdb.h pass a shorter qmdb_stats: accepted down to the
 * struct before page_cache_reads (qmdb.h, ABI); no byte past their struct_size is written. */
#define QM_STATS_MIN offsetof(qmdb_stats, page_cache_reads)

static int stat_fill(qmdb_db *db, qmdb_stats *st);

int
qmdb_stat(qmdb_db *db, qmdb_stats *out)
{
    if (!out || out->struct_size < QM_STATS_MIN)
        return QMDB_INVALID;
    qmdb_stats st;
    int rc = stat_fill(db, &st);
    if (rc)
        return rc;
    st.struct_size = QM_MIN(out->struct_size, sizeof(st));
    memcpy(out, &st, st.struct_size);
    return 0;
}

static int
stat_fill(qmdb_db *db, qmdb_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (db_fatal(db))
        return QMDB_PANIC;
    QM_RET(db_drain(db));
    st->height = db->meta.height;
    for (unsigned i = 0; i < QM_SHARD_COUNT; i++) {
        qm_shard_add_stats(&db->shard[i], st);
        st->pruned_twigs += db->meta.shard[i].first_twig; /* twigs 0.., durable */
        st->cache_dram_bytes +=
            qm_undo_dram_bytes(&db->undo[0][i]) + qm_undo_dram_bytes(&db->undo[1][i]);
    }
    st->batched_reads = db->rio ? qm_rio_reads(db->rio) : 0;
    st->sha256_compressions = __atomic_load_n(&db->compressions, __ATOMIC_RELAXED);
    st->blocks_committed = db->blocks;
    st->pipeline = db->pipeline;
    st->io_uring = db->rio && qm_rio_uring(db->rio);
    st->live_entries = st->live_with_sentries - QM_SHARD_COUNT * QM_SENTRIES_PER_SHARD;
    st->ssd_bytes = st->entry_file_bytes + st->twig_file_bytes + st->index_ssd_bytes +
                    QM_ROOTS_REC * (db->meta.height + 1) + 2 * QM_META_SLOT;
    st->compact_thres = db->par.compact_thres;
    st->utilization_ratio = db->par.util_ratio;
    st->utilization_div = db->par.util_div;
    st->history_blocks = db->par.history_blocks;
    return 0;
}

/* ---- Proofs: the prover's view of the handle (prover.h) --------------------------------- */

static int
proof_root_at(void *arg, u64 height, u8 out[32])
{
    return db_root(arg, height, out);
}

void
db_proof_ctx(qmdb_db *db, qm_proof_ctx *ctx)
{
    *ctx = (qm_proof_ctx){.shards = db->shard,
                          .height = db->meta.height,
                          .err = &db->err,
                          .cache = &db->proof_cache,
                          .dir = db->dir,
                          .root_at = proof_root_at,
                          .root_arg = db};
}

/* A proof at an earlier height needs that height's history: a database restored from a
 * snapshot of height B has none below B (its ROOTS record says so: QMDB_PRUNED), and its log
 * holds stubs for the entries that died before B. */
static int
prove_height_ok(qmdb_db *db, u64 height)
{
    if (height == UINT64_MAX || height >= db->meta.height)
        return 0;
    u8 root[32];
    return db_root(db, height, root);
}

int
qmdb_prove(qmdb_db *db, const void *key, size_t klen, uint64_t height, uint8_t **out,
           size_t *outlen)
{
    if (!db || !key || klen == 0 || klen > QMDB_MAX_KEY_LEN || !out || !outlen)
        return QMDB_INVALID;
    *out = NULL;
    *outlen = 0;
    if (db_fatal(db))
        return QMDB_PANIC;
    QM_RET(db_drain(db));
    QM_RET(prove_height_ok(db, height));
    qm_proof_ctx ctx;
    db_proof_ctx(db, &ctx);
    return qm_prove(&ctx, key, klen, height, out, outlen);
}

int
qmdb_prove_many(qmdb_db *db, const void *const *keys, const size_t *klens, size_t nkeys,
                uint64_t height, uint8_t **out, size_t *outlen)
{
    if (!db || !keys || !klens || nkeys == 0 || nkeys > QMDB_MPROOF_MAX_KEYS || !out || !outlen)
        return QMDB_INVALID;
    for (size_t i = 0; i < nkeys; i++)
        if (!keys[i] || klens[i] == 0 || klens[i] > QMDB_MAX_KEY_LEN)
            return QMDB_INVALID;
    *out = NULL;
    *outlen = 0;
    if (db_fatal(db))
        return QMDB_PANIC;
    QM_RET(db_drain(db));
    QM_RET(prove_height_ok(db, height));
    qm_proof_ctx ctx;
    db_proof_ctx(db, &ctx);
    return qm_prove_many(&ctx, keys, klens, nkeys, height, out, outlen);
}

int
qmdb_witness(qmdb_db *db, uint64_t height, const qmdb_block_op *ops, size_t nops, uint8_t **out,
             size_t *outlen)
{
    if (!db || !out || !outlen || (nops && !ops))
        return QMDB_INVALID;
    for (size_t i = 0; i < nops; i++)
        if (!ops[i].key || ops[i].klen == 0 || ops[i].klen > QMDB_MAX_KEY_LEN)
            return QMDB_INVALID;
    *out = NULL;
    *outlen = 0;
    if (db_fatal(db))
        return QMDB_PANIC;
    QM_RET(db_drain(db));
    if (height == 0 || height > db->meta.height)
        return qm_err_set(&db->err, QMDB_NOTFOUND,
                          "height %" PRIu64 " is not a committed block (latest %" PRIu64 ")",
                          height, db->meta.height);
    QM_RET(db_states_ready(db));
    qm_states_rec pre, post;
    int rc = qm_states_read(&db->states, db->dir, height - 1, &pre, &db->err);
    if (!rc)
        rc = qm_states_read(&db->states, db->dir, height, &post, &db->err);
    if (rc == QMDB_NOTFOUND)
        return qm_err_set(&db->err, QMDB_PRUNED,
                          "the sizes of height %" PRIu64 " are no longer recorded", height - 1);
    QM_RET(rc);
    u8 pre_root[32];
    QM_RET(db_root(db, height - 1, pre_root));
    qm_proof_ctx ctx;
    db_proof_ctx(db, &ctx);
    return qm_witness_build(&ctx, height, &pre, &post, &db->par, db->prune_max, pre_root, ops, nops,
                            out, outlen);
}

/* ---- Offline check: the checker's view of the handle (check.h) -------------------------- */

void
qm_db_check_view(qmdb_db *db, qm_check_view *v)
{
    (void)db_drain(db);
    v->dir = db->dir;
    v->shards = db->shard;
    v->meta = &db->meta;
    v->roots_fd = db->roots_fd;
}
