#!/bin/sh
# sweep_plot.sh -- turns the JSON files of bench/scripts/sweep.sh into PNG plots with gnuplot.
# Owns: the sweep tables and their gnuplot scripts. One shell process; no threads.
#
# Usage: bench/scripts/sweep_plot.sh OUTDIR
# Reads OUTDIR/size-*.json, theta-*.json and compact-*.json (whichever exist), writes the
# extracted tables (size.tsv, theta.tsv, compact.tsv) and the plots:
#   size.png     ops/s vs entry count (log x), one panel per phase, one line per engine
#   theta.png    ops/s vs zipf θ (update, read, txmix), one line per engine
#   compact.png  qmdb updates/s, SSD bytes per live entry and write amplification of the
#                update phase vs the utilization ratio
# Needs jq and gnuplot (gnuplot-nox); exits 3 if either is missing.
set -eu
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
d=$1
for tool in jq gnuplot; do
  command -v "$tool" > /dev/null 2>&1 || { echo "sweep_plot.sh: $tool not found" >&2; exit 3; }
done
if echo 'set terminal pngcairo' | gnuplot > /dev/null 2>&1; then term=pngcairo; else term=png; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# panels FILE.tsv XCOL-LABEL PHASES... -> gnuplot commands, one panel per phase, one line per
# engine. TSV columns: x engine phase ops_per_sec.
panels() {
  tsv=$1
  shift
  for ph in "$@"; do
    plots=""
    for e in $(cut -f2 "$tsv" | awk '!seen[$0]++'); do
      f="$tmp/$ph.$e.$(basename "$tsv")"
      awk -F'\t' -v p="$ph" -v e="$e" '$2 == e && $3 == p { print $1, $4 }' "$tsv" |
        sort -g > "$f"
      [ -s "$f" ] || continue
      plots="$plots${plots:+, }'$f' using 1:2 with linespoints lw 2 pt 7 title '$e'"
    done
    [ -n "$plots" ] || continue
    echo "set title '$ph'"
    echo "plot $plots"
  done
}

made=""
if ls "$d"/size-*.json > /dev/null 2>&1; then
  for f in "$d"/size-*.json; do
    jq -r '.config.entry_count as $n | .summary[] | [$n, .engine, .phase, .ops_per_sec] | @tsv' "$f"
  done | sort -g > "$d/size.tsv"
  {
    echo "set terminal $term size 1100,900"
    echo "set output '$d/size.png'"
    echo "set multiplot layout 2,2 title 'qmdb-bench size sweep: ops/s vs entries (txmix: transactions/s)'"
    echo "set logscale x; set grid; set key top right; set yrange [0:*]"
    echo "set xlabel 'entries'; set ylabel 'ops/s'; set format x '%.0s%c'"
    panels "$d/size.tsv" populate update read txmix
    echo "unset multiplot"
  } > "$tmp/size.gp"
  gnuplot "$tmp/size.gp" && made="$made $d/size.png"
fi

if ls "$d"/theta-*.json > /dev/null 2>&1; then
  for f in "$d"/theta-*.json; do
    jq -r '.config.hover_zipf_theta as $t | .summary[] | [$t, .engine, .phase, .ops_per_sec] | @tsv' "$f"
  done | sort -g > "$d/theta.tsv"
  n=$(jq -r '.config.entry_count' "$(ls "$d"/theta-*.json | head -1)")
  {
    echo "set terminal $term size 1100,800"
    echo "set output '$d/theta.png'"
    echo "set multiplot layout 2,2 title 'qmdb-bench zipf sweep at $n entries: ops/s vs theta (0 = uniform)'"
    echo "set grid; set key top left; set yrange [0:*]"
    echo "set xlabel 'zipf theta'; set ylabel 'ops/s'"
    panels "$d/theta.tsv" update read txmix read-miss
    echo "unset multiplot"
  } > "$tmp/theta.gp"
  gnuplot "$tmp/theta.gp" && made="$made $d/theta.png"
fi

if ls "$d"/compact-*.json > /dev/null 2>&1; then
  for f in "$d"/compact-*.json; do
    jq -r '(.config.qmdb_utilization_ratio / .config.qmdb_utilization_div) as $r
           | .engines[0] | [.phases[] | select(.phase == "update")] | last
           | [$r, .ops_per_sec, .ssd.bytes_per_entry, (.disk.write_amplification // 0),
              ([(.memory.engine_note // "") | scan("compactions=([0-9]+)")[0]] | first // "0")]
           | @tsv' "$f"
  done | sort -g > "$d/compact.tsv"
  n=$(jq -r '.config.entry_count' "$(ls "$d"/compact-*.json | head -1)")
  th=$(jq -r '.config.qmdb_compact_thres' "$(ls "$d"/compact-*.json | head -1)")
  {
    echo "set terminal $term size 1100,800"
    echo "set output '$d/compact.png'"
    echo "set multiplot layout 2,2 title 'qmdb compaction ablation: $n entries overwritten 3x, compact threshold $th/shard'"
    echo "set grid; set key off; set xlabel 'utilization ratio'; set xrange [0.35:1.05]"
    echo "set title 'update phase'; set ylabel 'updates/s'; set yrange [0:*]"
    echo "plot '$d/compact.tsv' using 1:2 with linespoints lw 2 pt 7"
    echo "set title 'SSD after the update phase'; set ylabel 'bytes per live entry'"
    echo "plot '$d/compact.tsv' using 1:3 with linespoints lw 2 pt 7"
    echo "set title 'update phase'; set ylabel 'device bytes / logical bytes written'"
    echo "plot '$d/compact.tsv' using 1:4 with linespoints lw 2 pt 7"
    echo "unset multiplot"
  } > "$tmp/compact.gp"
  gnuplot "$tmp/compact.gp" && made="$made $d/compact.png"
fi

if [ -z "$made" ]; then
  echo "sweep_plot.sh: no sweep JSON files in $d" >&2
  exit 1
fi
echo "plots written:$made"
