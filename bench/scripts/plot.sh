#!/bin/sh
# plot.sh -- plots the per-second throughput timelines of one qmdb-bench results file.
# Owns: the jq extraction and the gnuplot script of the timeline plot. Runs as one shell
# process (jq, gnuplot); no threads of its own.
#
# Usage: bench/scripts/plot.sh RESULTS.json OUT.png
# One panel per phase (populate, update, read, insert, delete, read-miss, txmix; repeated
# instances of a phase are joined end to end), one line per engine, ops completed in each
# second. For a `qmdb-bench ycsb` file the panels are the runs (run 1, run 2, ...). An OUT
# ending in .svg gives SVG. Needs jq and gnuplot (gnuplot-nox); exits 3 if either is missing.
set -eu
if [ $# -ne 2 ]; then
  echo "usage: $0 RESULTS.json OUT.png|OUT.svg" >&2
  exit 2
fi
json=$1
out=$2
for tool in jq gnuplot; do
  if ! command -v "$tool" > /dev/null 2>&1; then
    echo "plot.sh: $tool not found (scripts/deps.sh installs it); no plot" >&2
    exit 3
  fi
done
[ -r "$json" ] || { echo "plot.sh: cannot read $json" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

mode=$(jq -r '.mode // "harness"' "$json")
# Rows "panel<TAB>engine<TAB>second<TAB>ops" with seconds running on across instances.
if [ "$mode" = ycsb ]; then
  jq -r '.engines[] | select(.applicable) | .engine as $e | .runs[]
         | ("run " + (.run | tostring)) as $p
         | .timeline_ops_per_second | to_entries[]
         | [$p, $e, .key, .value] | @tsv' "$json" > "$tmp/rows"
  title="YCSB $(jq -r '.workload.name' "$json"): ops per second by run"
else
  jq -r '.engines[] | .engine as $e
         | [.phases[] | {p: .phase, t: .timeline_ops_per_second}]
         | group_by(.p)[] | .[0].p as $p
         | [.[].t[]] | to_entries[]
         | [$p, $e, .key, .value] | @tsv' "$json" > "$tmp/rows"
  title="qmdb-bench $(jq -r '.config.entry_count' "$json") entries: ops per second by phase"
fi
if [ ! -s "$tmp/rows" ]; then
  echo "plot.sh: no timelines in $json" >&2
  exit 1
fi
# Panel order: the harness phase order, then anything else in order of appearance.
panels=$(cut -f1 "$tmp/rows" | awk '!seen[$0]++' | awk '
  BEGIN { n = split("populate update read insert delete read-miss txmix", o, " ") }
  { have[$0] = 1; order[++m] = $0 }
  END { for (i = 1; i <= n; i++) if (have[o[i]]) { print o[i]; done[o[i]] = 1 }
        for (i = 1; i <= m; i++) if (!done[order[i]]) print order[i] }')
engines=$(cut -f2 "$tmp/rows" | awk '!seen[$0]++')
npan=$(printf '%s\n' "$panels" | wc -l)
cols=2
[ "$npan" -gt 1 ] || cols=1
rows=$(( (npan + cols - 1) / cols ))

case "$out" in
  *.svg) term="svg size 1100,$((rows * 300 + 60)) dynamic" ;;
  *) if echo 'set terminal pngcairo' | gnuplot > /dev/null 2>&1; then
       term="pngcairo size 1100,$((rows * 300 + 60))"
     else
       term="png size 1100,$((rows * 300 + 60))"
     fi ;;
esac
{
  echo "set terminal $term"
  echo "set output '$out'"
  echo "set multiplot layout $rows,$cols title \"$title\""
  echo "set key top right"
  echo "set grid"
  echo "set xlabel 'second'"
  echo "set ylabel 'ops/s'"
  echo "set yrange [0:*]"
  i=0
  printf '%s\n' "$panels" | while IFS= read -r p; do
    plots=""
    for e in $engines; do
      f="$tmp/d.$i.$e"
      awk -F'\t' -v p="$p" -v e="$e" '$1 == p && $2 == e { print $3, $4 }' "$tmp/rows" > "$f"
      [ -s "$f" ] || continue
      plots="$plots${plots:+, }'$f' using 1:2 with linespoints lw 2 pt 7 ps 0.6 title '$e'"
    done
    echo "set title '$p'"
    [ -n "$plots" ] && echo "plot $plots"
    i=$((i + 1))
  done
  echo "unset multiplot"
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "plot written to $out"
