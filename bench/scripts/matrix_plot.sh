#!/bin/sh
# matrix_plot.sh -- draws the value-size matrix written by bench/matrix.sh.
# Owns: the jq extraction and the gnuplot scripts of the matrix pictures and the markdown
# table. Runs as one shell process (jq, gnuplot); no threads of its own.
#
# Usage: bench/scripts/matrix_plot.sh DIR   (reads DIR/matrix.json)
# Writes:
#   DIR/matrix.png     heatmap: one square per phase (rows) and cell (columns: value size x
#                      uncapped/capped), coloured by log2(qmdb / fastest rival) from red (the
#                      rival is 8x faster) through white (even) to green (qmdb 8x faster),
#                      with the ratio and the rival's name written in the square
#   DIR/matrix-ops.png ops/s per engine and phase (grouped bars, log scale), one panel per cell
#   DIR/matrix.tsv     cell, phase, qmdb ops/s, fastest rival, its ops/s, ratio
#   DIR/matrix.md      the ratios as a markdown table (rows: phases; columns: cells)
# Needs jq and gnuplot; exits 3 if either is missing.
set -eu
if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir=$1
json=$dir/matrix.json
for tool in jq gnuplot; do
  command -v "$tool" > /dev/null 2>&1 || { echo "matrix_plot.sh: $tool not found" >&2; exit 3; }
done
[ -r "$json" ] || { echo "matrix_plot.sh: cannot read $json" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
phases="populate update read insert delete read-miss txmix"

# Cell labels in run order: "8 B uncapped", "8 B capped 64 MiB", ...
jq -r '.cells[] | ((if .value_size >= 1024 then "\(.value_size / 1024 | floor) KiB" else "\(.value_size) B" end)
        + (if .capped then (if .mem_cap_applied then " capped \(.mem_cap / 1048576 | floor) MiB" else " cap NOT applied" end) else " uncapped" end))' \
  "$json" > "$tmp/cells"
ncells=$(wc -l < "$tmp/cells")
[ "$ncells" -gt 0 ] || { echo "matrix_plot.sh: no cells in $json" >&2; exit 1; }
# The engine scored: qmdb if it ran, else the first engine compared.
subject=$(jq -r '[.cells[].comparison[].engine] | if index("qmdb") then "qmdb" else (.[0] // "") end' "$json")

# cell index, phase, subject ops/s, rival, rival ops/s, ratio
jq -r --arg s "$subject" '.cells | to_entries[] | .key as $c | .value.comparison[]
       | select(.engine == $s) | [$c, .phase, .ops_per_sec, .fastest_rival,
         .fastest_rival_ops_per_sec, .ratio] | @tsv' "$json" > "$tmp/cmp"
awk -F'\t' 'BEGIN { OFS = "\t"; print "cell", "phase", "qmdb_ops_per_sec", "fastest_rival",
                     "rival_ops_per_sec", "ratio" }
            NR == FNR { label[FNR - 1] = $0; next }
            { print label[$1], $2, $3, $4, $5, $6 }' "$tmp/cells" "$tmp/cmp" > "$dir/matrix.tsv"

# Heatmap grid (every square present; a phase missing in a cell is grey-free white, "n/a").
y=0
for p in $phases; do
  c=0
  while [ $c -lt "$ncells" ]; do
    line=$(awk -F'\t' -v c=$c -v p="$p" '$1 == c && $2 == p' "$tmp/cmp")
    if [ -n "$line" ]; then
      echo "$line" | awk -F'\t' -v y=$y '{ r = $6; z = log(r) / log(2); if (z > 3) z = 3;
                                           if (z < -3) z = -3; print $1, y, z }' >> "$tmp/heat.dat"
      echo "$line" | awk -F'\t' -v y=$y '{ printf "%d %d \"%.2fx\\n%s\"\n", $1, y, $6, $4 }' \
        >> "$tmp/labels.dat"
    else
      echo "$c $y 0" >> "$tmp/heat.dat"
      echo "$c $y \"n/a\"" >> "$tmp/labels.dat"
    fi
    c=$((c + 1))
  done
  echo >> "$tmp/heat.dat"
  y=$((y + 1))
done
xt=$(awk '{ printf "%s\"%s\" %d", (NR > 1 ? ", " : ""), $0, NR - 1 }' "$tmp/cells")
yt=$(echo $phases | awk '{ for (i = 1; i <= NF; i++) printf "%s\"%s\" %d", (i > 1 ? ", " : ""), $i, i - 1 }')
width=$((220 + ncells * 150))
if echo 'set terminal pngcairo' | gnuplot > /dev/null 2>&1; then
  term=pngcairo
else
  term=png
fi
title="$subject / fastest rival per phase and cell ($(jq -r 'if .tiny then "TINY sizes: mechanics only" else "full sizes" end' "$json"), $(jq -r '.started' "$json"))"
cat > "$tmp/heat.gp" << EOF
set terminal $term size $width,620
set output '$dir/matrix.png'
set title "$title"
set palette defined (-3 '#b2182b', -1 '#f4a582', 0 '#f7f7f7', 1 '#a6dba0', 3 '#1b7837')
set cbrange [-3:3]
set cbtics ('1/8x' -3, '1/4x' -2, '1/2x' -1, '1x' 0, '2x' 1, '4x' 2, '8x' 3)
set cblabel 'qmdb / fastest rival (log scale; green: qmdb faster)'
set xrange [-0.5:$ncells - 0.5]
set yrange [6.5:-0.5]
set xtics ($xt) rotate by -20 font ',9'
set ytics ($yt)
set tics scale 0
unset key
plot '$tmp/heat.dat' using 1:2:3 with image, '$tmp/labels.dat' using 1:2:3 with labels font ',8'
EOF
gnuplot "$tmp/heat.gp"

# ops/s panels: one per cell, grouped bars per phase, one bar per engine.
engines=$(jq -r '.engines[]' "$json")
cols=2
[ "$ncells" -gt 1 ] || cols=1
rows=$(( (ncells + cols - 1) / cols ))
{
  echo "set terminal $term size 1200,$((rows * 330 + 40))"
  echo "set output '$dir/matrix-ops.png'"
  echo "set datafile separator '\t'"
  echo "set datafile missing '-'"
  echo "set multiplot layout $rows,$cols title 'ops/s per engine and phase in each cell (txmix: transactions/s)'"
  echo "set style data histograms"
  echo "set style histogram clustered gap 1"
  echo "set style fill solid 0.85 border -1"
  echo "set logscale y"
  echo "set grid ytics"
  echo "set key top right font ',7'"
  echo "set xtics font ',8'"
  c=0
  while [ $c -lt "$ncells" ]; do
    f="$tmp/ops.$c"
    for p in $phases; do
      printf '%s' "$p"
      for e in $engines; do
        v=$(jq -r --argjson c $c --arg k "$e $p" '.cells[$c].ops_per_sec[$k] // "-"' "$json")
        printf '\t%s' "$v"
      done
      printf '\n'
    done > "$f"
    echo "set title '$(sed -n "$((c + 1))p" "$tmp/cells")'"
    plots=""
    k=2
    for e in $engines; do
      if [ $k -eq 2 ]; then
        plots="'$f' using $k:xtic(1) title '$e'"
      else
        plots="$plots, '' using $k title '$e'"
      fi
      k=$((k + 1))
    done
    echo "plot $plots"
    c=$((c + 1))
  done
  echo "unset multiplot"
} > "$tmp/ops.gp"
gnuplot "$tmp/ops.gp"

# Markdown table of the ratios.
{
  printf '| phase |'
  while IFS= read -r l; do printf ' %s |' "$l"; done < "$tmp/cells"
  printf '\n|---|'
  c=0; while [ $c -lt "$ncells" ]; do printf -- '---|'; c=$((c + 1)); done
  printf '\n'
  for p in $phases; do
    printf '| %s |' "$p"
    c=0
    while [ $c -lt "$ncells" ]; do
      awk -F'\t' -v c=$c -v p="$p" 'BEGIN { s = " n/a |" }
        $1 == c && $2 == p { s = sprintf(" %s%.2fx vs %s%s |", ($6 < 1 ? "**" : ""), $6, $4,
                                         ($6 < 1 ? "**" : "")) }
        END { printf "%s", s }' "$tmp/cmp"
      c=$((c + 1))
    done
    printf '\n'
  done
  jq -r '.cells[] | .failed[] as $f | "\nFailed: \(.value_size) B \(if .capped then "capped" else "uncapped" end), \($f.engine): \($f.reason)"' "$json"
} > "$dir/matrix.md"
echo "matrix_plot.sh: wrote $dir/matrix.png, $dir/matrix-ops.png, $dir/matrix.tsv, $dir/matrix.md"
