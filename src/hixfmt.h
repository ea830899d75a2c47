/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hixfmt.h -- the geometry of the hybrid indexer's run pages (the run file's layout is at the
 * top of hixrun.c and in docs/FORMAT.md): 12-byte records, 4 KiB pages of 341 records and a
 * CRC. Shared by every file of the hybrid indexer and by ix.h. Pure definitions.
 */
#ifndef QM_HIXFMT_H
#define QM_HIXFMT_H

#define QM_HIX_REC 12u
#define QM_HIX_PAGE 4096u
#define QM_HIX_PER_PAGE 341u /* 341 * 12 = 4092, then a 4-byte CRC32C */

#endif /* QM_HIXFMT_H */
