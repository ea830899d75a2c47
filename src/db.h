/* SPDX-License-Identifier: Apache-2.0 */
/*
 * db.h -- internal hooks of the handle for the top layer's own files and white-box tests
 * (db_read.c). Thread: the handle's writer.
 */
#ifndef QM_DB_H
#define QM_DB_H

#include "check.h"

/* Fills v with the checker's view of an open handle (after every submitted block is
 * durable). */
QM_HIDDEN void qm_db_check_view(qmdb_db *db, qm_check_view *v);

#endif /* QM_DB_H */
