/* SPDX-License-Identifier: Apache-2.0 */
/*
 * error.c -- qmdb_strerror() generated from the QMDB_ERROR_MAP list, and qm_err_set(), which
 * records a detailed message (file, offset, reason) for the caller. Any thread.
 */
#include "qm_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

const char *
qmdb_strerror(int rc)
{
    if (rc == 0)
        return "success";
    switch (rc) {
#define QM_ERR_CASE_(name, val, msg) \
    case val:                        \
        return msg;
        QMDB_ERROR_MAP(QM_ERR_CASE_)
#undef QM_ERR_CASE_
    default:
        break;
    }
    if (rc < 0 && rc > -4096)
        return strerror(-rc);
    return "unknown error";
}

int
qmdb_version_number(void)
{
    return QMDB_VERSION_NUMBER;
}

const char *
qmdb_version(void)
{
#define QM_STR2_(x) #x
#define QM_STR_(x) QM_STR2_(x)
    return QM_STR_(QMDB_VERSION_MAJOR) "." QM_STR_(QMDB_VERSION_MINOR) "." QM_STR_(
        QMDB_VERSION_PATCH);
}

/* Shards run in parallel during commit and open and share their handle's qm_err; the
 * message is formatted privately and copied under this lock, so a report is never torn. */
static pthread_mutex_t err_mu = PTHREAD_MUTEX_INITIALIZER;

int
qm_err_set(qm_err *e, int rc, const char *fmt, ...)
{
    if (e) {
        char buf[sizeof(e->msg)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        pthread_mutex_lock(&err_mu);
        memcpy(e->msg, buf, sizeof(buf));
        pthread_mutex_unlock(&err_mu);
    }
    return rc;
}
