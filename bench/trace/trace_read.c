/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_read.c -- QTRC v1 reader (docs/TRACE.md): streams one trace file or a directory of
 * *.qtr segments in name order, checks every CRC32C, decodes blocks (address back-references,
 * small slots) and checks the end records; plus the reader thread (trace_pipe).
 *
 * Threads: a trace_reader belongs to one thread. A trace_pipe runs its reader on its own
 * pthread and hands decoded blocks to one consumer thread through a ring of `depth` reusable
 * trace_block slots guarded by a mutex and two condition variables.
 * Owns: trace_reader, the block decoder and trace_pipe.
 */
#include "trace_int.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- reader ------------------------------------------------------------------------------ */

struct trace_reader {
    char **files;
    size_t n_files, cur;
    FILE *f;
    char *hdr;  /* header text of the first file */
    int at_end; /* all files done */
    int any_block;
    uint64_t last_number;
    trace_stats end; /* summed end records */
    uint64_t bytes_read, total_bytes;
    const uint8_t **atab; /* per-block address table (pointers into raw) */
    size_t atab_cap;
    char err[600];
};

__attribute__((format(printf, 2, 3))) static int
tr_fail(trace_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n =
        snprintf(r->err, sizeof(r->err), "%s: ", r->cur < r->n_files ? r->files[r->cur] : "trace");
    if (n < 0 || (size_t)n >= sizeof(r->err))
        n = 0;
    vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int
name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Opens files[cur] and reads its header. */
static int
tr_open_file(trace_reader *r)
{
    const char *p = r->files[r->cur];
    r->f = fopen(p, "rb");
    if (!r->f)
        return tr_fail(r, "cannot open: %s", strerror(errno));
    setvbuf(r->f, NULL, _IOFBF, 1 << 20);
    uint8_t h[16];
    if (fread(h, 1, 16, r->f) != 16)
        return tr_fail(r, "truncated header");
    if (memcmp(h, TRACE_MAGIC, 8) != 0)
        return tr_fail(r, "not a QTRC trace (bad magic)");
    if (get32(h + 8) != TRACE_VERSION)
        return tr_fail(r, "unsupported trace version %u (this build reads %u)", get32(h + 8),
                       TRACE_VERSION);
    uint32_t cap = get32(h + 12);
    if (cap == 0 || cap > (1u << 24))
        return tr_fail(r, "bad header length %u", cap);
    char *t = malloc((size_t)cap + 1);
    uint8_t c4[4];
    if (!t)
        return tr_fail(r, "out of memory");
    if (fread(t, 1, cap, r->f) != cap || fread(c4, 1, 4, r->f) != 4) {
        free(t);
        return tr_fail(r, "truncated header");
    }
    uint32_t crc = trace_crc32c(trace_crc32c(0, h, 16), t, cap);
    if (crc != get32(c4)) {
        free(t);
        return tr_fail(r, "header checksum mismatch");
    }
    t[cap] = 0;
    r->bytes_read += 16 + (uint64_t)cap + 4;
    if (!r->hdr)
        r->hdr = t;
    else
        free(t);
    return 0;
}

int
tr_open(trace_reader **out, const char *path, char *err, size_t errn)
{
    *out = NULL;
    trace_reader *r = calloc(1, sizeof(*r));
    struct stat st;
    if (!r) {
        snprintf(err, errn, "out of memory");
        return -1;
    }
    if (stat(path, &st) != 0) {
        snprintf(err, errn, "%s: %s", path, strerror(errno));
        free(r);
        return -1;
    }
    size_t cap = 0;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL) {
            size_t nl = strlen(de->d_name);
            if (nl < 5 || strcmp(de->d_name + nl - 4, ".qtr") != 0)
                continue;
            if (r->n_files == cap) {
                cap = cap ? cap * 2 : 64;
                char **nf = realloc(r->files, cap * sizeof(*nf));
                if (!nf)
                    break;
                r->files = nf;
            }
            size_t pl = strlen(path) + nl + 2;
            char *fp = malloc(pl);
            if (!fp)
                break;
            snprintf(fp, pl, "%s/%s", path, de->d_name);
            r->files[r->n_files++] = fp;
        }
        if (d)
            closedir(d);
        if (r->n_files == 0) {
            snprintf(err, errn, "%s: directory holds no *.qtr files", path);
            tr_close(r);
            return -1;
        }
        qsort(r->files, r->n_files, sizeof(*r->files), name_cmp);
    } else {
        r->files = malloc(sizeof(*r->files));
        if (r->files && (r->files[0] = strdup(path)) != NULL)
            r->n_files = 1;
        else {
            snprintf(err, errn, "out of memory");
            tr_close(r);
            return -1;
        }
    }
    for (size_t i = 0; i < r->n_files; i++)
        if (stat(r->files[i], &st) == 0)
            r->total_bytes += (uint64_t)st.st_size;
    if (tr_open_file(r) != 0) {
        snprintf(err, errn, "%s", r->err);
        tr_close(r);
        return -1;
    }
    *out = r;
    return 0;
}

const char *
tr_header(const trace_reader *r)
{
    return r->hdr;
}
const char *
tr_error(const trace_reader *r)
{
    return r->err;
}
const trace_stats *
tr_end_stats(const trace_reader *r)
{
    return &r->end;
}
uint64_t
tr_bytes_read(const trace_reader *r)
{
    return r->bytes_read;
}
uint64_t
tr_total_bytes(const trace_reader *r)
{
    return r->total_bytes;
}

void
tr_close(trace_reader *r)
{
    if (!r)
        return;
    if (r->f)
        fclose(r->f);
    for (size_t i = 0; i < r->n_files; i++)
        free(r->files[i]);
    free(r->files);
    free(r->hdr);
    free(r->atab);
    free(r);
}

static int
grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 256;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, nc * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

/* Decodes b->raw into ops, tx_start and keys. */
static int
decode(trace_reader *r, trace_block *b)
{
    const uint8_t *p = b->raw, *end = b->raw + b->raw_len;
    if (grow((void **)&b->ops, &b->ops_cap, b->n_ops ? b->n_ops : 1, sizeof(*b->ops)) ||
        grow((void **)&b->tx_start, &b->tx_cap, (size_t)b->n_tx + 1, sizeof(*b->tx_start)) ||
        grow((void **)&b->keys, &b->keys_cap, (size_t)b->n_ops * TRACE_KEY_MAX + 1, 1))
        return tr_fail(r, "out of memory");
    size_t n_addr = 0, k = 0;
    uint8_t *kp = b->keys;
    for (uint32_t t = 0; t < b->n_tx; t++) {
        uint64_t cnt;
        b->tx_start[t] = (uint32_t)k;
        if (get_varint(&p, end, &cnt) || cnt > b->n_ops - k)
            return tr_fail(r, "block %" PRIu64 ": bad op count in tx %u", b->number, t);
        for (uint64_t j = 0; j < cnt; j++, k++) {
            if (p >= end)
                return tr_fail(r, "block %" PRIu64 ": truncated payload", b->number);
            uint8_t fl = *p++;
            trace_op *op = &b->ops[k];
            if (fl & 0xe0 || (!(fl & 4) && (fl & 16)))
                return tr_fail(r, "block %" PRIu64 ": bad op flags 0x%02x", b->number, fl);
            op->type = fl & 3;
            op->key = kp;
            if (fl & 8) {
                uint64_t ai;
                if (get_varint(&p, end, &ai) || ai >= n_addr)
                    return tr_fail(r, "block %" PRIu64 ": bad address reference", b->number);
                memcpy(kp, r->atab[ai], TRACE_ADDR_LEN);
            } else {
                if ((size_t)(end - p) < TRACE_ADDR_LEN)
                    return tr_fail(r, "block %" PRIu64 ": truncated payload", b->number);
                if (grow((void **)&r->atab, &r->atab_cap, n_addr + 1, sizeof(*r->atab)))
                    return tr_fail(r, "out of memory");
                r->atab[n_addr++] = p;
                memcpy(kp, p, TRACE_ADDR_LEN);
                p += TRACE_ADDR_LEN;
            }
            if (fl & 4) {
                uint8_t *s = kp + TRACE_ADDR_LEN;
                if (fl & 16) {
                    uint64_t sv;
                    if (get_varint(&p, end, &sv))
                        return tr_fail(r, "block %" PRIu64 ": truncated slot", b->number);
                    memset(s, 0, 24);
                    for (int i = 0; i < 8; i++)
                        s[24 + i] = (uint8_t)(sv >> (56 - 8 * i));
                } else {
                    if ((size_t)(end - p) < TRACE_SLOT_LEN)
                        return tr_fail(r, "block %" PRIu64 ": truncated slot", b->number);
                    memcpy(s, p, TRACE_SLOT_LEN);
                    p += TRACE_SLOT_LEN;
                }
                op->klen = TRACE_KEY_MAX;
            } else {
                op->klen = TRACE_ADDR_LEN;
            }
            kp += op->klen;
            op->val = NULL;
            op->vlen = 0;
            if (op->type == TOP_WRITE || op->type == TOP_CREATE) {
                uint64_t vl;
                if (get_varint(&p, end, &vl) || vl > TRACE_MAX_VALUE || vl > (uint64_t)(end - p))
                    return tr_fail(r, "block %" PRIu64 ": bad value length", b->number);
                op->val = p;
                op->vlen = (uint32_t)vl;
                p += vl;
            }
        }
    }
    b->tx_start[b->n_tx] = (uint32_t)k;
    if (k != b->n_ops || p != end)
        return tr_fail(r, "block %" PRIu64 ": payload does not match its op count", b->number);
    return 0;
}

int
tr_next(trace_reader *r, trace_block *b)
{
    for (;;) {
        if (r->at_end)
            return 0;
        uint8_t h[REC_HDR];
        size_t got = fread(h, 1, REC_HDR, r->f);
        if (got != REC_HDR)
            return tr_fail(r, "truncated (no end record)");
        uint32_t pn = get32(h + 4);
        if (pn > TRACE_MAX_PAYLOAD)
            return tr_fail(r, "record of %u bytes is too large", pn);
        if (grow((void **)&b->raw, &b->raw_cap, (size_t)pn + 1, 1))
            return tr_fail(r, "out of memory");
        if (pn && fread(b->raw, 1, pn, r->f) != pn)
            return tr_fail(r, "truncated record");
        r->bytes_read += REC_HDR + (uint64_t)pn;
        if (trace_crc32c(trace_crc32c(0, h, 24), b->raw, pn) != get32(h + 24))
            return tr_fail(r, "checksum mismatch in record at byte %" PRIu64,
                           r->bytes_read - REC_HDR - pn);
        if (memcmp(h, "END1", 4) == 0) {
            if (pn != N_STATS * 8)
                return tr_fail(r, "bad end record");
            uint64_t a[N_STATS];
            trace_stats s;
            for (int i = 0; i < N_STATS; i++)
                a[i] = get64(b->raw + 8 * i);
            trace_stats_from_arr(&s, a);
            trace_stats_add(&r->end, &s);
            if (fgetc(r->f) != EOF)
                return tr_fail(r, "data after the end record");
            fclose(r->f);
            r->f = NULL;
            if (++r->cur == r->n_files) {
                r->at_end = 1;
                return 0;
            }
            if (tr_open_file(r) != 0)
                return -1;
            continue;
        }
        if (memcmp(h, "BLK1", 4) != 0)
            return tr_fail(r, "unknown record tag");
        b->number = get64(h + 8);
        b->n_tx = get32(h + 16);
        b->n_ops = get32(h + 20);
        b->raw_len = pn;
        b->rec_bytes = REC_HDR + (size_t)pn;
        if (b->n_ops > pn / 2 || b->n_tx > pn) /* an op takes >= 2 bytes, a tx >= 1 */
            return tr_fail(r, "block %" PRIu64 ": counts do not fit its payload", b->number);
        if (r->any_block && b->number <= r->last_number)
            return tr_fail(r, "block %" PRIu64 " does not follow block %" PRIu64, b->number,
                           r->last_number);
        if (decode(r, b) != 0)
            return -1;
        r->any_block = 1;
        r->last_number = b->number;
        return 1;
    }
}

/* ---- reader thread ----------------------------------------------------------------------- */

struct trace_pipe {
    trace_reader *r;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t not_full, not_empty;
    trace_block *slots;
    int depth, head, count, done, status, stop;
    uint64_t bytes_read, wait_ns;
    char err[600];
};

static uint64_t
mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *
pipe_main(void *arg)
{
    trace_pipe *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->count == p->depth && !p->stop)
            pthread_cond_wait(&p->not_full, &p->mu);
        int idx = (p->head + p->count) % p->depth, stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        int rc = tr_next(p->r, &p->slots[idx]);
        pthread_mutex_lock(&p->mu);
        p->bytes_read = tr_bytes_read(p->r);
        if (rc == 1) {
            p->count++;
        } else {
            p->done = 1;
            p->status = rc;
            if (rc < 0)
                snprintf(p->err, sizeof(p->err), "%s", tr_error(p->r));
        }
        pthread_cond_signal(&p->not_empty);
        pthread_mutex_unlock(&p->mu);
        if (rc != 1)
            break;
    }
    return NULL;
}

int
tp_start(trace_pipe **out, const char *path, int depth, char *err, size_t errn)
{
    *out = NULL;
    trace_pipe *p = calloc(1, sizeof(*p));
    if (!p || depth < 1) {
        snprintf(err, errn, "out of memory");
        free(p);
        return -1;
    }
    p->depth = depth;
    p->slots = calloc((size_t)depth, sizeof(*p->slots));
    if (!p->slots || tr_open(&p->r, path, err, errn) != 0) {
        if (!p->slots)
            snprintf(err, errn, "out of memory");
        free(p->slots);
        free(p);
        return -1;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->not_full, NULL);
    pthread_cond_init(&p->not_empty, NULL);
    if (pthread_create(&p->th, NULL, pipe_main, p) != 0) {
        snprintf(err, errn, "cannot start the trace reader thread");
        tp_stop(p);
        return -1;
    }
    p->started = 1;
    *out = p;
    return 0;
}

const char *
tp_header(const trace_pipe *p)
{
    return tr_header(p->r);
}
const char *
tp_error(const trace_pipe *p)
{
    return p->err;
}
uint64_t
tp_total_bytes(const trace_pipe *p)
{
    return tr_total_bytes(p->r);
}
uint64_t
tp_wait_ns(const trace_pipe *p)
{
    return p->wait_ns;
}

uint64_t
tp_bytes_read(const trace_pipe *p)
{
    pthread_mutex_lock((pthread_mutex_t *)&p->mu);
    uint64_t v = p->bytes_read;
    pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
    return v;
}

trace_block *
tp_next(trace_pipe *p, int *rc)
{
    pthread_mutex_lock(&p->mu);
    if (p->count == 0 && !p->done) {
        uint64_t t0 = mono_ns();
        while (p->count == 0 && !p->done)
            pthread_cond_wait(&p->not_empty, &p->mu);
        p->wait_ns += mono_ns() - t0;
    }
    trace_block *b = NULL;
    if (p->count > 0) {
        b = &p->slots[p->head];
        *rc = 1;
    } else {
        *rc = p->status;
    }
    pthread_mutex_unlock(&p->mu);
    return b;
}

void
tp_release(trace_pipe *p, trace_block *b)
{
    (void)b;
    pthread_mutex_lock(&p->mu);
    p->head = (p->head + 1) % p->depth;
    p->count--;
    pthread_cond_signal(&p->not_full);
    pthread_mutex_unlock(&p->mu);
}

void
tp_stop(trace_pipe *p)
{
    if (!p)
        return;
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_signal(&p->not_full);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->not_full);
    pthread_cond_destroy(&p->not_empty);
    for (int i = 0; i < p->depth; i++)
        trace_block_free(&p->slots[i]);
    free(p->slots);
    tr_close(p->r);
    free(p);
}
