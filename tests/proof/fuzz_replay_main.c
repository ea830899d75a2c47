/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_replay_main.c -- runs a libFuzzer target's LLVMFuzzerTestOneInput over every file of
 * the directories (or files) given, so CTest can replay a checked-in corpus with gcc and the
 * sanitizers. Exits non-zero if an argument cannot be read or nothing was replayed, or, with
 * --min-valid N first, if fewer than N inputs verified (the seeds are real proofs).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Defined by fuzz_proof_verify.c: how many inputs verified. */
extern unsigned long qmdb_fuzz_valid_inputs;

static int
run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return -1;
    /* Exact-size copy so ASan sees over-reads. */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

int
main(int argc, char **argv)
{
    unsigned count = 0;
    unsigned long min_valid = 0;
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--min-valid") == 0) {
        min_valid = strtoul(argv[2], NULL, 10);
        first = 3;
    }
    for (int i = first; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "cannot stat %s\n", argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) != 0)
                return 2;
            count++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
            if (run_file(path) != 0) {
                fprintf(stderr, "cannot read %s\n", path);
                closedir(d);
                return 2;
            }
            count++;
        }
        if (d)
            closedir(d);
    }
    printf("replayed %u inputs, %lu verified\n", count, qmdb_fuzz_valid_inputs);
    return count && qmdb_fuzz_valid_inputs >= min_valid ? 0 : 1;
}
