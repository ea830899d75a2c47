/* SPDX-License-Identifier: Apache-2.0 */
/*
 * twig.c -- twig hashing and the null tables (see twig.h). Pure; any thread.
 */
#include "twig.h"

#include "entry.h"
#include "hash.h"

#include <pthread.h>

static u8 null_left[12][32];
static u8 null_upper[QM_MAX_LEVEL][32]; /* valid for 12..63 */
static pthread_once_t twig_once = PTHREAD_ONCE_INIT;

static void
twig_init(void)
{
    memcpy(null_left[0], qm_null_entry_hash(), 32);
    for (unsigned l = 1; l <= 11; l++)
        qm_h2((u8)(l - 1), null_left[l - 1], null_left[l - 1], null_left[l]);
    u8 zero[QM_ACTIVE_BYTES] = {0};
    u8 l3[32];
    qm_active_root(zero, l3);
    qm_h2(11, null_left[11], l3, null_upper[12]);
    for (unsigned l = 13; l < QM_MAX_LEVEL; l++)
        qm_h2((u8)(l - 1), null_upper[l - 1], null_upper[l - 1], null_upper[l]);
}

const u8 *
qm_null_left(unsigned level)
{
    pthread_once(&twig_once, twig_init);
    QM_ASSERT(level <= 11);
    return null_left[level];
}

const u8 *
qm_null_node(unsigned level)
{
    pthread_once(&twig_once, twig_init);
    QM_ASSERT(level >= 12 && level < QM_MAX_LEVEL);
    return null_upper[level];
}

void
qm_active_root(const u8 bits[QM_ACTIVE_BYTES], u8 out[32])
{
    u8 l1[4][32], l2[2][32];
    qm_h2_job jobs[4];
    for (int i = 0; i < 4; i++)
        jobs[i] = (qm_h2_job){bits + 64 * i, bits + 64 * i + 32, l1[i], 8};
    qm_h2_batch(jobs, 4);
    jobs[0] = (qm_h2_job){l1[0], l1[1], l2[0], 9};
    jobs[1] = (qm_h2_job){l1[2], l1[3], l2[1], 9};
    qm_h2_batch(jobs, 2);
    qm_h2(10, l2[0], l2[1], out);
}

void
qm_twig_root(const u8 left_root[32], const u8 *bits, u8 out[32])
{
    u8 l3[32];
    if (bits) {
        qm_active_root(bits, l3);
    } else {
        static const u8 zero[QM_ACTIVE_BYTES];
        qm_active_root(zero, l3);
    }
    qm_h2(11, left_root, l3, out);
}

void
qm_left_tree_null(u8 (*nodes)[32])
{
    pthread_once(&twig_once, twig_init);
    memset(nodes[0], 0, 32);
    for (unsigned level = 0; level <= 11; level++) {
        unsigned first = 2048u >> level, n = first;
        for (unsigned i = 0; i < n; i++)
            memcpy(nodes[first + i], null_left[level], 32);
    }
}

void
qm_left_tree_update(u8 (*nodes)[32], unsigned lo, unsigned hi)
{
    if (lo >= hi)
        return;
    unsigned a = 2048 + lo, b = 2048 + hi - 1; /* inclusive heap range at this level */
    qm_h2_job jobs[64];
    for (unsigned level = 1; level <= 11; level++) {
        a >>= 1;
        b >>= 1;
        size_t nj = 0;
        for (unsigned i = a; i <= b; i++) {
            jobs[nj++] = (qm_h2_job){nodes[2 * i], nodes[2 * i + 1], nodes[i], (u8)(level - 1)};
            if (nj == QM_ARRAY_LEN(jobs)) {
                qm_h2_batch(jobs, nj);
                nj = 0;
            }
        }
        qm_h2_batch(jobs, nj);
    }
}
