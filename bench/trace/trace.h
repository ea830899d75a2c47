/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.h -- the QTRC v1 state-access trace format (docs/TRACE.md): encoder/writer, decoder/
 * reader (one file or a directory of segment files), CRC32C, header text helpers, and the
 * reader thread that decodes blocks ahead of the consumer.
 *
 * Threads: a trace_writer and a trace_reader are used by one thread. A trace_pipe owns one
 * background thread that runs a trace_reader; the consumer thread takes decoded blocks with
 * tp_next() and hands each back with tp_release() before taking the next.
 * Owns: the public trace API and types (trace_block, trace_op, trace_stats, the writer,
 * the reader and the pipe).
 */
#ifndef BENCH_TRACE_H
#define BENCH_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_MAGIC "QMDBTRC1"
#define TRACE_VERSION 1u
#define TRACE_ADDR_LEN 20
#define TRACE_SLOT_LEN 32
#define TRACE_KEY_MAX (TRACE_ADDR_LEN + TRACE_SLOT_LEN)
#define TRACE_HDR_RESERVE 4096u /* header text bytes reserved so it can be patched */
#define TRACE_MAX_VALUE ((1u << 24) - 1)
#define TRACE_MAX_PAYLOAD (1u << 30) /* one block record */

enum { TOP_READ = 0, TOP_WRITE = 1, TOP_CREATE = 2, TOP_DELETE = 3 };

/* Counters kept by the writer, stored in the end record and patched into the header. */
typedef struct trace_stats {
    uint64_t blocks, txs, ops;
    uint64_t reads, writes, creates, deletes;
    uint64_t account_ops, storage_ops;
    uint64_t empty_writes; /* write/create with an empty value (replayed as delete) */
    uint64_t value_bytes;
    uint64_t first_block, last_block;
} trace_stats;

typedef struct trace_op {
    uint8_t type; /* TOP_* */
    uint8_t klen; /* 20 (account) or 52 (storage: address + slot) */
    uint32_t vlen;
    const uint8_t *key; /* into the block's key arena */
    const uint8_t *val; /* into the block's raw payload; NULL for read/delete */
} trace_op;

/* One decoded block. Ops of transaction i are ops[tx_start[i] .. tx_start[i+1]). */
typedef struct trace_block {
    uint64_t number;
    uint32_t n_tx, n_ops;
    trace_op *ops;
    size_t ops_cap;
    uint32_t *tx_start;
    size_t tx_cap;
    uint8_t *keys;
    size_t keys_cap;
    uint8_t *raw; /* encoded payload */
    size_t raw_len, raw_cap;
    size_t rec_bytes; /* record size on disk (header + payload) */
} trace_block;

void trace_block_free(trace_block *b);

/* CRC32C (Castagnoli), as used by iSCSI/ext4; crc starts at 0. */
uint32_t trace_crc32c(uint32_t crc, const void *p, size_t n);

/* Header text: "key=value\n" lines. Returns 0 and the value if present, -1 otherwise. */
int trace_hdr_get(const char *text, const char *key, char *out, size_t n);
int trace_hdr_u64(const char *text, const char *key, uint64_t *out);
/* Appends the stats as header lines (blocks=..., reads=..., ...) to buf (at offset *len). */
void trace_stats_text(const trace_stats *s, char *buf, size_t cap, size_t *len);
/* Adds the counts of b to s. */
void trace_stats_add(trace_stats *s, const trace_stats *b);

/* ---- writer ---------------------------------------------------------------------------- */
typedef struct trace_writer trace_writer;

/* Opens path for writing. blocks_per_file = 0: one file; else path is a directory (created)
 * and gets segment files 000000.qtr, 000001.qtr, ... of that many blocks each. hdr_text is
 * the static header text (kind=..., generator parameters); at tw_close it is rewritten with
 * the realized statistics appended. Returns 0, or -1 with a message in err. */
int tw_open(trace_writer **w, const char *path, uint64_t blocks_per_file, const char *hdr_text,
            char *err, size_t errn);
int tw_block_begin(trace_writer *w, uint64_t number);
int tw_tx(trace_writer *w);
/* key: 20 bytes (account) or 52 bytes (storage). val ignored for read/delete. */
int tw_op(trace_writer *w, int type, const uint8_t *key, size_t klen, const uint8_t *val,
          size_t vlen);
int tw_block_end(trace_writer *w);
const trace_stats *tw_stats(const trace_writer *w);
const char *tw_error(const trace_writer *w);
/* Finishes (end record, header patch) and frees w. Returns 0 or -1 (message on stderr). */
int tw_close(trace_writer *w);

/* ---- reader ---------------------------------------------------------------------------- */
typedef struct trace_reader trace_reader;

/* Opens a trace file or a directory of *.qtr segment files (read in name order). */
int tr_open(trace_reader **r, const char *path, char *err, size_t errn);
/* Header text of the first file. */
const char *tr_header(const trace_reader *r);
/* Reads and decodes the next block into b (buffers reused). Returns 1 for a block, 0 at the
 * end of the trace (end record of the last file checked), -1 on error (tr_error). */
int tr_next(trace_reader *r, trace_block *b);
const char *tr_error(const trace_reader *r);
/* Statistics summed from the end records read so far (complete after tr_next returned 0). */
const trace_stats *tr_end_stats(const trace_reader *r);
uint64_t tr_bytes_read(const trace_reader *r);
uint64_t tr_total_bytes(const trace_reader *r);
void tr_close(trace_reader *r);

/* ---- reader thread --------------------------------------------------------------------- */
typedef struct trace_pipe trace_pipe;

/* Opens path and starts a thread that decodes up to `depth` blocks ahead. */
int tp_start(trace_pipe **p, const char *path, int depth, char *err, size_t errn);
const char *tp_header(const trace_pipe *p);
/* Next decoded block, or NULL at the end (*rc = 0) or on error (*rc = -1, tp_error). The
 * block stays valid until tp_release(). */
trace_block *tp_next(trace_pipe *p, int *rc);
void tp_release(trace_pipe *p, trace_block *b);
const char *tp_error(const trace_pipe *p);
uint64_t tp_bytes_read(const trace_pipe *p);
uint64_t tp_total_bytes(const trace_pipe *p);
/* Nanoseconds the consumer waited in tp_next for the reader thread (0 = never starved). */
uint64_t tp_wait_ns(const trace_pipe *p);
/* Stops the thread (if still running) and frees p. */
void tp_stop(trace_pipe *p);

/* ---- commands (qmdb-trace) -------------------------------------------------------------- */
/* `qmdb-trace gen ...` (tracegen.c); argv[0] is "gen". Returns the exit status. */
int tracegen_cmd(int argc, char **argv);

#endif /* BENCH_TRACE_H */
