/* SPDX-License-Identifier: Apache-2.0 */
/*
 * refmodel.h -- a naive, slow, obviously-correct reference model of QMDB state roots
 * (shared/spec/FORMAT.md §1-§7). Test-only; independent of src/.
 *
 * It owns: entry encoding and hashing (OpenSSL SHA256), sentries, 16 shards with
 * append-only entry arrays and per-SN active flags, a sorted live-key index per shard,
 * put/delete semantics with versions and last-op-wins per transaction, deterministic
 * compaction, and the root computed from scratch (twig left trees, ActiveBits, upper tree,
 * shard roots, global root) at every call.
 *
 * Usage: m = rm_new(thres, ratio, div); rm_begin_block(m, h); rm_put/rm_del ...; rm_tx(m)
 * opens the next transaction index (it ALWAYS increments; callers that want the op-script
 * "tx right after block names tx 0" rule implement it themselves); rm_commit(m, root).
 * rm_get reads the committed state (call it between blocks).
 */
#ifndef QMDB_REFMODEL_H
#define QMDB_REFMODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RM_SHARDS 16
#define RM_TWIG_BITS 11
#define RM_TWIG_LEAVES 2048
#define RM_SENTRIES_PER_SHARD 4096

typedef struct rm rm;

/* ---- primitives (exposed for the known-answer tests) ---- */

/** SHA256(tag || l || r) for any lengths (generic form of H2). */
void rm_hash_tagged(uint8_t tag, const uint8_t *l, size_t ll, const uint8_t *r, size_t rl,
                    uint8_t out[32]);
/** H2(tag, L, R) = SHA256(tag || L || R). */
void rm_h2(uint8_t tag, const uint8_t l[32], const uint8_t r[32], uint8_t out[32]);

/**
 * Serializes an entry (FORMAT.md §1) into out (may be NULL to only measure) and writes its
 * hash SHA256(payload) to hash_out (may be NULL). Returns the stored length (padded to 8).
 * out must hold roundup8(53 + kl + vl) + 8*ndsn bytes.
 */
size_t rm_encode_entry(const uint8_t *key, size_t kl, const uint8_t *val, size_t vl,
                       const uint8_t nkh[32], int64_t version, uint64_t sn, const uint64_t *dsn,
                       size_t ndsn, uint8_t *out, uint8_t hash_out[32]);

/** Hash of the null entry (the null leaf). */
void rm_null_leaf(uint8_t out[32]);
/** Root of a null left subtree at level 0..11 (level 0 = null leaf, 11 = null left root). */
void rm_null_left_level(unsigned level, uint8_t out[32]);
/** Null node at an upper level >= 12 (12 = null twig root, 13 = H2(12, ntr, ntr), ...). */
void rm_null_node(unsigned level, uint8_t out[32]);

/** ActiveBits hashes of one twig: L1[4], L2[2], L3. */
void rm_active_bits_hash(const uint8_t bits[256], uint8_t l1[4][32], uint8_t l2[2][32],
                         uint8_t l3[32]);
/** Twig root = H2(11, left_root, L3(bits)). */
void rm_twig_root_from(const uint8_t left_root[32], const uint8_t bits[256], uint8_t out[32]);

/** Sentry i (0..4095) of shard s: key (32 bytes) and next_key_hash. */
void rm_sentry(unsigned shard, unsigned i, uint8_t key[32], uint8_t nkh[32]);

/** Key hash as used for ordering: SHA256(key), or key[0],key[1],0... for sentries. */
void rm_key_hash(const uint8_t *key, size_t kl, int is_sentry, uint8_t out[32]);

/* ---- the model ---- */

/** New database at height 0 with sentries only. Returns NULL on bad params / OOM. */
rm *rm_new(uint64_t compact_thres, uint32_t utilization_ratio, uint32_t utilization_div);
void rm_free(rm *m);

/** If f is non-NULL, every appended entry after the sentries is printed to f as
 *  "height shard sn kind file_pos entry_hash entry_hex" (the vectors' trace format). */
void rm_set_trace(rm *m, FILE *f);

/** Starts block `height` (must be last committed + 1) with transaction 0 open.
 *  Returns 0 or -1. */
int rm_begin_block(rm *m, uint64_t height);
/** Closes the current transaction (applies it) and opens the next index. */
void rm_tx(rm *m);
/** Queue put/delete in the current transaction. Returns 0, or -1 for an invalid argument
 *  (key length 0 or > 255, value empty or > 2^24-1, or no open block). */
int rm_put(rm *m, const void *key, size_t kl, const void *val, size_t vl);
int rm_del(rm *m, const void *key, size_t kl);
/** Ends the block, writes the new state root (computed from scratch). Returns 0 or -1. */
int rm_commit(rm *m, uint8_t root[32]);

/** Committed height. */
uint64_t rm_height(const rm *m);
/** Looks up key. Returns 1 and sets *val / *vlen (pointer into the model, valid until the
 *  next mutation) if live, 0 if absent. */
int rm_get(const rm *m, const void *key, size_t kl, const uint8_t **val, size_t *vlen);

/** Computes the current root of one shard / the global state root from the leaves. */
void rm_shard_root(rm *m, unsigned shard, uint8_t out[32]);
void rm_state_root(rm *m, uint8_t out[32]);

/** By default the left root of a FULL twig (all 2048 leaves appended, so immutable) is
 *  memoized after its first computation; everything else (partial twigs, all ActiveBits,
 *  upper tree, global root) is recomputed on every call. rm_set_scratch(m, 1) disables
 *  the memo so that every root is rebuilt from the leaf hashes alone. */
void rm_set_scratch(rm *m, int scratch);

/** Counters. */
uint64_t rm_compactions(const rm *m);
uint64_t rm_next_sn(const rm *m, unsigned shard);
uint64_t rm_live(const rm *m, unsigned shard); /* sentries included */
uint64_t rm_sn_start(const rm *m, unsigned shard);
/** SN of shard's next entry at the start of the current/last block. */
uint64_t rm_block_start_sn(const rm *m, unsigned shard);

/** Prints entries [from_sn, next_sn) of a shard in trace format (height column = -1 when
 *  unknown: it prints the entry's version >> 24). */
void rm_dump_entries(const rm *m, unsigned shard, uint64_t from_sn, FILE *f);

#endif /* QMDB_REFMODEL_H */
