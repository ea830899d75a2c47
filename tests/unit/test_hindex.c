/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hindex.c -- the hybrid indexer (run file + overlays + background merges) against the
 * in-memory indexer as the model: a bulk load, then random inserts/erasures/replacements with
 * 6-byte-prefix collisions and keys near run-page boundaries, comparing find/pred (as sets),
 * foreach and count across merges; the checkpoint round trip (blob, stale states, a flipped
 * byte in a record page, a missing file); an empty run (overlay only) and qm_hix_page_of;
 * run pages handed to the lookups in a batch (qm_hix_pages_use), whole, damaged or misplaced;
 * the search inside a run page (hix_page_search) against a scan; the default merge size,
 * staggered by shard for a handle's first overlay (test_stagger).
 */
#include "../test.h"
#include "codec.h"
#include "hindex.h"
#include "hindex_int.h"
#include "hugefolio.h"
#include "indexer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SHARD 3u
#define NUNITS 64
#define NBULK 5000
#define BIG 400 /* bulk records sharing one 6-byte prefix: the group spans a page boundary */
#define STEPS 20000
#define MAXSLOTS (NBULK + BIG + NUNITS + STEPS + 4000)
/* Every position ever allocated is slot s's: fresh, strictly increasing, < 2^51. */
#define POS_BASE (((u64)1 << 51) - 8 * (u64)(MAXSLOTS + 1))
#define POS(s) (POS_BASE + 8 * (u64)(s))
#define SLOT(p) ((u32)(((p)-POS_BASE) / 8))
#define CAP 4096
QM_STATIC_ASSERT(sizeof(qm_hix_state) == 80, "offsets below");

typedef struct kp {
    u8 k[6];
    u64 pos;
} kp;

static char dir[] = "/tmp/qmdb-test-hixXXXXXX";
static u64 rng = 0x9e3779b97f4a7c15ull;
static u8 khs[MAXSLOTS][32];
static u8 sentry[MAXSLOTS];
static u32 nslots, nlive, live_list[MAXSLOTS], live_at[MAXSLOTS];
static unsigned units[NUNITS];
static qm_index ref;
static u8 bounds[512][6]; /* key6 around every 341st record: near run-page starts */
static int nbounds;
static kp refl[MAXSLOTS], *fe;
static size_t nfe, capfe;
static int fe_sorted;
static u64 ga[CAP], gb[CAP];
static u8 big[32]; /* the prefix of the BIG group */

static u64
rnd(void)
{
    return test_xorshift(&rng);
}

static u32
get32(const u8 *p)
{
    return ((u32)p[0] << 24) | ((u32)p[1] << 16) | ((u32)p[2] << 8) | p[3];
}

static void
set_unit(u8 *kh, unsigned u)
{
    kh[0] = (u8)((SHARD << 4) | (u >> 8));
    kh[1] = (u8)u;
}

static u32
new_slot(const u8 kh[32])
{
    u32 s = nslots++;
    REQUIRE(s < MAXSLOTS);
    memcpy(khs[s], kh, 32);
    live_at[s] = nlive;
    live_list[nlive++] = s;
    return s;
}

static void
kill_slot(u32 s)
{
    u32 last = live_list[--nlive];
    live_list[live_at[s]] = last;
    live_at[last] = live_at[s];
}

/* mode 0: random key in one of the units; 1: another key's 6-byte prefix; 2: near a page
 * start. Bytes [2..6) are never all zero: only sentries have their unit's lowest prefix. */
static void
gen_key(u8 kh[32], int mode)
{
    for (int i = 0; i < 32; i++)
        kh[i] = (u8)rnd();
    set_unit(kh, units[rnd() % NUNITS]);
    if (mode == 1 && nslots > 0)
        memcpy(kh, khs[rnd() % nslots], 6);
    if (mode == 2 && nbounds > 0) {
        memcpy(kh, bounds[rnd() % (u64)nbounds], 6);
        kh[5] = (u8)(kh[5] + rnd() % 3 - 1);
    }
    if (get32(kh + 2) == 0)
        kh[5] = 1;
}

static int
cmp_u64(const void *a, const void *b)
{
    u64 x = *(const u64 *)a, y = *(const u64 *)b;
    return x < y ? -1 : x > y;
}

static int
cmp_kp(const void *a, const void *b)
{
    const kp *x = a, *y = b;
    int c = memcmp(x->k, y->k, 6);
    return c ? c : x->pos < y->pos ? -1 : x->pos > y->pos;
}

typedef int (*hix_fn)(qm_hindex *, const u8 *, u64 *, size_t, size_t *);
typedef size_t (*model_fn)(const qm_index *, const u8 *, u64 *, size_t);

/* One lookup (as a set of positions, with the total) against the model's. */
static void
check_one(qm_hindex *x, const u8 kh[32], hix_fn hix, model_fn mod, const char *what)
{
    size_t n = 0, m = mod(&ref, kh, gb, CAP), fails = (size_t)test_failures;
    memset(ga, 0xff, sizeof(ga)); /* positions counted but never written show up */
    CHECK_OK(hix(x, kh, ga, CAP, &n));
    CHECK_EQ_U64(n, m);
    REQUIRE(m <= CAP);
    qsort(ga, QM_MIN(n, m), 8, cmp_u64);
    qsort(gb, QM_MIN(n, m), 8, cmp_u64);
    CHECK(n == m && memcmp(ga, gb, n * 8) == 0);
    u64 few[2]; /* a short buffer still gets the total count, and only true positions */
    if (n == m && n >= 3) {
        size_t k = 0;
        CHECK_OK(hix(x, kh, few, 2, &k));
        CHECK_EQ_U64(k, m);
        CHECK(bsearch(&few[0], gb, m, 8, cmp_u64) && bsearch(&few[1], gb, m, 8, cmp_u64));
    }
    if ((size_t)test_failures != fails) {
        fprintf(stderr, "  %s differs (%zu vs %zu positions) for", what, n, m);
        test_hexdump("", kh, 8);
    }
}

/* find, then pred, against the model. */
static void
check_lookup(qm_hindex *x, const u8 kh[32])
{
    check_one(x, kh, qm_hix_find, qm_index_find, "find");
    /* pred of a sentry prefix lies in the previous unit, not in the model's answer */
    if (get32(kh + 2))
        check_one(x, kh, qm_hix_pred, qm_index_pred_candidates, "pred");
}

static int
fe_cb(void *arg, const u8 key6[6], u64 pos)
{
    (void)arg;
    if (nfe > 0 && memcmp(fe[nfe - 1].k, key6, 6) > 0)
        fe_sorted = 0;
    if (nfe == capfe) {
        capfe = capfe ? 2 * capfe : 4096;
        fe = realloc(fe, capfe * sizeof(kp));
        REQUIRE(fe != NULL);
    }
    memcpy(fe[nfe].k, key6, 6);
    fe[nfe++].pos = pos;
    return 0;
}

static int
stop_cb(void *arg, const u8 key6[6], u64 pos)
{
    (void)key6, (void)pos;
    return ++*(int *)arg == 10 ? 7 : 0;
}

/* The model's records sorted by (key6, pos) into refl; returns their number. */
static size_t
ref_list(void)
{
    size_t n = 0;
    for (unsigned u = 0; u < QM_UNITS_PER_SHARD; u++)
        for (u32 i = 0; i < ref.units[u].n; i++) {
            const u8 *r = ref.units[u].recs + (size_t)i * QM_INDEX_REC;
            REQUIRE(n < MAXSLOTS);
            set_unit(refl[n].k, u);
            memcpy(refl[n].k + 2, r, 4);
            refl[n++].pos = qm_get_u48be(r + 4) * 8;
        }
    qsort(refl, n, sizeof(kp), cmp_kp);
    return n;
}

/* foreach (in key order) and count equal the model; refreshes the page-start keys. */
static void
check_all(qm_hindex *x)
{
    nfe = 0;
    fe_sorted = 1;
    CHECK_OK(qm_hix_foreach(x, fe_cb, NULL));
    CHECK(fe_sorted);
    size_t n = ref_list();
    CHECK_EQ_U64(ref.count, n);
    CHECK_EQ_U64(nfe, n);
    CHECK_EQ_U64(qm_hix_count(x), n);
    if (nfe > 0)
        qsort(fe, nfe, sizeof(kp), cmp_kp);
    size_t bad = 0;
    for (size_t i = 0; i < n && i < nfe; i++)
        bad += cmp_kp(&fe[i], &refl[i]) != 0;
    CHECK_EQ_U64(bad, 0);
    nbounds = 0;
    for (size_t i = QM_HIX_PER_PAGE; i < n && nbounds + 2 <= 512; i += QM_HIX_PER_PAGE) {
        memcpy(bounds[nbounds++], refl[i].k, 6);
        memcpy(bounds[nbounds++], refl[i - 1].k, 6);
    }
}

/* Calls maintain repeatedly (merges run on their own thread) until one more merge installs. */
static void
settle(qm_hindex *x, int tries)
{
    u64 m0 = qm_hix_merges(x);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < tries && qm_hix_merges(x) == m0; i++) {
        qm_hix_install(x);
        CHECK_OK(qm_hix_maintain(x, 0, NULL, NULL));
        nanosleep(&ms, NULL);
    }
}

static void
do_insert(qm_hindex *x, const u8 kh[32])
{
    u32 s = new_slot(kh);
    CHECK_OK(qm_hix_insert(x, kh, POS(s)));
    CHECK_OK(qm_index_insert(&ref, kh, POS(s)));
}

static void
do_erase(qm_hindex *x, u32 s)
{
    CHECK_OK(qm_hix_erase(x, khs[s], POS(s)));
    CHECK_OK(qm_index_erase(&ref, khs[s], POS(s)));
    kill_slot(s);
}

/* Erases up to k records that follow slot s in its unit (empties whole run pages). */
static void
erase_run(qm_hindex *x, u32 s, int k)
{
    const qm_index_unit *u = &ref.units[((khs[s][0] & 0x0f) << 8) | khs[s][1]];
    u32 i = 0, todo[64], nt = 0;
    while (i < u->n && qm_get_u48be(u->recs + (size_t)i * QM_INDEX_REC + 4) * 8 != POS(s))
        i++;
    for (; i < u->n && (int)nt < k; i++) {
        u32 t = SLOT(qm_get_u48be(u->recs + (size_t)i * QM_INDEX_REC + 4) * 8);
        if (!sentry[t])
            todo[nt++] = t;
    }
    for (u32 j = 0; j < nt; j++)
        do_erase(x, todo[j]);
}

static void
spill(const char *p, const u8 *b, size_t n)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0 && pwrite(fd, b, n, 0) == (ssize_t)n);
    close(fd);
}

/* Random changes and lookups against the model, with maintain calls along the way. */
static void
random_steps(qm_hindex *x, int steps)
{
    u8 kh[32];
    for (int step = 0; step < steps && test_failures < 20; step++) {
        int op = (int)(rnd() % 100);
        u32 s = live_list[rnd() % nlive];
        int mode = (int)(rnd() % 10);
        mode = mode < 5 ? 0 : mode < 8 ? 1 : 2;
        if (op < 30) {
            gen_key(kh, mode);
            do_insert(x, kh);
        } else if (op < 42) {
            if (!sentry[s])
                do_erase(x, s);
        } else if (op < 43) {
            erase_run(x, s, 1 + (int)(rnd() % 40));
        } else if (op < 56) {
            u32 t = new_slot(khs[s]); /* replace: the same key moves to a fresh position */
            sentry[t] = sentry[s];
            CHECK_OK(qm_hix_replace(x, khs[s], POS(s), POS(t)));
            CHECK_OK(qm_index_replace(&ref, khs[s], POS(s), POS(t)));
            kill_slot(s);
        } else {
            if (op < 70)
                memcpy(kh, khs[s], 32);
            else
                gen_key(kh, mode);
            check_lookup(x, kh);
        }
        if (step % 50 == 49) {
            qm_hix_install(x);
            CHECK_OK(qm_hix_maintain(x, 0, NULL, NULL));
        }
        if (step % 1000 == 999) {
            settle(x, 300);
            check_all(x);
            check_lookup(x, big);
        }
    }
}

/* Lookups of every live key with a fresh memo, each hinted 8 keys ahead as the batched reads
 * and the update stage hint theirs (qm_hix_prefetch: the hint changes no answer); the run
 * pages they read. */
static u64
lookup_live(qm_hindex *x)
{
    u64 r0 = qm_hix_page_reads(x);
    for (u32 i = 0; i < nlive; i++) {
        if (i + 8 < nlive)
            qm_hix_prefetch(x, khs[live_list[i + 8]]);
        check_lookup(x, khs[live_list[i]]);
    }
    return qm_hix_page_reads(x) - r0;
}

/* A merge that finishes after a block's lookups filled the memo waits for qm_hix_install (the
 * end of the update stage): maintain, before the update stage, leaves it, and the update
 * stage's lookups read no run page again. */
static void
test_install_after_block(qm_hindex *x)
{
    u8 kh[32];
    for (int i = 0; i < 100; i++) { /* over the merge threshold (64 changes) */
        gen_key(kh, 0);
        do_insert(x, kh);
    }
    u64 m0 = qm_hix_merges(x);
    CHECK_OK(qm_hix_maintain(x, 0, NULL, NULL)); /* freezes, asks for a merge */
    CHECK_OK(qm_hix_memo_reserve(x, nlive));
    u64 first = lookup_live(x);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 10000 && !qm_hix_merge_waiting(x); i++) { /* the merge ends meanwhile */
        CHECK_OK(qm_hix_maintain(x, 0, NULL, NULL));
        nanosleep(&ms, NULL);
    }
    CHECK(qm_hix_merge_waiting(x));
    CHECK_OK(qm_hix_maintain(x, 0, NULL, NULL)); /* before a block: leaves it */
    CHECK(qm_hix_merge_waiting(x));
    CHECK_EQ_U64(qm_hix_merges(x), m0);
    u64 again = lookup_live(x);
    CHECK(first > 0);
    /* Keys whose records do not fit a memo entry (shared prefixes, the big group) are read
     * again: this set has many of them; random key hashes almost none. */
    CHECK(again * 2 <= first);
    qm_hix_install(x); /* after the block */
    CHECK_EQ_U64(qm_hix_merges(x), m0 + 1);
    CHECK(!qm_hix_merge_waiting(x));
    qm_hix_memo_reset(x);
    CHECK(lookup_live(x) > 0); /* a new run: its pages are read */
    check_all(x);
}

/* Reads between blocks (no update stage follows them to empty the memo) fill it; the next
 * block's lookups must still be remembered, or its update stage reads their pages again. The
 * memo once refused every answer when full. */
static void
test_memo_full(qm_hindex *x)
{
    enum { NB = 300 };
    static u8 blk[NB][32];
    u8 kh[32];
    u64 pos[8];
    size_t n;
    qm_hix_memo_reset(x);
    CHECK_OK(qm_hix_memo_reserve(x, NB));
    u64 fill = qm_hix_memo_bytes(x) / 48; /* more than half the slots (an entry is larger) */
    CHECK(fill >= NB);
    for (u64 i = 0; i < fill; i++) { /* the reads */
        gen_key(kh, 0);
        CHECK_OK(qm_hix_find(x, kh, pos, QM_ARRAY_LEN(pos), &n));
    }
    u64 r0 = qm_hix_page_reads(x);
    for (int i = 0; i < NB; i++) { /* the block's batched reads: find, and pred if absent */
        gen_key(blk[i], 0);
        CHECK_OK(qm_hix_find(x, blk[i], pos, QM_ARRAY_LEN(pos), &n));
        CHECK_OK(qm_hix_pred(x, blk[i], pos, QM_ARRAY_LEN(pos), &n));
    }
    u64 first = qm_hix_page_reads(x) - r0;
    CHECK_OK(qm_hix_memo_reserve(x, NB)); /* the prefetch stage */
    r0 = qm_hix_page_reads(x);
    for (int i = 0; i < NB; i++) /* the update stage: the same answers, from the memo */
        check_lookup(x, blk[i]);
    u64 again = qm_hix_page_reads(x) - r0;
    CHECK(first >= NB / 3);
    CHECK(again * 4 <= first); /* keys whose records do not fit an entry are read again */
    printf("memo full: %" PRIu64 " page reads, then %" PRIu64 "\n", first, again);
    qm_hix_memo_reset(x);
    /* An outsized block's table is given back after a run of 16 small blocks, not after one
     * (an empty block would leave the next one's batched reads too few slots); a usual one
     * is kept. */
    CHECK_OK(qm_hix_memo_reserve(x, 40000));
    u64 wide = qm_hix_memo_bytes(x);
    CHECK(wide > (256u << 10));
    for (int b = 0; b < 16; b++) {
        CHECK_EQ_U64(qm_hix_memo_bytes(x), wide);
        for (int i = 0; i < NB; i++)
            check_lookup(x, blk[i]);
        qm_hix_memo_reset(x);
    }
    CHECK(qm_hix_memo_bytes(x) > 0 && qm_hix_memo_bytes(x) <= wide / 16);
    u64 small = qm_hix_memo_bytes(x);
    CHECK_OK(qm_hix_memo_reserve(x, NB));
    for (int i = 0; i < NB; i++)
        check_lookup(x, blk[i]);
    qm_hix_memo_reset(x);
    CHECK_EQ_U64(qm_hix_memo_bytes(x), small);
}

/* What point lookups told their hint (qm_hix_find_point): the last lookup's positions, and
 * over all lookups the positions answered and how many of them had been hinted. */
static u64 hinted[64];
static size_t nhinted;
static u64 hint_answers, hint_hits;

static void
note_hint(void *arg, u64 pos)
{
    CHECK(arg == &nhinted);
    if (nhinted < QM_ARRAY_LEN(hinted))
        hinted[nhinted++] = pos;
}

static int
find_point_hinted(qm_hindex *x, const u8 *kh, u64 *out, size_t cap, size_t *n)
{
    nhinted = 0;
    int rc = qm_hix_find_point(x, kh, out, cap, n, note_hint, &nhinted);
    for (size_t i = 0; !rc && i < QM_MIN(*n, cap); i++) {
        hint_answers++;
        for (size_t k = 0; k < nhinted; k++)
            if (hinted[k] == out[i]) {
                hint_hits++;
                break;
            }
    }
    return rc;
}

/* One round of point lookups of every live key and as many absent ones, each checked against
 * the model; the run pages they took. */
static u64
point_round(qm_hindex *x, const u8 (*absent)[32], u32 nabsent)
{
    u64 r0 = qm_hix_page_reads(x);
    for (u32 i = 0; i < nlive + nabsent; i++)
        check_one(x, i < nlive ? khs[live_list[i]] : absent[i - nlive], find_point_hinted,
                  qm_index_find, "point find");
    return qm_hix_page_reads(x) - r0;
}

/* Point lookups (qm_hix_find_point) answer as the model does. While the logs fit in memory
 * (nothing else is open in this process) they leave the memo alone: a second round takes the
 * run pages again. When the logs do not fit (here: a huge log counted, qm_huge_account) they
 * ask and fill it as qm_hix_find does, so the second round takes few pages. */
static void
test_point_lookup(qm_hindex *x)
{
    enum { NABS = 2000 };
    static u8 absent[NABS][32];
    for (int i = 0; i < NABS; i++)
        gen_key(absent[i], 0);
    CHECK(qm_logs_fit());
    qm_hix_memo_reset(x);
    CHECK_OK(qm_hix_memo_reserve(x, nlive + NABS));
    hint_answers = hint_hits = 0;
    u64 first = point_round(x, absent, NABS);
    u64 again = point_round(x, absent, NABS);
    CHECK(first >= nlive / 2);
    CHECK(again * 10 >= first * 9); /* the thread's few cached pages differ at the start */
    printf("point lookups: %" PRIu64 " page reads, then %" PRIu64 "; %" PRIu64 " of %" PRIu64
           " positions found hinted first\n",
           first, again, hint_hits, hint_answers);
    /* Positions the run holds are hinted (41% of the answers here: the overlays hold the
     * rest, and their positions are not). */
    CHECK(hint_answers >= nlive && hint_hits * 3 >= hint_answers && hint_hits < hint_answers);
    qm_hix_memo_reset(x);
    const int64_t huge = (int64_t)1 << 62;
    qm_huge_account(huge);
    CHECK(!qm_logs_fit());
    CHECK_OK(qm_hix_memo_reserve(x, nlive + NABS));
    first = point_round(x, absent, NABS);
    again = point_round(x, absent, NABS);
    qm_huge_account(-huge);
    CHECK(qm_logs_fit());
    CHECK(first >= nlive / 2);
    CHECK(again * 4 <= first); /* keys whose records do not fit an entry are read again */
    printf("point lookups: %" PRIu64 " page reads, then %" PRIu64 " with the memo\n", first, again);
    qm_hix_memo_reset(x);
}

/* Run positions of kh's lookup with a fresh memo (so its run page is read). */
static size_t
find_fresh(qm_hindex *x, const u8 kh[32], u64 *out)
{
    size_t n = 0;
    qm_hix_memo_reset(x);
    CHECK_OK(qm_hix_find(x, kh, out, CAP, &n));
    return n;
}

/* Looks up keys of eight other run pages, so the lookup thread's four page slots hold none
 * of page `off`: at most three of them can be found in the slots, so at least five are
 * admitted, in turn, to every slot. */
static void
flush_slots(qm_hindex *x, u64 off)
{
    u64 seen[8];
    int n = 0;
    for (u32 i = 0; i < nlive && n < 8; i++) {
        const u8 *kh = khs[live_list[i]];
        int fd;
        u64 o;
        if (!qm_hix_page_of(x, kh, &fd, &o) || o == off)
            continue;
        bool dup = false;
        for (int k = 0; k < n; k++)
            dup |= seen[k] == o;
        if (dup)
            continue;
        seen[n++] = o;
        (void)find_fresh(x, kh, ga);
    }
    CHECK(n == 8);
}

/* A lookup takes its run page from the batch when the batch holds it whole: a crafted page
 * (one position changed, the CRC made to match) is what it reads. A damaged page, or another
 * page's bytes under this page's offset, is not taken: the lookup reads the run's own. */
static void
test_pages(qm_hindex *x)
{
    /* A live key whose only record sits in the run page its lookup reads. */
    int fd = -1;
    u64 off = 0, pos = 0;
    u8 pg[QM_HIX_PAGE], kh[32];
    size_t at = SIZE_MAX;
    for (u32 i = 0; i < nlive && at == SIZE_MAX; i++) {
        memcpy(kh, khs[live_list[i]], 32);
        if (qm_index_find(&ref, kh, gb, CAP) != 1 || !qm_hix_page_of(x, kh, &fd, &off))
            continue;
        REQUIRE(pread(fd, pg, sizeof(pg), (off_t)off) == (ssize_t)sizeof(pg));
        for (size_t r = 0; r + 1 < QM_HIX_PER_PAGE; r++)
            if (memcmp(pg + r * QM_HIX_REC, kh, 6) == 0 && rec_pos12(pg + r * QM_HIX_REC) == gb[0])
                at = r;
        pos = gb[0];
    }
    REQUIRE(at != SIZE_MAX);
    u64 p = off / QM_HIX_PAGE - 1, fake = pos ^ ((u64)1 << 40);
    u8 crafted[QM_HIX_PAGE], damaged[QM_HIX_PAGE], other[QM_HIX_PAGE];
    memcpy(crafted, pg, sizeof(pg));
    qm_put_u48be(crafted + at * QM_HIX_REC + 6, fake >> 3);
    qm_put_u32le(crafted + QM_HIX_PAGE - 4, page_crc(crafted, p));
    memcpy(damaged, crafted, sizeof(pg));
    damaged[at * QM_HIX_REC + 7] ^= 0x10;
    u64 o2 = off == QM_HIX_PAGE ? off + QM_HIX_PAGE : off - QM_HIX_PAGE; /* a neighbour */
    REQUIRE(pread(fd, other, sizeof(other), (off_t)o2) == (ssize_t)sizeof(other));

    const u8 *cases[3] = {crafted, damaged, other};
    for (int c = 0; c < 3; c++) {
        /* The batch holds the case's bytes under off, and a decoy under off's neighbour. */
        u8 data[2 * QM_HIX_PAGE];
        memcpy(data, cases[c], QM_HIX_PAGE);
        memcpy(data + QM_HIX_PAGE, pg, QM_HIX_PAGE);
        qm_hix_pg pgs[2] = {{qm_hix_pages_key(fd, off), 0}, {qm_hix_pages_key(fd, o2), 1}};
        if (pgs[1].key < pgs[0].key) {
            qm_hix_pg t = pgs[0];
            pgs[0] = pgs[1];
            pgs[1] = t;
        }
        qm_hix_pages b = {pgs, 2, data};
        flush_slots(x, off);
        qm_hix_pages_use(&b);
        size_t n = find_fresh(x, kh, ga);
        qm_hix_pages_use(NULL);
        CHECK_EQ_U64(n, 1);
        CHECK_EQ_U64(ga[0], c == 0 ? fake : pos);
        /* Without the batch, once the slots have moved on: the run's own page again. */
        flush_slots(x, off);
        CHECK_EQ_U64(find_fresh(x, kh, ga), 1);
        CHECK_EQ_U64(ga[0], pos);
    }
    /* A batch without the page: read from the run. */
    qm_hix_pages none = {NULL, 0, NULL};
    flush_slots(x, off);
    qm_hix_pages_use(&none);
    CHECK_EQ_U64(find_fresh(x, kh, ga), 1);
    qm_hix_pages_use(NULL);
    CHECK_EQ_U64(ga[0], pos);
    qm_hix_memo_reset(x);
}

static void
test_random(void)
{
    qm_err err = {{0}};
    qm_hindex *x = NULL;
    u8 kh[32];
    qm_index_init(&ref);
    REQUIRE(qm_hix_new(dir, SHARD, 64, &x, &err) == 0);
    for (int i = 0; i < NUNITS; i++) { /* one unit in each 64-unit stretch; all get sentries */
        units[i] = (unsigned)i * 64 + (unsigned)(rnd() % 64);
        memset(kh, 0, 32);
        set_unit(kh, units[i]);
        u32 s = new_slot(kh);
        sentry[s] = 1;
    }
    gen_key(big, 0);
    for (int i = 0; i < NBULK + BIG; i++) {
        gen_key(kh, i < NBULK && rnd() % 4 == 0);
        if (i >= NBULK)
            memcpy(kh, big, 6);
        new_slot(kh);
    }
    for (u32 s = 0; s < nslots; s++) { /* any order: a sentry lands in the middle */
        u32 t = (s * 7919u + 13u) % nslots;
        CHECK_OK(qm_hix_bulk_add(x, khs[t], POS(t)));
        CHECK_OK(qm_index_bulk_add(&ref, khs[t], POS(t)));
    }
    qm_index_bulk_finish(&ref);
    CHECK_OK(qm_hix_bulk_finish(x, NULL, NULL, 0));
    check_all(x);
    CHECK(qm_hix_ssd_bytes(x) >=
          QM_HIX_PAGE * (1 + (ref.count + QM_HIX_PER_PAGE - 1) / QM_HIX_PER_PAGE));
    CHECK(qm_hix_dram_bytes(x) > 0);
    check_lookup(x, big); /* the big group: one page boundary inside it */
    int stop = 0;
    CHECK_RC(qm_hix_foreach(x, stop_cb, &stop), 7);
    CHECK_EQ_U64(stop, 10);

    random_steps(x, STEPS);
    settle(x, 300);
    check_all(x);
    CHECK(qm_hix_merges(x) > 0);
    CHECK(qm_hix_page_reads(x) > 0);
    printf("random: %" PRIu64 " records, %" PRIu64 " merges, %" PRIu64 " page reads\n",
           (u64)ref.count, qm_hix_merges(x), qm_hix_page_reads(x));
    test_install_after_block(x);
    test_memo_full(x);
    test_point_lookup(x);
    test_pages(x);

    /* Checkpoint round trip. */
    qm_hix_state st = {77, 123456, 9876543, 1234, 5555, 3, {0}};
    for (int i = 0; i < 32; i++)
        st.root[i] = (u8)(i * 7 + 1);
    u8 blob[300];
    for (size_t i = 0; i < sizeof(blob); i++)
        blob[i] = (u8)rnd();
    CHECK_OK(qm_hix_checkpoint(x, &st, blob, sizeof(blob)));
    check_all(x);
    qm_hix_free(x);
    char path[600];
    snprintf(path, sizeof(path), "%s/s%02u.hix", dir, SHARD);
    struct stat sb; /* the file is restored before each load: a load may drop a stale file */
    u8 *file = (u8 *)test_slurp(path);
    REQUIRE(file && stat(path, &sb) == 0);
    size_t flen = (size_t)sb.st_size;
    size_t nrec = ref_list(), npages = (nrec + QM_HIX_PER_PAGE - 1) / QM_HIX_PER_PAGE;
    CHECK(flen >= QM_HIX_PAGE * (1 + npages));
    qm_hindex *y = NULL;
    u8 *b = NULL;
    size_t blen = 0;
    qm_hix_state st2;
    u64 gen = 0;
    CHECK_OK(qm_hix_load(dir, SHARD, 64, &st2, &gen, &y, &b, &blen, &err));
    REQUIRE(y != NULL);
    CHECK_EQ_U64(blen, sizeof(blob));
    CHECK(b && blen == sizeof(blob) && memcmp(b, blob, blen) == 0);
    free(b);
    check_all(y);
    for (int i = 0; i < 300; i++) {
        gen_key(kh, i % 3);
        check_lookup(y, kh);
    }
    qm_hix_free(y);
    /* The state comes back field by field; a header byte changed: no usable run. */
    CHECK(memcmp(&st2, &st, sizeof(st)) == 0);
    CHECK(gen != 0);
    for (size_t at = 64; at < 152; at += 11) {
        file[at] ^= 0x10;
        spill(path, file, flen);
        file[at] ^= 0x10;
        y = NULL;
        int rc = qm_hix_load(dir, SHARD, 64, &st2, &gen, &y, &b, &blen, &err);
        CHECK_RC(rc, QMDB_NOTFOUND);
        if (rc == 0)
            free(b), qm_hix_free(y);
    }
    /* One flipped byte in a record page (or its CRC): refused at load or CORRUPT on use. */
    const size_t flips[4][3] = {{0, 100, 3},
                                {npages / 2, 0, 8},
                                {npages - 1, (nrec - 1) % QM_HIX_PER_PAGE, 5},
                                {1, 341, 1}};
    for (int f = 0; f < 4; f++) {
        size_t pg = flips[f][0], r = flips[f][1], idx = pg * QM_HIX_PER_PAGE + QM_MIN(r, 340);
        size_t at = QM_HIX_PAGE * (1 + pg) + QM_HIX_REC * r + flips[f][2];
        REQUIRE(idx < nrec && at < flen);
        file[at] ^= 0x04;
        spill(path, file, flen);
        file[at] ^= 0x04;
        y = NULL;
        int rc = qm_hix_load(dir, SHARD, 64, &st2, &gen, &y, &b, &blen, &err);
        if (rc == 0) {
            memset(kh, 0, 32);
            memcpy(kh, refl[idx].k, 6); /* a key whose records include the flipped page */
            size_t n = 0;
            CHECK_RC(qm_hix_find(y, kh, ga, CAP, &n), QMDB_CORRUPT);
            /* A page that failed its check is not remembered as checked: again CORRUPT. */
            CHECK_RC(qm_hix_find(y, kh, ga, CAP, &n), QMDB_CORRUPT);
            nfe = 0;
            CHECK_RC(qm_hix_foreach(y, fe_cb, NULL), QMDB_CORRUPT);
            free(b);
            qm_hix_free(y);
        } else {
            CHECK_RC(rc, QMDB_NOTFOUND);
        }
    }
    spill(path, file, flen); /* the loaded index keeps working: changes, merges, lookups */
    y = NULL;
    REQUIRE(qm_hix_load(dir, SHARD, 64, &st2, &gen, &y, &b, &blen, &err) == 0);
    free(b);
    random_steps(y, 3000);
    settle(y, 300);
    check_all(y);
    CHECK(qm_hix_merges(y) > 0);
    qm_hix_free(y);
    CHECK(unlink(path) == 0);
    CHECK_RC(qm_hix_load(dir, SHARD, 64, &st2, &gen, &y, &b, &blen, &err), QMDB_NOTFOUND);
    free(file);
    qm_index_free(&ref);
}

/* No bulk records: the overlay alone answers; page_of only once a merge wrote a run. */
static void
test_empty(void)
{
    qm_err err = {{0}};
    qm_hindex *x = NULL;
    char sub[600];
    snprintf(sub, sizeof(sub), "%s/empty", dir);
    REQUIRE(mkdir(sub, 0755) == 0);
    qm_index_init(&ref);
    REQUIRE(qm_hix_new(sub, SHARD, 16, &x, &err) == 0);
    CHECK_OK(qm_hix_bulk_finish(x, NULL, NULL, 0));
    u8 kh[32];
    gen_key(kh, 0);
    int fd = -1;
    u64 off = 1;
    CHECK(!qm_hix_page_of(x, kh, &fd, &off));
    check_all(x);
    CHECK_EQ_U64(nfe, 0);
    check_lookup(x, kh);
    nlive = 0; /* only this index's records; one unit, with its sentry */
    memset(kh, 0, 32);
    set_unit(kh, units[5]);
    do_insert(x, kh);
    for (int i = 0; i < 20; i++) {
        gen_key(kh, 0);
        set_unit(kh, units[5]);
        if (i % 4 == 3)
            memcpy(kh + 2, khs[nslots - 1] + 2, 4); /* a 6-byte collision */
        do_insert(x, kh);
        check_lookup(x, kh);
        if (i == 11) {
            check_all(x);
            CHECK(!qm_hix_page_of(x, kh, &fd, &off));
        }
    }
    for (int i = 0; i < 50 && qm_hix_merges(x) == 0; i++)
        settle(x, 100);
    CHECK(qm_hix_merges(x) > 0);
    CHECK(qm_hix_page_of(x, kh, &fd, &off));
    CHECK(fd >= 0 && off % QM_HIX_PAGE == 0 && off >= QM_HIX_PAGE);
    u8 pg[QM_HIX_PAGE];
    CHECK(fd >= 0 && pread(fd, pg, sizeof(pg), (off_t)off) == (ssize_t)sizeof(pg));
    check_all(x);
    for (u32 i = 0; i < nlive; i++)
        check_lookup(x, khs[live_list[i]]);
    u8 grp[32]; /* more than 64 records of one 6-byte prefix in one overlay layer */
    memcpy(grp, kh, 32);
    for (int i = 0; i < 70; i++, grp[31]++)
        do_insert(x, grp);
    check_lookup(x, grp);
    grp[5] ^= 1; /* a neighbour: the group is its predecessor or follows it */
    check_lookup(x, grp);
    check_all(x);
    qm_hix_free(x);
    qm_index_free(&ref);
}

/* Inserts n records with fresh random keys at positions from *pos on, then lets merges run
 * (settle); the merges installed meanwhile. */
static u64
stagger_add(qm_hindex *x, u32 n, u64 *pos)
{
    u64 m0 = qm_hix_merges(x);
    for (u32 i = 0; i < n; i++) {
        u8 kh[32];
        for (int j = 0; j < 32; j++)
            kh[j] = (u8)rnd();
        CHECK_OK(qm_hix_insert(x, kh, (*pos)++ * 8));
    }
    settle(x, 20);
    return qm_hix_merges(x) - m0;
}

/* With the default merge size (no merge_changes), a handle's first overlay is frozen at
 * (shard + 1) / 16 of it (32768 changes for a small run), so that shards fill and merge in
 * turn; the overlays after it at the whole size. */
static void
test_stagger(void)
{
    static const unsigned shards[] = {0, 7, 15};
    for (unsigned k = 0; k < 3; k++) {
        char sub[600];
        snprintf(sub, sizeof(sub), "%s/stagger%u", dir, k);
        REQUIRE(mkdir(sub, 0755) == 0);
        qm_err err = {{0}};
        qm_hindex *x = NULL;
        REQUIRE(qm_hix_new(sub, shards[k], 0, &x, &err) == 0);
        CHECK_OK(qm_hix_bulk_finish(x, NULL, NULL, 0));
        u32 first = 32768u * (shards[k] + 1) / 16;
        u64 pos = 1;
        CHECK_EQ_U64(stagger_add(x, first - 1, &pos), 0);
        u64 m = stagger_add(x, 1, &pos);
        for (int i = 0; i < 50 && m == 0; i++)
            m += stagger_add(x, 0, &pos);
        CHECK_EQ_U64(m, 1);
        CHECK_EQ_U64(stagger_add(x, 32767, &pos), 0);
        m = stagger_add(x, 1, &pos);
        for (int i = 0; i < 50 && m == 0; i++)
            m += stagger_add(x, 0, &pos);
        CHECK_EQ_U64(m, 1);
        CHECK_EQ_U64(qm_hix_count(x), first + 32768u);
        qm_hix_free(x);
    }
}

/* hix_first_below (the sparse index's search) against a plain scan: 1 to 3000 page-first keys,
 * evenly spread, uniform, in a few clusters (the gallop from the guess goes far), or
 * with long runs of one key (a group of records spanning pages); keys on, beside, between,
 * below and above them. */
static void
test_first_below(void)
{
    static u8 first[3000 * 6];
    static u64 keys[3000];
    for (int round = 0; round < 2000; round++) {
        u64 n = round % 5 == 0 ? 1 + rnd() % 20 : 1 + rnd() % 3000;
        int shape = round % 4;
        u64 base = rnd() & ((1ull << 47) - 1), step = 1 + rnd() % 100000;
        for (u64 i = 0; i < n; i++) {
            u64 k = shape == 0   ? base + i * step + rnd() % step
                    : shape == 1 ? rnd() >> 16
                    : shape == 2 ? base + (rnd() % 3) * (1ull << 40) + rnd() % 5000
                                 : base + rnd() % 6;
            keys[i] = k & ((1ull << 48) - 1);
        }
        qsort(keys, n, sizeof(u64), cmp_u64);
        for (u64 i = 0; i < n; i++)
            qm_put_u48be(first + i * 6, keys[i]);
        for (int q = 0; q < 60; q++) {
            u64 key = q < 15    ? keys[rnd() % n]
                      : q < 30  ? keys[rnd() % n] + 1
                      : q < 40  ? keys[rnd() % n] - 1
                      : q < 55  ? rnd() >> 16
                      : q == 55 ? 0
                      : q == 56 ? keys[0]
                      : q == 57 ? keys[n - 1]
                      : q == 58 ? keys[n - 1] + 1
                                : (1ull << 48) - 1;
            u64 want = 0;
            while (want + 1 < n && keys[want + 1] < key)
                want++;
            u64 got = hix_first_below(first, n, key);
            if (got != want) {
                CHECK_EQ_U64(got, want);
                return;
            }
        }
    }
}

/* hix_page_search against a plain scan: pages of 1 to 341 sorted keys, uniform, in a few
 * clusters, or with long runs of one key; the bounds the sparse index gives, and bounds that
 * do not hold (the search must still be right, only slower); keys below, inside and above. */
static void
test_page_search(void)
{
    static u8 pg[QM_HIX_PAGE];
    u64 keys[QM_HIX_PER_PAGE];
    for (int round = 0; round < 3000; round++) {
        u32 n = round % 7 == 0 ? 1 + (u32)(rnd() % 3) : 1 + (u32)(rnd() % QM_HIX_PER_PAGE);
        int shape = round % 3;
        u64 base = rnd() & ((1ull << 47) - 1);
        for (u32 i = 0; i < n; i++) {
            u64 k = shape == 0   ? rnd() >> 16
                    : shape == 1 ? base + (rnd() % 4) * (1ull << 40) + rnd() % 1000
                                 : base + rnd() % 8;
            keys[i] = k & ((1ull << 48) - 1);
        }
        for (u32 i = 1; i < n; i++) /* insertion sort */
            for (u32 j = i; j > 0 && keys[j - 1] > keys[j]; j--) {
                u64 t = keys[j];
                keys[j] = keys[j - 1];
                keys[j - 1] = t;
            }
        for (u32 i = 0; i < n; i++)
            qm_put_u48be(pg + (size_t)i * QM_HIX_REC, keys[i]);
        u64 lo_key = keys[0], hi_key = rnd() % 2 ? keys[n - 1] + 1 + rnd() % 1000 : 1ull << 48;
        if (round % 5 == 4) { /* bounds that lie */
            lo_key = rnd() >> 16;
            hi_key = rnd() % 2 ? lo_key : rnd() >> 16;
        }
        for (int q = 0; q < 40; q++) {
            u64 key = q < 10    ? keys[rnd() % n]
                      : q < 20  ? keys[rnd() % n] + 1
                      : q < 30  ? rnd() >> 16
                      : q == 30 ? 0
                      : q == 31 ? (1ull << 48) - 1
                                : keys[rnd() % n] - 1;
            u32 want = 0;
            while (want < n && keys[want] < key)
                want++;
            u32 got = hix_page_search(pg, n, key, lo_key, hi_key);
            if (got != want) {
                CHECK_EQ_U64(got, want);
                return;
            }
        }
    }
    CHECK_EQ_U64(hix_page_search(pg, 0, 5, 0, 10), 0);
}

int
main(void)
{
    REQUIRE(mkdtemp(dir) != NULL);
    test_page_search();
    test_first_below();
    test_random();
    test_empty();
    test_stagger();
    free(fe);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return test_report("test_hindex");
}
