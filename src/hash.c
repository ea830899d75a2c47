/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hash.c -- SHA-256 front end and backend dispatch, the Merkle node hash H2 and its batch
 * form. The backend is picked once (atomically) from cpuid; the only process-wide state is
 * that immutable choice and a per-thread compression counter.
 */
#include "hash.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static const u32 SHA256_IV[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

static _Atomic(qm_sha256_compress_fn) compress_fn;
static _Thread_local u64 compressions;

static qm_sha256_compress_fn
hash_pick(void)
{
    qm_sha256_compress_fn f = atomic_load_explicit(&compress_fn, memory_order_acquire);
    if (QM_LIKELY(f != NULL))
        return f;
    const char *env = getenv("QMDB_HASH");
    if (env && strcmp(env, "portable") == 0)
        f = qm_sha256_compress_portable;
    else
        f = qm_sha256_shani_supported() ? qm_sha256_compress_shani : qm_sha256_compress_portable;
    atomic_store_explicit(&compress_fn, f, memory_order_release);
    return f;
}

int
qm_hash_set_backend(int which)
{
    qm_sha256_compress_fn f;
    if (which == QM_HASH_PORTABLE)
        f = qm_sha256_compress_portable;
    else if (which == QM_HASH_SHANI) {
        if (!qm_sha256_shani_supported())
            return -1;
        f = qm_sha256_compress_shani;
    } else
        f = qm_sha256_shani_supported() ? qm_sha256_compress_shani : qm_sha256_compress_portable;
    atomic_store_explicit(&compress_fn, f, memory_order_release);
    return 0;
}

const char *
qm_hash_backend_name(void)
{
    return hash_pick() == qm_sha256_compress_shani ? "sha-ni" : "portable";
}

u64
qm_hash_compressions(void)
{
    return compressions;
}

static void
hash_out(const u32 st[8], u8 out[32])
{
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (u8)(st[i] >> 24);
        out[4 * i + 1] = (u8)(st[i] >> 16);
        out[4 * i + 2] = (u8)(st[i] >> 8);
        out[4 * i + 3] = (u8)st[i];
    }
}

/* Streaming state over at most two input pieces. */
typedef struct hash_ctx {
    u32 st[8];
    u8 buf[64];
    size_t used;
    u64 total;
    qm_sha256_compress_fn f;
} hash_ctx;

static void
ctx_init(hash_ctx *c)
{
    memcpy(c->st, SHA256_IV, sizeof(c->st));
    c->used = 0;
    c->total = 0;
    c->f = hash_pick();
}

static void
ctx_update(hash_ctx *c, const u8 *p, size_t len)
{
    c->total += len;
    if (c->used) {
        size_t take = QM_MIN(len, 64 - c->used);
        memcpy(c->buf + c->used, p, take);
        c->used += take;
        p += take;
        len -= take;
        if (c->used < 64)
            return;
        c->f(c->st, c->buf, 1);
        compressions++;
        c->used = 0;
    }
    if (len >= 64) {
        size_t n = len / 64;
        c->f(c->st, p, n);
        compressions += n;
        p += 64 * n;
        len -= 64 * n;
    }
    memcpy(c->buf, p, len);
    c->used = len;
}

static void
ctx_final(hash_ctx *c, u8 out[32])
{
    u64 bits = c->total * 8;
    c->buf[c->used++] = 0x80;
    if (c->used > 56) {
        memset(c->buf + c->used, 0, 64 - c->used);
        c->f(c->st, c->buf, 1);
        compressions++;
        c->used = 0;
    }
    memset(c->buf + c->used, 0, 56 - c->used);
    for (int i = 0; i < 8; i++)
        c->buf[63 - i] = (u8)(bits >> (8 * i));
    c->f(c->st, c->buf, 1);
    compressions++;
    hash_out(c->st, out);
}

void
qm_sha256(const void *data, size_t len, u8 out[32])
{
    hash_ctx c;
    ctx_init(&c);
    ctx_update(&c, data, len);
    ctx_final(&c, out);
}

void
qm_sha256_2(const void *a, size_t alen, const void *b, size_t blen, u8 out[32])
{
    hash_ctx c;
    ctx_init(&c);
    ctx_update(&c, a, alen);
    ctx_update(&c, b, blen);
    ctx_final(&c, out);
}

/* H2 input is exactly 65 bytes: two blocks, the second holding R[31], 0x80 and the length. */
static inline void
h2_with(qm_sha256_compress_fn f, u8 level, const u8 *l, const u8 *r, u8 *out)
{
    u8 blk[128];
    blk[0] = level;
    memcpy(blk + 1, l, 32);
    memcpy(blk + 33, r, 32);
    blk[65] = 0x80;
    memset(blk + 66, 0, 60);
    blk[126] = (u8)(520 >> 8); /* 65 * 8 bits */
    blk[127] = (u8)(520 & 0xff);
    u32 st[8];
    memcpy(st, SHA256_IV, sizeof(st));
    f(st, blk, 2);
    compressions += 2;
    hash_out(st, out);
}

void
qm_global_tree(const u8 (*roots)[32], qm_gtree *g)
{
    for (unsigned i = 0; i < 8; i++)
        qm_h2(64, roots[2 * i], roots[2 * i + 1], g->n1[i]);
    for (unsigned i = 0; i < 4; i++)
        qm_h2(65, g->n1[2 * i], g->n1[2 * i + 1], g->n2[i]);
    for (unsigned i = 0; i < 2; i++)
        qm_h2(66, g->n2[2 * i], g->n2[2 * i + 1], g->n3[i]);
    qm_h2(67, g->n3[0], g->n3[1], g->root);
}

void
qm_h2(u8 level, const u8 l[32], const u8 r[32], u8 out[32])
{
    h2_with(hash_pick(), level, l, r, out);
}

void
qm_h2_batch(const qm_h2_job *jobs, size_t n)
{
    qm_sha256_compress_fn f = hash_pick();
    for (size_t i = 0; i < n; i++)
        h2_with(f, jobs[i].level, jobs[i].l, jobs[i].r, jobs[i].out);
}
