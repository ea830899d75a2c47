/* SPDX-License-Identifier: Apache-2.0 */
/*
 * histfile.h -- the history cache file `sXX.hist`: the prover's per-shard history cache
 * (proof.c) as written by a clean close, so that the first historical proof after an open
 * maps it instead of scanning the shard's entry log. Derived data: never part of a root,
 * never trusted (a file that fails a check is ignored and the cache is rebuilt by the scan).
 * Layout (little-endian), n = upto - base, c = ceil(40 * n / 65536):
 *   OFFSET     SIZE    FIELD
 *   0          8       magic "QMDBHIST"
 *   8          4       format version (1)
 *   12         4       shard id (0..15)
 *   16         8       height H of the state the file describes
 *   24         32      state root of H (ROOTS[H] of the database that wrote it)
 *   56         8       first_twig: the shard's first unpruned twig when written
 *   64         8       base = first_twig * 2048: the first SN covered
 *   72         8       upto: the shard's next_sn at H; SNs [base, upto) are covered
 *   80         8       scan_pos: entry-log offset of SN upto (the log size at H)
 *   88         8       body length in bytes (40 * n)
 *   96         4       CRC-32C of the chunk table
 *   100        24      zero
 *   124        4       CRC-32C of bytes [0, 124)
 *   128        8 * n   pos[i]: entry-log offset of SN base + i (below scan_pos)
 *   128+8n     8 * n   verh[i]: version height (version >> 24) of SN base + i
 *   128+16n    8 * n   deact[i]: the SN that deactivated SN base + i (in (base + i, upto)), or
 *                      2^64 - 1 when it was still active at H
 *   128+24n    16 * n  keys: every SN of [base, upto) once, as (kh8, sn), kh8 the first 8
 *                      key-hash bytes read big-endian; sorted by (kh8, sn), strictly
 *   128+40n    4 * c   chunk table: CRC-32C of each 65,536-byte chunk of the body (the bytes
 *                      from offset 128 on; the last chunk may be shorter)
 * The file size is exactly 128 + 40 * n + 4 * c. A reader maps the file and checks a chunk's
 * CRC the first time it reads from it, so opening costs the header and the table only.
 *
 * Written to `sXX.hist.tmp`, fsynced, renamed over `sXX.hist`, directory fsynced: a crash
 * leaves the old file or the new one (and maybe a stale .tmp, overwritten by the next write).
 *
 * Thread: the handle's writer (proofs and close).
 */
#ifndef QM_HISTFILE_H
#define QM_HISTFILE_H

#include "qm_internal.h"

#define QM_HIST_HDR 128u
#define QM_HIST_VERSION 1u
#define QM_HIST_PER_SN 40u
#define QM_HIST_CHUNK 65536u
#define QM_HIST_NONE UINT64_MAX

/* One SN of the sorted key list. */
typedef struct qm_hist_key {
    u64 kh8; /* first 8 key-hash bytes, big-endian (sorts like the hash) */
    u64 sn;
} qm_hist_key;

typedef struct qm_hist_hdr {
    u32 shard;
    u64 height;
    u8 root[32];
    u64 first_twig, base, upto, scan_pos;
    u32 table_crc; /* filled by the writer */
} qm_hist_hdr;

/* The sort key of a key hash: its first 8 bytes, big-endian. */
static inline u64
qm_hist_kh8(const u8 kh[32])
{
    u64 v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | kh[i];
    return v;
}

/* Chunks of a body of n SNs. */
static inline u64
qm_hist_chunks(u64 n)
{
    return (n * QM_HIST_PER_SN + QM_HIST_CHUNK - 1) / QM_HIST_CHUNK;
}

QM_HIDDEN void qm_hist_hdr_encode(const qm_hist_hdr *h, u8 out[QM_HIST_HDR]);
/* Decodes a header: QMDB_CORRUPT unless magic, CRC, reserved bytes, shard id, base and
 * lengths are consistent; QMDB_VERSION_MISMATCH for another format version. */
QM_HIDDEN int qm_hist_hdr_decode(const u8 *buf, size_t len, qm_hist_hdr *h);

/* A whole file in memory (mapped): header decoded, size and chunk table checked; chunks are
 * checked one by one as they are first read (ok: one bit per chunk). */
typedef struct qm_hist_map {
    qm_hist_hdr h;
    const u8 *p; /* the file */
    size_t len;
    u64 n, nchunks;
    u8 *ok;      /* chunks whose CRC was checked */
    bool bad;    /* a chunk failed its CRC */
    bool mapped; /* p is an mmap of len bytes */
    bool owned;  /* p is a malloc'd copy (no mapping allowed); else the caller owns it */
} qm_hist_map;

/* Checks file image p (len bytes) as far as the header, size and chunk table go, into m. */
QM_HIDDEN int qm_hist_map_init(qm_hist_map *m, const u8 *p, size_t len);
/* The body bytes [off, off + len), once their chunks' CRCs hold; NULL (and m->bad) if not. */
QM_HIDDEN const u8 *qm_hist_body(qm_hist_map *m, u64 off, size_t len);
/* Maps dir/sXX.hist read-only (or, under a test I/O layer or QMDB_NO_MMAP=1, reads it whole)
 * and checks it as qm_hist_map_init does. -ENOENT if absent. */
QM_HIDDEN int qm_hist_map_open(const char *dir, unsigned shard, qm_hist_map *m);
QM_HIDDEN void qm_hist_map_close(qm_hist_map *m);

/* Streaming writer: the four sections in order (pos, verh, deact as u64; keys as (kh8, sn)
 * u64 pairs), n values each (2n for keys), then finish. */
typedef struct qm_hist_writer {
    int fd;
    u64 off;    /* file offset of the next body byte */
    u32 ccrc;   /* CRC of the current chunk so far */
    u64 cfill;  /* bytes in the current chunk */
    u32 *table; /* finished chunks' CRCs */
    u64 nt, cap;
    u64 buf[1024];
    unsigned nbuf;
    char tmp[4096], path[4096];
} qm_hist_writer;

QM_HIDDEN int qm_hist_writer_open(qm_hist_writer *w, const char *dir, unsigned shard);
QM_HIDDEN int qm_hist_writer_put(qm_hist_writer *w, u64 v);
/* Writes the chunk table and header h (table_crc computed), fsyncs and renames; on failure
 * the .tmp is removed. Always releases w. */
QM_HIDDEN int qm_hist_writer_finish(qm_hist_writer *w, const qm_hist_hdr *h, const char *dir,
                                    bool ok, qm_err *err);

#endif /* QM_HISTFILE_H */
