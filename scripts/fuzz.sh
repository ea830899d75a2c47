#!/bin/sh
# fuzz.sh TARGET SECONDS -- builds tests/fuzz/fuzz_TARGET.c with clang libFuzzer + ASan + UBSan
# into build/fuzz/ and fuzzes it for SECONDS, starting from the checked-in corpus
# tests/fuzz/corpus/TARGET (new inputs go to build/fuzz/corpus-TARGET; crashes to
# build/fuzz/crash-TARGET-*). Targets: entry, meta, twigfile, script, proof_verify,
# mproof_verify, witness_verify, hix, chunk_verify, manifest, histfile.
# Not part of CI; CI replays the corpora (ctest -L fuzz-replay).
set -eu
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 TARGET SECONDS" >&2; exit 2; }
t=$1 secs=$2
src=tests/fuzz/fuzz_$t.c
[ -f "$src" ] || { echo "no such target: $src" >&2; exit 2; }
out=build/fuzz
mkdir -p "$out/corpus-$t"
CC=${CC:-clang}
FLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE -std=c11"
# The library's sources, as listed in src/CMakeLists.txt.
LIBSRC="$(sed -n '/set(QMDB_SOURCES/,/)/p' src/CMakeLists.txt | tr ' ()' '\n\n\n' |
          grep '\.c$' | sed 's|^|src/|') tools/script.c"
$CC $FLAGS -Iinclude -Isrc -Itools -Itests/fuzz "$src" $LIBSRC -lpthread -o "$out/fuzz_$t"
"$out/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$out/crash-$t-" \
    "$out/corpus-$t" "tests/fuzz/corpus/$t"
