#!/bin/sh
# check_man.sh qmdb.1 qmdb.3 qmdb.h -- the man pages render with no groff/man warning; qmdb(3)
# names every function of the header; qmdb(1) names every subcommand and exit code.
set -eu
m1=$1 m3=$2 hdr=$3
fail=0
for m in "$m1" "$m3"; do
  err=$(MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null) || { echo "man -l $m failed" >&2; fail=1; }
  if [ -n "$err" ]; then
    echo "check_man: warnings rendering $m:" >&2
    echo "$err" >&2
    fail=1
  fi
  lines=$(MANWIDTH=80 man -l "$m" 2>/dev/null | wc -l)
  [ "$lines" -gt 40 ] || { echo "check_man: $m renders to only $lines lines" >&2; fail=1; }
done
text3=$(MANWIDTH=200 man -l "$m3" 2>/dev/null | sed 's/‐//g')
for f in $(tr '\n' ' ' < "$hdr" | grep -o 'QMDB_API[^(;]*(' | grep -o 'qmdb_[a-z_0-9]*[ ]*($' |
           tr -d ' (' | sort -u); do
  printf '%s\n' "$text3" | grep -q "$f" || { echo "check_man: qmdb(3) does not name $f" >&2; fail=1; }
done
text1=$(MANWIDTH=200 man -l "$m1" 2>/dev/null)
for c in init apply root get stat check prove verify --indexer --salvage --version --str \
         --height --compact-thres --utilization --history-blocks --entry-segment-bytes \
         --root --key --value --absent; do
  printf '%s\n' "$text1" | grep -q -- "$c" || { echo "check_man: qmdb(1) does not name $c" >&2; fail=1; }
done
for code in 0 1 2 3 4; do
  printf '%s\n' "$text1" | grep -Eq "^ +$code +" || { echo "check_man: qmdb(1) lacks exit code $code" >&2; fail=1; }
done
[ $fail -eq 0 ] && echo "check_man: both pages render cleanly and are complete"
exit $fail
