#!/bin/sh
# matrix.sh -- the value-size matrix of BENCHMARKS.md: value sizes 8 B, 32 B, 1 KiB and 64 KiB,
# each uncapped and under a memory cgroup cap well below the data size, every engine side by
# side in each cell, every cell scored against the fastest rival in it.
# Owns: the cells' sizes and qmdb-bench command lines, and the merged matrix.json. Runs the
# cells one after another from one shell process (qmdb-bench, jq, then matrix_plot.sh); no
# threads of its own.
#
# Usage: bench/matrix.sh [--tiny] [--out DIR] [--bin PATH] [--db-dir DIR] [--engines LIST]
#                        [--sizes "8 32 1024 65536"] [--cap BYTES] [--no-drop-caches] [--no-plot]
#                        [-- extra qmdb-bench flags]
# Each engine of each cell is its own qmdb-bench run (one after another, same seed and flags), so
# that an engine killed by the cgroup's OOM killer costs only its own figures:
# OUT/v<size>-<uncapped|capped>-<engine>.json and .log. Then
# OUT/matrix.json holds every cell (its configuration, the fastest-rival comparison of every
# phase, every engine's ops/s, the page-cache verdict) and bench/scripts/matrix_plot.sh OUT draws
# OUT/matrix.png (heatmap of qmdb / fastest rival per phase and cell, the rival named in each
# square) and OUT/matrix-ops.png (ops/s per engine per phase, one panel per cell).
#
# Sizes (entries, ops per block) per value size, chosen so that every cell's data is a few
# times the cap (default 128 MiB) and the large values keep a block at a few MiB:
#   full:   8 B and 32 B: 1,000,000 entries, 10,000 ops/block; 1 KiB: 200,000, 2,000;
#           64 KiB: 4,000, 100; 10 blocks per update/read/txmix phase, 5 per insert/delete.
#   The cap is 128 MiB: at 64 MiB every RocksDB variant was OOM-killed during the populate
#   of the 8 B cell (memtables, block cache and the dirty pages of its flushes).
#   --tiny: 20,000 / 2,000; 20,000 / 2,000; 4,000 / 400; 400 / 40; 5 and 2 blocks. The cap is
#           then above the data: it checks the mechanics in a few minutes, not the regime.
# The capped cells need root (the cgroup); qmdb-bench warns and runs uncapped otherwise, and
# the cell says "mem_cap_applied": false. Every capped cell drops the page cache before each
# engine (--drop-caches; --no-drop-caches skips it, e.g. in the CTest smoke test). Calibration
# runs once, in the first run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${QMDB_BENCH:-$here/../build/release/bench/qmdb-bench}
out=matrix-results
db=/tmp/qmdb-matrix
engines=qmdb,rocksdb,rocksdb-default,rocksdb-blob,lmdb,mpt
sizes="8 32 1024 65536"
cap=128M
tiny=0
plot=1
drop=--drop-caches
while [ $# -gt 0 ]; do
  case $1 in
    --tiny) tiny=1 ;;
    --out) out=$2; shift ;;
    --bin) bin=$2; shift ;;
    --db-dir) db=$2; shift ;;
    --engines) engines=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --cap) cap=$2; shift ;;
    --no-plot) plot=0 ;;
    --no-drop-caches) drop="" ;;
    --) shift; break ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "matrix.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$bin" ] || { echo "matrix.sh: no qmdb-bench at $bin (build the release preset or --bin)" >&2; exit 2; }
command -v jq > /dev/null 2>&1 || { echo "matrix.sh: jq is needed (scripts/deps.sh)" >&2; exit 3; }
mkdir -p "$out"

# entries ops/block hover-write-block hover-recreate-block for value size $1
cell_sizes() {
  if [ "$tiny" = 1 ]; then
    case $1 in
      8|32) echo "20000 2000 5 2" ;;
      1024) echo "4000 400 5 2" ;;
      65536) echo "400 40 5 2" ;;
      *) echo "20000 2000 5 2" ;;
    esac
  else
    case $1 in
      8|32) echo "1000000 10000 10 5" ;;
      1024) echo "200000 2000 10 5" ;;
      65536) echo "4000 100 10 5" ;;
      *) echo "1000000 10000 10 5" ;;
    esac
  fi
}

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t_start=$(date +%s)
rc=0
first=1
files=""
for v in $sizes; do
  set -- $(cell_sizes "$v") "$@"
  n=$1 opb=$2 hwb=$3 hrb=$4
  shift 4
  for mode in uncapped capped; do
    cell=v$v-$mode
    capflags=""
    [ "$mode" = uncapped ] || capflags="--mem-cap $cap $drop"
    echo "matrix.sh: cell $cell: $n entries, $opb ops/block, engines $engines ${capflags:+($capflags)}" >&2
    for e in $(echo "$engines" | tr ',' ' '); do
      name=$cell-$e
      calflags="--calibrate-secs 0"
      [ "$first" = 0 ] || calflags=""
      first=0
      t0=$(date +%s)
      erc=0
      # shellcheck disable=SC2086
      "$bin" --engine "$e" --value-size "$v" --entry-count "$n" --ops-per-block "$opb" \
        --hover-write-block "$hwb" --hover-recreate-block "$hrb" $capflags $calflags \
        --db-dir "$db/$name" --output "$out/$name.json" "$@" > "$out/$name.log" \
        2> "$out/$name.err" || erc=$?
      rm -rf "${db:?}/$name"
      secs=$(( $(date +%s) - t0 ))
      if [ "$erc" != 0 ]; then
        why="exit status $erc"
        [ "$erc" != 137 ] || why="killed (SIGKILL: the memory cgroup's OOM killer, if capped)"
        echo "matrix.sh: $name failed after $secs s: $why (see $out/$name.log, $out/$name.err)" >&2
        rc=1
        # A killed run could not remove its memory cgroup: remove it (empty once it is dead).
        cg=$(sed -n 's/^mem-cap: .* group \(.*qmdb-bench-[0-9]*\)$/\1/p' "$out/$name.log")
        [ -z "$cg" ] || rmdir "$cg" 2> /dev/null || true
        # A stand-in record, so the cell shows the engine as failed.
        jq -n --arg e "$e" --argjson v "$v" --argjson capped "$([ "$mode" = capped ] && echo true || echo false)" \
           --arg why "$why" --argjson n "$n" --argjson opb "$opb" \
           '{failed: true, engine: $e, reason: $why,
             config: {value_size: $v, entry_count: $n, ops_per_block: $opb,
                      mem_cap: 0, capped: $capped}, summary: []}' > "$out/$name.json"
      else
        echo "matrix.sh: $name took $secs s" >&2
      fi
      files="$files $out/$name.json"
    done
  done
done
rmdir "$db" 2> /dev/null || true

# One JSON for the whole matrix: the engines' runs grouped into cells, and each phase of each
# cell scored against the fastest rival (qmdb's rate over the best rate of the engines that
# are not qmdb variants), as qmdb-bench scores a run with several engines.
# shellcheck disable=SC2086
jq -s --arg started "$started" --arg engines "$engines" --arg sizes "$sizes" --arg cap "$cap" \
   --argjson tiny "$tiny" --argjson secs "$(( $(date +%s) - t_start ))" '
  def cellkey: "\(.config.value_size) \(if .failed then .config.capped else (.config.mem_cap > 0) end)";
  def isq: startswith("qmdb");
  { tool: "qmdb-bench matrix", started: $started, seconds: $secs, tiny: ($tiny == 1),
    engines: ($engines | split(",")), value_sizes: ($sizes | split(" ") | map(tonumber)),
    mem_cap: $cap,
    cells: ([ group_by(cellkey)[] | sort_by(.config.value_size) | . as $runs
      | ([ $runs[] | select(.failed | not) ] | first) as $ok
      | { value_size: $runs[0].config.value_size,
          capped: ($runs[0] | if .failed then .config.capped else (.config.mem_cap > 0) end),
          mem_cap: ($ok.config.mem_cap // 0),
          mem_cap_applied: ($ok.config.mem_cap_applied // false),
          entries: $runs[0].config.entry_count,
          ops_per_block: $runs[0].config.ops_per_block,
          ok: all($runs[]; (.failed | not) and .ok),
          failed: [ $runs[] | select(.failed) | {engine, reason} ],
          page_cache_fits: any($runs[] | select(.failed | not); .page_cache.fits),
          largest_db_bytes: ([ $runs[] | .page_cache.largest_db_bytes // 0 ] | max),
          ops_per_sec: ([ $runs[].summary[] | {key: (.engine + " " + .phase), value: .ops_per_sec} ]
                        | from_entries),
          engine_summary: [ $runs[] | select(.failed | not) | .engine_summary[] ],
          background: [ $runs[] | select(.failed | not) | .background[] ] }
      | . as $c
      | .comparison = [ ($c.ops_per_sec | keys | map(split(" ")) ) as $ep
          | ($ep | map(.[0]) | unique) as $names
          | ($ep | map(.[1]) | unique) as $phases
          | $names[] as $s | select($s | isq)
          | $phases[] as $p | select($c.ops_per_sec["\($s) \($p)"] != null)
          | [ $names[] | select(isq | not) | {name: ., r: $c.ops_per_sec["\(.) \($p)"]}
              | select(.r != null and .r > 0) ] | max_by(.r) as $best
          | select($best != null)
          | { phase: $p, engine: $s, ops_per_sec: $c.ops_per_sec["\($s) \($p)"],
              fastest_rival: $best.name, fastest_rival_ops_per_sec: $best.r,
              ratio: ($c.ops_per_sec["\($s) \($p)"] / $best.r) } ] ] | sort_by(.value_size, .capped)) }' \
   $files > "$out/matrix.json.tmp"
mv "$out/matrix.json.tmp" "$out/matrix.json"
echo "matrix.sh: $out/matrix.json ($(jq '.cells | length' "$out/matrix.json") cells, $(( $(date +%s) - t_start )) s)" >&2
if [ "$plot" = 1 ]; then
  "$here/scripts/matrix_plot.sh" "$out" || { echo "matrix.sh: warning: plot failed" >&2; rc=1; }
fi
exit $rc
