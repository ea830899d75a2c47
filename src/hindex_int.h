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

/* Where key's place lies among n keys uniform in [lo_key, hi_key). */
static inline u64
hix_keys_guess(u64 n, u64 key, u64 lo_key, u64 hi_key)
{
    if (n == 0 || key <= lo_key || hi_key <= lo_key)
        return 0;
    unsigned __int128 t = (unsigned __int128)(key - lo_key) * n / (hi_key - lo_key);
    return t >= n ? n - 1 : (u64)t;
}

/* First of n sorted 6-byte keys, one every `stride` bytes from base, all in [lo_key, hi_key),
 * that is >= key. Key hashes are uniform, so the search starts where key's place between
 * lo_key and hi_key puts it and gallops from there: a run page's search touches about two
 * cache lines where a bisection touches nine, and the sparse index's a line or two where a
 * bisection waited for eleven dependent loads at 10M. Keys that are not uniform, or bounds that
 * do not hold, cost O(log n) probes still. */
static inline u64
hix_keys_search(const u8 *base, size_t stride, u64 n, u64 key, u64 lo_key, u64 hi_key)
{
    if (n == 0)
        return 0;
    u64 g = hix_keys_guess(n, key, lo_key, hi_key);
    u64 lo, hi; /* the answer lies in [lo, hi] */
    if (k48(base + g * stride) < key) {
        lo = g + 1;
        hi = n;
        for (u64 step = 1; lo + step - 1 < n; step *= 2) {
            u64 q = lo + step - 1;
            if (k48(base + q * stride) >= key) {
                hi = q;
                break;
            }
            lo = q + 1;
        }
    } else {
        lo = 0;
        hi = g;
        for (u64 step = 1; step <= hi; step *= 2) {
            u64 q = hi - step;
            if (k48(base + q * stride) < key) {
                lo = q + 1;
                break;
            }
            hi = q;
        }
    }
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        if (k48(base + mid * stride) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* First of the n records at pg (12 bytes each, sorted by their 6-byte keys, all in [lo_key,
 * hi_key)) whose key is >= key. */
static inline u32
hix_page_search(const u8 *pg, u32 n, u64 key, u64 lo_key, u64 hi_key)
{
    return (u32)hix_keys_search(pg, QM_HIX_REC, n, key, lo_key, hi_key);
}

/* The last of a run's n page-first keys (its sparse index, sorted) below key, or 0: the page
 * where key's records begin. Pages hold equal counts of key hashes, so their first keys are
 * about evenly spaced between the first and the last. */
static inline u64
hix_first_below(const u8 *first, u64 n, u64 key)
{
    if (n == 0)
        return 0;
    u64 lb = hix_keys_search(first, 6, n, key, k48(first), k48(first + (n - 1) * 6) + 1);
    return lb ? lb - 1 : 0;
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
/* A hint to the CPU: start loading key's first memo slot (a few keys ahead of its lookup). */
QM_HIDDEN void hix_memo_prefetch(qm_hindex *x, u64 key);
/* Merges what a lookup learnt (fields per flags) into key's entry; a full memo is emptied
 * first (its answers are then mostly those of reads since the last block). */
QM_HIDDEN void hix_memo_put(qm_hindex *x, u64 key, const memo_ent *v);

#endif /* QM_HINDEX_INT_H */
