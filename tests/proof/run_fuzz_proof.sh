#!/bin/sh
# run_fuzz_proof.sh [SECONDS] [OUTDIR] -- builds the proof-verifier fuzz target with clang
# libFuzzer + ASan + UBSan (verifier and hash module only) and runs it for SECONDS (default
# 600) on 1 job, seeded from tests/fuzz/corpus/proof_verify. New inputs go to OUTDIR/corpus
# (default build/fuzz-proof), never into the checked-in seeds; crashes to OUTDIR/crash-*.
set -eu
SECS=${1:-600}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${2:-$ROOT/build/fuzz-proof}
mkdir -p "$OUT/corpus"
S=$ROOT/src
clang -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$S" -I"$ROOT/include" \
    "$ROOT/tests/fuzz/fuzz_proof_verify.c" "$S/proof_verify.c" "$S/hash.c" \
    "$S/hash_portable.c" "$S/hash_shani.c" -lpthread -o "$OUT/fuzz_proof_verify"
cd "$OUT"
exec ./fuzz_proof_verify -max_total_time="$SECS" -max_len=8192 -print_final_stats=1 \
    -artifact_prefix="$OUT/" "$OUT/corpus" "$ROOT/tests/fuzz/corpus/proof_verify"
