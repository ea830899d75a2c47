/* SPDX-License-Identifier: Apache-2.0 */
/*
 * manifest.h -- the snapshot manifest (docs/SYNC.md): a text file MANIFEST beside the chunks
 * naming the height, the state root, the database's root-deciding parameters and every chunk
 * with its size and SHA-256. The manifest is a table of contents, not a proof: a restore
 * trusts only the root the user gives, checks each chunk against it, and uses the manifest's
 * digests to name a damaged file before verifying it.
 *
 *   qmdb-snapshot 1
 *   height <H>
 *   root <64 hex>
 *   params <compact_thres> <utilization_ratio> <utilization_div> <history_blocks>
 *          <entry_segment_bytes> <twig_segment_bytes>          (one line)
 *   chunk <name> <bytes> <64 hex sha256>                       (one line per chunk)
 *   end <number of chunks>
 *
 * Thread: any (pure text codec plus one file read or write).
 */
#ifndef QM_MANIFEST_H
#define QM_MANIFEST_H

#include "qm_internal.h"

#define QM_MANIFEST_NAME "MANIFEST"
#define QM_CHUNK_NAME_MAX 40

typedef struct qm_mchunk {
    char name[QM_CHUNK_NAME_MAX];
    u64 bytes;
    u8 sha[32];
} qm_mchunk;

typedef struct qm_manifest {
    u64 height;
    u8 root[32];
    u64 compact_thres;
    u32 util_ratio, util_div;
    u64 history_blocks, entry_seg, twig_seg;
    qm_mchunk *chunks;
    u64 nchunks, cap;
} qm_manifest;

/* Appends a chunk entry. */
QM_HIDDEN int qm_manifest_add(qm_manifest *m, const char *name, u64 bytes, const u8 sha[32]);
/* Writes dir/MANIFEST (through a .tmp, fsynced and renamed; the directory fsynced). */
QM_HIDDEN int qm_manifest_write(const char *dir, const qm_manifest *m, qm_err *err);
/* Reads and parses dir/MANIFEST. QMDB_NOTFOUND if missing, QMDB_CORRUPT (with the line
 * number in err) if malformed. */
QM_HIDDEN int qm_manifest_read(const char *dir, qm_manifest *m, qm_err *err);
/* Parses a manifest held in memory (fuzzed by tests/fuzz/fuzz_manifest.c). */
QM_HIDDEN int qm_manifest_parse(const char *text, size_t len, qm_manifest *m, qm_err *err);
QM_HIDDEN void qm_manifest_free(qm_manifest *m);
/* Hex helpers. */
QM_HIDDEN void qm_hex(const u8 *p, size_t n, char *out);
QM_HIDDEN int qm_unhex(const char *s, u8 *out, size_t n);

#endif /* QM_MANIFEST_H */
