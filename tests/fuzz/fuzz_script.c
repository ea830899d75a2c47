/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_script.c -- fuzz target for the op-script line parser (tools/script.c). The input is
 * split at newlines and every line is parsed with one reused script_cmd, as `qmdb apply`
 * does. Properties: a parsed put/del has a 1..255-byte key, a put a non-empty value that fits
 * its buffer; an error always comes with a message.
 */
#include "fuzz.h"
#include "script.h"

#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    script_cmd c;
    memset(&c, 0, sizeof(c));
    const char *p = (const char *)data, *end = p + size;
    while (p <= end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        int rc = script_parse_line(p, len, &c);
        if (rc != 0) {
            FUZZ_ASSERT(rc == -1 && c.err[0] != '\0');
        } else {
            FUZZ_ASSERT(c.kind >= SCRIPT_NONE && c.kind <= SCRIPT_COMMIT);
            if (c.kind == SCRIPT_PUT || c.kind == SCRIPT_DEL)
                FUZZ_ASSERT(c.klen >= 1 && c.klen <= QMDB_MAX_KEY_LEN);
            if (c.kind == SCRIPT_PUT)
                FUZZ_ASSERT(c.vlen >= 1 && c.vlen <= c.vcap && c.val != NULL);
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    script_cmd_free(&c);
    return 0;
}
