/* SPDX-License-Identifier: Apache-2.0 */
/*
 * manifest.c -- the snapshot manifest's text codec and its file (format in manifest.h and
 * docs/SYNC.md). Thread: any.
 */
#include "manifest.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void
qm_hex(const u8 *p, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[p[i] >> 4];
        out[2 * i + 1] = d[p[i] & 15];
    }
    out[2 * n] = 0;
}

static int
mf_nib(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int
qm_unhex(const char *s, u8 *out, size_t n)
{
    if (strlen(s) != 2 * n)
        return QMDB_INVALID;
    for (size_t i = 0; i < n; i++) {
        int a = mf_nib(s[2 * i]), b = mf_nib(s[2 * i + 1]);
        if (a < 0 || b < 0)
            return QMDB_INVALID;
        out[i] = (u8)(a << 4 | b);
    }
    return 0;
}

int
qm_manifest_add(qm_manifest *m, const char *name, u64 bytes, const u8 sha[32])
{
    if (strlen(name) >= QM_CHUNK_NAME_MAX)
        return QMDB_INVALID;
    if (m->nchunks == m->cap) {
        u64 cap = m->cap ? 2 * m->cap : 64;
        qm_mchunk *c = realloc(m->chunks, cap * sizeof(*c));
        if (!c)
            return -ENOMEM;
        m->chunks = c;
        m->cap = cap;
    }
    qm_mchunk *c = &m->chunks[m->nchunks++];
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->bytes = bytes;
    memcpy(c->sha, sha, 32);
    return 0;
}

void
qm_manifest_free(qm_manifest *m)
{
    free(m->chunks);
    memset(m, 0, sizeof(*m));
}

int
qm_manifest_write(const char *dir, const qm_manifest *m, qm_err *err)
{
    char path[4096], tmp[4200], hex[65];
    snprintf(path, sizeof(path), "%s/%s", dir, QM_MANIFEST_NAME);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return qm_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
    qm_hex(m->root, 32, hex);
    fprintf(f, "qmdb-snapshot 1\nheight %" PRIu64 "\nroot %s\n", m->height, hex);
    fprintf(f, "params %" PRIu64 " %u %u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", m->compact_thres,
            m->util_ratio, m->util_div, m->history_blocks, m->entry_seg, m->twig_seg);
    for (u64 i = 0; i < m->nchunks; i++) {
        qm_hex(m->chunks[i].sha, 32, hex);
        fprintf(f, "chunk %s %" PRIu64 " %s\n", m->chunks[i].name, m->chunks[i].bytes, hex);
    }
    fprintf(f, "end %" PRIu64 "\n", m->nchunks);
    int rc = 0;
    if (fflush(f) != 0 || fsync(fileno(f)) != 0)
        rc = -errno;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc)
        return qm_err_set(err, rc, "%s: %s", path, strerror(-rc));
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* The next line of text[*off..len) into line (NUL-terminated); false at the end. */
static bool
mf_line(const char *text, size_t len, size_t *off, char *line, size_t cap, bool *toolong)
{
    if (*off >= len)
        return false;
    size_t i = *off, n = 0;
    *toolong = false;
    while (i < len && text[i] != '\n') {
        if (n + 1 < cap)
            line[n++] = text[i];
        else
            *toolong = true;
        i++;
    }
    line[n] = 0;
    *off = i < len ? i + 1 : i;
    return true;
}

#define MF_BAD(...)                                      \
    do {                                                 \
        rc = qm_err_set(err, QMDB_CORRUPT, __VA_ARGS__); \
        goto out;                                        \
    } while (0)

int
qm_manifest_parse(const char *text, size_t len, qm_manifest *m, qm_err *err)
{
    memset(m, 0, sizeof(*m));
    char line[512], a[128], b[128];
    size_t off = 0;
    unsigned ln = 0, state = 0; /* 0 magic, 1 height, 2 root, 3 params, 4 chunks, 5 done */
    int rc = 0;
    bool toolong;
    while (mf_line(text, len, &off, line, sizeof(line), &toolong)) {
        ln++;
        if (toolong)
            MF_BAD("MANIFEST line %u: too long", ln);
        char extra;
        unsigned long long x, y, z, u, v, w;
        switch (state) {
        case 0:
            if (strcmp(line, "qmdb-snapshot 1") != 0)
                MF_BAD("MANIFEST line %u: not a qmdb snapshot manifest of version 1", ln);
            state = 1;
            break;
        case 1:
            if (sscanf(line, "height %llu %c", &x, &extra) != 1)
                MF_BAD("MANIFEST line %u: expected 'height <H>'", ln);
            m->height = x;
            state = 2;
            break;
        case 2:
            if (sscanf(line, "root %127s %c", a, &extra) != 1 || qm_unhex(a, m->root, 32) != 0)
                MF_BAD("MANIFEST line %u: expected 'root <64 hex digits>'", ln);
            state = 3;
            break;
        case 3:
            if (sscanf(line, "params %llu %llu %llu %llu %llu %llu %c", &x, &y, &z, &u, &v, &w,
                       &extra) != 6 ||
                y == 0 || z == 0 || y > UINT32_MAX || z > UINT32_MAX || v == 0 || w == 0)
                MF_BAD("MANIFEST line %u: expected 'params' with six positive numbers", ln);
            m->compact_thres = x;
            m->util_ratio = (u32)y;
            m->util_div = (u32)z;
            m->history_blocks = u;
            m->entry_seg = v;
            m->twig_seg = w;
            state = 4;
            break;
        case 4:
            if (sscanf(line, "end %llu %c", &x, &extra) == 1) {
                if (x != m->nchunks)
                    MF_BAD("MANIFEST line %u: end line counts %llu chunks, %" PRIu64 " listed", ln,
                           x, m->nchunks);
                state = 5;
                break;
            }
            u8 sha[32];
            if (sscanf(line, "chunk %39s %llu %127s %c", a, &x, b, &extra) != 3 ||
                qm_unhex(b, sha, 32) != 0 || strchr(a, '/') || a[0] == '.')
                MF_BAD("MANIFEST line %u: expected 'chunk <name> <bytes> <sha256 hex>'", ln);
            for (u64 i = 0; i < m->nchunks; i++)
                if (strcmp(m->chunks[i].name, a) == 0)
                    MF_BAD("MANIFEST line %u: chunk %s listed twice", ln, a);
            QM_TRY(qm_manifest_add(m, a, x, sha));
            break;
        default:
            MF_BAD("MANIFEST line %u: text after the end line", ln);
        }
    }
    if (state != 5)
        MF_BAD("MANIFEST: truncated (no end line)");
out:
    if (rc)
        qm_manifest_free(m);
    return rc;
}

int
qm_manifest_read(const char *dir, qm_manifest *m, qm_err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, QM_MANIFEST_NAME);
    FILE *f = fopen(path, "r");
    if (!f)
        return qm_err_set(err, errno == ENOENT ? QMDB_NOTFOUND : -errno, "%s: %s", path,
                          strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (cap - len < 65536) {
            cap = cap ? 2 * cap : 65536;
            char *p = realloc(buf, cap);
            if (!p) {
                rc = -ENOMEM;
                break;
            }
            buf = p;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    if (rc == 0 && ferror(f))
        rc = qm_err_set(err, -EIO, "%s: read error", path);
    fclose(f);
    if (rc == 0)
        rc = qm_manifest_parse(buf, len, m, err);
    free(buf);
    return rc;
}
