/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracegen.c -- `qmdb-trace gen`: a synthetic trace generator whose statistics imitate
 * Ethereum mainnet around block 15M (docs/TRACE.md explains every figure and its source).
 *
 * Owns: the state model (EOAs, contracts with per-contract slot ranges and deleted-slot
 * bitmaps), the transaction model (plain transfers and contract calls), the block-size
 * model, and writing the initial-state bundle and the trace with trace_writer.
 * Threads: single-threaded. Deterministic: the same flags give byte-identical files.
 */
#include "rng.h"
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- PRNG: xoshiro256** (rng.h) seeded by splitmix64 ----------------------------------- */
typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t
mix64(uint64_t x)
{
    return rng_splitmix64(x);
}
static uint64_t
rnext(rng *g)
{
    return rng_next(g->s);
}
static double
runit(rng *g)
{
    return rng_unit(g->s);
}
/* Modulo reduction (not workload.c's multiply-shift): it fixes the bytes of every trace. */
static uint64_t
rbelow(rng *g, uint64_t n)
{
    return n ? rnext(g) % n : 0;
}

static double
rnorm(rng *g)
{
    double u = runit(g), v = runit(g);
    return sqrt(-2.0 * log(u > 0 ? u : 1e-300)) * cos(6.283185307179586 * v);
}

/* Lognormal with the given mean and log-sigma. */
static double
rlognorm(rng *g, double mean, double sigma)
{
    return exp(log(mean) - 0.5 * sigma * sigma + sigma * rnorm(g));
}

/* Power-law rank in [0, n): continuous density proportional to x^-theta on [1, n+1]
 * (a Zipf(theta) approximation that works for any n and theta in O(1)). Rank 0 is hottest. */
static uint64_t
rpow(rng *g, uint64_t n, double theta)
{
    if (n <= 1)
        return 0;
    double u = runit(g), x, N = (double)n + 1.0;
    if (fabs(theta - 1.0) < 1e-9) {
        x = exp(u * log(N));
    } else {
        double a = 1.0 - theta;
        x = pow(1.0 + u * (pow(N, a) - 1.0), 1.0 / a);
    }
    uint64_t r = x < 1.0 ? 0 : (uint64_t)x - 1;
    return r >= n ? n - 1 : r;
}

/* ---- configuration ------------------------------------------------------------------------ */
typedef struct gen_cfg {
    uint64_t seed, init_entries, init_block_ops, blocks, ops, first_block, blocks_per_file;
    double account_share, contract_share, txs_mean, txs_sigma, empty_block, ops_per_tx;
    double read_fraction, transfer_share, new_recipient, theta_contract, theta_slot, theta_eoa;
    double create_share, delete_share, deploy_prob, body_account, other_contract, rmw_share;
    double body_sigma;
    const char *init_out, *trace_out;
} gen_cfg;

#define MAX_TXS 1428 /* 30,000,000 gas limit / 21,000 gas per plain transfer */
#define N_BUILDERS 20
#define SMALL_SLOTS 16

typedef struct contract {
    uint64_t hi;    /* slots [0, hi) were created at some point */
    uint64_t *dead; /* bitmap: slot k deleted */
    uint64_t words;
} contract;

typedef struct gen {
    const gen_cfg *c;
    rng g;
    uint64_t n_eoa;
    contract *ct;
    uint64_t n_ct, ct_cap;
    double body_mean, body_read;
    trace_writer *w;
    uint8_t key[TRACE_KEY_MAX], val[128];
    /* storage keys of the current tx, for read-modify-write */
    uint64_t recent_j[32], recent_k[32];
    int n_recent;
} gen;

static void
expand(uint64_t seed, uint64_t tag, uint64_t a, uint64_t b, uint8_t *out, size_t n)
{
    uint64_t x = mix64(seed ^ mix64(tag * 0x100000001B3ull ^ mix64(a ^ mix64(b + 7))));
    for (size_t i = 0; i < n; i += 8) {
        x = mix64(x + i);
        for (size_t k = 0; k < 8 && i + k < n; k++)
            out[i + k] = (uint8_t)(x >> (8 * k));
    }
}

static void
eoa_key(gen *G, uint64_t e)
{
    expand(G->c->seed, 1, e, 0, G->key, TRACE_ADDR_LEN);
}
static void
ct_key(gen *G, uint64_t j)
{
    expand(G->c->seed, 2, j, 0, G->key, TRACE_ADDR_LEN);
}

static void
slot_key(gen *G, uint64_t j, uint64_t k)
{
    ct_key(G, j);
    uint8_t *s = G->key + TRACE_ADDR_LEN;
    if (k < SMALL_SLOTS) { /* Solidity state variables live at small slot numbers */
        memset(s, 0, TRACE_SLOT_LEN);
        s[31] = (uint8_t)k;
    } else { /* mapping entries: keccak-like 32 random bytes */
        expand(G->c->seed, 3, j, k, s, TRACE_SLOT_LEN);
    }
}

static size_t
fill_value(gen *G, int account)
{
    size_t n;
    if (account)
        n = 70 + rbelow(&G->g, 11); /* RLP [nonce, balance, storageRoot, codeHash] */
    else if (runit(&G->g) < 0.5)
        n = 1 + rbelow(&G->g, 8); /* small integers: counters, flags, small balances */
    else
        n = 20 + rbelow(&G->g, 13); /* addresses, hashes, large balances */
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x = rnext(&G->g);
        for (size_t k = 0; k < 8 && i + k < n; k++)
            G->val[i + k] = (uint8_t)(x >> (8 * k));
    }
    if (G->val[0] == 0)
        G->val[0] = 1;
    return n;
}

static int
is_dead(const contract *c, uint64_t k)
{
    return k / 64 < c->words && (c->dead[k / 64] >> (k % 64) & 1);
}

static int
set_dead(contract *c, uint64_t k, int dead)
{
    if (k / 64 >= c->words) {
        if (!dead)
            return 0;
        uint64_t nw = c->words ? c->words * 2 : 4;
        while (nw <= k / 64)
            nw *= 2;
        uint64_t *p = realloc(c->dead, nw * sizeof(*p));
        if (!p)
            return -1;
        memset(p + c->words, 0, (nw - c->words) * sizeof(*p));
        c->dead = p;
        c->words = nw;
    }
    if (dead)
        c->dead[k / 64] |= 1ull << (k % 64);
    else
        c->dead[k / 64] &= ~(1ull << (k % 64));
    return 0;
}

static int
emit(gen *G, int type, int storage)
{
    size_t vl = 0;
    if (type == TOP_WRITE || type == TOP_CREATE)
        vl = fill_value(G, !storage);
    if (tw_op(G->w, type, G->key, storage ? TRACE_KEY_MAX : TRACE_ADDR_LEN, G->val, vl)) {
        fprintf(stderr, "qmdb-trace gen: %s\n", tw_error(G->w));
        return -1;
    }
    return 0;
}

static int
add_contract(gen *G)
{
    if (G->n_ct == G->ct_cap) {
        uint64_t nc = G->ct_cap ? G->ct_cap * 2 : 1024;
        contract *p = realloc(G->ct, nc * sizeof(*p));
        if (!p)
            return -1;
        G->ct = p;
        G->ct_cap = nc;
    }
    memset(&G->ct[G->n_ct++], 0, sizeof(contract));
    return 0;
}

/* ---- transactions --------------------------------------------------------------------- */

static int
acct_rw(gen *G, uint64_t e) /* read then update an existing EOA */
{
    eoa_key(G, e);
    return emit(G, TOP_READ, 0) || emit(G, TOP_WRITE, 0);
}

static int
storage_op(gen *G, uint64_t j)
{
    const gen_cfg *c = G->c;
    contract *ct = &G->ct[j];
    double u = runit(&G->g);
    if (u < G->body_read && ct->hi) {
        uint64_t k = rpow(&G->g, ct->hi, c->theta_slot);
        if (G->n_recent < 32) {
            G->recent_j[G->n_recent] = j;
            G->recent_k[G->n_recent++] = k;
        }
        slot_key(G, j, k);
        return emit(G, TOP_READ, 1);
    }
    double v = runit(&G->g);
    if (v < c->create_share || ct->hi == 0) { /* a new slot */
        slot_key(G, j, ct->hi++);
        return emit(G, TOP_CREATE, 1);
    }
    if (v < c->create_share + c->delete_share) { /* clear a slot (SSTORE 0) */
        uint64_t k = 0;
        for (int t = 0; t < 4; t++) {
            k = rbelow(&G->g, ct->hi);
            if (!is_dead(ct, k))
                break;
        }
        if (set_dead(ct, k, 1))
            return -1;
        slot_key(G, j, k);
        return emit(G, TOP_DELETE, 1); /* a no-op if k was already dead */
    }
    uint64_t k; /* update: often a slot this tx read before */
    if (G->n_recent && runit(&G->g) < c->rmw_share) {
        int i = (int)rbelow(&G->g, (uint64_t)G->n_recent);
        j = G->recent_j[i];
        k = G->recent_k[i];
        ct = &G->ct[j];
    } else {
        k = rpow(&G->g, ct->hi, c->theta_slot);
    }
    int revive = is_dead(ct, k);
    if (revive && set_dead(ct, k, 0))
        return -1;
    slot_key(G, j, k);
    return emit(G, revive ? TOP_CREATE : TOP_WRITE, 1);
}

static int
call_tx(gen *G, uint64_t sender, uint64_t builder)
{
    const gen_cfg *c = G->c;
    G->n_recent = 0;
    if (acct_rw(G, sender))
        return -1;
    if (runit(&G->g) < c->deploy_prob) { /* contract creation */
        if (add_contract(G))
            return -1;
        uint64_t j = G->n_ct - 1;
        ct_key(G, j);
        if (emit(G, TOP_READ, 0) || emit(G, TOP_CREATE, 0))
            return -1;
        uint64_t ns = 1 + rbelow(&G->g, 20);
        for (uint64_t s = 0; s < ns; s++) {
            slot_key(G, j, G->ct[j].hi++);
            if (emit(G, TOP_CREATE, 1))
                return -1;
        }
        return acct_rw(G, builder);
    }
    uint64_t target = rpow(&G->g, G->n_ct, c->theta_contract);
    ct_key(G, target);
    if (emit(G, TOP_READ, 0)) /* code hash */
        return -1;
    double x = rlognorm(&G->g, G->body_mean, c->body_sigma);
    uint64_t n = (uint64_t)(x + 0.5);
    if (n > 3000)
        n = 3000;
    for (uint64_t i = 0; i < n; i++) {
        double u = runit(&G->g);
        if (u < c->body_account) { /* touch another account: balance read or ETH movement */
            eoa_key(G, rpow(&G->g, G->n_eoa, c->theta_eoa));
            if (emit(G, runit(&G->g) < G->body_read ? TOP_READ : TOP_WRITE, 0))
                return -1;
            continue;
        }
        uint64_t j = target;
        if (runit(&G->g) < c->other_contract)
            j = rpow(&G->g, G->n_ct, c->theta_contract);
        if (storage_op(G, j))
            return -1;
    }
    return acct_rw(G, builder);
}

static int
transfer_tx(gen *G, uint64_t sender, uint64_t builder)
{
    const gen_cfg *c = G->c;
    int fresh = runit(&G->g) < c->new_recipient;
    uint64_t to = fresh ? G->n_eoa++ : rpow(&G->g, G->n_eoa, c->theta_eoa);
    eoa_key(G, sender);
    if (emit(G, TOP_READ, 0))
        return -1;
    eoa_key(G, to);
    if (emit(G, TOP_READ, 0))
        return -1;
    eoa_key(G, sender);
    if (emit(G, TOP_WRITE, 0))
        return -1;
    eoa_key(G, to);
    if (emit(G, fresh ? TOP_CREATE : TOP_WRITE, 0))
        return -1;
    return acct_rw(G, builder);
}

/* ---- initial state ---------------------------------------------------------------------- */

static int
gen_init(gen *G)
{
    const gen_cfg *c = G->c;
    uint64_t accounts = (uint64_t)((double)c->init_entries * c->account_share + 0.5);
    uint64_t contracts = (uint64_t)((double)accounts * c->contract_share + 0.5);
    if (contracts < 1)
        contracts = 1;
    if (accounts < contracts + N_BUILDERS)
        accounts = contracts + N_BUILDERS;
    if (accounts >= c->init_entries) {
        fprintf(stderr, "qmdb-trace gen: --init-entries must be at least %" PRIu64 "\n",
                accounts + 1);
        return -1;
    }
    G->n_eoa = accounts - contracts;
    uint64_t slots = c->init_entries - accounts, given = 0;
    double W = 0;
    for (uint64_t j = 0; j < contracts; j++) {
        if (add_contract(G))
            return -1;
        W += 1.0 / (double)(j + 1); /* slot count follows popularity (assumption) */
    }
    for (uint64_t j = 0; j < contracts; j++) {
        G->ct[j].hi = (uint64_t)((double)slots / W / (double)(j + 1));
        given += G->ct[j].hi;
    }
    for (uint64_t j = 0; given < slots; j = (j + 1) % contracts, given++)
        G->ct[j].hi++;
    char hdr[1024];
    snprintf(hdr, sizeof(hdr),
             "kind=init\ngenerator=qmdb-trace gen (synthetic, docs/TRACE.md)\nseed=%" PRIu64
             "\ninit_entries=%" PRIu64 "\ninit_accounts=%" PRIu64 "\ninit_contracts=%" PRIu64
             "\ninit_storage_slots=%" PRIu64 "\ninit_block_ops=%" PRIu64 "\n",
             c->seed, c->init_entries, accounts, contracts, slots, c->init_block_ops);
    char err[600];
    if (tw_open(&G->w, c->init_out, c->blocks_per_file, hdr, err, sizeof(err))) {
        fprintf(stderr, "qmdb-trace gen: %s\n", err);
        return -1;
    }
    uint64_t n = 0, number = 0;
    int rc = 0;
    for (uint64_t phase = 0; phase < 2 && !rc; phase++) {
        uint64_t lim = phase == 0 ? G->n_eoa : contracts;
        for (uint64_t i = 0; i < lim && !rc; i++) {
            uint64_t kslots = phase ? G->ct[i].hi : 0;
            for (uint64_t s = 0; s <= kslots && !rc; s++) {
                if (n % c->init_block_ops == 0)
                    rc = (n && tw_block_end(G->w)) || tw_block_begin(G->w, number++);
                if (phase == 0)
                    eoa_key(G, i);
                else if (s == 0)
                    ct_key(G, i);
                else
                    slot_key(G, i, s - 1);
                rc = rc || emit(G, TOP_CREATE, phase == 1 && s > 0);
                n++;
            }
        }
    }
    if (!rc && n)
        rc = tw_block_end(G->w);
    if (rc)
        fprintf(stderr, "qmdb-trace gen: %s\n", tw_error(G->w));
    fprintf(stderr,
            "init: %" PRIu64 " entries (%" PRIu64 " EOAs, %" PRIu64 " contracts, %" PRIu64
            " slots) in %" PRIu64 " blocks -> %s\n",
            n, G->n_eoa, contracts, slots, number, c->init_out);
    int crc = tw_close(G->w);
    G->w = NULL;
    return rc || crc ? -1 : 0;
}

/* ---- the trace ------------------------------------------------------------------------- */

static int
gen_trace(gen *G)
{
    const gen_cfg *c = G->c;
    double pt = c->transfer_share, T = c->ops_per_tx, R = c->read_fraction;
    /* transfer: 6 ops, 3 reads; call: 5 fixed ops (3 reads) + a body of mean m, read share r */
    G->body_mean = (T - 6.0 * pt) / (1.0 - pt) - 5.0;
    G->body_read = (R * T - 3.0) / ((1.0 - pt) * G->body_mean);
    if (G->body_mean < 1 || G->body_read <= 0 || G->body_read >= 1) {
        fprintf(stderr,
                "qmdb-trace gen: --ops-per-tx/--read-fraction/--transfer-share are "
                "inconsistent (body mean %.2f, body read share %.3f)\n",
                G->body_mean, G->body_read);
        return -1;
    }
    char hdr[2048];
    snprintf(hdr, sizeof(hdr),
             "kind=trace\ngenerator=qmdb-trace gen (synthetic mainnet-like, docs/TRACE.md)\n"
             "seed=%" PRIu64 "\ninit_entries=%" PRIu64 "\ntarget_read_fraction=%.4f\n"
             "target_ops_per_tx=%.3f\ntarget_txs_per_block=%.2f\ntxs_per_block_log_sigma=%.2f\n"
             "empty_block_prob=%.4f\nmax_txs_per_block=%d\ntransfer_share=%.3f\n"
             "new_recipient_share=%.3f\ntheta_contract=%.2f\ntheta_slot=%.2f\ntheta_eoa=%.2f\n"
             "write_create_share=%.3f\nwrite_delete_share=%.3f\ndeploy_prob=%.4f\n"
             "body_account_share=%.3f\nbody_other_contract_share=%.3f\nrmw_share=%.2f\n"
             "body_ops_mean=%.3f\nbody_ops_log_sigma=%.2f\nbody_read_share=%.4f\n"
             "account_share_init=%.3f\ncontract_share_init=%.3f\n",
             c->seed, c->init_entries, R, T, c->txs_mean, c->txs_sigma, c->empty_block, MAX_TXS, pt,
             c->new_recipient, c->theta_contract, c->theta_slot, c->theta_eoa, c->create_share,
             c->delete_share, c->deploy_prob, c->body_account, c->other_contract, c->rmw_share,
             G->body_mean, c->body_sigma, G->body_read, c->account_share, c->contract_share);
    char err[600];
    if (tw_open(&G->w, c->trace_out, c->blocks_per_file, hdr, err, sizeof(err))) {
        fprintf(stderr, "qmdb-trace gen: %s\n", err);
        return -1;
    }
    const trace_stats *st = tw_stats(G->w);
    int rc = 0;
    for (uint64_t b = 0; !rc; b++) {
        if (c->blocks ? b >= c->blocks : st->ops >= c->ops)
            break;
        uint64_t ntx = 0;
        if (runit(&G->g) >= c->empty_block) {
            double x = rlognorm(&G->g, c->txs_mean, c->txs_sigma);
            ntx = x > MAX_TXS ? MAX_TXS : (uint64_t)(x + 0.5);
        }
        uint64_t builder = rpow(&G->g, N_BUILDERS, 1.2);
        rc = tw_block_begin(G->w, c->first_block + b);
        for (uint64_t t = 0; t < ntx && !rc; t++) {
            uint64_t sender = rpow(&G->g, G->n_eoa, c->theta_eoa);
            rc = tw_tx(G->w);
            if (!rc)
                rc = runit(&G->g) < pt ? transfer_tx(G, sender, builder)
                                       : call_tx(G, sender, builder);
        }
        rc = rc || tw_block_end(G->w);
        if (b % 5000 == 4999)
            fprintf(stderr, "gen: block %" PRIu64 ", %" PRIu64 " ops\n", c->first_block + b,
                    st->ops);
    }
    if (rc && tw_error(G->w)[0])
        fprintf(stderr, "qmdb-trace gen: %s\n", tw_error(G->w));
    trace_stats s = *st;
    int crc = tw_close(G->w);
    G->w = NULL;
    if (!rc && !crc)
        fprintf(stderr,
                "trace: %" PRIu64 " blocks %" PRIu64 " txs %" PRIu64 " ops (%.1f%% reads, "
                "%.2f ops/tx, %.1f txs/block, %" PRIu64 " creates, %" PRIu64 " deletes) -> %s\n",
                s.blocks, s.txs, s.ops, s.ops ? 100.0 * (double)s.reads / (double)s.ops : 0.0,
                s.txs ? (double)s.ops / (double)s.txs : 0.0,
                s.blocks ? (double)s.txs / (double)s.blocks : 0.0, s.creates, s.deletes,
                c->trace_out);
    return rc || crc ? -1 : 0;
}

/* ---- command line ----------------------------------------------------------------------- */

static void
gen_usage(FILE *f)
{
    fprintf(
        f,
        "usage: qmdb-trace gen --init-out PATH --trace-out PATH [options]\n"
        "  --init-entries N      initial state entries (default 1000000)\n"
        "  --init-block-ops N    creates per init block (default 100000)\n"
        "  --ops N               trace length in state operations (default 1000000), or\n"
        "  --blocks N            trace length in blocks\n"
        "  --seed N              (default 1)\n"
        "  --first-block N       number of the first trace block (default 15012300)\n"
        "  --blocks-per-file N   write directories of N-block segment files (default: one file)\n"
        "  --read-fraction F     (default 0.602)   --ops-per-tx F (default 17.91)\n"
        "  --txs-per-block F     mean (default 186.6)\n"
        "  --theta-contract F    (default 1.1)  --theta-slot F (default 1.0)  --theta-eoa F (0.9)\n"
        "  --create-share F      share of storage writes that create a slot (default 0.12)\n"
        "  --delete-share F      share of storage writes that clear a slot (default 0.06)\n");
}

int
tracegen_cmd(int argc, char **argv)
{
    gen_cfg c = {.seed = 1,
                 .init_entries = 1000000,
                 .init_block_ops = 100000,
                 .ops = 1000000,
                 .first_block = 15012300,
                 .account_share = 0.30,
                 .contract_share = 0.05,
                 .txs_mean = 186.6,
                 .txs_sigma = 0.5,
                 .empty_block = 0.01,
                 .ops_per_tx = 17.91,
                 .read_fraction = 0.602,
                 .transfer_share = 0.35,
                 .new_recipient = 0.10,
                 .theta_contract = 1.1,
                 .theta_slot = 1.0,
                 .theta_eoa = 0.9,
                 .create_share = 0.12,
                 .delete_share = 0.06,
                 .deploy_prob = 0.003,
                 .body_account = 0.15,
                 .other_contract = 0.30,
                 .rmw_share = 0.6,
                 .body_sigma = 1.0};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            gen_usage(stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "qmdb-trace gen: %s needs a value\n", a);
            return 2;
        }
        char *end = NULL;
        errno = 0;
        struct {
            const char *n;
            uint64_t *u;
            double *d;
        } opts[] = {{"--init-entries", &c.init_entries, NULL},
                    {"--init-block-ops", &c.init_block_ops, NULL},
                    {"--ops", &c.ops, NULL},
                    {"--blocks", &c.blocks, NULL},
                    {"--seed", &c.seed, NULL},
                    {"--first-block", &c.first_block, NULL},
                    {"--blocks-per-file", &c.blocks_per_file, NULL},
                    {"--read-fraction", NULL, &c.read_fraction},
                    {"--ops-per-tx", NULL, &c.ops_per_tx},
                    {"--txs-per-block", NULL, &c.txs_mean},
                    {"--theta-contract", NULL, &c.theta_contract},
                    {"--theta-slot", NULL, &c.theta_slot},
                    {"--theta-eoa", NULL, &c.theta_eoa},
                    {"--create-share", NULL, &c.create_share},
                    {"--delete-share", NULL, &c.delete_share}};
        int found = 0, bad = 0;
        if (strcmp(a, "--init-out") == 0) {
            c.init_out = v, found = 1;
        } else if (strcmp(a, "--trace-out") == 0) {
            c.trace_out = v, found = 1;
        }
        for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]) && !found; k++) {
            if (strcmp(a, opts[k].n) != 0)
                continue;
            found = 1;
            if (opts[k].u) {
                *opts[k].u = strtoull(v, &end, 10);
                bad = *v == '-';
            } else {
                *opts[k].d = strtod(v, &end);
                bad = *opts[k].d < 0;
            }
            bad = bad || errno || end == v || *end;
        }
        if (!found || bad) {
            fprintf(stderr, "qmdb-trace gen: %s '%s'\n", found ? "bad value for" : "unknown option",
                    a);
            gen_usage(stderr);
            return 2;
        }
    }
    if (!c.init_out || !c.trace_out || !c.init_block_ops || c.init_entries < 100 ||
        c.theta_slot <= 0 || c.theta_contract <= 0 || c.theta_eoa <= 0 ||
        c.create_share + c.delete_share >= 1 || c.read_fraction >= 1 || c.txs_mean < 1) {
        fprintf(stderr, "qmdb-trace gen: needs --init-out and --trace-out, --init-entries >= "
                        "100, positive thetas, create+delete share < 1, read fraction < 1\n");
        return 2;
    }
    gen G;
    memset(&G, 0, sizeof(G));
    G.c = &c;
    for (int i = 0; i < 4; i++)
        G.g.s[i] = mix64(c.seed * 4 + (uint64_t)i + 0x5EED);
    int rc = gen_init(&G);
    if (!rc)
        rc = gen_trace(&G);
    for (uint64_t j = 0; j < G.n_ct; j++)
        free(G.ct[j].dead);
    free(G.ct);
    return rc ? 1 : 0;
}
