#!/bin/sh
# sweep.sh -- runs the qmdb-bench sweeps of BENCHMARKS.md and plots them.
# Owns: the sweep points and their qmdb-bench command lines. Runs the benchmarks one after
# another from one shell process; no threads of its own.
#
# Usage: bench/scripts/sweep.sh [options] [size] [theta] [compact] [-- extra qmdb-bench flags]
# With no sweep named, all three run. Each qmdb-bench run writes OUT/<sweep>-<x>.json (and its
# log OUT/<sweep>-<x>.log); bench/scripts/sweep_plot.sh OUT then writes OUT/size.png, OUT/theta.png and
# OUT/compact.png (it can be re-run on its own). Databases are deleted after each run.
#
#   size     entry count sweep, every engine: --sizes (default "1000000 10000000"); --big adds
#            50M entries under --mem-cap 2G (needs root for the cgroup; the run warns and
#            continues uncapped otherwise)
#   theta    zipf θ sweep at --theta-n entries (default 1000000): θ in --thetas
#            (default "0 0.6 0.9 0.99 1.2 1.5"; 0 = uniform)
#   compact  qmdb compaction ablation at --compact-n entries (default 200000): utilization
#            ratio R/10 for R in --ratios (default "4 5 6 7 8 9 10"), compaction threshold
#            --compact-thres (default 1000 live entries per shard), history 10 blocks, 4 MiB
#            entry segments (so pruned segments really leave the disk), and an update phase
#            that overwrites the data set 3 times
#
# Options: --bin PATH (default build/release/bench/qmdb-bench, or $QMDB_BENCH), --out DIR
# (default sweep-results), --db-dir DIR (default /tmp/qmdb-sweep), --engines LIST (default
# qmdb,rocksdb,lmdb; the compaction ablation is qmdb only), --sizes, --big, --thetas,
# --theta-n, --compact-n, --ratios, --compact-thres, --no-plot.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${QMDB_BENCH:-$here/../../build/release/bench/qmdb-bench}
out=sweep-results
db=/tmp/qmdb-sweep
engines=qmdb,rocksdb,lmdb
sizes="1000000 10000000"
big=0
thetas="0 0.6 0.9 0.99 1.2 1.5"
theta_n=1000000
compact_n=200000
ratios="4 5 6 7 8 9 10"
compact_thres=1000
plot=1
sweeps=""
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    --db-dir) db=$2; shift ;;
    --engines) engines=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --big) big=1 ;;
    --thetas) thetas=$2; shift ;;
    --theta-n) theta_n=$2; shift ;;
    --compact-n) compact_n=$2; shift ;;
    --ratios) ratios=$2; shift ;;
    --compact-thres) compact_thres=$2; shift ;;
    --no-plot) plot=0 ;;
    size|theta|compact) sweeps="$sweeps $1" ;;
    --) shift; break ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "sweep.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$sweeps" ] || sweeps="size theta compact"
if [ ! -x "$bin" ]; then
  echo "sweep.sh: $bin not found; build it (cmake --preset release && cmake --build --preset release) or pass --bin" >&2
  exit 2
fi
mkdir -p "$out"

# run NAME ARGS... : one qmdb-bench run into OUT/NAME.json, log in OUT/NAME.log.
run() {
  name=$1
  shift
  echo "sweep: $name: $bin $*" >&2
  if "$bin" --db-dir "$db/$name" --calibrate-secs 0 --output "$out/$name.json" "$@" \
       > "$out/$name.log" 2>&1; then
    grep -A12 '^Side by side' "$out/$name.log" | grep -v '^results written' >&2 || true
  else
    echo "sweep: $name FAILED (see $out/$name.log)" >&2
    failed=1
  fi
  rm -rf "${db:?}/$name"
}

failed=0
for s in $sweeps; do
  case $s in
    size)
      list=$sizes
      [ "$big" -eq 0 ] || list="$list 50000000"
      for n in $list; do
        cap=""
        [ "$n" -lt 50000000 ] || cap="--mem-cap 2G"
        # shellcheck disable=SC2086
        run "size-$n" --engine "$engines" --entry-count "$n" $cap "$@"
      done ;;
    theta)
      for t in $thetas; do
        run "theta-$t" --engine "$engines" --entry-count "$theta_n" --hover-zipf-theta "$t" "$@"
      done ;;
    compact)
      opb=10000
      [ "$compact_n" -ge 200000 ] && [ $((compact_n % opb)) -eq 0 ] || opb=1000
      blocks=$((3 * compact_n / opb))
      for r in $ratios; do
        run "compact-$r" --engine qmdb --entry-count "$compact_n" --ops-per-block "$opb" \
          --hover-write-block "$blocks" --qmdb-compact-thres "$compact_thres" \
          --qmdb-utilization "$r/10" --qmdb-history-blocks 10 --qmdb-segment-bytes 4M "$@"
      done ;;
  esac
done
rmdir "$db" 2> /dev/null || true
if [ "$plot" -eq 1 ]; then
  "$here/sweep_plot.sh" "$out" || echo "sweep.sh: plotting failed or skipped" >&2
fi
exit $failed
