/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_readpath.c -- the point reads (qmdb_get, qmdb_get_committed) and the batched ones
 * against a model, through every change of the entry log under them: blocks with short and
 * long values (64 KiB segments, so that entries cross segment ends; values up to 10 KB, so
 * that entries span pages and take the long-entry reads), with the log's pages dropped from
 * the page cache every few blocks (reads of entries that are not resident), compaction every
 * block, pruning with a short history, blocks in flight (submitted, not yet durable),
 * rollbacks followed by different blocks at the same heights (the log tail is cut and
 * rewritten), and a reopen. The last part reopens with QMDB_NO_MMAP=1 (every read through
 * pread) and checks that values and roots are the same as through the log's read mapping.
 * A second part has reader threads doing committed point reads while blocks are committed
 * (new segments mapped, old ones pruned and unmapped under them); every answer must be the
 * value of a height that was durable during the read. A third part reads entries of 1,000 and
 * 6,000 bytes with the log's pages dropped before each read: no read may fault more than once
 * (an entry across two pages is read by one pread, not by a fault per page). A fourth reads
 * with QMDB_OPEN_DIRECT_IO entries that were written a moment before and are still in the page
 * cache, beside ones that are not: those are copied from the page cache, not read again. A
 * fifth writes and reads entries of 70-90 KB, which are mapped as they are written
 * (test_long_mapped). A sixth checks that where the logs do not fit in memory, point reads
 * with QMDB_OPEN_DIRECT_IO of entries that are not resident leave the page cache alone
 * (test_direct_points); the "nofit" runs open the first part's handles with that flag.
 * CTest runs it as is, with QMDB_NO_MMAP=1 throughout, and with the hybrid indexer.
 * Uses qmdb.h (plus POSIX), and io.h's count of residency questions.
 */
#include "../test.h"
#include "hugefolio.h"
#include "io.h"
#include "qmdb.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEYS 1500u
#define OPS 160u
#define BLOCKS 48u
#define VMAX 10000u

static char dir[] = "/tmp/qmdb-test-readpathXXXXXX";

/* The model: each key's value (len 0: absent) after the last applied block, and after the
 * last durable one. */
typedef struct model {
    uint8_t v[KEYS][VMAX];
    uint32_t len[KEYS];
} model;
static model cur, prev, snap[3]; /* snap[h % 3]: the model after height h */

static void
key_of(unsigned k, char out[16])
{
    snprintf(out, 16, "rp-key-%05u", k);
}

/* A value for key k in the block seeded s: mostly short, some long (past one read guess and
 * across segment ends of the 64 KiB segments). */
static uint32_t
value_of(uint64_t s, unsigned k, uint8_t *out)
{
    uint64_t x = (s << 24 | k) * 0x9e3779b97f4a7c15ull | 1;
    uint32_t len = (uint32_t)(test_xorshift(&x) % 8 == 0 ? 400 + test_xorshift(&x) % (VMAX - 400)
                                                         : 1 + test_xorshift(&x) % 60);
    for (uint32_t i = 0; i < len; i++)
        out[i] = (uint8_t)test_xorshift(&x);
    return len;
}

/* Calls fn with a read-only descriptor of each entry log segment in d; how many there were. */
static unsigned
each_log(const char *d, void (*fn)(int fd, void *arg), void *arg)
{
    DIR *dp = opendir(d);
    REQUIRE(dp != NULL);
    struct dirent *de;
    unsigned n = 0;
    while ((de = readdir(dp)) != NULL) {
        if (!strstr(de->d_name, ".entries."))
            continue;
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", d, de->d_name);
        int fd = open(p, O_RDONLY);
        if (fd < 0)
            continue;
        fn(fd, arg);
        close(fd);
        n++;
    }
    closedir(dp);
    return n;
}

static void
drop_pages(int fd, void *arg)
{
    (void)arg;
    (void)fdatasync(fd);
    CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
}

/* Asks the kernel to drop the entry logs' clean pages from the page cache (those not mapped
 * by a reader), so that the reads that follow find entries that are not resident. */
static void
drop_log_pages(const char *d)
{
    CHECK(each_log(d, drop_pages, NULL) > 0);
}

/* Block with seed s: OPS distinct keys, about one in five present ones deleted. */
static void
make_block(qmdb_batch *b, uint64_t s)
{
    static uint8_t seen[KEYS];
    memset(seen, 0, sizeof(seen));
    uint64_t x = s * 0x2545f4914f6cdd1dull | 1;
    qmdb_batch_reset(b);
    for (unsigned n = 0; n < OPS;) {
        unsigned k = (unsigned)(test_xorshift(&x) % KEYS);
        if (seen[k])
            continue;
        seen[k] = 1;
        n++;
        char key[16];
        key_of(k, key);
        CHECK_OK(qmdb_batch_tx(b));
        if (cur.len[k] && test_xorshift(&x) % 5 == 0) {
            CHECK_OK(qmdb_batch_del(b, key, strlen(key)));
            cur.len[k] = 0;
        } else {
            cur.len[k] = value_of(s, k, cur.v[k]);
            CHECK_OK(qmdb_batch_put(b, key, strlen(key), cur.v[k], cur.len[k]));
        }
    }
}

/* One read of key k against model m (committed: qmdb_get_committed). */
static int
read_ok(qmdb_db *db, const model *m, unsigned k, bool committed)
{
    static uint8_t buf[VMAX];
    char key[16];
    key_of(k, key);
    size_t vlen = 0;
    int rc = committed ? qmdb_get_committed(db, key, strlen(key), buf, sizeof(buf), &vlen)
                       : qmdb_get(db, key, strlen(key), buf, sizeof(buf), &vlen);
    if (m->len[k] == 0)
        return rc == QMDB_NOTFOUND;
    return rc == 0 && vlen == m->len[k] && memcmp(buf, m->v[k], vlen) == 0;
}

/* Every key through qmdb_get and qmdb_get_committed (against cur), and a batch through
 * qmdb_get_many, including a too-small buffer. */
static void
check_all(qmdb_db *db, const char *when)
{
    unsigned bad = 0;
    for (unsigned k = 0; k < KEYS; k++)
        bad += !read_ok(db, &cur, k, false) + !read_ok(db, &cur, k, true);
    static char keys[64][16];
    static uint8_t bufs[64][VMAX];
    qmdb_read rd[64];
    for (unsigned i = 0; i < 64; i++) {
        unsigned k = (i * 97 + 13) % KEYS;
        key_of(k, keys[i]);
        rd[i] = (qmdb_read){keys[i], strlen(keys[i]), bufs[i], i == 5 ? 0 : VMAX, 0, 0};
    }
    CHECK_OK(qmdb_get_many(db, rd, 64));
    for (unsigned i = 0; i < 64; i++) {
        unsigned k = (i * 97 + 13) % KEYS;
        if (cur.len[k] == 0)
            bad += rd[i].rc != QMDB_NOTFOUND;
        else if (i == 5)
            bad += rd[i].rc != QMDB_BUFFER_TOO_SMALL || rd[i].vlen != cur.len[k];
        else
            bad += rd[i].rc != 0 || rd[i].vlen != cur.len[k] ||
                   memcmp(bufs[i], cur.v[k], cur.len[k]) != 0;
    }
    if (bad)
        fprintf(stderr, "%s: %u wrong reads\n", when, bad);
    CHECK(bad == 0);
}

/* ---- Committed point reads beside the writer ---- */

#define HOT 256u /* keys rewritten by every block */
static atomic_int stop_readers;
static atomic_uint reader_bad, reader_reads;

/* Key i's value at height h: h, i, then a filler whose length varies with h (some long). */
static size_t
hot_value(uint64_t h, unsigned i, uint8_t *out)
{
    size_t len = 16 + (size_t)((h * 7 + i) % 5 == 0 ? 900 + (h * 131 + i) % 1500 : (h + i) % 40);
    memcpy(out, &h, 8);
    memcpy(out + 8, &(uint64_t){i}, 8);
    for (size_t j = 16; j < len; j++)
        out[j] = (uint8_t)(h * 31 + i * 7 + j);
    return len;
}

static void *
reader_main(void *arg)
{
    qmdb_db *db = arg;
    uint8_t buf[VMAX], want[VMAX];
    uint64_t x = (uint64_t)(uintptr_t)&buf | 1;
    while (!atomic_load(&stop_readers)) {
        unsigned i = (unsigned)(test_xorshift(&x) % HOT);
        char key[16];
        snprintf(key, sizeof(key), "hot-%03u", i);
        uint64_t lo = qmdb_height(db), h = 0;
        size_t vlen = 0;
        int rc = qmdb_get_committed(db, key, strlen(key), buf, sizeof(buf), &vlen);
        uint64_t hi = qmdb_height(db);
        if (rc == 0 && vlen >= 16)
            memcpy(&h, buf, 8);
        if (rc != 0 || vlen < 16 || h < lo || h > hi || hot_value(h, i, want) != vlen ||
            memcmp(buf, want, vlen) != 0)
            atomic_fetch_add(&reader_bad, 1);
        atomic_fetch_add(&reader_reads, 1);
    }
    return NULL;
}

/* A new database at path with options o, open. */
static qmdb_db *
create_open(const char *path, qmdb_options *o)
{
    CHECK_OK(qmdb_create(path, o));
    qmdb_db *db = NULL;
    CHECK_OK(qmdb_open(path, o, &db));
    REQUIRE(db != NULL);
    return db;
}

static void
test_readers(const char *path)
{
    qmdb_options o;
    qmdb_options_init(&o);
    o.entry_segment_bytes = 65536;
    o.history_blocks = 2;
    o.compact_thres = 16;
    o.utilization_ratio = 9;
    o.utilization_div = 10;
    qmdb_db *db = create_open(path, &o);
    qmdb_batch *b = NULL;
    CHECK_OK(qmdb_batch_new(&b));
    static uint8_t v[VMAX];
    char key[16];
    uint64_t h = 1;
    for (unsigned i = 0; i < HOT; i++) {
        snprintf(key, sizeof(key), "hot-%03u", i);
        CHECK_OK(qmdb_batch_put(b, key, strlen(key), v, hot_value(h, i, v)));
    }
    CHECK_OK(qmdb_commit(db, h, b, NULL));
    pthread_t t[2];
    for (unsigned r = 0; r < 2; r++)
        REQUIRE(pthread_create(&t[r], NULL, reader_main, db) == 0);
    /* Blocks in flight (submit ahead, wait one behind), each rewriting every hot key. */
    for (h = 2; h <= 120; h++) {
        qmdb_batch_reset(b);
        for (unsigned i = 0; i < HOT; i++) {
            snprintf(key, sizeof(key), "hot-%03u", i);
            CHECK_OK(qmdb_batch_put(b, key, strlen(key), v, hot_value(h, i, v)));
        }
        CHECK_OK(qmdb_submit(db, h, b));
        CHECK_OK(qmdb_wait(db, h - 1, NULL));
        if (h % 20 == 0)
            CHECK_OK(qmdb_prune(db));
    }
    CHECK_OK(qmdb_wait(db, h - 1, NULL));
    atomic_store(&stop_readers, 1);
    for (unsigned r = 0; r < 2; r++)
        pthread_join(t[r], NULL);
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    CHECK(st.pruned_twigs > 0);
    CHECK(atomic_load(&reader_reads) > 0);
    CHECK_EQ_U64(atomic_load(&reader_bad), 0);
    CHECK_OK(qmdb_close(db));
    qmdb_batch_free(b);
}

/* ---- Cold point reads: one device read each at most ---- */

#define COLD 320u

/* Whether the file system under d drops clean pages on POSIX_FADV_DONTNEED (tmpfs does not):
 * a scratch file written, synced and dropped, then asked about with mincore. */
static bool
fs_drops_pages(const char *d)
{
    char p[512];
    snprintf(p, sizeof(p), "%s.probe", d);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    static uint8_t blk[65536];
    memset(blk, 7, sizeof(blk));
    bool ok = write(fd, blk, sizeof(blk)) == (ssize_t)sizeof(blk) && fdatasync(fd) == 0 &&
              posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    unsigned char in[64] = {0};
    void *m = ok ? mmap(NULL, sizeof(blk), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    size_t resident = 0;
    if (m != MAP_FAILED && mincore(m, sizeof(blk), in) == 0) {
        long pg = sysconf(_SC_PAGESIZE);
        for (size_t i = 0; i < sizeof(blk) / (size_t)pg && i < sizeof(in); i++)
            resident += in[i] & 1;
    } else {
        ok = false;
    }
    if (m != MAP_FAILED)
        munmap(m, sizeof(blk));
    close(fd);
    unlink(p);
    return ok && resident == 0;
}

static long
major_faults(void)
{
    struct rusage ru;
    CHECK(getrusage(RUSAGE_THREAD, &ru) == 0);
    return ru.ru_majflt;
}

/* Keys with values of vlen bytes, each read once with the log's pages dropped just before:
 * every read costs at most one device read, which shows as at most one major fault (a read
 * served by pread shows none). An entry that runs onto a second page must not fault on each
 * page in turn (shard.c, shard_may_touch). The memory indexer: its lookups read no pages. */
static void
test_cold_reads(const char *path, uint32_t vlen)
{
    qmdb_options o;
    qmdb_options_init(&o);
    o.indexer = QMDB_INDEXER_MEMORY;
    qmdb_db *db = create_open(path, &o);
    qmdb_batch *b = NULL;
    CHECK_OK(qmdb_batch_new(&b));
    static uint8_t v[VMAX], buf[VMAX];
    char key[16];
    /* Creates, then updates: the update stage reads entries of this length. */
    for (uint64_t h = 1; h <= 2; h++) {
        qmdb_batch_reset(b);
        for (unsigned i = 0; i < COLD; i++) {
            snprintf(key, sizeof(key), "cold-%04u", i);
            memset(v, (int)(h * 37 + i), vlen);
            CHECK_OK(qmdb_batch_put(b, key, strlen(key), v, vlen));
        }
        CHECK_OK(qmdb_commit(db, h, b, NULL));
    }
    unsigned bad = 0, twice = 0;
    long faults = 0;
    bool dropped = fs_drops_pages(path);
    for (unsigned i = 0; i < COLD; i++) {
        drop_log_pages(path);
        snprintf(key, sizeof(key), "cold-%04u", i);
        memset(v, (int)(2 * 37 + i), vlen);
        size_t got = 0;
        long f0 = major_faults();
        int rc = qmdb_get(db, key, strlen(key), buf, sizeof(buf), &got);
        long d = major_faults() - f0;
        bad += rc != 0 || got != vlen || memcmp(buf, v, vlen) != 0;
        twice += d > 1;
        faults += d;
    }
    if (bad || twice)
        fprintf(stderr, "cold reads of %u-byte values: %u wrong, %u with two faults or more\n",
                vlen, bad, twice);
    CHECK(bad == 0);
    CHECK(twice == 0);
    /* An entry longer than a page is never touched through the mapping unless all of it was
     * found resident (every check here says no, so no shard trusts its pages): no fault at
     * all. Shorter ones read through the mapping from dropped pages do fault, so the check
     * above measured something (not on file systems that keep the pages, tmpfs, nor without
     * the mapping). */
    const char *nomap = getenv("QMDB_NO_MMAP"), *lim = getenv("QMDB_MEM_LIMIT");
    bool no_mapping = nomap && strcmp(nomap, "0") != 0;
    /* A process whose logs do not fit in its memory reads entries with pread: no fault. */
    bool no_fit = lim && lim[0] && strtoull(lim, NULL, 10) < (1ull << 20);
    if (vlen > 4096 || no_fit)
        CHECK(faults == 0);
    else if (dropped && !no_mapping)
        CHECK(faults > 0);
    else
        printf("test_readpath: cold reads of %u-byte values: %ld major faults%s\n", vlen, faults,
               dropped ? "" : " (the file system kept the dropped pages)");
    /* Warm reads, enough for every shard to stop asking about each one (shard.c,
     * shard_page_resident: 256 resident answers in a row), then cold ones again: a trusted
     * read of dropped pages faults them in, and must still return the right value. */
    bad = 0;
    for (unsigned round = 0; round < 24; round++)
        for (unsigned i = 0; i < COLD; i++) {
            snprintf(key, sizeof(key), "cold-%04u", i);
            memset(v, (int)(2 * 37 + i), vlen);
            size_t got = 0;
            int rc = qmdb_get(db, key, strlen(key), buf, sizeof(buf), &got);
            bad += rc != 0 || got != vlen || memcmp(buf, v, vlen) != 0;
            if (round == 23 && i % 5 == 0)
                drop_log_pages(path);
        }
    CHECK(bad == 0);
    /* Batched reads: rounds of resident entries, enough for every shard to trust its pages,
     * then one batch after the log's pages were dropped, whose values must be right (the drop
     * leaves the pages this process has mapped in place, so it cannot force the skipped
     * positions to fault). A trusted batch skips the residency question (a system call) for
     * most positions of entries within a batched read's length (prefetch.c, pf_queue): the
     * last trusted batch asks about fewer than a quarter of its entries (counted per thread
     * by io.h's qm_io_resident_asks). A batch of longer entries asks about every position (the
     * question covers only the first bytes of such an entry, so it is not trusted) and its
     * second pass (which reads as the update stage does) reads every entry with pread, asking
     * nothing (shard.c, SHARD_MAP_MAX): one question per entry, whether the logs fit in
     * memory or not. An empty block before
     * each batch empties the warm caches, where the batch before left its entries (a batch
     * asks nothing about those). */
    static qmdb_read rd[COLD];
    static char keys[COLD][16];
    static uint8_t out[COLD][VMAX];
    bad = 0;
    uint64_t asks = 0;
    bool mapped = !(nomap && nomap[0] && strcmp(nomap, "0") != 0); /* as io.c reads it */
    for (unsigned round = 0; round <= 24; round++) {
        qmdb_batch_reset(b);
        CHECK_OK(qmdb_commit(db, 3 + round, b, NULL));
        if (round == 24)
            drop_log_pages(path);
        for (unsigned i = 0; i < COLD; i++) {
            snprintf(keys[i], sizeof(keys[i]), "cold-%04u", i);
            rd[i] =
                (qmdb_read){.key = keys[i], .klen = strlen(keys[i]), .buf = out[i], .cap = VMAX};
        }
        uint64_t a0 = qm_io_resident_asks();
        CHECK_OK(qmdb_get_many(db, rd, COLD));
        if (round == 23)
            asks = qm_io_resident_asks() - a0;
        for (unsigned i = 0; i < COLD; i++) {
            memset(v, (int)(2 * 37 + i), vlen);
            bad += rd[i].rc != 0 || rd[i].vlen != vlen || memcmp(out[i], v, vlen) != 0;
        }
    }
    CHECK(bad == 0);
    printf("test_readpath: batched reads of %u-byte values: %" PRIu64 " residency questions "
           "for %u entries in the last trusted batch\n",
           vlen, asks, COLD);
    if (mapped)
        CHECK(vlen + 128 <= 4096 ? asks < COLD / 4 : asks >= COLD && asks < 2 * COLD);
    CHECK_OK(qmdb_close(db));
    qmdb_batch_free(b);
}

/* ---- Batched reads with O_DIRECT: entries still in the page cache ---- */

#define CB_KEYS 1600u
#define CB_VLEN 300u

static void
cb_value(unsigned blk, unsigned i, uint8_t *v)
{
    for (unsigned j = 0; j < CB_VLEN; j++)
        v[j] = (uint8_t)(blk * 131 + i * 7 + j);
}

/* Whether files in d can be opened with O_DIRECT (tmpfs cannot: batched reads are buffered). */
static bool
fs_direct_io(const char *d)
{
    char p[512];
    snprintf(p, sizeof(p), "%s.dio", d);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    if (fd >= 0)
        close(fd);
    unlink(p);
    return fd >= 0;
}

/* Opens path with flags, writes CB_KEYS keys "old-*" in one block and CB_KEYS "new-*" in the
 * next with the log's pages dropped in between (the new entries stay cached: written through
 * the page cache), then reads old-0000, every new key and the other old keys in one batch, in
 * that order (the hybrid indexer sorts them by key hash), then rewrites every key in a block.
 * Checks every value and returns how many entries the batch copied from the page cache; *dev
 * receives its device reads, root the last block's root. */
static uint64_t
cb_run(const char *path, uint32_t flags, uint64_t *dev, uint8_t root[32])
{
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = flags;
    qmdb_db *db = create_open(path, &o);
    qmdb_batch *b = NULL;
    CHECK_OK(qmdb_batch_new(&b));
    static uint8_t v[CB_VLEN];
    static char keys[2 * CB_KEYS][16];
    for (unsigned blk = 0; blk < 2; blk++) {
        qmdb_batch_reset(b);
        for (unsigned i = 0; i < CB_KEYS; i++) {
            char *k = keys[blk * CB_KEYS + i];
            snprintf(k, 16, "%s-%04u", blk ? "new" : "old", i);
            cb_value(blk, i, v);
            CHECK_OK(qmdb_batch_put(b, k, strlen(k), v, CB_VLEN));
        }
        CHECK_OK(qmdb_commit(db, blk + 1, b, NULL));
        if (blk == 0)
            drop_log_pages(path);
    }
    static qmdb_read rd[2 * CB_KEYS];
    static uint8_t out[2 * CB_KEYS][CB_VLEN];
    static unsigned who[2 * CB_KEYS];
    unsigned n = 0;
    who[n++] = 0;
    for (unsigned i = 0; i < CB_KEYS; i++)
        who[n++] = CB_KEYS + i;
    for (unsigned i = 1; i < CB_KEYS; i++)
        who[n++] = i;
    for (unsigned j = 0; j < n; j++)
        rd[j] = (qmdb_read){
            .key = keys[who[j]], .klen = strlen(keys[who[j]]), .buf = out[j], .cap = CB_VLEN};
    qmdb_stats s0 = QMDB_STATS_INIT, s1 = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &s0));
    CHECK_OK(qmdb_get_many(db, rd, n));
    CHECK_OK(qmdb_stat(db, &s1));
    unsigned bad = 0;
    for (unsigned j = 0; j < n; j++) {
        cb_value(who[j] >= CB_KEYS, who[j] % CB_KEYS, v);
        bad += rd[j].rc != 0 || rd[j].vlen != CB_VLEN || memcmp(out[j], v, CB_VLEN) != 0;
    }
    CHECK(bad == 0);
    /* A block that rewrites every key applies from what the batch put in the warm cache (the
     * old entries, copied or read): the caller compares its root across the two runs. */
    qmdb_batch_reset(b);
    for (unsigned j = 0; j < 2 * CB_KEYS; j++) {
        cb_value(2, j, v);
        CHECK_OK(qmdb_batch_put(b, keys[j], strlen(keys[j]), v, CB_VLEN));
    }
    CHECK_OK(qmdb_commit(db, 3, b, root));
    CHECK_OK(qmdb_close(db));
    qmdb_batch_free(b);
    *dev = s1.batched_reads - s0.batched_reads;
    return s1.page_cache_reads - s0.page_cache_reads;
}

/* With QMDB_OPEN_DIRECT_IO, once a batch has met an entry that is not resident (memory is
 * short), the entries still in the page cache are copied from it, not read from the device
 * (prefetch.c, pf_cached): every new entry (all cached) is counted in page_cache_reads and
 * most old ones (dropped, but for the pages the new block shares with them) are read from the
 * device. Without the flag (buffered reads) nothing is counted. */
static void
test_cached_batch(const char *path)
{
    const char *nomap = getenv("QMDB_NO_MMAP");
    bool mapped = !(nomap && nomap[0] && strcmp(nomap, "0") != 0); /* as io.c reads it */
    if (!fs_drops_pages(path) || !fs_direct_io(path)) {
        printf("test_readpath: page-cache copies not checked (no O_DIRECT or the file system "
               "keeps dropped pages)\n");
        return;
    }
    char p[600], cmd[700];
    uint64_t dev, dev_buffered;
    uint8_t root[32], root_buffered[32];
    snprintf(p, sizeof(p), "%s.d", path);
    uint64_t taken = cb_run(p, QMDB_OPEN_DIRECT_IO, &dev, root);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", p);
    CHECK(system(cmd) == 0);
    snprintf(p, sizeof(p), "%s.b", path);
    uint64_t taken_buffered = cb_run(p, 0, &dev_buffered, root_buffered);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", p);
    CHECK(system(cmd) == 0);
    printf("test_readpath: O_DIRECT batch: %" PRIu64 " entries from the page cache, %" PRIu64
           " device reads; buffered: %" PRIu64 ", %" PRIu64 "\n",
           taken, dev, taken_buffered, dev_buffered);
    CHECK_EQ_U64(taken_buffered, 0);
    CHECK_MEM(root, root_buffered, 32);
    if (mapped) { /* the question is asked through the log's mapping */
        CHECK(taken >= CB_KEYS);
        CHECK(taken < CB_KEYS + CB_KEYS / 4);
        CHECK(dev >= CB_KEYS / 2);
    } else {
        CHECK_EQ_U64(taken, 0);
    }
}

/* Adds the pages of fd that are in the page cache to *(size_t *)arg. */
static void
count_resident(int fd, void *arg)
{
    static unsigned char in[1 << 16];
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size == 0)
        return;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (size_t)st.st_size, n = (len + pg - 1) / pg;
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    REQUIRE(m != MAP_FAILED && n <= sizeof(in));
    CHECK(mincore(m, len, in) == 0);
    for (size_t i = 0; i < n; i++)
        *(size_t *)arg += in[i] & 1;
    munmap(m, len);
}

/* Pages of the entry logs in d that are in the page cache. */
static size_t
log_pages_resident(const char *d)
{
    size_t res = 0;
    (void)each_log(d, count_resident, &res);
    return res;
}

#define DP_KEYS 800u

/* Value i of round r: most short (the entry within one read window), every ninth 1,500-9,000
 * bytes (across pages, past the window: read through the page cache). */
static uint32_t
dp_value(unsigned r, unsigned i, uint8_t *v)
{
    uint32_t len = i % 9 == 8 ? 1500 + (i * 977 + r * 131) % 7500 : 8 + (i * 37 + r) % 150;
    for (uint32_t j = 0; j < len; j++)
        v[j] = (uint8_t)(r * 29 + i * 3 + j);
    return len;
}

/* Reads every key of round r (values checked); the number of wrong answers. */
static unsigned
dp_read_all(qmdb_db *db, unsigned r, bool short_only)
{
    static uint8_t v[VMAX], buf[VMAX];
    unsigned bad = 0;
    for (unsigned i = 0; i < DP_KEYS; i++) {
        uint32_t len = dp_value(r, i, v);
        if (short_only && len > 200)
            continue;
        char key[16];
        snprintf(key, sizeof(key), "dp-%04u", i);
        size_t got = 0;
        int rc = qmdb_get(db, key, strlen(key), buf, sizeof(buf), &got);
        bad += rc != 0 || got != len || memcmp(buf, v, len) != 0;
    }
    return bad;
}

/* Writes two rounds of DP_KEYS values with flags, drops the log's pages, and reads the short
 * values (then all of them: values checked); the log pages the short reads made resident. */
static size_t
dp_run(const char *path, uint32_t flags)
{
    qmdb_options o;
    qmdb_options_init(&o);
    o.flags = flags;
    o.entry_segment_bytes = 65536; /* entries across segment ends */
    qmdb_db *db = create_open(path, &o);
    qmdb_batch *b = NULL;
    CHECK_OK(qmdb_batch_new(&b));
    static uint8_t v[VMAX];
    for (unsigned r = 0; r < 2; r++) {
        qmdb_batch_reset(b);
        for (unsigned i = 0; i < DP_KEYS; i++) {
            char key[16];
            snprintf(key, sizeof(key), "dp-%04u", i);
            uint32_t len = dp_value(r, i, v);
            CHECK_OK(qmdb_batch_put(b, key, strlen(key), v, len));
        }
        CHECK_OK(qmdb_commit(db, r + 1, b, NULL));
    }
    drop_log_pages(path); /* pages this process has mapped stay (drop_log_pages) */
    size_t res0 = log_pages_resident(path);
    CHECK(dp_read_all(db, 1, true) == 0);
    size_t res = log_pages_resident(path) - res0;
    CHECK(dp_read_all(db, 1, false) == 0);
    drop_log_pages(path);
    CHECK(dp_read_all(db, 1, false) == 0); /* long ones first met cold too */
    CHECK_OK(qmdb_close(db));
    qmdb_batch_free(b);
    return res;
}

/* Where the logs do not fit in memory (counted here as a huge log: qm_huge_account) and the
 * handle reads with O_DIRECT, a point read of an entry whose page is not resident reads past
 * the page cache (shard.c, shard_read_direct): reads of short values from a dropped log make
 * no page of it resident, where buffered reads bring in each page they read; every value,
 * long ones too (read with the length of the shard's latest long entry), comes back right. */
static void
test_direct_points(const char *path)
{
    if (!fs_drops_pages(path) || !fs_direct_io(path)) {
        printf("test_readpath: direct point reads not checked (no O_DIRECT or the file system "
               "keeps dropped pages)\n");
        return;
    }
    const int64_t huge = (int64_t)1 << 62;
    qm_huge_account(huge);
    CHECK(!qm_logs_fit());
    char p[600], cmd[700];
    snprintf(p, sizeof(p), "%s.d", path);
    size_t res_direct = dp_run(p, QMDB_OPEN_DIRECT_IO);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", p);
    CHECK(system(cmd) == 0);
    snprintf(p, sizeof(p), "%s.b", path);
    size_t res_buffered = dp_run(p, 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", p);
    CHECK(system(cmd) == 0);
    qm_huge_account(-huge);
    printf("test_readpath: log pages made resident by short point reads: %zu with O_DIRECT, %zu "
           "buffered\n",
           res_direct, res_buffered);
    CHECK(res_direct == 0);
    CHECK(res_buffered >= 20);
}

/* Long values (entries of 70,000-90,000 bytes: written at once, and while the logs are small
 * their pages mapped as they are written, then read through the mapping: shard.c,
 * SHARD_MAP_MAX) against a model through updates, deletes, a rollback (the log's tail cut and
 * written again) and a reopen; then the same blocks with QMDB_NO_MMAP=1 (every read through
 * pread) must give the same values and root. With the mapping, the records' pages are in the
 * process's page tables after the writes (smaps Rss of the entry logs). */
#define LM_KEYS 24u
#define LM_VMAX 90000u

static uint8_t lm_v[5][LM_KEYS][LM_VMAX]; /* lm_v[h]: the values after height h */
static uint32_t lm_len[5][LM_KEYS];
static uint64_t lm_written; /* bytes of the values put since the run began */

static void
lm_value(unsigned seed, unsigned k, uint8_t *out, uint32_t *len)
{
    uint64_t x = ((uint64_t)seed << 20 | k) * 0x9e3779b97f4a7c15ull | 1;
    *len = 70000 + (uint32_t)(test_xorshift(&x) % 20000);
    for (uint32_t i = 0; i < *len; i++)
        out[i] = (uint8_t)test_xorshift(&x);
}

/* Every key's qmdb_get against the values after height h; the number that differ. */
static unsigned
lm_bad(qmdb_db *db, unsigned h)
{
    static uint8_t buf[LM_VMAX];
    unsigned bad = 0;
    for (unsigned k = 0; k < LM_KEYS; k++) {
        char key[16];
        snprintf(key, sizeof(key), "lm-%04u", k);
        size_t vl = 0;
        int rc = qmdb_get(db, key, strlen(key), buf, sizeof(buf), &vl);
        if (lm_len[h][k] == 0 ? rc != QMDB_NOTFOUND
                              : rc != 0 || vl != lm_len[h][k] || memcmp(buf, lm_v[h][k], vl) != 0)
            bad++;
    }
    return bad;
}

/* Block h with seed `seed`: every key not skipped gets a new value, at height 3 one in five
 * present keys is deleted instead. */
static void
lm_block(qmdb_db *db, qmdb_batch *b, unsigned h, unsigned seed, uint8_t root[32])
{
    memcpy(lm_v[h], lm_v[h - 1], sizeof(lm_v[h]));
    memcpy(lm_len[h], lm_len[h - 1], sizeof(lm_len[h]));
    qmdb_batch_reset(b);
    for (unsigned k = 0; k < LM_KEYS; k++) {
        if (h > 1 && (k + seed) % 3 == 0)
            continue;
        char key[16];
        snprintf(key, sizeof(key), "lm-%04u", k);
        if (h == 3 && k % 5 == 0 && lm_len[h][k]) {
            CHECK_OK(qmdb_batch_del(b, key, strlen(key)));
            lm_len[h][k] = 0;
        } else {
            lm_value(seed, k, lm_v[h][k], &lm_len[h][k]);
            CHECK_OK(qmdb_batch_put(b, key, strlen(key), lm_v[h][k], lm_len[h][k]));
            lm_written += lm_len[h][k];
        }
    }
    CHECK_OK(qmdb_commit(db, h, b, root));
}

/* Bytes of the entry logs' read mappings in this process's page tables (smaps Rss). */
static uint64_t
lm_mapped_log_bytes(void)
{
    FILE *fp = fopen("/proc/self/smaps", "r");
    if (!fp)
        return 0;
    char line[1024];
    bool in_log = false;
    uint64_t kb = 0, total = 0;
    while (fgets(line, sizeof(line), fp)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3) { /* a mapping's first line */
            in_log = strstr(line, ".entries.") != NULL;
            continue;
        }
        if (in_log && sscanf(line, "Rss: %" SCNu64 " kB", &kb) == 1)
            total += kb * 1024;
    }
    fclose(fp);
    return total;
}

/* The blocks of test_long_mapped on a new database at path; its final root into root. */
static void
lm_run(const char *path, bool expect_mapped, uint8_t root[32])
{
    qmdb_options o;
    qmdb_options_init(&o);
    qmdb_db *db = create_open(path, &o);
    qmdb_batch *b = NULL;
    CHECK_OK(qmdb_batch_new(&b));
    uint8_t r[32];
    lm_written = 0;
    for (unsigned h = 1; h <= 3; h++) {
        lm_block(db, b, h, h, r);
        CHECK_EQ_U64(lm_bad(db, h), 0);
    }
    /* Every record written is mapped (about 7.5 MB of pages here; without the mapping as
     * written, the reads' and the update stage's faults map about 3.7 MB). */
    if (expect_mapped && qm_logs_small()) /* not under QMDB_MEM_LIMIT=1 (the "nofit" runs) */
        CHECK(lm_mapped_log_bytes() >= lm_written);
    CHECK_OK(qmdb_rollback(db, 2));
    CHECK_EQ_U64(lm_bad(db, 2), 0);
    lm_block(db, b, 3, 7, r); /* height 3 again, other values over the cut tail */
    CHECK_EQ_U64(lm_bad(db, 3), 0);
    CHECK_OK(qmdb_close(db));
    CHECK_OK(qmdb_open(path, &o, &db));
    CHECK_EQ_U64(lm_bad(db, 3), 0);
    lm_block(db, b, 4, 9, r); /* after the reopen: the new records mapped again */
    CHECK_EQ_U64(lm_bad(db, 4), 0);
    memcpy(root, r, 32);
    qmdb_batch_free(b);
    CHECK_OK(qmdb_close(db));
}

static void
test_long_mapped(const char *path)
{
    const char *nomap = getenv("QMDB_NO_MMAP");
    bool mapped = !(nomap && nomap[0] && strcmp(nomap, "0") != 0); /* as io.c reads it */
    /* Whether the kernel maps pages on request (Linux 5.14): else nothing is mapped early. */
    long pg = sysconf(_SC_PAGESIZE);
    void *probe = mmap(NULL, (size_t)pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(probe != MAP_FAILED);
    bool can = madvise(probe, (size_t)pg, 22 /* MADV_POPULATE_READ */) == 0;
    munmap(probe, (size_t)pg);
    char p[600], cmd[700];
    uint8_t root[32], root_pread[32];
    snprintf(p, sizeof(p), "%s.m", path);
    lm_run(p, mapped && can, root);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", p);
    CHECK(system(cmd) == 0);
    char *saved = nomap ? strdup(nomap) : NULL;
    CHECK(setenv("QMDB_NO_MMAP", "1", 1) == 0);
    snprintf(p, sizeof(p), "%s.p", path);
    lm_run(p, false, root_pread);
    CHECK_MEM(root, root_pread, 32);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", p);
    CHECK(system(cmd) == 0);
    if (saved)
        CHECK(setenv("QMDB_NO_MMAP", saved, 1) == 0);
    else
        CHECK(unsetenv("QMDB_NO_MMAP") == 0);
    free(saved);
}

static qmdb_db *
open_db(const char *path)
{
    qmdb_options o;
    qmdb_options_init(&o);
    /* Where the logs do not fit (the "nofit" runs), point reads of entries that are not
     * resident go past the page cache when the handle reads with O_DIRECT: the model checks
     * them through everything the first part does to the log. */
    const char *lim = getenv("QMDB_MEM_LIMIT");
    if (lim && lim[0] && fs_direct_io(path))
        o.flags |= QMDB_OPEN_DIRECT_IO;
    qmdb_db *db = NULL;
    CHECK_OK(qmdb_open(path, &o, &db));
    REQUIRE(db != NULL);
    return db;
}

int
main(void)
{
    REQUIRE(mkdtemp(dir) != NULL);
    qmdb_options o;
    qmdb_options_init(&o);
    o.entry_segment_bytes = 65536;
    o.compact_thres = 16; /* compaction every block: live entries move to the log tail */
    o.utilization_ratio = 9;
    o.utilization_div = 10;
    o.history_blocks = 6; /* pruning: old segments are deleted under the readers */
    CHECK_OK(qmdb_create(dir, &o));
    qmdb_db *db = open_db(dir);
    qmdb_batch *b = NULL;
    CHECK_OK(qmdb_batch_new(&b));
    uint8_t root[BLOCKS + 1][32], r[32];
    uint64_t seed = 1;
    for (uint64_t h = 1; h <= BLOCKS; h++) {
        prev = cur;
        make_block(b, seed++);
        if (h % 3 == 0) {
            /* In flight: the applied state is the block's, the committed one either. */
            CHECK_OK(qmdb_submit(db, h, b));
            unsigned bad = 0;
            for (unsigned k = 0; k < KEYS; k++) {
                bad += !read_ok(db, &cur, k, false);
                bad += !read_ok(db, &prev, k, true) && !read_ok(db, &cur, k, true);
            }
            CHECK(bad == 0);
            CHECK_OK(qmdb_wait(db, h, root[h]));
        } else {
            CHECK_OK(qmdb_commit(db, h, b, root[h]));
        }
        snap[h % 3] = cur;
        if (h % 4 == 1)
            drop_log_pages(dir);
        check_all(db, "after a block");
        if (h % 4 == 3)
            drop_log_pages(dir); /* the next block's prefetch reads entries not resident */
        if (h % 8 == 0) {
            /* Rollback by two blocks, then different blocks at those heights: the log tail
             * is cut and written again at the same offsets with other bytes. */
            CHECK_OK(qmdb_rollback(db, h - 2));
            cur = snap[(h - 2) % 3];
            check_all(db, "after a rollback");
            for (uint64_t hh = h - 1; hh <= h; hh++) {
                make_block(b, 1000 + seed++);
                CHECK_OK(qmdb_commit(db, hh, b, root[hh]));
                snap[hh % 3] = cur;
            }
            check_all(db, "after blocks replacing rolled-back ones");
        }
        if (h % 10 == 0)
            CHECK_OK(qmdb_prune(db));
    }
    qmdb_stats st = QMDB_STATS_INIT;
    CHECK_OK(qmdb_stat(db, &st));
    CHECK(st.compactions > 0);
    CHECK(st.pruned_twigs > 0 || st.entry_file_bytes > 0);
    CHECK_OK(qmdb_close(db));

    /* Reopen through the mapping, then through pread only: the same values and roots. */
    db = open_db(dir);
    check_all(db, "after reopen");
    CHECK_OK(qmdb_root(db, BLOCKS, r));
    CHECK_MEM(r, root[BLOCKS], 32);
    CHECK_OK(qmdb_close(db));
    char copy[sizeof(dir) + 8], cmd[700];
    snprintf(copy, sizeof(copy), "%s.copy", dir);
    snprintf(cmd, sizeof(cmd), "cp -a %s %s", dir, copy);
    CHECK(system(cmd) == 0);
    const char *env = getenv("QMDB_NO_MMAP");
    char *saved = env ? strdup(env) : NULL;
    CHECK(setenv("QMDB_NO_MMAP", "1", 1) == 0);
    db = open_db(dir);
    check_all(db, "after reopen with QMDB_NO_MMAP=1");
    CHECK_OK(qmdb_root(db, BLOCKS, r));
    CHECK_MEM(r, root[BLOCKS], 32);
    /* The same next block applied without the mapping here and with it (unless the
     * environment disables it) to the copy: the same root and values. */
    static model base;
    base = cur;
    uint8_t r_pread[32], r_map[32];
    make_block(b, 5000);
    CHECK_OK(qmdb_commit(db, BLOCKS + 1, b, r_pread));
    check_all(db, "after a block with QMDB_NO_MMAP=1");
    CHECK_OK(qmdb_close(db));
    if (saved)
        CHECK(setenv("QMDB_NO_MMAP", saved, 1) == 0);
    else
        CHECK(unsetenv("QMDB_NO_MMAP") == 0);
    free(saved);
    db = open_db(copy);
    cur = base;
    make_block(b, 5000);
    CHECK_OK(qmdb_commit(db, BLOCKS + 1, b, r_map));
    CHECK_MEM(r_map, r_pread, 32);
    check_all(db, "after the same block on the copy");
    CHECK_OK(qmdb_close(db));
    snprintf(cmd, sizeof(cmd), "rm -rf %s", copy);
    CHECK(system(cmd) == 0);

    static const uint32_t cold_len[] = {1000, 6000};
    for (unsigned i = 0; i < 2; i++) {
        snprintf(copy, sizeof(copy), "%s.c%u", dir, i);
        test_cold_reads(copy, cold_len[i]);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", copy);
        CHECK(system(cmd) == 0);
    }

    snprintf(copy, sizeof(copy), "%s.cb", dir);
    test_cached_batch(copy);
    snprintf(copy, sizeof(copy), "%s.dp", dir);
    test_direct_points(copy);
    snprintf(copy, sizeof(copy), "%s.lm", dir);
    test_long_mapped(copy);

    snprintf(copy, sizeof(copy), "%s.rd", dir);
    test_readers(copy);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", copy);
    CHECK(system(cmd) == 0);
    qmdb_batch_free(b);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return test_report("test_readpath");
}
