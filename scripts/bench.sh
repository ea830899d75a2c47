#!/bin/sh
# bench.sh -- the README's main command: builds the release preset and runs qmdb-bench on a
# small default (1M entries) for qmdb, tuned RocksDB and LMDB side by side. Extra arguments
# are passed to qmdb-bench (see docs/BENCH.md). Databases are deleted after the run.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release > /dev/null
cmake --build --preset release
exec build/release/bench/qmdb-bench --engine qmdb,rocksdb,lmdb --entry-count 1000000 \
  --ops-per-block 10000 --output results.json "$@"
