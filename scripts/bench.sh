#!/bin/sh
# bench.sh -- the README's main command: builds the release preset and runs qmdb-bench on a
# small default (1M entries) for qmdb and every key-value rival side by side (tuned RocksDB,
# RocksDB with defaults, RocksDB with blob files, LMDB). Extra arguments are passed to
# qmdb-bench (see docs/BENCH.md). Databases are deleted after the run. At the end qmdb-bench
# prints the side-by-side table with each phase scored against the fastest rival in it, the
# artifact's per-engine Results summary blocks, the per-engine figures and the background-job
# report, and writes the JSON (results.json, or --output FILE); bench/scripts/plot.sh then draws
# grouped bars of ops/s per phase and engine (and timelines of the long phases) next to it
# (FILE.png, bar data in FILE.bars.tsv). Without gnuplot or jq the plot is skipped with a
# warning.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release > /dev/null
cmake --build --preset release
json=results.json
prev=""
for a in "$@"; do
  case $a in --output=*) json=${a#--output=} ;; esac
  [ "$prev" != "--output" ] || json=$a
  prev=$a
done
rc=0
build/release/bench/qmdb-bench --engine qmdb,rocksdb,rocksdb-default,rocksdb-blob,lmdb --entry-count 1000000 \
  --ops-per-block 10000 --output results.json "$@" || rc=$?
if [ -f "$json" ]; then
  if command -v gnuplot > /dev/null 2>&1 && command -v jq > /dev/null 2>&1; then
    bench/scripts/plot.sh "$json" "${json%.json}.png" || echo "bench.sh: warning: plot failed" >&2
  else
    echo "bench.sh: warning: gnuplot or jq missing; plot skipped (scripts/deps.sh installs them)" >&2
  fi
fi
exit $rc
