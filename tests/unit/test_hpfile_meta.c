/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hpfile_meta.c -- the segmented head-prunable file (append/read across segments and the
 * write buffer, reopen cutting torn tails, head pruning deleting segments, missing segments
 * reported as corruption), the residency trust counter (qm_trust, io.h), the page-cache
 * question's age classes (qm_cprobe, io.h), the read mapping
 * (qm_hpfile_view: the same bytes as pread, nothing past the written prefix, below the head or
 * after a cut; refused for read-only handles and under QMDB_NO_MMAP=1), page-cache residency
 * (qm_hpfile_resident), dropping a dead entry's pages (qm_hpfile_drop), huge folios for new 2 MiB
 * regions (hugefolio.h), records written at once and their pages mapped as written
 * (qm_hpfile_populate), the one-pass scan of the snapshot export (in place or through pread) and
 * the metadata slots (round trip, CRC, slot choice, torn slot).
 */
#include "../test.h"
#include "codec.h"
#include "hpfile.h"
#include "hugefolio.h"
#include "io.h"
#include "meta.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/qmdb-test-hpXXXXXX";

static int
exists(const char *name)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* Whether every page of [p, p + len) has a page-table entry in this process (bit 63 of
 * /proc/self/pagemap: present), or none does (want false). */
static bool
pages_mapped(const void *p, size_t len, bool want)
{
    long pg = sysconf(_SC_PAGESIZE);
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0)
        return false;
    bool ok = true;
    for (uintptr_t a = (uintptr_t)p / (uintptr_t)pg * (uintptr_t)pg; a < (uintptr_t)p + len;
         a += (uintptr_t)pg) {
        uint64_t ent = 0;
        if (pread(fd, &ent, sizeof(ent), (off_t)(a / (uintptr_t)pg * sizeof(ent))) != sizeof(ent) ||
            ((ent >> 63) != 0) != want)
            ok = false;
    }
    close(fd);
    return ok;
}

/* A record of a sixteenth of the buffer or more goes to the file at once, after the bytes
 * buffered before it; shorter ones wait in the buffer. Every byte reads back in order. With
 * qm_hpfile_populate on, a record written at once has its pages in the read mapping's page
 * tables and counts as populated from then on; turning it off unmaps them, as a cut forgets
 * them. */
static void
test_hpfile_long(void)
{
    qm_err err = {{0}};
    qm_hpfile f;
    CHECK_OK(qm_hpfile_open(&f, &(qm_hpfile_cfg){dir, "l", 1 << 20, 0, 0, 4096, true, false, true},
                            &err));
    static unsigned char data[40000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (unsigned char)(i * 11 + (i >> 8));
    uint64_t pos;
    CHECK_OK(qm_hpfile_append(&f, data, 100, &pos)); /* buffered */
    CHECK_EQ_U64(f.flushed, 0);
    CHECK_OK(qm_hpfile_append(&f, data + 100, 255, &pos)); /* 255 < 4096 / 16: buffered */
    CHECK_EQ_U64(f.flushed, 0);
    CHECK_OK(qm_hpfile_append(&f, data + 355, 256, &pos)); /* long: the buffer, then itself */
    CHECK_EQ_U64(pos, 355);
    CHECK_EQ_U64(f.flushed, 611);
    CHECK_EQ_U64(f.size, 611);
    CHECK(!qm_hpfile_populated(&f, 355, 256));            /* not asked for */
    CHECK_OK(qm_hpfile_append(&f, data + 611, 10, &pos)); /* buffered again */
    CHECK_EQ_U64(f.flushed, 611);
    CHECK_OK(qm_hpfile_append(&f, data + 621, 9000, &pos)); /* longer than the buffer */
    CHECK_EQ_U64(f.flushed, 9621);
    unsigned char back[sizeof(data)];
    CHECK_OK(qm_hpfile_read(&f, 0, back, 9621));
    CHECK(memcmp(back, data, 9621) == 0);

    qm_hpfile_populate(&f, true);
    CHECK_OK(qm_hpfile_append(&f, data + 9621, 12000, &pos)); /* long, mapped */
    CHECK_EQ_U64(pos, 9621);
    const unsigned char *v = qm_hpfile_view(&f, 9621, 12000);
    REQUIRE(v != NULL);
    /* A kernel before 5.14 has no MADV_POPULATE_READ: then nothing counts as mapped. */
    long pg = sysconf(_SC_PAGESIZE);
    void *probe = mmap(NULL, (size_t)pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(probe != MAP_FAILED);
    bool can = madvise(probe, (size_t)pg, 22 /* MADV_POPULATE_READ */) == 0;
    munmap(probe, (size_t)pg);
    CHECK(qm_hpfile_populated(&f, 9621, 12000) == can);
    if (can) {
        CHECK(pages_mapped(v, 12000, true));
        CHECK(!qm_hpfile_populated(&f, 9621, 100)); /* a record that short was buffered */
        CHECK(!qm_hpfile_populated(&f, 611, 9000)); /* written before */
        CHECK_OK(qm_hpfile_append(&f, data + 21621, 50, &pos)); /* buffered: not mapped */
        CHECK_OK(qm_hpfile_append(&f, data + 21671, 15000, &pos));
        CHECK(qm_hpfile_populated(&f, 21671, 15000));
        CHECK(qm_hpfile_populated(&f, 9621, 12000));
        CHECK(memcmp(qm_hpfile_view(&f, 21671, 15000), data + 21671, 15000) == 0);
        qm_hpfile_populate(&f, false); /* unmapped; the bytes stay readable */
        CHECK(!qm_hpfile_populated(&f, 21671, 15000));
        CHECK(pages_mapped(v + 4096, 4096, false));
        CHECK(memcmp(qm_hpfile_view(&f, 9621, 12000), data + 9621, 12000) == 0);
        qm_hpfile_populate(&f, true);
        CHECK_OK(qm_hpfile_append(&f, data, 20000, &pos));
        CHECK(qm_hpfile_populated(&f, pos, 20000));
        CHECK_OK(qm_hpfile_sync(&f));
        CHECK_OK(qm_hpfile_cut(&f, 21671)); /* a rollback: nothing counts as mapped */
        CHECK(!qm_hpfile_populated(&f, 9621, 12000));
        CHECK_OK(qm_hpfile_append(&f, data + 21671, 15000, &pos));
        CHECK(qm_hpfile_populated(&f, 21671, 15000));
    }
    CHECK_OK(qm_hpfile_read(&f, 0, back, 36671));
    CHECK(memcmp(back, data, 36671) == 0);
    qm_hpfile_close(&f);
}

static void
test_hpfile(void)
{
    qm_err err = {{0}};
    qm_hpfile f;
    const uint64_t seg = 65536;
    CHECK_OK(
        qm_hpfile_open(&f, &(qm_hpfile_cfg){dir, "h", seg, 0, 0, 1000, true, false, false}, &err));
    static unsigned char data[300000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (unsigned char)(i * 7 + (i >> 9));
    /* Appends of mixed sizes: some fit the buffer, some exceed it, some cross segments. */
    size_t off = 0;
    static const size_t sizes[] = {10, 990, 1, 5000, 70000, 8, 123, 65536, 3, 100000};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint64_t pos;
        CHECK_OK(qm_hpfile_append(&f, data + off, sizes[i], &pos));
        CHECK_EQ_U64(pos, off);
        off += sizes[i];
    }
    unsigned char back[300000];
    CHECK_OK(qm_hpfile_read(&f, 0, back, off));
    CHECK(memcmp(back, data, off) == 0);
    CHECK_OK(qm_hpfile_read(&f, 65530, back, 20)); /* across a segment boundary */
    CHECK(memcmp(back, data + 65530, 20) == 0);
    CHECK_RC(qm_hpfile_read(&f, off - 5, back, 10), QMDB_CORRUPT); /* past the end */
    CHECK_OK(qm_hpfile_sync(&f));
    uint64_t committed = off;
    /* Uncommitted tail: appended and flushed, then "crash". */
    uint64_t pos;
    CHECK_OK(qm_hpfile_append(&f, data, 70000, &pos));
    CHECK_OK(qm_hpfile_flush(&f));
    CHECK(exists("h.0000000004"));
    qm_hpfile_close(&f);

    CHECK_OK(qm_hpfile_open(
        &f, &(qm_hpfile_cfg){dir, "h", seg, 0, committed, 1000, false, false, false}, &err));
    CHECK(!exists("h.0000000004")); /* wholly uncommitted segment removed */
    memset(back, 0, sizeof(back));
    CHECK_OK(qm_hpfile_read(&f, 0, back, committed));
    CHECK(memcmp(back, data, committed) == 0);
    /* Append after reopen continues at the committed size. */
    CHECK_OK(qm_hpfile_append(&f, "xyz", 3, &pos));
    CHECK_EQ_U64(pos, committed);
    CHECK_OK(qm_hpfile_sync(&f));
    committed += 3;
    /* Prune: segments wholly below the head go away, reads below it are refused. */
    CHECK_OK(qm_hpfile_prune_head(&f, 140000));
    CHECK(!exists("h.0000000000") && !exists("h.0000000001") && exists("h.0000000002"));
    CHECK_RC(qm_hpfile_read(&f, 100, back, 10), QMDB_INVALID);
    CHECK_OK(qm_hpfile_read(&f, 140000, back, 100));
    CHECK(memcmp(back, data + 140000, 100) == 0);
    CHECK_EQ_U64(qm_hpfile_disk_bytes(&f), committed - 131072);

    /* A read-only handle opened before a writer prunes keeps reading the pruned bytes, also
     * through the descriptors that batched reads open only later. */
    qm_hpfile ro;
    CHECK_OK(qm_hpfile_open(
        &ro, &(qm_hpfile_cfg){dir, "h", seg, 140000, committed, 0, false, true, false}, &err));
    CHECK_OK(qm_hpfile_prune_head(&f, 200000));
    CHECK(!exists("h.0000000002"));
    memset(back, 0, 100);
    CHECK_OK(qm_hpfile_read(&ro, 140000, back, 100));
    CHECK(memcmp(back, data + 140000, 100) == 0);
    int dfd = -1;
    uint64_t doff = 0, left = 0;
    CHECK_OK(qm_hpfile_read_fd(&ro, 140000, false, &dfd, &doff, &left));
    CHECK(dfd >= 0 && pread(dfd, back, 100, (off_t)doff) == 100);
    CHECK(memcmp(back, data + 140000, 100) == 0);
    qm_hpfile_close(&ro);
    qm_hpfile_close(&f);

    /* A committed segment that is missing or short is corruption, not a crash. */
    CHECK_OK(qm_hpfile_open(
        &f, &(qm_hpfile_cfg){dir, "h", seg, 200000, committed, 1000, false, false, false}, &err));
    qm_hpfile_close(&f);
    char p[512];
    snprintf(p, sizeof(p), "%s/h.0000000003", dir);
    CHECK(truncate(p, 100) == 0);
    CHECK_RC(qm_hpfile_open(
                 &f, &(qm_hpfile_cfg){dir, "h", seg, 200000, committed, 1000, false, false, false},
                 &err),
             QMDB_CORRUPT);
    CHECK(strstr(err.msg, "h.0000000003") != NULL);
    CHECK(unlink(p) == 0);
    CHECK_RC(qm_hpfile_open(
                 &f, &(qm_hpfile_cfg){dir, "h", seg, 200000, committed, 1000, false, false, false},
                 &err),
             QMDB_CORRUPT);
}

/* Every view of [pos, pos + len) either is NULL or holds exactly what pread returns. */
static int
views_match(qm_hpfile *f, uint64_t from, uint64_t to, size_t len, unsigned *mapped)
{
    unsigned char back[512];
    for (uint64_t pos = from; pos + len <= to; pos += 997) {
        const unsigned char *v = qm_hpfile_view(f, pos, len);
        if (!v)
            continue;
        (*mapped)++;
        if (qm_hpfile_read(f, pos, back, len) != 0 || memcmp(v, back, len) != 0)
            return 0;
    }
    return 1;
}

/* Asks the kernel to drop the file's clean pages, then whether its first page left the page cache
 * (a file system may keep them: tmpfs does; the whole file is dropped, since the page cache may
 * hold it as one large folio, which a smaller range cannot split). */
static bool
file_pages_dropped(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    bool ok = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    void *m = ok ? mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    unsigned char in[1] = {1};
    ok = m != MAP_FAILED && mincore(m, 4096, in) == 0 && !(in[0] & 1);
    if (m != MAP_FAILED)
        munmap(m, 4096);
    close(fd);
    return ok;
}

/* A one-pass scan (qm_scan_one_pass) hands out the file's bytes: records of varying sizes,
 * front to back, across segment ends too; want holds the bytes of [from, to). */
static int
one_pass_matches(qm_hpfile *f, uint64_t from, uint64_t to, const unsigned char *want)
{
    qm_scan sc;
    if (qm_scan_init(&sc, f, 4096) != 0)
        return 0;
    qm_scan_one_pass(&sc);
    int ok = 1;
    for (uint64_t pos = from; ok && pos < to;) {
        size_t len = (size_t)((pos * 7) % 300 + 1);
        if (len > to - pos)
            len = (size_t)(to - pos);
        const unsigned char *p;
        ok = qm_scan_get(&sc, pos, len, &p) == 0 && memcmp(p, want + (pos - from), len) == 0;
        pos += len;
    }
    qm_scan_free(&sc);
    return ok;
}

static void
test_hpfile_map(void)
{
    qm_err err = {{0}};
    qm_hpfile f;
    const uint64_t seg = 65536;
    static unsigned char data[400000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (unsigned char)(i * 13 + (i >> 11));
    CHECK_OK(
        qm_hpfile_open(&f, &(qm_hpfile_cfg){dir, "m", seg, 0, 0, 4096, true, false, true}, &err));
    CHECK(qm_hpfile_mapped(&f));
    uint64_t pos;
    CHECK_OK(qm_hpfile_append(&f, data, 200000, &pos));
    CHECK_OK(qm_hpfile_append(&f, data + 200000, 100, &pos)); /* stays in the write buffer */
    /* Written bytes: views equal pread; the buffered tail, a range across a segment end and
     * anything past the end have no view. */
    unsigned mapped = 0;
    CHECK(views_match(&f, 0, 200100, 300, &mapped));
    CHECK(mapped > 100);
    CHECK(qm_hpfile_view(&f, 1000, 52) != NULL);
    CHECK(memcmp(qm_hpfile_view(&f, 1000, 52), data + 1000, 52) == 0);
    CHECK(qm_hpfile_view(&f, 199990, 20) == NULL); /* 10 bytes are still buffered */
    CHECK(qm_hpfile_view(&f, 200000, 1) == NULL);
    CHECK(qm_hpfile_view(&f, 65530, 20) == NULL); /* across segments 0 and 1 */
    CHECK(qm_hpfile_view(&f, 300000, 1) == NULL);
    CHECK(qm_hpfile_view(&f, UINT64_MAX - 4, 8) == NULL);
    /* qm_hpfile_span: what one view could cover (the segment's end, the flushed end). */
    CHECK_EQ_U64(qm_hpfile_span(&f, 1000, 52), 52);
    CHECK_EQ_U64(qm_hpfile_span(&f, 65530, 20), 6);
    CHECK_EQ_U64(qm_hpfile_span(&f, 199990, 20), 10);
    CHECK_EQ_U64(qm_hpfile_span(&f, 200000, 1), 0);
    CHECK_EQ_U64(qm_hpfile_span(&f, 300000, 1), 0);
    CHECK_OK(qm_hpfile_sync(&f));
    CHECK(qm_hpfile_view(&f, 200000, 100) != NULL); /* flushed now */
    /* Cut (a rollback): nothing past the new end has a view, also in the cut segment, and
     * bytes written again over the cut are what the views show. */
    CHECK_OK(qm_hpfile_cut(&f, 150000));
    CHECK(qm_hpfile_view(&f, 149990, 10) != NULL);
    CHECK(qm_hpfile_view(&f, 149990, 11) == NULL);
    CHECK(qm_hpfile_view(&f, 190000, 8) == NULL);
    CHECK_OK(qm_hpfile_append(&f, data + 300000, 60000, &pos));
    CHECK_EQ_U64(pos, 150000);
    CHECK_OK(qm_hpfile_sync(&f));
    const unsigned char *v = qm_hpfile_view(&f, 190000, 64);
    CHECK(v != NULL && memcmp(v, data + 340000, 64) == 0);
    mapped = 0;
    CHECK(views_match(&f, 0, 210000, 200, &mapped));
    CHECK(mapped > 100);
    /* Prune: below the head nothing has a view (the segments are gone). */
    CHECK_OK(qm_hpfile_prune_head(&f, 140000));
    CHECK(qm_hpfile_view(&f, 1000, 8) == NULL);
    CHECK(qm_hpfile_view(&f, 139999, 1) == NULL);
    v = qm_hpfile_view(&f, 140000, 64);
    CHECK(v != NULL && memcmp(v, data + 140000, 64) == 0);
    qm_hpfile_close(&f);

    /* Reopen: the committed segments are mapped again (bytes as written). */
    CHECK_OK(qm_hpfile_open(
        &f, &(qm_hpfile_cfg){dir, "m", seg, 140000, 210000, 4096, false, false, true}, &err));
    v = qm_hpfile_view(&f, 190000, 64);
    CHECK(v != NULL && memcmp(v, data + 340000, 64) == 0);
    /* Residency, the prefetcher's reason to skip a read: bytes just written are in the page
     * cache, also over many pages; nothing past the end, below the head or across a segment
     * end is. */
    CHECK(qm_hpfile_resident(&f, 190000, 64));
    CHECK(qm_hpfile_resident(&f, 180200, 64));    /* across a page end */
    CHECK(qm_hpfile_resident(&f, 140000, 56000)); /* 14 pages, to the segment's end */
    CHECK(qm_hpfile_resident(&f, 140000, 300));   /* inside one page */
    CHECK(!qm_hpfile_resident(&f, 209990, 64));
    CHECK(!qm_hpfile_resident(&f, 1000, 8));
    CHECK(!qm_hpfile_resident(&f, 190000, 8192)); /* across a segment end */
    CHECK(!qm_hpfile_resident(&f, 190000, 0));
    /* Pages dropped from the page cache (clean: the file was synced) are not resident; seen
     * through mincore first (file_pages_dropped), since a file system may keep them. */
    char segpath[256];
    snprintf(segpath, sizeof(segpath), "%s/m.0000000003", dir); /* not viewed yet */
    if (file_pages_dropped(segpath)) {
        CHECK(!qm_hpfile_resident(&f, 197000, 64));
        CHECK(!qm_hpfile_resident(&f, 196608, 13000));
        CHECK(qm_hpfile_resident(&f, 140000, 56000)); /* the segment before */
    }
    /* The export's one-pass scan: in place from the mapping, through the buffer across
     * segment ends. */
    CHECK(one_pass_matches(&f, 140000, 150000, data + 140000));
    CHECK(one_pass_matches(&f, 150000, 210000, data + 300000));
    qm_hpfile_close(&f);
    /* No mapping for a read-only handle (another process may cut its files), nor with
     * QMDB_NO_MMAP=1: reads go through pread and return the same bytes. */
    unsigned char back[64];
    CHECK_OK(qm_hpfile_open(
        &f, &(qm_hpfile_cfg){dir, "m", seg, 140000, 210000, 0, false, true, true}, &err));
    CHECK(!qm_hpfile_mapped(&f) && qm_hpfile_view(&f, 190000, 64) == NULL);
    CHECK_OK(qm_hpfile_read(&f, 190000, back, 64));
    CHECK(memcmp(back, data + 340000, 64) == 0);
    CHECK(!qm_hpfile_resident(&f, 190000, 64));                 /* unmapped: always read */
    CHECK(one_pass_matches(&f, 140000, 150000, data + 140000)); /* pread, with readahead */
    CHECK(one_pass_matches(&f, 150000, 210000, data + 300000));
    qm_hpfile_close(&f);
    CHECK(setenv("QMDB_NO_MMAP", "1", 1) == 0);
    CHECK_OK(qm_hpfile_open(
        &f, &(qm_hpfile_cfg){dir, "m", seg, 140000, 210000, 4096, false, false, true}, &err));
    CHECK(!qm_hpfile_mapped(&f) && qm_hpfile_view(&f, 190000, 64) == NULL);
    CHECK_OK(qm_hpfile_read(&f, 190000, back, 64));
    CHECK(memcmp(back, data + 340000, 64) == 0);
    qm_hpfile_close(&f);
    CHECK(unsetenv("QMDB_NO_MMAP") == 0);
}

/* Whether this file system drops clean pages on request (tmpfs keeps them): a probe file. */
static bool
fs_drops_pages(void)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/probe", dir);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return false;
    static const unsigned char page[4096] = {1};
    bool ok = write(fd, page, sizeof(page)) == (ssize_t)sizeof(page) && fsync(fd) == 0;
    close(fd);
    ok = ok && file_pages_dropped(p);
    unlink(p);
    return ok;
}

/* qm_hpfile_drop (a dead entry's pages leave the page cache): the pages wholly inside the range
 * go, also those this process has mapped; the partial pages at its ends and the other segments
 * stay; bytes not yet synced are left alone; the bytes read back unchanged. */
static void
test_hpfile_drop(void)
{
    qm_err err = {{0}};
    qm_hpfile f;
    const uint64_t seg = 65536;
    static unsigned char data[3 * 65536];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (unsigned char)(i * 7 + (i >> 9));
    CHECK_OK(
        qm_hpfile_open(&f, &(qm_hpfile_cfg){dir, "d", seg, 0, 0, 4096, true, false, true}, &err));
    uint64_t pos;
    CHECK_OK(qm_hpfile_append(&f, data, 2 * seg + 20000, &pos));
    CHECK_OK(qm_hpfile_sync(&f));
    CHECK_OK(qm_hpfile_append(&f, data + 2 * seg + 20000, 30000, &pos));
    CHECK_OK(qm_hpfile_flush(&f)); /* written out, not synced by the hpfile */
    /* Synced behind the hpfile's back, its pages are clean: only the clamp to synced keeps the
     * drop below away from them (the kernel never drops dirty pages). */
    char segpath[512];
    snprintf(segpath, sizeof(segpath), "%s/d.0000000002", dir);
    int sfd = open(segpath, O_RDWR);
    CHECK(sfd >= 0 && fsync(sfd) == 0);
    if (sfd >= 0)
        close(sfd);
    const unsigned char *v = qm_hpfile_view(&f, seg, seg); /* segment 1, mapped page by page */
    CHECK(v != NULL && memcmp(v, data + seg, seg) == 0);
    CHECK(qm_hpfile_resident(&f, seg, seg));
    bool drops = fs_drops_pages();
    /* 100 bytes before segment 1 and 200 after it: exactly segment 1's pages are whole. */
    qm_hpfile_drop(&f, seg - 100, seg + 300);
    qm_hpfile_drop(&f, 2 * seg + 20000, 30000); /* not synced */
    if (drops) {
        CHECK(!qm_hpfile_resident(&f, seg, 64));
        CHECK(!qm_hpfile_resident(&f, 2 * seg - 64, 64));
        CHECK(qm_hpfile_resident(&f, seg - 4096, 4096)); /* segment 0's last page */
        CHECK(qm_hpfile_resident(&f, 2 * seg, 4096));    /* segment 2's first page */
        CHECK(qm_hpfile_resident(&f, 2 * seg + 24576, 4096));
    } else {
        printf("test_hpfile_drop: the file system keeps dropped pages; bytes checked only\n");
    }
    v = qm_hpfile_view(&f, seg, seg);
    CHECK(v != NULL && memcmp(v, data + seg, seg) == 0);
    unsigned char back[4000];
    CHECK_OK(qm_hpfile_read(&f, seg - 2000, back, sizeof(back)));
    CHECK(memcmp(back, data + seg - 2000, sizeof(back)) == 0);
    CHECK_OK(qm_hpfile_read(&f, 2 * seg + 19000, back, sizeof(back)));
    CHECK(memcmp(back, data + 2 * seg + 19000, sizeof(back)) == 0);
    qm_hpfile_close(&f);
}

static void
test_meta(void)
{
    qm_meta m, r;
    memset(&m, 0, sizeof(m));
    m.seq = 6;
    m.height = 41;
    m.compact_thres = 1;
    m.util_ratio = 7;
    m.util_div = 10;
    m.history_blocks = 9;
    m.entry_seg = 1 << 20;
    m.twig_seg = 128 * 1024;
    memset(m.state_root, 0x5a, 32);
    for (unsigned s = 0; s < 16; s++) {
        m.shard[s].next_sn = 5000 + s;
        m.shard[s].live = 4100;
        m.shard[s].entry_size = 1 << 19;
        m.shard[s].sn_start_pos = 64;
        m.shard[s].root[0] = (unsigned char)s;
    }
    unsigned char buf[QM_META_SLOT];
    qm_meta_encode(&m, buf);
    CHECK_OK(qm_meta_decode(buf, sizeof(buf), &r));
    CHECK(memcmp(&m, &r, sizeof(m)) == 0);
    /* Any single flipped byte in the record fails the CRC or a range check. */
    for (unsigned i = 0; i < QM_META_LEN; i += 13) {
        buf[i] ^= 0x40;
        CHECK(qm_meta_decode(buf, sizeof(buf), &r) != 0);
        buf[i] ^= 0x40;
    }
    CHECK_RC(qm_meta_decode(buf, 100, &r), QMDB_CORRUPT);
    CHECK_EQ_U64(qm_get_u32le(buf + 8), QMDB_FORMAT_VERSION);
    /* A restored database with stubs (stub_end) is written as version 3 and read back; a
     * version-2 record with a stub_end, and a stub_end past next_sn, are damage. */
    m.shard[3].stub_end = 4100;
    qm_meta_encode(&m, buf);
    CHECK_EQ_U64(qm_get_u32le(buf + 8), QM_META_VERSION_STUBS);
    CHECK_OK(qm_meta_decode(buf, sizeof(buf), &r));
    CHECK(memcmp(&m, &r, sizeof(m)) == 0);
    qm_put_u32le(buf + 8, QMDB_FORMAT_VERSION);
    qm_put_u32le(buf + QM_META_LEN - 4, qm_crc32c(0, buf, QM_META_LEN - 4));
    CHECK_RC(qm_meta_decode(buf, sizeof(buf), &r), QMDB_CORRUPT);
    m.shard[3].stub_end = 5004;
    qm_meta_encode(&m, buf);
    CHECK_RC(qm_meta_decode(buf, sizeof(buf), &r), QMDB_CORRUPT);
    /* Another version whose CRC holds: a version mismatch, not damage. */
    m.shard[3].stub_end = 0;
    qm_meta_encode(&m, buf);
    qm_put_u32le(buf + 8, 4);
    qm_put_u32le(buf + QM_META_LEN - 4, qm_crc32c(0, buf, QM_META_LEN - 4));
    CHECK_RC(qm_meta_decode(buf, sizeof(buf), &r), QMDB_VERSION_MISMATCH);

    /* Store seq 6 (slot 0) and seq 7 (slot 1); the newest wins; a torn newest falls back. */
    qm_err err = {{0}};
    int fd = -1;
    CHECK_OK(qm_meta_store(dir, &fd, &m, &err));
    m.seq = 7;
    m.height = 42;
    CHECK_OK(qm_meta_store(dir, &fd, &m, &err));
    CHECK_OK(qm_meta_load(dir, false, &r, &err));
    CHECK_EQ_U64(r.height, 42);
    unsigned char junk[100];
    memset(junk, 0xee, sizeof(junk));
    /* One damaged copy of the newest slot: its second copy is used (meta.h). */
    CHECK(pwrite(fd, junk, sizeof(junk), QM_META_SLOT + 200) == (ssize_t)sizeof(junk));
    CHECK_OK(qm_meta_load(dir, false, &r, &err));
    CHECK_EQ_U64(r.height, 42);
    /* Both copies of the newest slot damaged: not a torn write (a torn write leaves one
     * copy valid), so the newest commit may be lost: refused, unless salvaging. */
    CHECK(pwrite(fd, junk, sizeof(junk), QM_META_SLOT + QM_META_COPY + 200) ==
          (ssize_t)sizeof(junk));
    CHECK_RC(qm_meta_load(dir, false, &r, &err), QMDB_CORRUPT);
    CHECK(strstr(err.msg, "META") && strstr(err.msg, "offset 4096"));
    CHECK_OK(qm_meta_load(dir, true, &r, &err));
    CHECK_EQ_U64(r.height, 41);
    /* The newest slot zeroed, or truncated away: refused too (this was a silent rollback). */
    static unsigned char zero[QM_META_SLOT];
    CHECK(pwrite(fd, zero, sizeof(zero), QM_META_SLOT) == (ssize_t)sizeof(zero));
    CHECK_RC(qm_meta_load(dir, false, &r, &err), QMDB_CORRUPT);
    CHECK(strstr(err.msg, "blank") && strstr(err.msg, "offset 4096"));
    CHECK_OK(ftruncate(fd, QM_META_SLOT));
    CHECK_RC(qm_meta_load(dir, false, &r, &err), QMDB_CORRUPT);
    CHECK(strstr(err.msg, "missing") != NULL);
    CHECK_OK(qm_meta_load(dir, true, &r, &err));
    CHECK_EQ_U64(r.height, 41);
    /* A torn write of the next commit (seq 7 over seq 5 in slot 1): any prefix, at byte or
     * sector granularity, leaves a loadable database at height 41 or 42, never refused. */
    unsigned char old5[QM_META_SLOT], new7[QM_META_SLOT], torn[QM_META_SLOT];
    m.seq = 5;
    m.height = 40;
    qm_meta_encode(&m, old5);
    m.seq = 7;
    m.height = 42;
    qm_meta_encode(&m, new7);
    for (unsigned cut = 0; cut <= QM_META_SLOT; cut++) {
        memcpy(torn, new7, cut);
        memcpy(torn + cut, old5 + cut, QM_META_SLOT - cut);
        CHECK(pwrite(fd, torn, sizeof(torn), QM_META_SLOT) == (ssize_t)sizeof(torn));
        CHECK_OK(qm_meta_load(dir, false, &r, &err));
        CHECK(r.height == (cut >= QM_META_LEN ? 42u : 41u));
    }
    /* A stale record (seq 3 beside seq 6): not consecutive, refused. */
    m.seq = 3;
    m.height = 38;
    qm_meta_encode(&m, torn);
    CHECK(pwrite(fd, torn, sizeof(torn), QM_META_SLOT) == (ssize_t)sizeof(torn));
    CHECK_RC(qm_meta_load(dir, false, &r, &err), QMDB_CORRUPT);
    CHECK(strstr(err.msg, "stale") != NULL);
    /* A new database: seq 0 in slot 0 and slot 1 never written (missing, or a torn first
     * write over nothing) is fine. */
    m.seq = 0;
    m.height = 0;
    qm_meta_encode(&m, torn);
    CHECK(pwrite(fd, torn, sizeof(torn), 0) == (ssize_t)sizeof(torn));
    CHECK_OK(ftruncate(fd, QM_META_SLOT));
    CHECK_OK(qm_meta_load(dir, false, &r, &err));
    CHECK_EQ_U64(r.height, 0);
    memset(torn, 0, sizeof(torn));
    memcpy(torn, new7, 1000);
    CHECK(pwrite(fd, torn, sizeof(torn), QM_META_SLOT) == (ssize_t)sizeof(torn));
    CHECK_OK(qm_meta_load(dir, false, &r, &err));
    CHECK_EQ_U64(r.height, 0);
    /* Slot 0 (seq 0) wiped while slot 1 holds seq 1: refused. */
    m.seq = 1;
    m.height = 1;
    qm_meta_encode(&m, torn);
    CHECK(pwrite(fd, torn, sizeof(torn), QM_META_SLOT) == (ssize_t)sizeof(torn));
    CHECK(pwrite(fd, zero, sizeof(zero), 0) == (ssize_t)sizeof(zero));
    CHECK_RC(qm_meta_load(dir, false, &r, &err), QMDB_CORRUPT);
    /* An intact record of another format version is a version mismatch; a damaged version
     * field is damage. */
    m.seq = 2;
    m.height = 2;
    qm_meta_encode(&m, torn);
    qm_put_u32le(torn + 8, 1);
    qm_put_u32le(torn + QM_META_LEN - 4, qm_crc32c(0, torn, QM_META_LEN - 4));
    CHECK_RC(qm_meta_decode(torn, sizeof(torn), &r), QMDB_VERSION_MISMATCH);
    qm_put_u32le(torn + QM_META_LEN - 4, 0);
    CHECK_RC(qm_meta_decode(torn, sizeof(torn), &r), QMDB_CORRUPT);
    close(fd);

    /* ROOTS records: round trip; a flipped bit anywhere, or the record of another height,
     * fails. */
    unsigned char rec[QM_ROOTS_REC], rt[32], back[32];
    for (unsigned i = 0; i < 32; i++)
        rt[i] = (unsigned char)(i * 7 + 1);
    qm_roots_encode(77, rt, rec);
    CHECK_OK(qm_roots_decode(77, rec, back));
    CHECK_MEM(back, rt, 32);
    CHECK_RC(qm_roots_decode(78, rec, back), QMDB_CORRUPT);
    for (unsigned i = 0; i < QM_ROOTS_REC * 8; i++) {
        rec[i / 8] ^= (unsigned char)(1u << (i % 8));
        CHECK_RC(qm_roots_decode(77, rec, back), QMDB_CORRUPT);
        rec[i / 8] ^= (unsigned char)(1u << (i % 8));
    }
    close(fd);
    char empty[] = "/tmp/qmdb-test-nometaXXXXXX";
    REQUIRE(mkdtemp(empty));
    CHECK_RC(qm_meta_load(empty, false, &r, &err), QMDB_NOTADB);
    rmdir(empty);
}

/* qm_cprobe: the age classes (under 1 MiB, then powers of two of MiB, the last open-ended);
 * a class is asked about while it learns (QM_CPROBE_LEARN questions) and while at least one
 * answer in QM_CPROBE_PAY is yes; a class that stops answering yes is asked one time in
 * QM_CPROBE_SAMPLE, and asked every time again once its halved figures show yes answers;
 * the classes are independent. */
static void
test_cprobe(void)
{
    const u64 mib = 1u << 20;
    CHECK_EQ_U64(qm_cprobe_class(0), 0);
    CHECK_EQ_U64(qm_cprobe_class(mib - 1), 0);
    CHECK_EQ_U64(qm_cprobe_class(mib), 1);
    CHECK_EQ_U64(qm_cprobe_class(2 * mib - 1), 1);
    CHECK_EQ_U64(qm_cprobe_class(2 * mib), 2);
    CHECK_EQ_U64(qm_cprobe_class(8 * mib), 4);
    CHECK_EQ_U64(qm_cprobe_class((u64)1 << 40), QM_CPROBE_CLASSES - 1);
    CHECK_EQ_U64(qm_cprobe_class(UINT64_MAX), QM_CPROBE_CLASSES - 1);
    static qm_cprobe p;                              /* zeroed */
    for (unsigned i = 0; i < QM_CPROBE_LEARN; i++) { /* learning: always asked */
        CHECK(qm_cprobe_ask(&p, 3));
        qm_cprobe_note(&p, 3, false);
    }
    unsigned asked = 0, calls = 10 * QM_CPROBE_SAMPLE;
    for (unsigned i = 0; i < calls; i++)
        asked += qm_cprobe_ask(&p, 3);
    CHECK_EQ_U64(asked, calls / QM_CPROBE_SAMPLE);
    CHECK(qm_cprobe_ask(&p, 2)); /* another class still learns */
    /* Yes answers one time in QM_CPROBE_PAY keep a class asked every time. */
    for (unsigned i = 0; i < 4 * QM_CPROBE_SPAN; i++) {
        CHECK(qm_cprobe_ask(&p, 5));
        qm_cprobe_note(&p, 5, i % QM_CPROBE_PAY == 0);
    }
    CHECK(p.ask[5] <= QM_CPROBE_SPAN); /* halved, never past the span */
    /* Class 3 turns cached: noted yes at its sampled questions, it is asked every time again
     * within a few spans. */
    unsigned until = 0;
    while (until < 4 * QM_CPROBE_SPAN * QM_CPROBE_SAMPLE) {
        until++;
        if (!qm_cprobe_ask(&p, 3))
            continue;
        qm_cprobe_note(&p, 3, true);
        unsigned streak = 0;
        while (streak < QM_CPROBE_SAMPLE && qm_cprobe_ask(&p, 3)) {
            qm_cprobe_note(&p, 3, true);
            streak++;
        }
        if (streak == QM_CPROBE_SAMPLE)
            break;
    }
    CHECK(until < 4 * QM_CPROBE_SPAN * QM_CPROBE_SAMPLE);
}

/* qm_trust: never skips before QM_TRUST_RUN yes answers in a row; then skips all but one
 * call in QM_TRUST_EVERY, and after QM_TRUST_LONG_RUN all but one in QM_TRUST_LONG_EVERY;
 * one no starts the count again. */
static void
test_trust(void)
{
    qm_trust t = {0};
    for (unsigned i = 0; i < QM_TRUST_RUN - 1; i++) {
        CHECK(!qm_trust_skip(&t));
        qm_trust_note(&t, true);
    }
    qm_trust_note(&t, false); /* one short of trust: a no restarts the count */
    for (unsigned i = 0; i < QM_TRUST_RUN - 1; i++) {
        CHECK(!qm_trust_skip(&t));
        qm_trust_note(&t, true);
    }
    CHECK(!qm_trust_skip(&t));
    qm_trust_note(&t, true);
    unsigned skipped = 0, calls = 20 * QM_TRUST_EVERY;
    for (unsigned i = 0; i < calls; i++)
        skipped += qm_trust_skip(&t);
    CHECK_EQ_U64(skipped, calls - calls / QM_TRUST_EVERY);
    /* Asked calls answered yes until QM_TRUST_LONG_RUN in a row: then one call in
     * QM_TRUST_LONG_EVERY is asked. */
    for (unsigned yes = QM_TRUST_RUN; yes < QM_TRUST_LONG_RUN; yes++) {
        unsigned i = 0;
        while (qm_trust_skip(&t) && ++i < QM_TRUST_EVERY)
            ;
        REQUIRE(i < QM_TRUST_EVERY); /* asked within one round */
        qm_trust_note(&t, true);
    }
    skipped = 0;
    calls = 20 * QM_TRUST_LONG_EVERY;
    for (unsigned i = 0; i < calls; i++)
        skipped += qm_trust_skip(&t);
    CHECK_EQ_U64(skipped, calls - calls / QM_TRUST_LONG_EVERY);
    for (unsigned i = 0; i < QM_TRUST_LONG_EVERY; i++) /* the asked call of the next round */
        if (!qm_trust_skip(&t))
            break;
    qm_trust_note(&t, false);
    for (unsigned i = 0; i < 4 * QM_TRUST_EVERY; i++)
        CHECK(!qm_trust_skip(&t));
    /* qm_io_resident: an anonymous page just written is resident; an empty range is not. */
    long pg = sysconf(_SC_PAGESIZE);
    unsigned char *m =
        mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(m != MAP_FAILED);
    m[0] = 1;
    CHECK(qm_io_resident(m, 1));
    CHECK(!qm_io_resident(m, 0));
    CHECK(!qm_io_resident(NULL, 1));
    munmap(m, (size_t)pg);
}

/* CRC-32C bit by bit (reflected polynomial 0x82F63B78), the reference for qm_crc32c. */
static uint32_t
crc_ref(uint32_t crc, const uint8_t *p, size_t len)
{
    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

/* qm_crc32c against the reference at every length that meets its three-stream rounds (3 x
 * 1360 bytes) and its 8-byte steps, at every alignment, and chained at any split. */
static void
test_crc(void)
{
    static uint8_t buf[3 * 8192];
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < sizeof(buf); i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
    static const size_t lens[] = {0,    1,    7,    8,    9,    4079, 4080,  4081,  4087, 4088,
                                  4092, 4096, 8159, 8160, 8161, 8192, 12240, 16380, 20000};
    unsigned bad = 0;
    for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
        for (size_t off = 0; off < 8; off++) {
            size_t len = lens[li];
            uint32_t want = crc_ref(0, buf + off, len);
            bad += qm_crc32c(0, buf + off, len) != want;
            bad += qm_crc32c(crc_ref(0, buf + off, len / 3), buf + off + len / 3, len - len / 3) !=
                   want;
            bad += qm_crc32c(0x12345678u, buf + off, len) != crc_ref(0x12345678u, buf + off, len);
        }
    for (size_t len = 4000; len < 4200; len++)
        bad += qm_crc32c(0, buf + 3, len) != crc_ref(0, buf + 3, len);
    CHECK(bad == 0);
}

/* The kB of a FIELD ("FilePmdMapped:") in /proc/self/smaps for the mapping that starts at
 * base; -1 if not found. */
static long
smaps_field_kib(const void *base, const char *field)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512], want[32];
    snprintf(want, sizeof(want), "%lx-", (unsigned long)(uintptr_t)base);
    long v = -1;
    int in = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strchr(line, '-') && strncmp(line, want, strlen(want)) == 0)
            in = 1;
        else if (in && strncmp(line, field, strlen(field)) == 0) {
            v = strtol(line + strlen(field), NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

static uint64_t
seg_file_size(const char *name, uint64_t *alloc)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    if (stat(p, &st) != 0)
        return UINT64_MAX;
    if (alloc)
        *alloc = (uint64_t)st.st_blocks * 512;
    return (uint64_t)st.st_size;
}

/* Whether this kernel and file system give a file a huge folio at all, found the other way
 * (one write of a whole aligned 2 MiB region, then a mapping of it): then readying must work. */
static int
kernel_makes_huge_folios(void)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/probe", dir);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 0;
    size_t n = 2u << 20;
    unsigned char *b = calloc(1, n);
    int yes = 0;
    if (b && pwrite(fd, b, n, 0) == (ssize_t)n) {
        unsigned char *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED) {
            (void)*(volatile unsigned char *)m;
            yes = smaps_field_kib(m, "FilePmdMapped:") >= 2048;
            munmap(m, n);
        }
    }
    free(b);
    close(fd);
    unlink(p);
    return yes;
}

/* Huge folios (hugefolio.h): a mapped file with 4 MiB segments readies each new 2 MiB region;
 * the bytes read back are the bytes written, through the mapping and pread, across regions,
 * segments, a cut and a reopen; a readied segment file is longer than its data by less than
 * 2 MiB, with a hole there (no blocks), and the open cuts it back to the committed size; a
 * log of long records is not readied.
 * Where the kernel made huge folios, the mapping covers a whole region with one huge page. */
static void
test_hpfile_huge(void)
{
    qm_err err = {{0}};
    qm_hpfile f;
    const uint64_t seg = 4u << 20, total = 9u << 20;
    unsigned char *data = malloc(total);
    REQUIRE(data != NULL);
    for (size_t i = 0; i < total; i++)
        data[i] = (unsigned char)(i * 29 + (i >> 13));
    CHECK_OK(qm_hpfile_open(&f, &(qm_hpfile_cfg){dir, "g", seg, 0, 0, 1 << 20, true, false, true},
                            &err));
    CHECK(qm_hpfile_mapped(&f));
    uint64_t pos, at = 0;
    for (size_t n = 3001; at < 5000000; at += n, n = n * 7 % 3000 + 100) {
        CHECK_OK(qm_hpfile_append(&f, data + at, n, &pos));
        CHECK_EQ_U64(pos, at);
        if (at % 7 == 0)
            CHECK_OK(qm_hpfile_sync(&f)); /* commits end mid-region, as blocks do */
    }
    CHECK_OK(qm_hpfile_sync(&f));
    unsigned mapped = 0;
    CHECK(views_match(&f, 0, at, 400, &mapped));
    CHECK(mapped > 4000);
    const unsigned char *v = qm_hpfile_view(&f, 4000000, 100);
    CHECK(v != NULL && memcmp(v, data + 4000000, 100) == 0);
    /* Segment 1 holds [4 MiB, at): readied up to its region's end when huge folios are on. */
    uint64_t in1 = at - seg, alloc = 0, sz1 = seg_file_size("g.0000000001", &alloc);
    CHECK(sz1 >= in1 && sz1 < in1 + (2u << 20));
    if (qm_huge_working()) {
        CHECK_EQ_U64(sz1 % (2u << 20), 0);
        CHECK(alloc < in1 + (1u << 20)); /* the rest is a hole: nothing written there */
        /* Segment 0's mapping (both regions were read through it above): the kernel maps
         * each as a huge page, the second too, which a write entered in its middle. */
        const unsigned char *m0 = qm_hpfile_view(&f, 0, 1);
        CHECK(m0 && qm_hpfile_view(&f, 2u << 20, 1));
        long pmd = smaps_field_kib(m0, "FilePmdMapped:");
        CHECK(pmd >= 4096);
        printf("test_hpfile_huge: huge folios on; segment 0 maps %ld KiB with huge pages\n", pmd);
    } else {
        const char *off = getenv("QMDB_NO_HUGE_FOLIOS");
        CHECK((off && off[0] && strcmp(off, "0") != 0) || !kernel_makes_huge_folios());
        printf("test_hpfile_huge: no huge folios here (kernel, file system or "
               "QMDB_NO_HUGE_FOLIOS); small folios\n");
    }
    /* A cut (rollback) into the middle of a readied region, new bytes after it. */
    CHECK_OK(qm_hpfile_cut(&f, 4500000));
    CHECK(seg_file_size("g.0000000001", NULL) == 4500000 - seg);
    CHECK_OK(qm_hpfile_append(&f, data + 6000000, 3000000, &pos));
    CHECK_EQ_U64(pos, 4500000);
    CHECK_OK(qm_hpfile_sync(&f));
    const uint64_t end = 7500000;
    unsigned char *want = malloc(end);
    REQUIRE(want != NULL);
    memcpy(want, data, 4500000);
    memcpy(want + 4500000, data + 6000000, 3000000);
    mapped = 0;
    CHECK(views_match(&f, 0, end, 400, &mapped));
    static unsigned char back[4096];
    for (uint64_t p = 0; p + sizeof(back) <= end; p += 250007) {
        CHECK_OK(qm_hpfile_read(&f, p, back, sizeof(back)));
        CHECK(memcmp(back, want + p, sizeof(back)) == 0);
    }
    qm_hpfile_close(&f);
    /* Reopen at the committed size: the readied tail is cut back; the bytes are unchanged. */
    CHECK(seg_file_size("g.0000000001", NULL) >= end - seg);
    CHECK_OK(qm_hpfile_open(
        &f, &(qm_hpfile_cfg){dir, "g", seg, 0, end, 1 << 20, false, false, true}, &err));
    CHECK_EQ_U64(seg_file_size("g.0000000001", NULL), end - seg);
    CHECK(one_pass_matches(&f, 0, end, want));
    CHECK_OK(qm_hpfile_append(&f, data, 100000, &pos)); /* and it grows again */
    CHECK_OK(qm_hpfile_sync(&f));
    CHECK_OK(qm_hpfile_read(&f, end + 50000, back, 64));
    CHECK(memcmp(back, data + 50000, 64) == 0);
    qm_hpfile_close(&f);
    /* A log of long records (64 KiB values; twig records) is not readied: its segment file
     * ends where its data ends. */
    CHECK_OK(qm_hpfile_open(&f, &(qm_hpfile_cfg){dir, "L", seg, 0, 0, 1 << 20, true, false, true},
                            &err));
    for (int i = 0; i < 40; i++)
        CHECK_OK(qm_hpfile_append(&f, data + (size_t)i * 1000, 65536, &pos));
    CHECK_OK(qm_hpfile_sync(&f));
    CHECK_EQ_U64(seg_file_size("L.0000000000", NULL), 40 * 65536);
    CHECK(views_match(&f, 0, 40 * 65536, 400, &mapped));
    qm_hpfile_close(&f);
    free(want);
    free(data);
}

/* Whether the open logs fit (qm_logs_fit) and readying is wanted (qm_huge_wanted), as the
 * bytes of open logs cross half the memory (QMDB_MEM_LIMIT, 256 MiB here) and all of it. */
static void
test_logs_fit(void)
{
    CHECK(qm_logs_fit());
    qm_huge_account(100ll << 20);
    CHECK(qm_logs_fit());
    CHECK(qm_huge_wanted() || getenv("QMDB_NO_HUGE_FOLIOS"));
    qm_huge_account(100ll << 20);
    CHECK(qm_logs_fit());
    CHECK(!qm_huge_wanted()); /* 200 MiB: over the 128 MiB budget */
    qm_huge_account(100ll << 20);
    CHECK(!qm_logs_fit()); /* 300 MiB */
    qm_huge_account(-(300ll << 20));
    CHECK(qm_logs_fit());
}

/* Writes text to dir/rel, making the directories on the way. */
static void
put(const char *rel, const char *text)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    for (char *s = p + strlen(dir) + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    FILE *f = fopen(p, "w");
    REQUIRE(f != NULL);
    fputs(text, f);
    REQUIRE(fclose(f) == 0);
}

/* The memory limit that sets the huge-folio budget (qm_huge_mem_limit), from a made-up mount
 * table, cgroup list and cgroup files: cgroup v1's memory.limit_in_bytes and v2's memory.max
 * along the process's path and its ancestors, the smaller of both, a v1 mount of a sub-tree,
 * "max" and missing files as no limit, and hierarchies without the memory controller
 * ignored. */
static void
test_mem_limit(void)
{
    char mi[600], cg[600], text[4096];
    snprintf(mi, sizeof(mi), "%s/mountinfo", dir);
    snprintf(cg, sizeof(cg), "%s/cgroup", dir);
    /* v1 memory at dir/v1m (limits 300 MB at /a/b, none above), v1 cpu at dir/v1c (a
     * memory.limit_in_bytes there must not count), v2 at dir/v2 ("max" at /x). */
    put("v1m/memory.limit_in_bytes", "9223372036854771712\n");
    put("v1m/a/memory.limit_in_bytes", "9223372036854771712\n");
    put("v1m/a/b/memory.limit_in_bytes", "300000000\n");
    put("v1c/a/b/memory.limit_in_bytes", "1000\n");
    put("v2/x/memory.max", "max\n");
    snprintf(text, sizeof(text),
             "25 1 0:22 / /sys rw - sysfs sysfs rw\n"
             "31 25 0:28 / %s/v1c rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
             "34 25 0:31 / %s/v1m rw,relatime - cgroup cgroup rw,memory\n"
             "40 25 0:37 / %s/v2 rw,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
             dir, dir, dir);
    put("mountinfo", text);
    put("cgroup", "9:name=systemd:/\n4:memory:/a/b\n2:cpu,cpuacct:/a/b\n0::/x\n");
    CHECK_EQ_U64(qm_huge_mem_limit(mi, cg), 300000000);
    /* The cap on an ancestor counts; the smaller of v1 and v2 wins. */
    put("v1m/a/memory.limit_in_bytes", "200000000\n");
    CHECK_EQ_U64(qm_huge_mem_limit(mi, cg), 200000000);
    put("v2/memory.max", "150000000\n");
    CHECK_EQ_U64(qm_huge_mem_limit(mi, cg), 150000000);
    /* Only v2 (no memory line in the list): its own limit. */
    put("cgroup", "0::/x\n");
    CHECK_EQ_U64(qm_huge_mem_limit(mi, cg), 150000000);
    put("v2/x/memory.max", "90000000\n");
    CHECK_EQ_U64(qm_huge_mem_limit(mi, cg), 90000000);
    /* A v1 mount whose root is /a (a container's view): the path /a/b is b below it. */
    snprintf(text, sizeof(text), "34 25 0:31 /a %s/v1m/a rw - cgroup cgroup rw,memory\n", dir);
    put("mountinfo", text);
    put("cgroup", "4:memory:/a/b\n");
    put("v1m/a/b/memory.limit_in_bytes", "120000000\n");
    CHECK_EQ_U64(qm_huge_mem_limit(mi, cg), 120000000);
    /* The process at the root with nothing set, and files that do not exist: no limit. */
    put("cgroup", "4:memory:/\n0::/\n");
    snprintf(text, sizeof(text), "34 25 0:31 / %s/v1m rw - cgroup cgroup rw,memory\n", dir);
    put("mountinfo", text);
    CHECK_EQ_U64(qm_huge_mem_limit(mi, cg), 9223372036854771712ull);
    snprintf(text, sizeof(text), "%s/none", dir);
    CHECK_EQ_U64(qm_huge_mem_limit(text, cg), UINT64_MAX);
    CHECK_EQ_U64(qm_huge_mem_limit(mi, text), UINT64_MAX);
}

int
main(void)
{
    test_trust();
    test_cprobe();
    REQUIRE(mkdtemp(dir) != NULL);
    /* Huge folios are readied for small logs too here (by default from 512 MiB of logs). */
    REQUIRE(setenv("QMDB_HUGE_MIN_LIVE", "0", 1) == 0);
    /* And the process may use 256 MiB: budgets of 128 MiB (readying) and 256 MiB (mapped
     * reads). */
    REQUIRE(setenv("QMDB_MEM_LIMIT", "268435456", 1) == 0);
    test_logs_fit();
    test_hpfile();
    test_hpfile_long();
    test_hpfile_map();
    test_hpfile_drop();
    test_hpfile_huge();
    test_mem_limit();
    test_meta();
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    /* CRC-32C known answer (RFC 3720): "123456789" -> 0xE3069283. */
    CHECK_EQ_U64(qm_crc32c(0, "123456789", 9), 0xE3069283u);
    test_crc();
    return test_report("test_hpfile_meta");
}
