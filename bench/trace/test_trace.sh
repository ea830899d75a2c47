#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test_trace.sh -- CTest `trace_replay` (label "trace"): the trace format, generator, importer,
# exporters and `qmdb-bench replay` end to end (docs/TRACE.md).
# Owns: the end-to-end trace checks below. One shell process run by CTest; the programs it
# runs are single-threaded apart from the trace reader thread of `replay`.
#
# usage: test_trace.sh QMDB_TRACE QMDB_BENCH QMDB_CLI WORKDIR
#
# Checks: a generated trace decodes with matching end records and mainnet-like statistics; a
# flipped byte is caught by the checksum; text export -> import and a segmented directory give
# the same content hash; a replay on qmdb, RocksDB and LMDB reads back identical values for
# every key (and equal to the trace's final state); qmdb's state_root_digest is the same on a
# second run (from the segmented copy) and equals the root `qmdb init` + `qmdb apply` computes
# from `qmdb-trace export-ops`; a hand-written trace with edge cases behaves the same way.
set -eu
QT=$1 QB=$2 QCLI=$3 W=$4
rm -rf "$W"
mkdir -p "$W"
cd "$W"

fail() { echo "FAIL: $*" >&2; exit 1; }
field() { grep "^$1=" "$2" | tail -n 1 | cut -d= -f2; }

# 1. generate, and inspect
"$QT" gen --init-out init.qtr --trace-out trace.qtr --init-entries 5000 --init-block-ops 1000 \
    --ops 30000 --seed 7
"$QT" info trace.qtr > info.txt || fail "info on a fresh trace"
grep -q '^end_records=match$' info.txt || fail "end records do not match the decoded blocks"
grep -q '^kind=trace$' info.txt || fail "header lacks kind=trace"
awk -F= '/^read_fraction=/{r=$2} /^ops_per_tx=/{o=$2} /^creates=/{c=$2} /^deletes=/{d=$2}
    END{exit !(r>0.55 && r<0.65 && o>15 && o<21 && c>0 && d>0)}' info.txt ||
    fail "generated statistics are off: $(grep -E '^(read_fraction|ops_per_tx|creates|deletes)=' info.txt | tr '\n' ' ')"
"$QT" info init.qtr > init_info.txt || fail "info on the init bundle"
[ "$(field ops init_info.txt)" = 5000 ] || fail "init bundle does not hold 5000 entries"
[ "$(field creates init_info.txt)" = 5000 ] || fail "init bundle is not all creates"
SHA=$(field content_sha256 info.txt)

# 2. same flags give the same bytes
"$QT" gen --init-out init2.qtr --trace-out trace2.qtr --init-entries 5000 --init-block-ops 1000 \
    --ops 30000 --seed 7 2>/dev/null
cmp -s trace.qtr trace2.qtr || fail "generator is not deterministic"

# 3. corruption is detected
cp trace.qtr bad.qtr
SIZE=$(wc -c < bad.qtr)
printf 'X' | dd of=bad.qtr bs=1 seek=$((SIZE / 2)) conv=notrunc 2>/dev/null
if "$QT" info bad.qtr > bad.txt 2> bad.err; then fail "a flipped byte was not detected"; fi
grep -q -i 'checksum\|bad\|truncated' bad.err || fail "corruption error message: $(cat bad.err)"
head -c $((SIZE - 10)) trace.qtr > short.qtr
if "$QT" info short.qtr > /dev/null 2>&1; then fail "a truncated trace was accepted"; fi

# 4. text round trip and the segmented directory form
"$QT" export-text trace.qtr trace.txt
"$QT" import trace.txt reimported.qtr
"$QT" info reimported.qtr > re.txt
[ "$(field content_sha256 re.txt)" = "$SHA" ] || fail "export-text -> import changed the content"
"$QT" gen --init-out initdir --trace-out tracedir --init-entries 5000 --init-block-ops 1000 \
    --ops 30000 --seed 7 --blocks-per-file 3 2>/dev/null
[ "$(ls tracedir | wc -l)" -gt 1 ] || fail "--blocks-per-file did not split the trace"
"$QT" info tracedir > dir.txt
[ "$(field content_sha256 dir.txt)" = "$SHA" ] || fail "segmented trace has different content"

# 5. replay on qmdb, RocksDB and LMDB with read-back
"$QB" replay --engine qmdb,rocksdb,lmdb --init init.qtr --trace trace.qtr --db-dir "$W/db" \
    --verify --dump "$W/dump" --output "$W/replay.json" --progress-secs 0 > run1.txt ||
    fail "replay run 1 failed: $(tail -n 5 run1.txt)"
for l in 'Benchmark Finished.' 'Total Ops: ' 'Duration: ' 'Replay \[' 'Init loaded: '; do
    grep -q "^$l" run1.txt || fail "replay output lacks '$l'"
done
[ "$(grep -c '^Readback: .* mismatches=0 ' run1.txt)" = 3 ] || fail "read-back mismatches"
cmp -s dump.qmdb dump.rocksdb || fail "qmdb and rocksdb read back different values"
cmp -s dump.qmdb dump.lmdb || fail "qmdb and lmdb read back different values"
[ "$(wc -l < dump.qmdb)" -gt 5000 ] || fail "read-back covered too few keys"
grep -q ' -$' dump.qmdb || fail "no deleted/absent key was read back"
[ "$(grep -c '^shard_root\[' run1.txt)" = 16 ] || fail "qmdb did not print 16 shard roots"
D1=$(grep '^state_root_digest height=' run1.txt) || fail "no state_root_digest"
grep -q '"state_root_digest"' replay.json || fail "JSON lacks the digest"
grep -q '"ok": *true' replay.json || fail "JSON does not say ok"
[ ! -e db/qmdb ] || fail "DB directory was not deleted"

# 6. the digest is reproducible (second run, from the segmented copy)
"$QB" replay --engine qmdb --init initdir --trace tracedir --db-dir "$W/db2" \
    --output "$W/replay2.json" > run2.txt || fail "replay run 2 failed"
D2=$(grep '^state_root_digest height=' run2.txt)
[ "$D1" = "$D2" ] || fail "digest differs across runs: $D1 vs $D2"

# 7. ... and equals `qmdb apply` of the exported op script
"$QT" export-ops --init init.qtr --trace trace.qtr -o ops.txt
"$QCLI" init "$W/qa"
"$QCLI" apply "$W/qa" ops.txt > apply.txt
A=$(tail -n 1 apply.txt)
[ "state_root_digest height=$A" = "$D1" ] || fail "qmdb apply gives '$A', replay gives '$D1'"

# 8. hand-written edge cases: empty-value write (= delete), delete of an absent key, reads of
#    absent keys, read-only and empty transactions, an empty block, JSON-lines import
A1=1111111111111111111111111111111111111111
A2=2222222222222222222222222222222222222222
cat > edge_init.txt <<EOF
block 0
tx
c $A1 0a0b0c
c $A1 0x01 ff
c $A1 0x02 ee
c $A2 0102
EOF
cat > edge.txt <<EOF
# comment line
block 100
tx
r $A1
w $A1 0x01 -
d $A2 0x05
r $A2 0x09
tx
tx
r $A1 0x02
block 101
block 105
tx
c $A2 0x07 abcd
w $A1 0x02 0x
d 0x$A2 07
w $A1 0x03 99
EOF
printf '{"block": 106, "tx": 1, "op": "write", "address": "0x%s", "value": "0x42"}\n' "$A2" > edge.jsonl
"$QT" import --kind init edge_init.txt edge_init.qtr
"$QT" import edge.txt edge_a.qtr
"$QT" export-text edge_a.qtr - | grep -v '^#' > edge_a.txt
cat edge.jsonl >> edge.txt
"$QT" import edge.txt edge.qtr
"$QT" info edge.qtr > edge_info.txt
[ "$(field txs edge_info.txt)" = 6 ] || fail "edge trace: expected 6 transactions"
[ "$(field blocks edge_info.txt)" = 4 ] || fail "edge trace: expected 4 blocks"
[ "$(field empty_writes edge_info.txt)" = 2 ] || fail "edge trace: expected 2 empty-value writes"
grep -q "^w $A1 0000000000000000000000000000000000000000000000000000000000000001 -$" edge_a.txt ||
    fail "export-text lost the empty-value write"
"$QB" replay --engine qmdb,rocksdb --init edge_init.qtr --trace edge.qtr --db-dir "$W/db3" \
    --verify --dump "$W/edump" --output "$W/edge.json" > run3.txt || fail "edge replay failed"
cmp -s edump.qmdb edump.rocksdb || fail "edge: engines differ"
S01=${A1}0000000000000000000000000000000000000000000000000000000000000001
S02=${A1}0000000000000000000000000000000000000000000000000000000000000002
S03=${A1}0000000000000000000000000000000000000000000000000000000000000003
S07=${A2}0000000000000000000000000000000000000000000000000000000000000007
grep -q "^$S01 -$" edump.qmdb || fail "edge: empty-value write did not delete"
grep -q "^$S02 -$" edump.qmdb || fail "edge: 0x empty value did not delete"
grep -q "^$S07 -$" edump.qmdb || fail "edge: create then delete in one block left the key"
grep -q "^$S03 99$" edump.qmdb || fail "edge: write of a new slot missing"
grep -q "^$A2 42$" edump.qmdb || fail "edge: JSON-lines write missing"
grep -q "^$A1 0a0b0c$" edump.qmdb || fail "edge: init account missing"
grep -q '^Total Ops: 10$' run3.txt || fail "edge: expected 10 ops"
E1=$(grep '^state_root_digest height=' run3.txt)
"$QT" export-ops --init edge_init.qtr --trace edge.qtr -o edge_ops.txt
"$QCLI" init "$W/qe"
"$QCLI" apply "$W/qe" edge_ops.txt > edge_apply.txt
E2=$(tail -n 1 edge_apply.txt)
[ "state_root_digest height=$E2" = "$E1" ] || fail "edge: qmdb apply '$E2' vs replay '$E1'"
[ "$(echo "$E1" | cut -d' ' -f2)" = "height=5" ] || fail "edge: expected height 5 (1 init + 4 blocks)"

# 9. replay rejects a corrupt trace
if "$QB" replay --engine rocksdb --trace bad.qtr --db-dir "$W/db4" --output "$W/bad.json" \
    > run4.txt 2>&1; then fail "replay accepted a corrupt trace"; fi

cd /
rm -rf "$W"
echo "trace_replay: all checks passed"
