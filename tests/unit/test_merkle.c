/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_merkle.c -- the shard tree (merkle.c) drops pruned twigs from its arrays without
 * changing a root: tree A prunes, tree B applies the same appends and deactivations and never
 * prunes, and a from-scratch computation of FORMAT.md §4 over B's twigs is the reference.
 * Checks that the roots stay equal (commits with pruning before and after hashing, a full
 * rehash), that A's DRAM drops by the pruned twigs' share and stays flat while pruning keeps
 * pace, that proof paths of live entries (leaf to root, through qm_tree_node) verify and
 * equal B's, and that a tree recovered from the pruned twigs' left roots has the same root.
 */
#include "../test.h"
#include "hash.h"
#include "merkle.h"

#define LIVE 12    /* twigs kept live behind the youngest */
#define PHASE1 400 /* twigs appended before A prunes anything */
#define PHASE2 240 /* twigs appended while A prunes as it goes */

static u64 rng = 0x9e3779b97f4a7c15ull;

static u64
rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void
leaf_of(u64 sn, u8 out[32])
{
    qm_sha256(&sn, sizeof(sn), out);
}

static void
append_twig(qm_tree *a, qm_tree *b)
{
    for (unsigned i = 0; i < 2048; i++) {
        u8 leaf[32];
        leaf_of(a->next_sn, leaf);
        bool fa, fb;
        REQUIRE(qm_tree_append(a, leaf, a->next_sn * 100, &fa) == 0);
        REQUIRE(qm_tree_append(b, leaf, b->next_sn * 100, &fb) == 0);
        REQUIRE(fa == fb);
        if (fa) {
            CHECK(memcmp(qm_tree_full_nodes(a)[1], qm_tree_full_nodes(b)[1], 32) == 0);
            qm_tree_start_next_twig(a);
            qm_tree_start_next_twig(b);
        }
    }
}

static void
deactivate(qm_tree *a, qm_tree *b, u64 sn, u64 height)
{
    if (!qm_tree_is_active(a, sn))
        return;
    REQUIRE(qm_tree_is_active(b, sn));
    qm_tree_deactivate(a, sn, height);
    qm_tree_deactivate(b, sn, height);
}

/* The shard root of FORMAT.md §4, from every twig of a tree that never pruned. */
static void
ref_root(const qm_tree *b, u8 out[32])
{
    u64 y = b->ntwigs - 1, n = y + 1;
    u8(*lv)[32] = malloc(n * 32);
    REQUIRE(lv);
    for (u64 id = 0; id <= y; id++) {
        const qm_twig *tw = qm_tree_twig(b, id);
        qm_twig_root(id == y ? b->ltree[1] : tw->left_root, tw->active, lv[id]);
    }
    unsigned maxl = 13;
    for (u64 v = y; v > 1; v >>= 1)
        maxl++;
    for (unsigned l = 12; l < maxl; l++) {
        u64 m = (n + 1) / 2;
        for (u64 i = 0; i < m; i++)
            qm_h2((u8)l, lv[2 * i], 2 * i + 1 < n ? lv[2 * i + 1] : qm_null_node(l), lv[i]);
        n = m;
    }
    memcpy(out, lv[0], 32);
    free(lv);
}

static void
commit_both(qm_tree *a, qm_tree *b, bool check_ref)
{
    REQUIRE(qm_tree_commit(a) == 0);
    REQUIRE(qm_tree_commit(b) == 0);
    CHECK(memcmp(a->root, b->root, 32) == 0);
    if (check_ref) {
        u8 r[32];
        ref_root(b, r);
        CHECK(memcmp(b->root, r, 32) == 0);
    }
}

/*
 * The proof path of SN sn in tree t (committed), built as proof.c builds it: left-tree
 * siblings (recomputed here from the leaves, as the twig file holds them), the twig's
 * ActiveBits, upper siblings through qm_tree_node; it must lead to t's root, and the upper
 * siblings must equal those of the never-pruned tree b.
 */
static void
check_path(const qm_tree *t, const qm_tree *b, u64 sn)
{
    static u8 heap[QM_LEFT_NODES][32];
    u64 tid = sn >> QM_TWIG_SHIFT;
    REQUIRE(tid >= t->first_twig && qm_tree_is_active(t, sn));
    qm_left_tree_null(heap);
    for (u64 s = tid << QM_TWIG_SHIFT; s < t->next_sn && s < (tid + 1) << QM_TWIG_SHIFT; s++)
        leaf_of(s, heap[2048 + (s & QM_TWIG_MASK)]);
    qm_left_tree_update(heap, 0, 2048);
    u8 node[32], tmp[32];
    leaf_of(sn, node);
    unsigned j = 2048 + (unsigned)(sn & QM_TWIG_MASK);
    for (unsigned l = 0; l < 11; l++, j >>= 1) {
        if (j & 1)
            qm_h2((u8)l, heap[j ^ 1], node, tmp);
        else
            qm_h2((u8)l, node, heap[j ^ 1], tmp);
        memcpy(node, tmp, 32);
    }
    qm_twig_root(node, qm_tree_twig(t, tid)->active, tmp);
    memcpy(node, tmp, 32);
    for (unsigned i = 0; i < t->max_level - 12; i++) {
        unsigned L = 12 + i;
        u64 idx = (tid >> i) ^ 1;
        const u8 *sib = qm_tree_node(t, L, idx);
        CHECK(memcmp(sib, qm_tree_node(b, L, idx), 32) == 0);
        if ((tid >> i) & 1)
            qm_h2((u8)L, sib, node, tmp);
        else
            qm_h2((u8)L, node, sib, tmp);
        memcpy(node, tmp, 32);
    }
    CHECK(memcmp(node, t->root, 32) == 0);
}

/* Proof paths of a sample of live SNs, in every unpruned twig. */
static void
check_paths(const qm_tree *a, const qm_tree *b)
{
    for (u64 id = a->first_twig; id < a->ntwigs; id++) {
        unsigned found = 0;
        for (unsigned k = 0; k < 4096 && found < 2; k++) {
            u64 sn = (id << QM_TWIG_SHIFT) + rnd() % 2048;
            if (sn < a->next_sn && qm_tree_is_active(a, sn)) {
                check_path(a, b, sn);
                found++;
            }
        }
    }
}

/* A tree recovered as recover.c does it: the pruned twigs only through their left roots. */
static void
check_recover(const qm_tree *a, const qm_tree *b)
{
    qm_tree c;
    REQUIRE(qm_tree_init(&c) == 0);
    REQUIRE(qm_tree_recover_begin(&c, a->first_twig, a->ntwigs) == 0);
    CHECK_EQ_U64(c.twig_base, a->first_twig);
    qm_edge_builder eb = {0};
    for (u64 id = 0; id < a->first_twig; id++)
        qm_tree_add_pruned(&c, &eb, qm_tree_twig(b, id)->left_root);
    for (u64 id = a->first_twig; id < a->ntwigs; id++) {
        const qm_twig *s = qm_tree_twig(a, id);
        qm_twig *d = qm_tree_twig(&c, id);
        memcpy(d->left_root, s->left_root, 32);
        memcpy(d->active, s->active, QM_ACTIVE_BYTES);
        d->nactive = s->nactive;
        d->first_pos = s->first_pos;
        d->deact_height = s->deact_height;
    }
    c.next_sn = a->next_sn;
    memcpy(c.ltree, a->ltree, QM_LEFT_NODES * 32);
    qm_tree_mark_all_dirty(&c);
    REQUIRE(qm_tree_commit(&c) == 0);
    CHECK(memcmp(c.root, a->root, 32) == 0);
    CHECK(qm_tree_dram_bytes(&c) <= qm_tree_dram_bytes(a) + 16 * 1024);
    check_paths(&c, b);
    qm_tree_free(&c);
}

static void
test_prune_shrinks(void)
{
    qm_tree a, b;
    REQUIRE(qm_tree_init(&a) == 0);
    REQUIRE(qm_tree_init(&b) == 0);
    const u64 fixed = sizeof(qm_tree) + QM_LEFT_NODES * 32;
    u64 height = 1;

    /* Phase 1: PHASE1 twigs, all but the last LIVE deactivated, none pruned. */
    for (u64 r = 0; r < PHASE1; r++, height++) {
        append_twig(&a, &b);
        if (r >= LIVE)
            for (u64 sn = (r - LIVE) << QM_TWIG_SHIFT; sn < (r - LIVE + 1) << QM_TWIG_SHIFT; sn++)
                deactivate(&a, &b, sn, height);
        for (unsigned k = 0; k < 64; k++) {
            u64 lo = r >= LIVE ? (r - LIVE + 1) << QM_TWIG_SHIFT : 0;
            deactivate(&a, &b, lo + rnd() % (a.next_sn - lo), height);
        }
        commit_both(&a, &b, r % 50 == 0);
    }
    check_paths(&a, &b);
    u64 before = qm_tree_dram_bytes(&a);
    u64 prunable = PHASE1 - LIVE;
    for (u64 id = 0; id < prunable; id++)
        qm_tree_prune_twig(&a, id);
    u64 after = qm_tree_dram_bytes(&a);
    /* Each pruned twig held 256 B of ActiveBits, a 64 B slot and about 2 upper nodes. */
    CHECK(before - fixed >= prunable * (QM_ACTIVE_BYTES + sizeof(qm_twig) + 32));
    CHECK((after - fixed) * 10 < before - fixed);
    CHECK(a.twig_base == a.first_twig && a.first_twig == prunable);
    fprintf(stderr,
            "test_merkle: tree DRAM above the fixed %" PRIu64 " B: %" PRIu64 " B with %" PRIu64
            " twigs, %" PRIu64 " B after pruning %" PRIu64 "\n",
            fixed, before - fixed, a.ntwigs, after - fixed, prunable);
    /* Proofs and roots after the rebase, before any further commit... */
    check_paths(&a, &b);
    REQUIRE(qm_tree_commit(&a) == 0);
    CHECK(memcmp(a.root, b.root, 32) == 0);
    check_recover(&a, &b);

    /* Phase 2: pruning keeps pace; the DRAM of A stays flat while B's grows. */
    u64 max_after = 0;
    for (u64 r = PHASE1; r < PHASE1 + PHASE2; r++, height++) {
        append_twig(&a, &b);
        u64 old = r - LIVE;
        for (u64 sn = old << QM_TWIG_SHIFT; sn < (old + 1) << QM_TWIG_SHIFT; sn++)
            deactivate(&a, &b, sn, height);
        for (unsigned k = 0; k < 64; k++) {
            u64 lo = (old + 1) << QM_TWIG_SHIFT;
            deactivate(&a, &b, lo + rnd() % (a.next_sn - lo), height);
        }
        switch (r % 4) {
        case 0: /* prune the just-emptied twig before hashing it: no trim until the commit */
            qm_tree_prune_twig(&a, old);
            commit_both(&a, &b, r % 20 == 0);
            break;
        case 1: /* prune after the commit, with later deactivations pending */
            commit_both(&a, &b, false);
            for (unsigned k = 0; k < 16; k++) {
                u64 lo = (old + 1) << QM_TWIG_SHIFT;
                deactivate(&a, &b, lo + rnd() % (a.next_sn - lo), height);
            }
            qm_tree_prune_twig(&a, old);
            commit_both(&a, &b, r % 20 == 1);
            break;
        case 2: /* a full rehash of what A holds */
            commit_both(&a, &b, false);
            qm_tree_prune_twig(&a, old);
            qm_tree_mark_all_dirty(&a);
            qm_tree_mark_all_dirty(&b);
            commit_both(&a, &b, true);
            break;
        default:
            commit_both(&a, &b, false);
            qm_tree_prune_twig(&a, old);
            break;
        }
        u64 d = qm_tree_dram_bytes(&a);
        if (d > max_after)
            max_after = d;
        if (r % 60 == 0)
            check_paths(&a, &b);
    }
    REQUIRE(qm_tree_commit(&a) == 0);
    check_paths(&a, &b);
    check_recover(&a, &b);
    u64 bb = qm_tree_dram_bytes(&b);
    /* The twig array grows by a quarter at a time: never more than that above what it holds. */
    CHECK(b.cap * 4 <= (b.ntwigs - b.twig_base) * 5 + 32);
    fprintf(stderr,
            "test_merkle: while pruning: at most %" PRIu64 " B above the fixed part (the tree "
            "that never prunes: %" PRIu64 " B)\n",
            max_after - fixed, bb - fixed);
    CHECK(max_after - fixed < 4 * (after - fixed) + 8192);
    CHECK((max_after - fixed) * 10 < bb - fixed);
    /* Pruned twigs still held: fewer than 8, or than a third of the live ones (TRIM_MIN). */
    u64 held_pruned = a.first_twig - a.twig_base;
    CHECK(held_pruned < 8 || held_pruned * 3 <= a.ntwigs - a.first_twig);
    qm_tree_free(&a);
    qm_tree_free(&b);
}

/* A tree pruned from its first commits: bases at small ids, odd and even. */
static void
test_small(void)
{
    for (u64 keep = 1; keep <= 3; keep++) {
        qm_tree a, b;
        REQUIRE(qm_tree_init(&a) == 0);
        REQUIRE(qm_tree_init(&b) == 0);
        for (u64 r = 0; r < 40; r++) {
            append_twig(&a, &b);
            if (r >= keep) {
                u64 old = r - keep;
                for (u64 sn = old << QM_TWIG_SHIFT; sn < (old + 1) << QM_TWIG_SHIFT; sn++)
                    deactivate(&a, &b, sn, r + 1);
                commit_both(&a, &b, true);
                qm_tree_prune_twig(&a, old);
            } else {
                commit_both(&a, &b, true);
            }
            check_paths(&a, &b);
            check_recover(&a, &b);
        }
        qm_tree_free(&a);
        qm_tree_free(&b);
    }
}

int
main(void)
{
    test_small();
    test_prune_shrinks();
    return test_report("test_merkle");
}
