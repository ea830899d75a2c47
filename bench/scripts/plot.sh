#!/bin/sh
# plot.sh -- draws one qmdb-bench results file: grouped bars of ops/s per phase per engine,
# and per-second timelines only for the phases long enough to have a shape.
# Owns: the jq extraction, the bar data file and the gnuplot script of the results plot. Runs
# as one shell process (jq, gnuplot); no threads of its own.
#
# Usage: bench/scripts/plot.sh RESULTS.json OUT.png
# Top: one group of bars per phase (populate, update, read, insert, delete, read-miss, txmix),
# one bar per engine, its rate over the whole phase (the JSON's "summary": the last instance,
# populate summed over its segments), on a log scale when the rates span more than 20x. The
# bars' data go to OUT's name with .bars.tsv (phase, engine, ops/s; one row per bar). Below:
# a timeline panel (ops completed in each second; repeated instances joined end to end) for
# each phase whose timeline has at least $PLOT_MIN_SECONDS (default 5) full seconds for some
# engine; a shorter phase would be a dot or two, which says nothing a bar does not. For a
# `qmdb-bench ycsb` file the bars are each engine's median ops/s and the panels its runs. An
# OUT ending in .svg gives SVG. Needs jq and gnuplot (gnuplot-nox); exits 3 if either is
# missing.
set -eu
if [ $# -ne 2 ]; then
  echo "usage: $0 RESULTS.json OUT.png|OUT.svg" >&2
  exit 2
fi
json=$1
out=$2
min_secs=${PLOT_MIN_SECONDS:-5}
for tool in jq gnuplot; do
  if ! command -v "$tool" > /dev/null 2>&1; then
    echo "plot.sh: $tool not found (scripts/deps.sh installs it); no plot" >&2
    exit 3
  fi
done
[ -r "$json" ] || { echo "plot.sh: cannot read $json" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
bars=${out%.*}.bars.tsv

mode=$(jq -r '.mode // "harness"' "$json")
# Bars "phase<TAB>engine<TAB>ops/s" and timeline rows "panel<TAB>engine<TAB>second<TAB>ops".
if [ "$mode" = ycsb ]; then
  jq -r '.engines[] | select(.applicable) | [.workload // "run", .engine,
         (.median.ops_per_sec // 0)] | @tsv' "$json" |
    awk -F'\t' -v w="$(jq -r '.workload.name' "$json")" 'BEGIN { OFS = "\t" } { $1 = w; print }' \
    > "$bars"
  jq -r '.engines[] | select(.applicable) | .engine as $e | .runs[]
         | ("run " + (.run | tostring)) as $p
         | .timeline_ops_per_second | to_entries[]
         | [$p, $e, .key, .value] | @tsv' "$json" > "$tmp/rows"
  title="YCSB $(jq -r '.workload.name' "$json")"
else
  jq -r '.summary[] | [.phase, .engine, .ops_per_sec] | @tsv' "$json" > "$bars"
  jq -r '.engines[] | .engine as $e
         | [.phases[] | {p: .phase, t: .timeline_ops_per_second}]
         | group_by(.p)[] | .[0].p as $p
         | [.[].t[]] | to_entries[]
         | [$p, $e, .key, .value] | @tsv' "$json" > "$tmp/rows"
  title="qmdb-bench $(jq -r '.config.entry_count' "$json") entries, $(jq -r '.config.value_size' "$json") B values, $(jq -r 'if .config.mem_cap > 0 then "mem-cap \(.config.mem_cap / 1048576 | floor) MiB" else "uncapped" end' "$json")"
fi
if [ ! -s "$bars" ]; then
  echo "plot.sh: no phase rates in $json" >&2
  exit 1
fi
order="populate update read insert delete read-miss txmix"
# Phase order: the harness order, then anything else in order of appearance.
sort_phases() {
  awk -v o="$order" '
    BEGIN { n = split(o, ord, " ") }
    { have[$0] = 1; seen[++m] = $0 }
    END { for (i = 1; i <= n; i++) if (have[ord[i]]) { print ord[i]; done[ord[i]] = 1 }
          for (i = 1; i <= m; i++) if (!done[seen[i]]) { print seen[i]; done[seen[i]] = 1 } }'
}
phases=$(cut -f1 "$bars" | awk '!seen[$0]++' | sort_phases)
engines=$(cut -f2 "$bars" | awk '!seen[$0]++')
nengines=$(printf '%s\n' "$engines" | wc -l)
# The bar matrix: one row per phase, one column per engine ("-" = missing).
printf '%s\n' "$phases" | while IFS= read -r p; do
  printf '%s' "$p"
  for e in $engines; do
    v=$(awk -F'\t' -v p="$p" -v e="$e" '$1 == p && $2 == e { print $3; exit }' "$bars")
    printf '\t%s' "${v:--}"
  done
  printf '\n'
done > "$tmp/bars.dat"
logscale=$(awk -F'\t' '$3 > 0 { if (!mn || $3 < mn) mn = $3; if ($3 > mx) mx = $3 }
                       END { print (mn > 0 && mx / mn > 20) ? 1 : 0 }' "$bars")

# Timeline panels: phases with at least min_secs full seconds for some engine.
long=""
if [ -s "$tmp/rows" ]; then
  long=$(awk -F'\t' -v m="$min_secs" '{ n[$1 "\t" $2]++ }
          END { for (k in n) { split(k, a, "\t"); if (n[k] - 1 >= m) print a[1] } }' "$tmp/rows" |
         awk '!seen[$0]++' | sort_phases)
fi
npan=0
[ -z "$long" ] || npan=$(printf '%s\n' "$long" | wc -l)
cols=2
[ "$npan" -gt 1 ] || cols=1
trows=$(( (npan + cols - 1) / cols ))
height=$((460 + trows * 280))

case "$out" in
  *.svg) term="svg size 1100,$height dynamic" ;;
  *) if echo 'set terminal pngcairo' | gnuplot > /dev/null 2>&1; then
       term="pngcairo size 1100,$height"
     else
       term="png size 1100,$height"
     fi ;;
esac
bar_frac=$(awk -v h="$height" 'BEGIN { printf "%.4f", 460 / h }')
{
  echo "set terminal $term"
  echo "set output '$out'"
  echo "set datafile separator '\t'"
  echo "set datafile missing '-'"
  echo "set multiplot title \"$title\""
  echo "set origin 0,$(awk -v f="$bar_frac" 'BEGIN { printf "%.4f", 1 - f }')"
  echo "set size 1,$(awk -v f="$bar_frac" 'BEGIN { printf "%.4f", f * 0.95 }')"
  echo "set title 'ops/s per phase and engine (txmix: transactions/s)'"
  echo "set style data histograms"
  echo "set style histogram clustered gap 1"
  echo "set style fill solid 0.85 border -1"
  echo "set boxwidth 0.9"
  echo "set key top right"
  echo "set grid ytics"
  echo "set ylabel 'ops/s'"
  if [ "$logscale" = 1 ]; then
    echo "set logscale y"
    echo "set ylabel 'ops/s (log scale)'"
  else
    echo "set yrange [0:*]"
  fi
  plots=""
  c=2
  for e in $engines; do
    if [ $c -eq 2 ]; then
      plots="'$tmp/bars.dat' using $c:xtic(1) title '$e'"
    else
      plots="$plots, '' using $c title '$e'"
    fi
    c=$((c + 1))
  done
  echo "plot $plots"
  echo "unset logscale y"
  echo "set style data linespoints"
  echo "set grid"
  echo "set xlabel 'second'"
  echo "set ylabel 'ops in the second'"
  echo "set yrange [0:*]"
  i=0
  if [ -n "$long" ]; then
    pw=$(awk -v c="$cols" 'BEGIN { printf "%.4f", 1 / c }')
    ph=$(awk -v h="$height" 'BEGIN { printf "%.4f", 280 / h }')
    printf '%s\n' "$long" | while IFS= read -r p; do
      plots=""
      for e in $engines; do
        f="$tmp/d.$i.$e"
        awk -F'\t' -v p="$p" -v e="$e" '$1 == p && $2 == e { print $3 "\t" $4 }' "$tmp/rows" > "$f"
        [ -s "$f" ] || continue
        plots="$plots${plots:+, }'$f' using 1:2 with linespoints lw 2 pt 7 ps 0.5 title '$e'"
      done
      x=$(awk -v i="$i" -v c="$cols" -v w="$pw" 'BEGIN { printf "%.4f", (i % c) * w }')
      y=$(awk -v i="$i" -v c="$cols" -v h="$ph" -v f="$bar_frac" \
            'BEGIN { printf "%.4f", 1 - f - (int(i / c) + 1) * h }')
      echo "set origin $x,$y"
      echo "set size $pw,$ph"
      echo "set title '$p: ops per second (timeline)'"
      [ -n "$plots" ] && echo "plot $plots"
      i=$((i + 1))
    done
  fi
  echo "unset multiplot"
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "plot written to $out (bars: $bars; $nengines engines; timelines for: ${long:-no phase of $min_secs s or more})" | tr '\n' ' '
echo
