/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.c -- QTRC v1 (docs/TRACE.md): CRC32C, header text and statistics helpers, and the
 * block encoder / file writer (one file, or a directory of segment files).
 * The reader, decoder and reader thread are in trace_read.c.
 *
 * Threads: a trace_writer belongs to the one thread that uses it. trace_crc32c is thread-safe.
 * Owns: the CRC32C table, the header text helpers and the trace_writer.
 */
#include "trace.h"

#include "trace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- CRC32C ------------------------------------------------------------------------------ */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void
crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

uint32_t
trace_crc32c(uint32_t crc, const void *p, size_t n)
{
    pthread_once(&crc_once, crc_init);
    const uint8_t *s = p;
    crc = ~crc;
    while (n >= 8) { /* slicing-by-8 */
        uint32_t lo = crc ^ ((uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 |
                             (uint32_t)s[3] << 24);
        crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^ crc_tab[5][(lo >> 16) & 0xff] ^
              crc_tab[4][lo >> 24] ^ crc_tab[3][s[4]] ^ crc_tab[2][s[5]] ^ crc_tab[1][s[6]] ^
              crc_tab[0][s[7]];
        s += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ crc_tab[0][(crc ^ *s++) & 0xff];
    return ~crc;
}

/* ---- little helpers ---------------------------------------------------------------------- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static int
buf_reserve(buf *b, size_t more)
{
    if (b->n + more <= b->cap)
        return 0;
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->n + more)
        nc *= 2;
    uint8_t *q = realloc(b->p, nc);
    if (!q)
        return -1;
    b->p = q;
    b->cap = nc;
    return 0;
}
static int
buf_add(buf *b, const void *p, size_t n)
{
    if (buf_reserve(b, n))
        return -1;
    memcpy(b->p + b->n, p, n);
    b->n += n;
    return 0;
}
static int
buf_varint(buf *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    do {
        t[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            t[n] |= 0x80;
        n++;
    } while (v);
    return buf_add(b, t, n);
}

/* ---- header text ------------------------------------------------------------------------- */

int
trace_hdr_get(const char *text, const char *key, char *out, size_t n)
{
    size_t kl = strlen(key);
    for (const char *l = text; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t ll = nl ? (size_t)(nl - l) : strlen(l);
        if (ll > kl && strncmp(l, key, kl) == 0 && l[kl] == '=') {
            size_t vl = ll - kl - 1;
            if (vl >= n)
                vl = n - 1;
            memcpy(out, l + kl + 1, vl);
            out[vl] = 0;
            return 0;
        }
        l = nl ? nl + 1 : NULL;
    }
    return -1;
}

int
trace_hdr_u64(const char *text, const char *key, uint64_t *out)
{
    char v[32];
    if (trace_hdr_get(text, key, v, sizeof(v)))
        return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end)
        return -1;
    *out = x;
    return 0;
}

static const char *const STAT_NAMES[N_STATS] = {
    "blocks",      "txs",         "ops",         "reads",       "writes",
    "creates",     "deletes",     "account_ops", "storage_ops", "empty_writes",
    "value_bytes", "first_block", "last_block"};

void
trace_stats_to_arr(const trace_stats *s, uint64_t a[N_STATS])
{
    uint64_t t[N_STATS] = {s->blocks,      s->txs,          s->ops,         s->reads,
                           s->writes,      s->creates,      s->deletes,     s->account_ops,
                           s->storage_ops, s->empty_writes, s->value_bytes, s->first_block,
                           s->last_block};
    memcpy(a, t, sizeof(t));
}

void
trace_stats_from_arr(trace_stats *s, const uint64_t a[N_STATS])
{
    s->blocks = a[0], s->txs = a[1], s->ops = a[2], s->reads = a[3], s->writes = a[4];
    s->creates = a[5], s->deletes = a[6], s->account_ops = a[7], s->storage_ops = a[8];
    s->empty_writes = a[9], s->value_bytes = a[10], s->first_block = a[11];
    s->last_block = a[12];
}

void
trace_stats_text(const trace_stats *s, char *out, size_t cap, size_t *len)
{
    uint64_t a[N_STATS];
    trace_stats_to_arr(s, a);
    for (int i = 0; i < N_STATS && *len < cap; i++) {
        int n = snprintf(out + *len, cap - *len, "%s=%" PRIu64 "\n", STAT_NAMES[i], a[i]);
        if (n > 0)
            *len += (size_t)n;
    }
    if (*len < cap && s->ops) {
        int n = snprintf(
            out + *len, cap - *len, "read_fraction=%.4f\nops_per_tx=%.3f\ntxs_per_block=%.2f\n",
            (double)s->reads / (double)s->ops, s->txs ? (double)s->ops / (double)s->txs : 0.0,
            s->blocks ? (double)s->txs / (double)s->blocks : 0.0);
        if (n > 0)
            *len += (size_t)n;
    }
    if (*len >= cap)
        *len = cap ? cap - 1 : 0;
}

void
trace_stats_add(trace_stats *s, const trace_stats *b)
{
    if (!b->blocks)
        return;
    if (!s->blocks || b->first_block < s->first_block)
        s->first_block = b->first_block;
    if (!s->blocks || b->last_block > s->last_block)
        s->last_block = b->last_block;
    s->blocks += b->blocks, s->txs += b->txs, s->ops += b->ops, s->reads += b->reads;
    s->writes += b->writes, s->creates += b->creates, s->deletes += b->deletes;
    s->account_ops += b->account_ops, s->storage_ops += b->storage_ops;
    s->empty_writes += b->empty_writes, s->value_bytes += b->value_bytes;
}

void
trace_block_free(trace_block *b)
{
    free(b->ops);
    free(b->tx_start);
    free(b->keys);
    free(b->raw);
    memset(b, 0, sizeof(*b));
}

/* ---- writer ------------------------------------------------------------------------------ */

struct trace_writer {
    char path[4096];
    uint64_t per_file;
    char *hdr; /* static header text */
    FILE *f;
    char first_path[4200];
    unsigned file_no;
    uint64_t file_blocks;
    trace_stats all, seg; /* whole trace, current segment */
    /* current block */
    int in_block, in_tx;
    uint64_t number, last_number;
    uint32_t n_tx, n_ops, tx_ops;
    buf blk, txb;
    /* per-block address table: open addressing, slot = index + 1 */
    uint8_t *addrs;
    size_t n_addrs, addrs_cap;
    uint32_t *ht;
    size_t ht_cap;
    char err[512];
};

__attribute__((format(printf, 2, 3))) static int
tw_fail(trace_writer *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof(w->err), fmt, ap);
    va_end(ap);
    return -1;
}

/* Writes the file header; the text area is `cap` bytes (0 = max(text + NUL, reserve)). */
static int
write_header(FILE *f, const char *text, uint32_t cap)
{
    size_t tl = strlen(text) + 1;
    if (cap == 0)
        cap = tl > TRACE_HDR_RESERVE ? (uint32_t)tl : TRACE_HDR_RESERVE;
    if (tl > cap)
        return -1;
    uint8_t *h = calloc(1, 16 + (size_t)cap + 4);
    if (!h)
        return -1;
    memcpy(h, TRACE_MAGIC, 8);
    put32(h + 8, TRACE_VERSION);
    put32(h + 12, cap);
    memcpy(h + 16, text, tl - 1);
    put32(h + 16 + cap, trace_crc32c(0, h, 16 + (size_t)cap));
    size_t n = fwrite(h, 1, 16 + (size_t)cap + 4, f);
    free(h);
    return n == 16 + (size_t)cap + 4 ? 0 : -1;
}

static int
write_record(trace_writer *w, const char tag[4], uint64_t number, uint32_t n_tx, uint32_t n_ops,
             const uint8_t *pl, size_t pn)
{
    uint8_t h[REC_HDR];
    memcpy(h, tag, 4);
    put32(h + 4, (uint32_t)pn);
    put64(h + 8, number);
    put32(h + 16, n_tx);
    put32(h + 20, n_ops);
    put32(h + 24, trace_crc32c(trace_crc32c(0, h, 24), pl, pn));
    if (fwrite(h, 1, REC_HDR, w->f) != REC_HDR || (pn && fwrite(pl, 1, pn, w->f) != pn))
        return tw_fail(w, "write %s: %s", w->path, strerror(errno));
    return 0;
}

static int
seg_open(trace_writer *w)
{
    char p[4200];
    if (w->per_file)
        snprintf(p, sizeof(p), "%s/%06u.qtr", w->path, w->file_no);
    else
        snprintf(p, sizeof(p), "%s", w->path);
    if (w->file_no == 0)
        snprintf(w->first_path, sizeof(w->first_path), "%s", p);
    w->f = fopen(p, "wb");
    if (!w->f)
        return tw_fail(w, "cannot create %s: %s", p, strerror(errno));
    setvbuf(w->f, NULL, _IOFBF, 1 << 20);
    if (write_header(w->f, w->hdr, 0))
        return tw_fail(w, "write %s: %s", p, strerror(errno));
    memset(&w->seg, 0, sizeof(w->seg));
    w->file_blocks = 0;
    return 0;
}

static int
seg_close(trace_writer *w)
{
    uint64_t a[N_STATS];
    uint8_t pl[N_STATS * 8];
    trace_stats_to_arr(&w->seg, a);
    for (int i = 0; i < N_STATS; i++)
        put64(pl + 8 * i, a[i]);
    int rc = write_record(w, "END1", 0, 0, 0, pl, sizeof(pl));
    if (fclose(w->f) != 0 && rc == 0)
        rc = tw_fail(w, "close %s: %s", w->path, strerror(errno));
    w->f = NULL;
    w->file_no++;
    return rc;
}

int
tw_open(trace_writer **out, const char *path, uint64_t blocks_per_file, const char *hdr_text,
        char *err, size_t errn)
{
    trace_writer *w = calloc(1, sizeof(*w));
    *out = NULL;
    if (!w) {
        snprintf(err, errn, "out of memory");
        return -1;
    }
    snprintf(w->path, sizeof(w->path), "%s", path);
    w->per_file = blocks_per_file;
    w->hdr = strdup(hdr_text ? hdr_text : "");
    if (!w->hdr || (blocks_per_file && mkdir(path, 0755) != 0 && errno != EEXIST) ||
        seg_open(w) != 0) {
        snprintf(err, errn, "%s", w->err[0] ? w->err : strerror(errno));
        free(w->hdr);
        free(w);
        return -1;
    }
    *out = w;
    return 0;
}

const trace_stats *
tw_stats(const trace_writer *w)
{
    return &w->all;
}
const char *
tw_error(const trace_writer *w)
{
    return w->err;
}

int
tw_block_begin(trace_writer *w, uint64_t number)
{
    if (w->in_block)
        return tw_fail(w, "block %" PRIu64 " begun inside block %" PRIu64, number, w->number);
    if (w->all.blocks && number <= w->last_number)
        return tw_fail(w, "block numbers must increase (%" PRIu64 " after %" PRIu64 ")", number,
                       w->last_number);
    if (w->per_file && w->file_blocks == w->per_file && (seg_close(w) || seg_open(w)))
        return -1;
    w->in_block = 1;
    w->in_tx = 0;
    w->number = number;
    w->n_tx = w->n_ops = 0;
    w->blk.n = 0;
    w->n_addrs = 0;
    if (w->ht)
        memset(w->ht, 0, w->ht_cap * sizeof(*w->ht));
    return 0;
}

static int
flush_tx(trace_writer *w)
{
    if (!w->in_tx)
        return 0;
    if (buf_varint(&w->blk, w->tx_ops) || buf_add(&w->blk, w->txb.p, w->txb.n))
        return tw_fail(w, "out of memory");
    w->in_tx = 0;
    return 0;
}

int
tw_tx(trace_writer *w)
{
    if (!w->in_block)
        return tw_fail(w, "transaction outside a block");
    if (flush_tx(w))
        return -1;
    w->in_tx = 1;
    w->n_tx++;
    w->tx_ops = 0;
    w->txb.n = 0;
    return 0;
}

static uint32_t
addr_hash(const uint8_t *a)
{
    uint64_t h = get64(a) ^ (get64(a + 8) * 0x9E3779B97F4A7C15ull) ^ get32(a + 16);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(h >> 32);
}

/* Index of addr in this block's table; -1 (and added) if new. -2 on OOM. */
static long
addr_lookup(trace_writer *w, const uint8_t *a)
{
    if ((w->n_addrs + 1) * 2 > w->ht_cap) {
        size_t nc = w->ht_cap ? w->ht_cap * 2 : 1024;
        uint32_t *t = calloc(nc, sizeof(*t));
        if (!t)
            return -2;
        for (size_t i = 0; i < w->n_addrs; i++) {
            size_t s = addr_hash(w->addrs + i * TRACE_ADDR_LEN) & (nc - 1);
            while (t[s])
                s = (s + 1) & (nc - 1);
            t[s] = (uint32_t)i + 1;
        }
        free(w->ht);
        w->ht = t;
        w->ht_cap = nc;
    }
    size_t s = addr_hash(a) & (w->ht_cap - 1);
    while (w->ht[s]) {
        size_t i = w->ht[s] - 1;
        if (memcmp(w->addrs + i * TRACE_ADDR_LEN, a, TRACE_ADDR_LEN) == 0)
            return (long)i;
        s = (s + 1) & (w->ht_cap - 1);
    }
    if (w->n_addrs == w->addrs_cap) {
        size_t nc = w->addrs_cap ? w->addrs_cap * 2 : 1024;
        uint8_t *p = realloc(w->addrs, nc * TRACE_ADDR_LEN);
        if (!p)
            return -2;
        w->addrs = p;
        w->addrs_cap = nc;
    }
    memcpy(w->addrs + w->n_addrs * TRACE_ADDR_LEN, a, TRACE_ADDR_LEN);
    w->ht[s] = (uint32_t)++w->n_addrs;
    return -1;
}

/* Counts one op into s. */
static void
count_op(trace_stats *s, int type, size_t klen, size_t vlen)
{
    switch (type) {
    case TOP_READ:
        s->reads++;
        break;
    case TOP_WRITE:
        s->writes++;
        break;
    case TOP_CREATE:
        s->creates++;
        break;
    default:
        s->deletes++;
        break;
    }
    if (klen == TRACE_ADDR_LEN)
        s->account_ops++;
    else
        s->storage_ops++;
    if (type == TOP_WRITE || type == TOP_CREATE) {
        s->value_bytes += vlen;
        if (vlen == 0)
            s->empty_writes++;
    }
}

int
tw_op(trace_writer *w, int type, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
    if (!w->in_block)
        return tw_fail(w, "operation outside a block");
    if (!w->in_tx && tw_tx(w))
        return -1;
    if (type < TOP_READ || type > TOP_DELETE)
        return tw_fail(w, "bad op type %d", type);
    if (klen != TRACE_ADDR_LEN && klen != TRACE_KEY_MAX)
        return tw_fail(w, "key must be 20 (account) or 52 (address + slot) bytes, got %zu", klen);
    int has_val = type == TOP_WRITE || type == TOP_CREATE;
    if (has_val && vlen > TRACE_MAX_VALUE)
        return tw_fail(w, "value longer than %u bytes", TRACE_MAX_VALUE);
    int storage = klen == TRACE_KEY_MAX;
    long ai = addr_lookup(w, key);
    if (ai == -2)
        return tw_fail(w, "out of memory");
    int small = 0;
    if (storage) {
        small = 1;
        for (int i = 0; i < 24; i++)
            if (key[TRACE_ADDR_LEN + i]) {
                small = 0;
                break;
            }
    }
    uint8_t flags = (uint8_t)(type | (storage ? 4 : 0) | (ai >= 0 ? 8 : 0) | (small ? 16 : 0));
    buf *b = &w->txb;
    int bad = buf_add(b, &flags, 1);
    bad |= ai >= 0 ? buf_varint(b, (uint64_t)ai) : buf_add(b, key, TRACE_ADDR_LEN);
    if (storage) {
        uint64_t sv = 0;
        for (int i = 44; i < TRACE_KEY_MAX; i++)
            sv = sv << 8 | key[i];
        bad |= small ? buf_varint(b, sv) : buf_add(b, key + TRACE_ADDR_LEN, TRACE_SLOT_LEN);
    }
    if (has_val) {
        bad |= buf_varint(b, vlen);
        bad |= vlen ? buf_add(b, val, vlen) : 0;
    }
    if (bad)
        return tw_fail(w, "out of memory");
    w->tx_ops++;
    w->n_ops++;
    count_op(&w->all, type, klen, vlen);
    count_op(&w->seg, type, klen, vlen);
    return 0;
}

static void
count_block(trace_stats *s, uint64_t number, uint32_t n_tx, uint32_t n_ops)
{
    if (!s->blocks)
        s->first_block = number;
    s->last_block = number;
    s->blocks++;
    s->txs += n_tx;
    s->ops += n_ops;
}

int
tw_block_end(trace_writer *w)
{
    if (!w->in_block)
        return tw_fail(w, "block end outside a block");
    if (flush_tx(w))
        return -1;
    if (w->blk.n > TRACE_MAX_PAYLOAD)
        return tw_fail(w, "block %" PRIu64 " is larger than %u bytes", w->number,
                       TRACE_MAX_PAYLOAD);
    if (write_record(w, "BLK1", w->number, w->n_tx, w->n_ops, w->blk.p, w->blk.n))
        return -1;
    count_block(&w->all, w->number, w->n_tx, w->n_ops);
    count_block(&w->seg, w->number, w->n_tx, w->n_ops);
    w->in_block = 0;
    w->last_number = w->number;
    w->file_blocks++;
    return 0;
}

int
tw_close(trace_writer *w)
{
    int rc = 0;
    if (w->in_block)
        rc = tw_fail(w, "trace ends inside block %" PRIu64, w->number);
    if (w->f && seg_close(w) && !rc)
        rc = -1;
    if (!rc) { /* rewrite the first header with the realized statistics */
        size_t cap = strlen(w->hdr) + 2048, len;
        char *t = malloc(cap);
        if (t) {
            len = (size_t)snprintf(t, cap, "%s", w->hdr);
            trace_stats_text(&w->all, t, cap, &len);
            FILE *f = fopen(w->first_path, "r+b");
            uint8_t h[16];
            if (f && fread(h, 1, 16, f) == 16 && get32(h + 12) >= len + 1) {
                rewind(f);
                if (write_header(f, t, get32(h + 12)) != 0)
                    rc = tw_fail(w, "rewriting header of %s failed", w->first_path);
            } else if (f) {
                fprintf(stderr, "trace: header of %s has no room for statistics\n", w->first_path);
            }
            if (f && fclose(f) != 0 && !rc)
                rc = tw_fail(w, "close %s: %s", w->first_path, strerror(errno));
            free(t);
        }
    }
    if (rc)
        fprintf(stderr, "trace writer: %s\n", w->err);
    free(w->hdr);
    free(w->blk.p);
    free(w->txb.p);
    free(w->addrs);
    free(w->ht);
    free(w);
    return rc;
}
