/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fault.c -- fault injection through the I/O seam (issue 5, item 2). The test runs on
 * its main thread; in the concurrent configuration the engine's threads call the I/O layer.
 *
 * For every fault class (EIO on read, write and fsync; a short write, transient or followed
 * by ENOSPC; ENOSPC; failures of the ROOTS and META writes; failures while pruning; a
 * simulated power loss; and each step of qmdb_rollback: reading the discarded tail, the
 * STATES prune slot, META, cutting the files, the hybrid checkpoint) one scenario asserts:
 * the failing call returns that error with a message naming the file; after a failure in a
 * commit every later call on the handle returns QMDB_PANIC until it is closed; reopening
 * recovers the last committed height (or the failed block, when the failure came after its
 * commit point; for a rollback, exactly the old or exactly the target height) with the exact
 * root the fault-free twin computed and the model's values; and the database then accepts
 * new blocks.
 *
 *   test_fault              sequential: the fault layer is a sequential one (io.h), so the
 *                           engine runs without pools, batched reads or (for a database
 *                           opened under it) pipeline, and the n-th matching call is always
 *                           the same one;
 *   test_fault concurrent   the production configuration: worker pools, block pipeline,
 *                           hybrid merger threads and batched reads (io_uring, or the pread
 *                           pool with QMDB_NO_URING=1), the layer installed before every open.
 *                           Blocks are submitted ahead (submit h, then wait h-1), so a fault
 *                           in a background stage surfaces at the next qmdb_submit or
 *                           qmdb_wait. The last durable height is the last one whose
 *                           qmdb_wait returned 0; a later block that was submitted may be
 *                           recovered too if its META reached the disk (as in the crash tests).
 *                           Batched reads reach the layer through read_done: an injected EIO
 *                           there is retried synchronously, so the scenarios below also check
 *                           that such a fault changes nothing.
 */
#include "../crash/workload.h"
#include "../test.h"
#include "faultio.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#define NKEYS 600

static char base[400];
static uint64_t seed = 5;
static int scenario_no;
static bool conc;           /* the concurrent configuration */
static long batched_total;  /* batched reads the layer saw (concurrent) */
static long batched_faults; /* of the last scenario (read before fio_uninstall) */

typedef struct env {
    char dir[480];
    wl_twin twin;
    wl_model model;
    qmdb_batch *b;
} env;

static qmdb_db *
env_open(env *e, uint32_t flags, int *rc_out)
{
    qmdb_options o;
    wl_options(&o);
    o.flags = flags;
    qmdb_db *db = NULL;
    /* Concurrent: every component (the hybrid indexer's merger too) captures the fault layer,
     * not POSIX; the scenario arms its rule later (fio_install again). */
    if (conc && !fio_installed())
        fio_install(NULL, false);
    int rc = qmdb_open(e->dir, &o, &db);
    if (rc_out)
        *rc_out = rc;
    return db;
}

/* A fresh database with `blocks` committed blocks. */
static void
env_setup(env *e, uint64_t blocks)
{
    memset(e, 0, sizeof(*e));
    scenario_no++;
    snprintf(e->dir, sizeof(e->dir), "%s/db%d", base, scenario_no);
    char twin[512];
    snprintf(twin, sizeof(twin), "%s/twin%d", base, scenario_no);
    qmdb_options o;
    wl_options(&o);
    REQUIRE(wl_twin_open(&e->twin, twin, &o, seed, NKEYS) == 0);
    wl_model_init(&e->model, seed, NKEYS);
    REQUIRE(qmdb_create(e->dir, &o) == 0);
    REQUIRE(qmdb_batch_new(&e->b) == 0);
    qmdb_db *db = env_open(e, 0, NULL);
    REQUIRE(db);
    for (uint64_t h = 1; h <= blocks; h++) {
        wl_block(seed, NKEYS, h, e->b, NULL);
        REQUIRE(qmdb_commit(db, h, e->b, NULL) == 0);
    }
    /* Roots for the blocks the scenario may commit, computed before any fault is armed. */
    (void)wl_twin_root(&e->twin, blocks + 40);
    qmdb_close(db);
    fio_uninstall();
}

static void
env_free(env *e)
{
    wl_twin_close(&e->twin);
    wl_model_free(&e->model);
    qmdb_batch_free(e->b);
}

/* Reopens and checks the state: height in [lo, hi], exact root, model values, and that the
 * next block commits. Returns the height. */
static uint64_t
env_verify(env *e, uint64_t lo, uint64_t hi, const char *what)
{
    int rc;
    qmdb_db *db = env_open(e, 0, &rc);
    if (!db) {
        fprintf(stderr, "%s: reopen: %s: %s\n", what, qmdb_strerror(rc), qmdb_open_error());
        CHECK(0);
        return 0;
    }
    uint64_t h = qmdb_height(db);
    if (h < lo || h > hi)
        fprintf(stderr, "%s: recovered height %llu not in [%llu, %llu]\n", what,
                (unsigned long long)h, (unsigned long long)lo, (unsigned long long)hi);
    CHECK(h >= lo && h <= hi);
    unsigned char root[32];
    CHECK_OK(qmdb_root(db, UINT64_MAX, root));
    CHECK_MEM(root, wl_twin_root(&e->twin, h), 32);
    wl_model_advance(&e->model, h);
    CHECK_EQ_U64(wl_model_diff(db, &e->model, what), 0);
    wl_block(seed, NKEYS, h + 1, e->b, NULL);
    CHECK_OK(qmdb_commit(db, h + 1, e->b, root));
    CHECK_MEM(root, wl_twin_root(&e->twin, h + 1), 32);
    qmdb_close(db);
    fio_uninstall();
    return h;
}

/* After a failed commit: the handle is fatal. */
static void
check_fatal(qmdb_db *db, uint64_t h, env *e)
{
    size_t vl;
    unsigned char root[32];
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_RC(qmdb_commit(db, h, e->b, root), QMDB_PANIC);
    CHECK_RC(qmdb_commit(db, h + 1, e->b, root), QMDB_PANIC);
    CHECK_RC(qmdb_get(db, "k", 1, NULL, 0, &vl), QMDB_PANIC);
    CHECK_RC(qmdb_prune(db), QMDB_PANIC);
    CHECK_RC(qmdb_root(db, UINT64_MAX, root), QMDB_PANIC);
    CHECK_RC(qmdb_shard_root(db, 0, root), QMDB_PANIC);
    CHECK_RC(qmdb_stat(db, &st), QMDB_PANIC);
}

/* Concurrent configuration: the engine really runs it (pipeline; batched reads, over
 * io_uring unless QMDB_NO_URING=1 or the kernel refuses it). */
static void
check_config(qmdb_db *db)
{
    if (!conc)
        return;
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    CHECK(st.pipeline);
    const char *nu = getenv("QMDB_NO_URING");
    if (nu && atoi(nu) != 0)
        CHECK(!st.io_uring);
    static bool said;
    if (!said)
        printf("concurrent: pipeline on, batched reads over %s\n",
               st.io_uring ? "io_uring" : "the pread pool");
    said = true;
}

/* Commits blocks n+1.. until the fault fires (at most max_blocks). Sequentially each block is
 * a qmdb_commit; concurrently block h is submitted before h-1 is waited for. Returns the
 * first failure; *durable is the last height committed (qmdb_wait or qmdb_commit returned
 * 0), *submitted the last one accepted by qmdb_submit (>= *durable). */
static int
commit_until_fired(env *e, qmdb_db *db, uint64_t n, int max_blocks, uint64_t *durable,
                   uint64_t *submitted)
{
    unsigned char root[32];
    int rc = 0;
    *durable = *submitted = n;
    for (int i = 0; i < max_blocks && !fio_triggered(); i++) {
        n++;
        wl_block(seed, NKEYS, n, e->b, NULL);
        if (!conc) {
            if ((rc = qmdb_commit(db, n, e->b, root)) != 0)
                return rc;
            CHECK_MEM(root, wl_twin_root(&e->twin, n), 32);
            *durable = *submitted = n;
            continue;
        }
        if ((rc = qmdb_submit(db, n, e->b)) != 0)
            return rc;
        *submitted = n;
        if (n - 1 > *durable) {
            if ((rc = qmdb_wait(db, n - 1, root)) != 0)
                return rc;
            CHECK_MEM(root, wl_twin_root(&e->twin, n - 1), 32);
            *durable = n - 1;
        }
    }
    if (*submitted > *durable) {
        if ((rc = qmdb_wait(db, *submitted, root)) != 0)
            return rc;
        CHECK_MEM(root, wl_twin_root(&e->twin, *submitted), 32);
        *durable = *submitted;
    }
    return 0;
}

/*
 * One commit-time fault: arms `r`, commits block H+1 and expects `want` (0: success). Then
 * checks fatality, closes, optionally reverts unsynced writes (power loss), and verifies that
 * the reopened height lies in [H + lo_off, H + hi_off] (concurrently, up to the last block
 * submitted if that is higher: its META may have reached the disk).
 */
static void
commit_fault(const char *name, const fio_rule *r, int want, const char *file_sub, int lo_off,
             int hi_off, int powerloss_pct, int max_blocks)
{
    env e;
    env_setup(&e, 30);
    qmdb_db *db = env_open(&e, 0, NULL);
    REQUIRE(db);
    check_config(db);
    uint64_t h = qmdb_height(db);
    (void)wl_twin_root(&e.twin, h + (uint64_t)max_blocks); /* before the fault is armed */
    fio_install(r, powerloss_pct >= 0);
    /* Commit up to max_blocks blocks until the fault fires (a twig file is written only
     * when a twig fills). */
    uint64_t committed, submitted;
    int rc = commit_until_fired(&e, db, h, max_blocks, &committed, &submitted);
    if (!fio_triggered())
        fprintf(stderr, "%s: the fault never fired\n", name);
    CHECK(fio_triggered());
    if (rc != want)
        fprintf(stderr, "%s: commit returned %d (%s), wanted %d (%s): %s\n", name, rc,
                qmdb_strerror(rc), want, qmdb_strerror(want), qmdb_last_error(db));
    CHECK_RC(rc, want);
    uint64_t n = committed + 1;
    if (rc) {
        const char *msg = qmdb_last_error(db);
        /* After a power loss every call fails: concurrently, the message names whichever file
         * a thread touched last, always one of this database's. */
        if (conc && r->action == FIO_CRASH)
            file_sub = e.dir;
        if (file_sub && !strstr(msg, file_sub))
            fprintf(stderr, "%s: message '%s' does not name %s\n", name, msg, file_sub);
        CHECK(file_sub == NULL || strstr(msg, file_sub) != NULL);
        check_fatal(db, n, &e);
    }
    CHECK_OK(qmdb_close(db));
    batched_faults = fio_batched_faults();
    batched_total += fio_batched_reads();
    fio_uninstall();
    if (powerloss_pct >= 0) {
        uint64_t rng = 99;
        fio_powerloss(&rng, (unsigned)powerloss_pct);
    } else {
        fio_reset();
    }
    uint64_t hi = committed + (uint64_t)hi_off;
    uint64_t got =
        env_verify(&e, committed + (uint64_t)lo_off, hi > submitted ? hi : submitted, name);
    printf("  %-52s rc=%-6d recovered height %llu (last committed %llu", name, rc,
           (unsigned long long)got, (unsigned long long)committed);
    if (submitted > committed)
        printf(", submitted %llu", (unsigned long long)submitted);
    printf(")\n");
    env_free(&e);
}

static fio_rule
rule(enum fio_op op, const char *path, long nth, enum fio_action a, int err)
{
    fio_rule r = {0};
    r.op = op;
    r.path_sub = path;
    r.nth = nth;
    r.action = a;
    r.err = err;
    return r;
}

static void
test_commit_faults(void)
{
    printf("commit-time faults:\n");
    fio_rule r;
    r = rule(FIO_PWRITE, ".entries.", 1, FIO_ERR, EIO);
    commit_fault("EIO writing the entry log", &r, -EIO, ".entries", 0, 0, -1, 20);
    r = rule(FIO_PWRITE, ".twig.", 1, FIO_ERR, EIO);
    commit_fault("EIO writing a twig file", &r, -EIO, ".twig", 0, 0, -1, 700);
    r = rule(FIO_PWRITE, ".entries.", 3, FIO_ERR, ENOSPC);
    commit_fault("ENOSPC writing the entry log", &r, -ENOSPC, ".entries", 0, 0, -1, 20);
    r = rule(FIO_PWRITE, ".entries.", 2, FIO_SHORT, 0);
    commit_fault("short write (then the rest is written)", &r, 0, NULL, 0, 0, -1, 20);
    r = rule(FIO_PWRITE, ".entries.", 2, FIO_SHORT, ENOSPC);
    commit_fault("short write, then ENOSPC", &r, -ENOSPC, ".entries", 0, 0, -1, 20);
    r = rule(FIO_FSYNC, ".entries.", 5, FIO_ERR, EIO);
    commit_fault("EIO on an entry-log fsync", &r, -EIO, ".entries", 0, 0, -1, 20);
    r = rule(FIO_FSYNC, ".entries.", 5, FIO_ERR, EIO);
    commit_fault("EIO on an entry-log fsync + power loss", &r, -EIO, ".entries", 0, 0, 100, 20);
    r = rule(FIO_FSYNC, ".tmeta.", 1, FIO_ERR, EIO);
    commit_fault("EIO on a twig-meta fsync", &r, -EIO, ".tmeta", 0, 0, -1, 700);
    /* Concurrently the block's first entry read is a batched one (the prefetch): its EIO is
     * retried synchronously and the block commits. */
    r = rule(FIO_PREAD, ".entries.", 1, FIO_ERR, EIO);
    commit_fault(conc ? "EIO on a batched entry-log read (retried)"
                      : "EIO reading the entry log during a commit",
                 &r, conc ? 0 : -EIO, ".entries", 0, 0, -1, 20);
    CHECK_EQ_U64(batched_faults, conc ? 1 : 0);
    r = rule(FIO_PREAD, ".entries.", 1, FIO_ERR, EIO);
    r.sticky = true;
    commit_fault("EIO on every entry-log read during a commit", &r, -EIO, ".entries", 0, 0, -1, 20);
    r = rule(FIO_PWRITE, "ROOTS", 1, FIO_ERR, EIO);
    commit_fault("EIO writing ROOTS", &r, -EIO, "ROOTS", 0, 0, -1, 20);
    r = rule(FIO_FSYNC, "ROOTS", 1, FIO_ERR, EIO);
    commit_fault("EIO on the ROOTS fsync", &r, -EIO, "ROOTS", 0, 0, -1, 20);
    r = rule(FIO_PWRITE, "META", 1, FIO_ERR, EIO);
    commit_fault("EIO writing META", &r, -EIO, "META", 0, 0, -1, 20);
    r = rule(FIO_PWRITE, "META", 1, FIO_ERR, ENOSPC);
    commit_fault("ENOSPC writing META", &r, -ENOSPC, "META", 0, 0, -1, 20);
    /* The slot was written but not made durable: either height is right without a power
     * loss; with one (all unsynced writes dropped) the failed block is gone. */
    r = rule(FIO_FSYNC, "META", 1, FIO_ERR, EIO);
    commit_fault("EIO on the META fsync", &r, -EIO, "META", 0, 1, -1, 20);
    r = rule(FIO_FSYNC, "META", 1, FIO_ERR, EIO);
    commit_fault("EIO on the META fsync + power loss", &r, -EIO, "META", 0, 0, 100, 20);
    fio_rule c = rule(FIO_PWRITE, "META", 1, FIO_CRASH, 0);
    c.torn_pct = 50;
    commit_fault("power loss tearing the META write", &c, -EIO, "META", 0, 0, 100, 20);
    c = rule(FIO_PWRITE, ".entries.", 2, FIO_CRASH, 0);
    c.torn_pct = 30;
    commit_fault("power loss tearing an entry-log write", &c, -EIO, ".entries", 0, 0, 100, 20);
    c = rule(FIO_PWRITE, ".entries.", 2, FIO_CRASH, 0);
    c.torn_pct = 30;
    commit_fault("power loss, unsynced writes kept", &c, -EIO, ".entries", 0, 0, 0, 20);
}

/* Pruning deletes segments after the commit point: a failure there must not lose or fail
 * the block. */
static void
test_prune_fault(void)
{
    printf("pruning faults:\n");
    env e;
    env_setup(&e, 30);
    qmdb_db *db = env_open(&e, 0, NULL);
    REQUIRE(db);
    fio_rule r = rule(FIO_UNLINK, ".entries.", 1, FIO_ERR, EIO);
    r.sticky = true;
    fio_install(&r, false);
    uint64_t h = qmdb_height(db);
    qmdb_stats st0 = QMDB_STATS_INIT, st1 = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st0));
    /* Commit until a prune deletes an entry segment (compaction empties twigs quickly).
     * The twin is not run while the rule is armed (its pruning would hit the rule too). */
    int rc = 0;
    uint64_t h0 = h;
    unsigned char(*roots)[32] = malloc(2000 * 32);
    REQUIRE(roots);
    while (!fio_triggered() && h < h0 + 1999) {
        h++;
        wl_block(seed, NKEYS, h, e.b, NULL);
        rc = qmdb_commit(db, h, e.b, roots[h - h0]);
        if (rc)
            break;
    }
    fio_uninstall();
    for (uint64_t k = h0 + 1; k <= h; k++)
        CHECK_MEM(roots[k - h0], wl_twin_root(&e.twin, k), 32);
    free(roots);
    CHECK(fio_triggered());
    CHECK_OK(rc); /* the block is committed even though a segment could not be deleted */
    CHECK_OK(qmdb_stat(db, &st1));
    CHECK(st1.pruned_twigs > st0.pruned_twigs);
    /* The handle stays usable. */
    h++;
    wl_block(seed, NKEYS, h, e.b, NULL);
    CHECK_OK(qmdb_commit(db, h, e.b, NULL));
    CHECK_OK(qmdb_close(db));
    uint64_t got = env_verify(&e, h, h, "unlink failure while pruning");
    printf("  %-52s recovered height %llu\n", "EIO deleting a pruned segment",
           (unsigned long long)got);
    env_free(&e);
}

/* qmdb_get_many of keys off, off + 9, ... (each call reads keys that no earlier one cached);
 * the number of keys whose result differs from the model. */
#define GM_KEYS 64
static unsigned char gm_key[GM_KEYS][16], gm_val[GM_KEYS][4096];

static long
get_many_diff(qmdb_db *db, const wl_model *m, uint32_t off, int *rc)
{
    qmdb_read rd[GM_KEYS];
    uint32_t ki[GM_KEYS];
    for (size_t i = 0; i < GM_KEYS; i++) {
        ki[i] = (uint32_t)(i * 9 + off) % NKEYS;
        rd[i] =
            (qmdb_read){gm_key[i], wl_key(ki[i], gm_key[i]), gm_val[i], sizeof(gm_val[i]), 0, 0};
    }
    *rc = qmdb_get_many(db, rd, GM_KEYS);
    long bad = 0;
    for (size_t i = 0; i < GM_KEYS && !*rc; i++) {
        const unsigned char *v = m->val[ki[i]];
        bad += v ? rd[i].rc != 0 || rd[i].vlen != m->vlen[ki[i]] || memcmp(gm_val[i], v, rd[i].vlen)
                 : rd[i].rc != QMDB_NOTFOUND;
    }
    return bad;
}

/* Batched reads: concurrently the entries are read in one batch (io_uring or the pread pool),
 * where an EIO is retried synchronously: the values come back right. Sequentially the
 * synchronous read fails. An EIO on every read fails the call in both, naming the file; a
 * read changes nothing, so the handle stays usable. */
static void
get_many_faults(env *e, qmdb_db *db)
{
    int rc;
    fio_rule r = rule(FIO_PREAD, ".entries.", 1, FIO_ERR, EIO);
    fio_install(&r, false);
    long bad = get_many_diff(db, &e->model, 3, &rc);
    CHECK(fio_triggered());
    CHECK_RC(rc, conc ? 0 : -EIO);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(fio_batched_faults(), conc ? 1 : 0);
    if (conc)
        CHECK(fio_batched_reads() > 1);
    batched_total += fio_batched_reads();
    if (rc)
        CHECK(strstr(qmdb_last_error(db), ".entries") != NULL);
    r.sticky = true;
    fio_install(&r, false);
    (void)get_many_diff(db, &e->model, 5, &rc);
    CHECK_RC(rc, -EIO);
    CHECK(strstr(qmdb_last_error(db), ".entries") != NULL);
    if (conc)
        CHECK(fio_batched_faults() > 0);
    fio_uninstall();
    CHECK_EQ_U64(get_many_diff(db, &e->model, 7, &rc), 0);
    CHECK_OK(rc);
}

static void
test_read_faults(void)
{
    printf("read faults:\n");
    env e;
    env_setup(&e, 30);
    /* EIO while opening: a clean error, nothing leaked; the next open works. */
    fio_rule r = rule(FIO_PREAD, ".entries.", 3, FIO_ERR, EIO);
    fio_install(&r, false);
    int rc;
    qmdb_db *db = env_open(&e, 0, &rc);
    CHECK(db == NULL);
    CHECK_RC(rc, -EIO);
    CHECK(strstr(qmdb_open_error(), ".entries") != NULL);
    fio_uninstall();
    r = rule(FIO_PREAD, "META", 1, FIO_ERR, EIO);
    fio_install(&r, false);
    db = env_open(&e, 0, &rc);
    CHECK(db == NULL);
    CHECK_RC(rc, -EIO);
    CHECK(strstr(qmdb_open_error(), "META") != NULL);
    fio_uninstall();
    r = rule(FIO_OPEN, "ROOTS", 1, FIO_ERR, EACCES);
    fio_install(&r, false);
    db = env_open(&e, 0, &rc);
    CHECK(db == NULL);
    CHECK_RC(rc, -EACCES);
    fio_uninstall();

    /* EIO in a get: reported, but a read changes nothing, so the handle stays usable. */
    db = env_open(&e, 0, &rc);
    REQUIRE(db);
    wl_model_advance(&e.model, qmdb_height(db));
    uint32_t ki = 0;
    while (!e.model.val[ki])
        ki++;
    unsigned char key[16], buf[4096];
    size_t kl = wl_key(ki, key), vl;
    r = rule(FIO_PREAD, ".entries.", 1, FIO_ERR, EIO);
    fio_install(&r, false);
    CHECK_RC(qmdb_get(db, key, kl, buf, sizeof(buf), &vl), -EIO);
    CHECK(strstr(qmdb_last_error(db), ".entries") != NULL);
    fio_uninstall();
    CHECK_OK(qmdb_get(db, key, kl, buf, sizeof(buf), &vl));
    CHECK(vl == e.model.vlen[ki] && memcmp(buf, e.model.val[ki], vl) == 0);
    /* A segment whose point-read descriptor cannot be opened (here EMFILE, in a new handle,
     * whose first get opens it) is read through its main descriptor: the same value. */
    CHECK_OK(qmdb_close(db));
    db = env_open(&e, 0, &rc);
    REQUIRE(db);
    r = rule(FIO_OPEN, ".entries.", 1, FIO_ERR, EMFILE);
    fio_install(&r, false);
    CHECK_OK(qmdb_get(db, key, kl, buf, sizeof(buf), &vl));
    CHECK(fio_triggered());
    CHECK(vl == e.model.vlen[ki] && memcmp(buf, e.model.val[ki], vl) == 0);
    fio_uninstall();
    get_many_faults(&e, db);
    uint64_t h = qmdb_height(db) + 1;
    wl_block(seed, NKEYS, h, e.b, NULL);
    unsigned char root[32];
    CHECK_OK(qmdb_commit(db, h, e.b, root));
    CHECK_MEM(root, wl_twin_root(&e.twin, h), 32);
    /* A ROOTS read error in qmdb_root of an old height is reported, not fatal. */
    r = rule(FIO_PREAD, "ROOTS", 1, FIO_ERR, EIO);
    fio_install(&r, false);
    CHECK_RC(qmdb_root(db, 3, root), -EIO);
    fio_uninstall();
    CHECK_OK(qmdb_root(db, 3, root));
    CHECK_MEM(root, wl_twin_root(&e.twin, 3), 32);
    CHECK_OK(qmdb_close(db));
    env_verify(&e, h, h, "after read faults");
    printf("  open (entry log, META, ROOTS), get, get_many and root: errors reported, state "
           "intact\n");
    env_free(&e);
}

/* A failed qmdb_prune (it writes metadata) makes the handle fatal too. */
static void
test_prune_call_fault(void)
{
    env e;
    env_setup(&e, 30);
    qmdb_db *db = env_open(&e, 0, NULL);
    REQUIRE(db);
    fio_rule r = rule(FIO_PWRITE, "META", 1, FIO_ERR, EIO);
    fio_install(&r, false);
    CHECK_RC(qmdb_prune(db), -EIO);
    check_fatal(db, 31, &e);
    fio_uninstall();
    CHECK_OK(qmdb_close(db));
    env_verify(&e, 30, 30, "qmdb_prune META failure");
    printf("  %-52s fatal, recovered height 30\n", "EIO writing META in qmdb_prune");
    env_free(&e);
}

/* The calls that go through the I/O seam besides reads and writes: the directory lock at open
 * (EIO: the open fails naming the directory, nothing changes) and the hybrid index run's
 * rename after a merge (EIO: the commit that installs the merge fails, the handle is fatal
 * with a message naming the run, and a reopen recovers the last committed height). */
static void
test_seam_faults(void)
{
    env e;
    env_setup(&e, 30);
    fio_rule r = rule(FIO_LOCK, NULL, 1, FIO_ERR, EIO);
    fio_install(&r, false);
    int rc = 0;
    qmdb_db *db = env_open(&e, 0, &rc);
    CHECK(db == NULL);
    CHECK_RC(rc, -EIO);
    CHECK(fio_triggered());
    CHECK(strstr(qmdb_open_error(), "lock") && strstr(qmdb_open_error(), e.dir));
    fio_uninstall();
    env_verify(&e, 30, 30, "EIO taking the directory lock");
    printf("  %-52s open refused, height 30 intact\n", "EIO taking the directory lock");

    qmdb_options o;
    wl_options(&o);
    o.indexer = QMDB_INDEXER_HYBRID;
    o.hybrid_merge_changes = 64;
    fio_install(NULL, false);
    REQUIRE(qmdb_open(e.dir, &o, &db) == 0);
    r = rule(FIO_RENAME, ".hix", 1, FIO_ERR, EIO);
    fio_install(&r, false);
    uint64_t h = qmdb_height(db), last = h;
    for (int i = 0; i < 30 && !fio_triggered(); i++) {
        wl_block(seed, NKEYS, h + 1, e.b, NULL);
        unsigned char root[32];
        rc = qmdb_commit(db, h + 1, e.b, root);
        if (rc)
            break;
        h++;
        last = h;
        CHECK_MEM(root, wl_twin_root(&e.twin, h), 32);
    }
    CHECK(fio_triggered());
    /* The merge's failure surfaces at a block boundary after the merger met it: the next one
     * when the merge runs inline, else the first after the background merger got that far,
     * which on a loaded machine (sanitizers, two cores, a parallel test run) has taken more
     * than three blocks. Blocks keep committing until it does, for at most about 10 s. */
    for (int i = 0; i < 1000 && rc == 0; i++) {
        wl_block(seed, NKEYS, h + 1, e.b, NULL);
        rc = qmdb_commit(db, h + 1, e.b, NULL);
        if (!rc) {
            last = ++h;
            usleep(10000);
        }
    }
    CHECK_RC(rc, -EIO);
    CHECK(strstr(qmdb_last_error(db), ".hix") != NULL);
    CHECK_RC(qmdb_commit(db, h + 1, e.b, NULL), QMDB_PANIC);
    fio_uninstall();
    qmdb_close(db);
    env_verify(&e, last, last + 1, "EIO renaming the hybrid index run");
    printf("  %-52s fatal, recovered height %llu\n", "EIO renaming the hybrid index run",
           (unsigned long long)last);
    env_free(&e);
}

/* Either indexer: the checkpoint qmdb_close writes fails (a full disk). Every committed block
 * is durable, so close reports QMDB_NO_CHECKPOINT (not an I/O error, which would make a caller
 * retry committed blocks), names the file, and a reopen has every block and rebuilds the
 * index from the log (hybrid: resumes from an older run plus its journal). */
static void
test_checkpoint_fault(uint32_t indexer)
{
    env e;
    env_setup(&e, 30);
    qmdb_options o;
    wl_options(&o);
    o.indexer = indexer;
    /* The index captures the I/O layer at open: install it (no rule yet) first. */
    fio_install(NULL, false);
    qmdb_db *db = NULL;
    REQUIRE(qmdb_open(e.dir, &o, &db) == 0);
    uint64_t h = qmdb_height(db);
    for (int i = 0; i < 5; i++) {
        h++;
        wl_block(seed, NKEYS, h, e.b, NULL);
        unsigned char root[32];
        CHECK_OK(qmdb_commit(db, h, e.b, root));
        CHECK_MEM(root, wl_twin_root(&e.twin, h), 32);
    }
    fio_rule r = rule(FIO_PWRITE, ".hix", 1, FIO_ERR, ENOSPC);
    r.sticky = true;
    fio_install(&r, false);
    CHECK_RC(qmdb_close(db), QMDB_NO_CHECKPOINT);
    CHECK(fio_triggered());
    CHECK(strstr(qmdb_open_error(), ".hix") != NULL);
    CHECK(strstr(qmdb_strerror(QMDB_NO_CHECKPOINT), "durable") != NULL);
    fio_uninstall();
    fio_reset();
    /* A fast open finds no checkpoint of the last height: every block is there, and the
     * hybrid index resumes from the last run written plus its journal (the blocks since);
     * the in-memory one (its run is of the height it was loaded at) scans the log. */
    o.flags = QMDB_OPEN_FAST;
    REQUIRE(qmdb_open(e.dir, &o, &db) == 0);
    CHECK_EQ_U64(qmdb_height(db), h);
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    CHECK_EQ_U64(st.index_resumed_shards, indexer == QMDB_INDEXER_HYBRID ? 16 : 0);
    CHECK_OK(qmdb_close(db));
    env_verify(&e, h, h, "checkpoint write failure at close");
    printf("  %-52s QMDB_NO_CHECKPOINT, recovered height %llu\n",
           indexer == QMDB_INDEXER_HYBRID ? "ENOSPC writing the checkpoint (hybrid)"
                                          : "ENOSPC writing the checkpoint (in-memory)",
           (unsigned long long)h);
    env_free(&e);
}

/* ---- rollback (qmdb_rollback) ---------------------------------------------------------- */

static long rb_scenarios, rb_fired, rb_at_old, rb_at_new;

/*
 * One fault during qmdb_rollback from L = 30 back `depth` blocks: arms `r` just for the
 * rollback, expects it to fail with `want` (or succeed when the rule does not fire and
 * !must_fire), the handle then fatal, and the reopened database exactly at L (old_ok) or at
 * L - depth (new_ok), with the twin's root and the model's values; it then commits on.
 */
static void
rollback_fault(const char *name, const fio_rule *r, int depth, int want, const char *file_sub,
               bool old_ok, bool new_ok, bool must_fire, int powerloss_pct)
{
    env e;
    env_setup(&e, 30);
    /* The hybrid index captures the I/O layer at open: install it (no rule yet) first. */
    fio_install(NULL, false);
    qmdb_db *db = env_open(&e, 0, NULL);
    REQUIRE(db);
    uint64_t L = qmdb_height(db), to = L - (uint64_t)depth;
    fio_install(r, powerloss_pct >= 0);
    int rc = qmdb_rollback(db, to);
    bool fired = fio_triggered();
    rb_scenarios++;
    rb_fired += fired;
    if (must_fire && !fired)
        fprintf(stderr, "%s: the fault never fired\n", name);
    CHECK(fired || !must_fire);
    if (fired) {
        if (rc != want)
            fprintf(stderr, "%s: rollback returned %d (%s), wanted %d: %s\n", name, rc,
                    qmdb_strerror(rc), want, qmdb_last_error(db));
        CHECK_RC(rc, want);
        const char *msg = qmdb_last_error(db);
        if (conc && r->action == FIO_CRASH)
            file_sub = e.dir;
        if (file_sub && !strstr(msg, file_sub))
            fprintf(stderr, "%s: message '%s' does not name %s\n", name, msg, file_sub);
        CHECK(file_sub == NULL || strstr(msg, file_sub) != NULL);
        CHECK_RC(qmdb_rollback(db, to), QMDB_PANIC);
        check_fatal(db, L + 1, &e);
    } else {
        CHECK_OK(rc);
        old_ok = false;
        new_ok = true;
    }
    CHECK_OK(qmdb_close(db));
    fio_uninstall();
    if (powerloss_pct >= 0) {
        uint64_t rng = 77;
        fio_powerloss(&rng, (unsigned)powerloss_pct);
    } else {
        fio_reset();
    }
    uint64_t got = env_verify(&e, to, L, name);
    if (!((got == L && old_ok) || (got == to && new_ok)))
        fprintf(stderr, "%s: recovered height %llu, allowed: %s%s\n", name, (unsigned long long)got,
                old_ok ? "the old height " : "", new_ok ? "the rolled-back height" : "");
    CHECK((got == L && old_ok) || (got == to && new_ok));
    rb_at_old += got == L;
    rb_at_new += got == to;
    printf("  %-52s rc=%-6d recovered height %llu (%s)\n", name, fired ? rc : 0,
           (unsigned long long)got, got == L ? "old" : "rolled back");
    env_free(&e);
}

static void
test_rollback_faults(void)
{
    printf("rollback faults (from height 30):\n");
    const char *ix = getenv("QMDB_INDEXER");
    bool hybrid = ix && strcmp(ix, "hybrid") == 0;
    fio_rule r;
    /* Before the commit point (the META slot of the rolled-back height): the old height. */
    r = rule(FIO_PREAD, ".entries.", 1, FIO_ERR, EIO);
    rollback_fault("EIO reading the discarded tail", &r, 3, -EIO, ".entries", true, false, true,
                   -1);
    r = rule(FIO_PWRITE, "STATES", 1, FIO_ERR, EIO);
    rollback_fault("EIO writing the STATES record", &r, 2, -EIO, "STATES", true, false, true, -1);
    r = rule(FIO_FSYNC, "STATES", 1, FIO_ERR, EIO);
    rollback_fault("EIO on the STATES fsync", &r, 2, -EIO, "STATES", true, false, true, -1);
    r = rule(FIO_PWRITE, "META", 1, FIO_ERR, ENOSPC);
    rollback_fault("ENOSPC writing META", &r, 3, -ENOSPC, "META", true, false, true, -1);
    /* At the commit point: either height, exactly. */
    r = rule(FIO_PWRITE, "META", 1, FIO_SHORT, ENOSPC);
    rollback_fault("short META write, then ENOSPC", &r, 1, -ENOSPC, "META", true, true, true, -1);
    r = rule(FIO_FSYNC, "META", 1, FIO_ERR, EIO);
    rollback_fault("EIO on the META fsync", &r, 2, -EIO, "META", true, true, true, -1);
    r = rule(FIO_FSYNC, "META", 1, FIO_ERR, EIO);
    rollback_fault("EIO on the META fsync + power loss", &r, 2, -EIO, "META", true, true, true,
                   100);
    fio_rule c = rule(FIO_PWRITE, "META", 1, FIO_CRASH, 0);
    c.torn_pct = 40;
    rollback_fault("power loss tearing the META write", &c, 3, -EIO, "META", true, true, true, 100);
    c = rule(FIO_FSYNC, "STATES", 1, FIO_CRASH, 0);
    rollback_fault("power loss at the STATES fsync", &c, 1, -EIO, "STATES", true, false, true, 50);
    /* After the commit point: the files are cut back (an open would cut them too). */
    r = rule(FIO_FTRUNCATE, ".entries.", 1, FIO_ERR, EIO);
    rollback_fault("EIO cutting the entry log", &r, 3, -EIO, ".entries", false, true, true, -1);
    r = rule(FIO_FTRUNCATE, "ROOTS", 1, FIO_ERR, EIO);
    rollback_fault("EIO cutting ROOTS", &r, 2, -EIO, "ROOTS", false, true, true, -1);
    c = rule(FIO_FTRUNCATE, ".entries.", 2, FIO_CRASH, 0);
    rollback_fault("power loss while cutting the entry log", &c, 3, -EIO, ".entries", false, true,
                   true, 100);
    r = rule(FIO_UNLINK, ".entries.", 1, FIO_ERR, EIO);
    rollback_fault("EIO deleting a discarded segment", &r, 3, -EIO, ".entries", false, true, false,
                   -1);
    if (hybrid) {
        /* The journal's undo record (the run of the last close is ahead of the target). */
        r = rule(FIO_PWRITE, ".hixj", 1, FIO_ERR, ENOSPC);
        rollback_fault("ENOSPC writing the journal's undo record", &r, 2, -ENOSPC, ".hixj", false,
                       true, true, -1);
        r = rule(FIO_FSYNC, ".hixj", 1, FIO_ERR, EIO);
        rollback_fault("EIO on the journal's fsync", &r, 2, -EIO, ".hixj", false, true, true, -1);
        c = rule(FIO_FSYNC, ".hixj", 1, FIO_CRASH, 0);
        rollback_fault("power loss at the journal's fsync", &c, 3, -EIO, ".hixj", false, true, true,
                       100);
        /* The checkpoint a rollback writes when the journal cannot take it (forced here). */
        setenv("QMDB_ROLLBACK_CHECKPOINT", "1", 1);
        r = rule(FIO_PWRITE, ".hix", 1, FIO_ERR, ENOSPC);
        rollback_fault("ENOSPC writing the index checkpoint", &r, 2, -ENOSPC, ".hix", false, true,
                       true, -1);
        r = rule(FIO_RENAME, ".hix", 1, FIO_ERR, EIO);
        rollback_fault("EIO renaming the index checkpoint", &r, 2, -EIO, ".hix", false, true, true,
                       -1);
        unsetenv("QMDB_ROLLBACK_CHECKPOINT");
    }
    /* No fault: the rollback itself, reopened. */
    rollback_fault("no fault", NULL, 3, 0, NULL, false, true, false, -1);
    printf("  rollback scenarios: %ld, faults fired: %ld; recovered at the old height %ld, at "
           "the rolled-back one %ld\n",
           rb_scenarios, rb_fired, rb_at_old, rb_at_new);
}

int
main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "concurrent") != 0)) {
        fprintf(stderr, "usage: %s [concurrent]\n", argv[0]);
        return 2;
    }
    conc = argc == 2;
    fio_set_concurrent(conc);
    printf("configuration: %s\n", conc ? "concurrent" : "sequential");
    wl_tmpdir(base, sizeof(base), conc ? "fault-conc" : "fault");
    wl_rmdir(base);
    REQUIRE(mkdir(base, 0755) == 0);
    test_commit_faults();
    test_prune_fault();
    test_read_faults();
    test_prune_call_fault();
    test_checkpoint_fault(QMDB_INDEXER_HYBRID);
    test_checkpoint_fault(QMDB_INDEXER_MEMORY);
    test_seam_faults();
    test_rollback_faults();
    if (conc) {
        printf("batched reads seen by the fault layer: %ld\n", batched_total);
        CHECK(batched_total > 0);
    }
    int rc = test_report("test_fault");
    if (rc == 0) {
        char dir[512];
        for (int i = 1; i <= scenario_no; i++) {
            snprintf(dir, sizeof(dir), "%s/db%d", base, i);
            wl_rmdir(dir);
            snprintf(dir, sizeof(dir), "%s/twin%d", base, i);
            wl_rmdir(dir);
        }
        rmdir(base);
    }
    return rc;
}
