/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hindex_int.h -- the hybrid indexer's internals shared by hindex.c (layers, lookups,
 * changes, merger thread, maintenance) and hixrun.c (the run file: writer, reader, merged
 * walks, loading). Not for other files: use hindex.h.
 *
 * Thread: see hindex.h.
 */
#ifndef QM_HINDEX_INT_H
#define QM_HINDEX_INT_H

#include "codec.h"
#include "hindex.h"
#include "hixj.h"
#include "indexer.h"
#include "io.h"
#include "posset.h"

#include <pthread.h>

#define HIX_MAGIC "QMDBHIX1"
#define HIX_VERSION 2u
#define HIX_HDR_CRC_AT 152u
#define HIX_WBUF (1u << 20)

/* An overlay: the records inserted, and the positions erased from the layers below. */
typedef struct layer {
    qm_index ins;
    qm_posset del;
} layer;

typedef struct run {
    u64 id; /* unique in the process (keys the page cache) */
    int fd; /* -1: no run yet */
    u64 nrec, npages;
    u8 *first; /* npages * 6 bytes */
    u64 file_bytes;
    const u8 *map; /* the file's pages [0, npages] mapped read-only, or NULL (hix_run_map) */
    size_t map_len;
    u64 *checked; /* with map: one bit per page whose CRC a lookup checked there (atomic) */
} run;

enum { MERGE_IDLE, MERGE_REQUESTED, MERGE_DONE };

struct qm_hindex {
    char *dir, *path, *tmp; /* one allocation (hix_set_paths), freed with the index */
    const qm_io *io;        /* the I/O layer at creation (the merger never switches layers) */
    unsigned shard;
    u64 merge_changes;
    run r;
    layer *a, *f;
    u64 count;
    struct recvec *bulk; /* records of a bulk load, until bulk_finish */
    pthread_t th;
    bool th_started, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;
    int merge_rc;
    run out;
    qm_err merr, *err;
    u64 merges;
    u64 freezes;         /* overlays frozen since the handle was made */
    u64 page_reads;      /* atomic */
    qm_trust res;        /* mapped run pages found resident in a row (qm_hix_cached) */
    struct memo_ent *mt; /* the per-block memo (below), guarded by mmu */
    u64 mcap, mn, mrun;
    u64 msmall, mpeak; /* blocks in a row that used little of the memo; most they used */
    pthread_mutex_t mmu;
    u64 gen;          /* generation of run r (0: none yet) */
    u64 rheight;      /* height of the state run r reflects */
    qm_hixj j;        /* the journal of the blocks since (hixj.h) */
    qm_hix_state fst; /* F's state (the snapshot taken when it was frozen) */
    u8 *fblob;        /* and its blob (fblob_len bytes) */
    size_t fblob_len;
    u64 fgen; /* the generation of the run F's merge writes */
};

/* Records of a bulk load or an overlay collected for a merge (12-byte records), minus those
 * whose position `dead` (may be NULL) holds. */
typedef struct recvec {
    u8 *v;
    u64 n, cap;
    const qm_posset *dead;
} recvec;

/* A 6-byte key as a big-endian integer (compares like memcmp). */
static inline u64
k48(const u8 *p)
{
    return qm_get_u48be(p);
}

/* The last of the 6-byte keys first[lo .. lo + n - 1] (sorted) below key, or lo. Without
 * branches on the keys (a conditional move per step): a bisection's branch is a coin toss. */
static inline u64
hix_first_bisect(const u8 *first, u64 key, u64 lo, u64 n)
{
    for (; n > 1;) {
        u64 half = n / 2;
        lo = k48(first + (lo + half) * 6) < key ? lo + half : lo;
        n -= half;
    }
    return lo;
}

/* The last of a run's n page-first keys (its sparse index, sorted) below key, or 0: the page
 * where key's records begin. Pages hold equal counts of key hashes, so their first keys are
 * about evenly spaced: the search starts where key's place between the first and the last
 * page's first key puts it and walks a few pages (on one or two cache lines of the index,
 * where a bisection waits for eleven loads at 10M); a walk that goes on (skewed keys) ends in
 * a bisection. */
static inline u64
hix_first_below(const u8 *first, u64 n, u64 key)
{
    if (n <= 1 || key <= k48(first))
        return 0;
    u64 f0 = k48(first), fl = k48(first + (n - 1) * 6);
    if (key > fl)
        return n - 1;
    /* f0 < key <= fl: the answer lies in [0, n - 2] */
    u64 g = (u64)((unsigned __int128)(key - f0) * (n - 1) / (fl - f0 + 1));
    if (k48(first + g * 6) < key) { /* the answer is g or above */
        for (u64 end = QM_MIN(g + 8, n - 1); g < end; g++)
            if (k48(first + (g + 1) * 6) >= key)
                return g;
        return hix_first_bisect(first, key, g, n - g);
    }
    for (u64 stop = g > 8 ? g - 8 : 0; g > stop;) /* the answer is below g */
        if (k48(first + --g * 6) < key)
            return g;
    return hix_first_bisect(first, key, 0, g + 1);
}

/* Where key's record would lie among n records whose keys are uniform in [lo_key, hi_key). */
static inline u32
hix_page_guess(u32 n, u64 key, u64 lo_key, u64 hi_key)
{
    if (n == 0 || key <= lo_key || hi_key <= lo_key)
        return 0;
    unsigned __int128 t = (unsigned __int128)(key - lo_key) * n / (hi_key - lo_key);
    return t >= n ? n - 1 : (u32)t;
}

/* First of the n records at pg (12 bytes each, sorted by their 6-byte keys, all in [lo_key,
 * hi_key)) whose key is >= key. Key hashes are uniform, so the search starts where key's place
 * between lo_key and hi_key puts it and gallops from there: about two cache lines of the page
 * are touched where a bisection touches nine; keys that are not uniform cost O(log n) probes
 * still. */
static inline u32
hix_page_search(const u8 *pg, u32 n, u64 key, u64 lo_key, u64 hi_key)
{
    if (n == 0)
        return 0;
    u32 g = hix_page_guess(n, key, lo_key, hi_key);
    u32 lo, hi; /* the answer lies in [lo, hi] */
    if (qm_get_u48be(pg + (size_t)g * QM_HIX_REC) < key) {
        lo = g + 1;
        hi = n;
        for (u32 step = 1; lo + step - 1 < n; step *= 2) {
            u32 q = lo + step - 1;
            if (qm_get_u48be(pg + (size_t)q * QM_HIX_REC) >= key) {
                hi = q;
                break;
            }
            lo = q + 1;
        }
    } else {
        lo = 0;
        hi = g;
        for (u32 step = 1; step <= hi; step *= 2) {
            u32 q = hi - step;
            if (qm_get_u48be(pg + (size_t)q * QM_HIX_REC) < key) {
                lo = q + 1;
                break;
            }
            hi = q;
        }
    }
    while (lo < hi) {
        u32 mid = lo + (hi - lo) / 2;
        if (qm_get_u48be(pg + (size_t)mid * QM_HIX_REC) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static inline u64
rec_pos12(const u8 *r)
{
    return qm_get_u48be(r + 6) << 3;
}

static inline u32
page_crc(const u8 *page, u64 p)
{
    return qm_crc32c(0, page, QM_HIX_PAGE - 4) ^ (u32)p;
}

/* hindex.c */
QM_HIDDEN void *hix_big_realloc(void *p, size_t old, size_t n);
QM_HIDDEN void hix_big_free(void *p, size_t n);
QM_HIDDEN u64 hix_new_run_id(void);
QM_HIDDEN void hix_run_close(const qm_io *io, run *r);
/* Maps r's header and record pages read-only for lookups (no system call per page), where
 * files may be mapped (qm_io_map_allowed); else, or if mmap fails, lookups use pread. */
QM_HIDDEN void hix_run_map(run *r);
/* x's directory, run path (dir/sXX.hix), its temporary (.tmp) and shard. */
QM_HIDDEN int hix_set_paths(qm_hindex *x, const char *dir, unsigned shard);
QM_HIDDEN void hix_bulk_free(qm_hindex *x);

/* hixrun.c */
QM_HIDDEN int hix_merged_walk(qm_hindex *x, const run *r, layer *const *ls, qm_hix_fn fn, void *arg,
                              qm_err *err);
QM_HIDDEN int hix_merge_write(qm_hindex *x, const run *r, layer *const *ls, const qm_hix_state *st,
                              u64 gen, const u8 *blob, size_t blob_len, bool sync_dir, run *out,
                              qm_err *err);
QM_HIDDEN u64 hix_new_chain_gen(void);
/* Opens and checks the run file of shard in dir (header, sparse index, blob CRCs): *out,
 * its state, generation and blob (malloc'd). QMDB_NOTFOUND when missing or damaged. */
QM_HIDDEN int hix_run_read(const char *dir, unsigned shard, run *out, qm_hix_state *st, u64 *gen,
                           u8 **blob, size_t *blob_len, qm_err *err);

/* ---- the per-block memo (hixmemo.c) ---- */
#define MEMO_POS 2
#define MEMO_F 1u /* fpos: every run record of the key */
#define MEMO_B 2u /* below: the run's largest key under it, and all records of that key */

typedef struct memo_ent {
    u64 key; /* k48 + 1; 0: empty slot */
    u64 best;
    u64 fpos[MEMO_POS], bpos[MEMO_POS];
    u8 nf, nb, flags, has_best;
} memo_ent;

/* A copy of key's memo entry; false if there is none. */
QM_HIDDEN bool hix_memo_get(qm_hindex *x, u64 key, memo_ent *out);
/* Merges what a lookup learnt (fields per flags) into key's entry; a full memo is emptied
 * first (its answers are then mostly those of reads since the last block). */
QM_HIDDEN void hix_memo_put(qm_hindex *x, u64 key, const memo_ent *v);

#endif /* QM_HINDEX_INT_H */
