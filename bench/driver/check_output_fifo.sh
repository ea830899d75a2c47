#!/bin/sh
# check_output_fifo.sh BENCH DIR -- `--output` naming something that is not a regular file (a
# FIFO here, as /dev/null or /dev/stdout would be) is written in place: afterwards it is still
# a FIFO, and what came through it is the results JSON. (Before, the results were renamed over
# it, which turned /dev/null into a regular file.)
set -u
B=$1
D=$2
rm -rf "$D"
mkdir -p "$D"
mkfifo "$D/out.fifo" || { echo "FAIL: mkfifo"; exit 1; }
timeout 60 cat "$D/out.fifo" > "$D/got.json" &
reader=$!
"$B" --engine lmdb --entry-count 2000 --ops-per-block 200 --calibrate-secs 0 \
  --db-dir "$D/db" --output "$D/out.fifo" > "$D/run.log" 2>&1
rc=$?
wait $reader
fail=0
[ $rc -eq 0 ] || { echo "FAIL: qmdb-bench exit $rc"; cat "$D/run.log"; fail=1; }
[ -p "$D/out.fifo" ] || { echo "FAIL: $D/out.fifo is no longer a FIFO"; fail=1; }
[ ! -e "$D/out.fifo.tmp" ] || { echo "FAIL: $D/out.fifo.tmp left behind"; fail=1; }
grep -q '"engines"' "$D/got.json" || { echo "FAIL: no results came through the FIFO"; fail=1; }
[ $fail -eq 0 ] && echo "ok: results written through the FIFO in place" && rm -rf "$D"
exit $fail
