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
# Best run per language, and the median over rounds of each language's ratio to C in the same
# round (the robust figure on a shared machine: a round's programs ran back to back).
awk '
  function med(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] + 0 }
    l = $1; sub(/^lang=/, "", l)
    if (l == "c") { round++; cp = v["put_commit_ops_s"]; cg = v["get_ops_s"]; cm = v["get_many_ops_s"] }
    if (!(l in put)) order[++nl] = l
    if (v["put_commit_ops_s"] > put[l]) put[l] = v["put_commit_ops_s"]
    if (v["get_ops_s"] > get[l]) get[l] = v["get_ops_s"]
    if (v["get_many_ops_s"] > many[l]) many[l] = v["get_many_ops_s"]
    rp[l, round] = v["put_commit_ops_s"] / cp; rg[l, round] = v["get_ops_s"] / cg
    rm[l, round] = v["get_many_ops_s"] / cm }
  END {
    printf "\n| language | puts+commit ops/s (best) | vs C | get ops/s (best) | vs C | get_many ops/s (best) | vs C |\n"
    printf "|---|---:|---:|---:|---:|---:|---:|\n"
    for (r = 1; r <= nl; r++) { l = order[r]
      for (k = 1; k <= round; k++) { a[k] = rp[l, k]; b[k] = rg[l, k]; c[k] = rm[l, k] }
      printf "| %s | %d | %.2f | %d | %.2f | %d | %.2f |\n", l, put[l], med(a, round),
             get[l], med(b, round), many[l], med(c, round) }
    printf "\n(vs C: median over %d rounds of the ratio to C in the same round)\n", round
  }' "$TMP/out"
