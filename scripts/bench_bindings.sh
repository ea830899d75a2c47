#!/bin/sh
# bench_bindings.sh [N] -- the bindings benchmark: N puts in blocks of 10,000 (one commit per
# block), N single gets, N gets in get_many batches of 10,000, from C, Rust, Go and Python
# against the same installed Release libqmdb (the embed preset). N defaults to 100000; the
# figures in docs/BENCH.md ("Bindings") are N=1000000. The four programs run in turn, RUNS
# times (default 3, environment QMDB_BENCH_RUNS), so that a noisy neighbour hits all of them
# alike; the table shows each language's best run and its ratio to C's best.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
N=${1:-100000}
DIR=${QMDB_BENCH_DIR:-/tmp}
TMP=$(mktemp -d "$DIR/qmdb-bbench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
PREFIX=$ROOT/build/embed/prefix   # fixed: see test_embed.sh
rm -rf "$PREFIX"
cmake --preset embed >/dev/null
cmake --build --preset embed >/dev/null
cmake --install build/embed --prefix "$PREFIX" >/dev/null
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" LD_LIBRARY_PATH="$PREFIX/lib" QMDB_LIB="$PREFIX/lib/libqmdb.so.0"
export GOPROXY=off GOFLAGS=-mod=mod GOCACHE="$ROOT/build/embed/gocache" CARGO_TARGET_DIR="$ROOT/build/embed/cargo"

# shellcheck disable=SC2046
cc -O2 examples/kvbench.c $(pkg-config --cflags --libs qmdb) -o "$TMP/kvbench_c"
(cd bindings/go && go build -o "$TMP/kvbench_go" ./bench)
(cd bindings/rust && cargo build --offline -q --release --example kvbench)
RS="$CARGO_TARGET_DIR/release/examples/kvbench"

RUNS=${QMDB_BENCH_RUNS:-3}
run() { rm -rf "$TMP/db"; sync; "$@" "$TMP/db" "$N" | tee -a "$TMP/out"; }
i=0
while [ "$i" -lt "$RUNS" ]; do
  run "$TMP/kvbench_c"
  run "$RS"
  run "$TMP/kvbench_go"
  run python3 bindings/python/examples/kvbench.py
  i=$((i + 1))
done
awk '
  { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    l = v["lang"]; if (!(l in put)) order[++nl] = l
    if (v["put_commit_ops_s"] + 0 > put[l]) put[l] = v["put_commit_ops_s"] + 0
    if (v["get_ops_s"] + 0 > get[l]) get[l] = v["get_ops_s"] + 0
    if (v["get_many_ops_s"] + 0 > many[l]) many[l] = v["get_many_ops_s"] + 0 }
  END {
    printf "\n| language | puts+commit ops/s | vs C | get ops/s | vs C | get_many ops/s | vs C |\n"
    printf "|---|---:|---:|---:|---:|---:|---:|\n"
    for (r = 1; r <= nl; r++) { l = order[r]
      printf "| %s | %d | %.2f | %d | %.2f | %d | %.2f |\n", l, put[l], put[l] / put["c"],
             get[l], get[l] / get["c"], many[l], many[l] / many["c"] }
  }' "$TMP/out"
