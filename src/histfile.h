/* SPDX-License-Identifier: Apache-2.0 */
/*
 * histfile.h -- the history cache file `sXX.hist`: the prover's per-shard history cache
 * (proof.c) as written by a clean close, so that the first historical proof after an open
 * reads it instead of scanning the shard's entry log. Derived data: never part of a root,
 * never trusted (a file that fails any check is ignored and the cache is rebuilt by the
 * scan). Layout (little-endian), n = upto - base:
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
 *   96         4       CRC-32C of the body
 *   100        24      zero
 *   124        4       CRC-32C of bytes [0, 124)
 *   128        8 * n   pos[i]: entry-log offset of SN base + i (strictly increasing, < scan_pos)
 *   128+8n     8 * n   verh[i]: version height (version >> 24) of SN base + i
 *   128+16n    8 * n   deact[i]: the SN that deactivated SN base + i (in (base + i, upto)), or
 *                      2^64 - 1 when it was still active at H
 *   128+24n    16 * n  keys: every SN of [base, upto) once, as (kh8, sn), kh8 the first 8
 *                      key-hash bytes read big-endian; sorted by (kh8, sn), strictly
 * The file size is exactly 128 + 40 * n.
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
    u32 body_crc; /* filled by qm_hist_file_write */
} qm_hist_hdr;

/* The body arrays, n = upto - base entries each. */
typedef struct qm_hist_arrays {
    u64 *pos, *verh, *deact;
    qm_hist_key *keys;
} qm_hist_arrays;

QM_HIDDEN void qm_hist_hdr_encode(const qm_hist_hdr *h, u8 out[QM_HIST_HDR]);
/* Decodes a header: QMDB_CORRUPT unless magic, CRC, reserved bytes, shard id, base and
 * lengths are consistent; QMDB_VERSION_MISMATCH for another format version. */
QM_HIDDEN int qm_hist_hdr_decode(const u8 *buf, size_t len, qm_hist_hdr *h);
/* a holds the body's bytes as stored (each section in its array): checks the CRC, converts
 * to host order and checks the structure above. QMDB_CORRUPT if anything is off, -ENOMEM. */
QM_HIDDEN int qm_hist_body_accept(const qm_hist_hdr *h, qm_hist_arrays *a);

/* Opens dir/sXX.hist and decodes its header (file size checked). 0 with *fd open, or an error
 * (-ENOENT when there is none). */
QM_HIDDEN int qm_hist_file_open(const char *dir, unsigned shard, int *fd, qm_hist_hdr *h);
/* Reads the body into a (arrays of upto - base) and accepts it; closes fd. */
QM_HIDDEN int qm_hist_file_read(int fd, const qm_hist_hdr *h, qm_hist_arrays *a);
/* Writes the file of h and a (host order) atomically (see above). */
QM_HIDDEN int qm_hist_file_write(const char *dir, const qm_hist_hdr *h, const qm_hist_arrays *a,
                                 qm_err *err);

#endif /* QM_HISTFILE_H */
