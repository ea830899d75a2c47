/* SPDX-License-Identifier: Apache-2.0 */
/*
 * segw.h -- a writer of logical byte ranges into the segment files of one segmented file
 * (FORMAT.md, "Segmented head-prunable files": segment k of prefix P is P.kkkkkkkkkk and
 * holds logical bytes [k*S, (k+1)*S)). For tools that build a database's files outside a
 * handle: the snapshot restore (restore.c) and the backup (backup.c). Segments are created as
 * needed (sparse below the first byte written) and fsynced when left or closed.
 *
 * Thread: the caller's (one writer per instance).
 */
#ifndef QM_SEGW_H
#define QM_SEGW_H

#include "qm_internal.h"

typedef struct qm_segw {
    char prefix[4200];
    u64 seg_size, cur;
    int fd;
} qm_segw;

QM_HIDDEN void qm_segw_init(qm_segw *w, const char *dir, const char *name, u64 seg_size);
/* Writes len bytes at logical offset off. Returns 0 or -errno. */
QM_HIDDEN int qm_segw_write(qm_segw *w, u64 off, const void *data, size_t len);
/* Fsyncs and closes the open segment. Returns 0 or -errno. */
QM_HIDDEN int qm_segw_close(qm_segw *w);

#endif /* QM_SEGW_H */
