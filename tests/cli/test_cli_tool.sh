#!/bin/bash
# test_cli_tool.sh QMDB VECTORS_DIR -- the `qmdb` tool as operators use it: the argument parser
# (options in any order for every subcommand, --help, unknown commands and options, nothing
# created by a bad or --help command line), --json output checked against the plain output,
# one-shot put/del, get's not-found, exit 5 for a writer on a database another process holds,
# readers of a database a writer holds, and the progress of apply (stderr only). Needs python3 (JSON parsing) and, for the terminal case,
# script(1) (skipped without it).
set -u
Q=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
V=$2
T=$(mktemp -d /tmp/qmdb-clitool-XXXXXX)
HOLD_PID=""
cleanup() {
  exec 3>&-
  [ -n "$HOLD_PID" ] && kill "$HOLD_PID" 2> /dev/null && wait "$HOLD_PID" 2> /dev/null
  rm -rf "$T"
}
trap cleanup EXIT
pass=0
fail=0
skipped=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
expect_eq() { if [ "$1" == "$2" ]; then ok; else bad "$3: got '$1' want '$2'"; fi; }
expect_rc() { if [ "$1" -eq "$2" ]; then ok; else bad "$3: exit $1, want $2"; fi; }
# Runs the tool with stdout in $T/out and stderr in $T/err; sets rc.
run() { "$Q" "$@" > "$T/out" 2> "$T/err"; rc=$?; }
# Prints a Python expression over the JSON document in file $1 (d); fails if it is not
# exactly one JSON value.
export PYTHONUTF8=1
jq_py() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1], encoding="utf-8")); print(eval(sys.argv[2]))' "$1" "$2"; }
is_json() { python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$1" 2> /dev/null; }

D="$T/db"
"$Q" init "$D" > /dev/null || bad "init"
"$Q" apply "$D" "$V/example.ops" > "$T/roots" || bad "apply example.ops"
H=$(tail -1 "$T/roots" | cut -d' ' -f1)
R=$(tail -1 "$T/roots" | cut -d' ' -f2)
COMMANDS="init apply put del rollback root get stat check prove verify help"

# ---- 1. --help: stdout, exit 0, and nothing created -------------------------------------------
mkdir "$T/cwd"
for c in $COMMANDS; do
  for h in --help -h; do
    (cd "$T/cwd" && "$Q" $c $h > "$T/out" 2> "$T/err"); rc=$?
    expect_rc $rc 0 "$c $h"
    grep -q "^usage: qmdb $c " "$T/out" && ok || bad "$c $h: no synopsis on stdout"
    grep -q "^Example:" "$T/out" && grep -q "^  qmdb $c " "$T/out" && ok || bad "$c $h: no example"
    [ -s "$T/err" ] && bad "$c $h wrote to stderr: $(cat "$T/err")" || ok
  done
  "$Q" help $c > "$T/help" 2>&1
  expect_rc $? 0 "help $c"
  "$Q" $c --help > "$T/out"
  cmp -s "$T/help" "$T/out" && ok || bad "'qmdb help $c' differs from 'qmdb $c --help'"
done
expect_eq "$(ls -A "$T/cwd")" "" "--help created nothing in the working directory"
# A --help after the arguments still only prints help; the directory is not created.
for args in "init $T/new --help" "init --help $T/new" "init $T/new --compact-thres 5 -h" \
            "apply $T/new - --help" "put $T/new 01 02 --help" "del $T/new 01 --help"; do
  run $args
  expect_rc $rc 0 "$args"
  [ -e "$T/new" ] && { bad "'qmdb $args' created $T/new"; rm -rf "$T/new"; } || ok
done
for h in --help -h help; do
  run $h
  expect_rc $rc 0 "qmdb $h"
  for c in $COMMANDS; do
    grep -q "^  $c " "$T/out" || bad "qmdb $h does not list $c"
  done
  grep -q "^  5  busy" "$T/out" && ok || bad "qmdb $h: no exit code table"
done
run --version
expect_rc $rc 0 "--version"
[[ $(cat "$T/out") =~ ^qmdb\ [0-9]+\.[0-9]+\.[0-9]+\ \(on-disk\ format\ [0-9]+,\ proof\ format\ [0-9]+\)$ ]] &&
  ok || bad "--version: '$(cat "$T/out")'"

# ---- 2. usage errors: exit 2, stderr only, nothing created -------------------------------------
usage_error() { # message fragment, args...
  local want=$1
  shift
  run "$@"
  expect_rc $rc 2 "qmdb $*"
  grep -q -- "$want" "$T/err" && ok || bad "qmdb $*: stderr lacks '$want': $(cat "$T/err")"
  [ -s "$T/out" ] && bad "qmdb $*: wrote to stdout: $(cat "$T/out")" || ok
}
usage_error "unknown command 'bogus'" bogus
usage_error "unknown command 'bogus'" help bogus
usage_error "no command given"
usage_error "unknown option '--bogus'" --bogus root "$D"
for c in $COMMANDS; do
  usage_error "unknown option '--bogus'" $c --bogus
  usage_error "unknown option '-x'" $c -x
done
usage_error "unknown option '--hei'" root "$D" --hei 2       # no abbreviations
usage_error "unknown option '--height'" get "$D" alice --height 2   # not an option of get
usage_error "unknown option '--absent'" init "$T/new" --absent
usage_error "--height needs a value" root "$D" --height
usage_error "--output needs a value" prove "$D" 01 -o
usage_error "--json takes no value" root "$D" --json=yes
usage_error "missing DIR" init
usage_error "missing SCRIPT" apply "$D"
usage_error "missing VALUE" put "$D" 01
usage_error "missing KEY" get "$D"
usage_error "missing FILE" verify --root "$R" --key 01 --absent
usage_error "unexpected argument 'extra'" root "$D" extra
usage_error "unexpected argument 'extra'" init "$T/new" extra
usage_error "--indexer wants 'memory' or 'hybrid'" root "$D" --indexer fast
usage_error "'init' has no --json output" --json init "$T/new"
usage_error "KEY must be even-length hex" get "$D" 0
usage_error "KEY must be 1..255 bytes" put "$D" "" 01 --str
usage_error "VALUE must be 1..16777215 bytes" put "$D" 01 0x
usage_error "cannot open $T/no-such-proof" verify --root "$R" --key 01 --absent "$T/no-such-proof"
usage_error "cannot open $T/no-such.ops" apply "$D" "$T/no-such.ops"
[ -e "$T/new" ] && bad "a rejected command line created $T/new" || ok
# "--" ends the options: a key that looks like an option.
"$Q" put "$D" --str -- --weird-- value > /dev/null || bad "put after --"
expect_eq "$("$Q" get --str "$D" -- --weird--)" "value" "get after --"
H=$((H + 1))
R=$("$Q" root "$D" | cut -d' ' -f2)

# ---- 3. options in any order, for every subcommand ----------------------------------------------
same() { # label, two commands whose stdout must be equal (and succeed)
  local label=$1 a=$2 b=$3
  eval "\"\$Q\" $a" > "$T/o1" 2> "$T/e1"
  local r1=$?
  eval "\"\$Q\" $b" > "$T/o2" 2> "$T/e2"
  local r2=$?
  expect_rc $r1 0 "$label: $a"
  expect_rc $r2 0 "$label: $b"
  [ -s "$T/o1" ] && cmp -s "$T/o1" "$T/o2" && ok ||
    { bad "$label: '$a' and '$b' differ"; diff "$T/o1" "$T/o2" | head -4 >&2; cat "$T/e1" "$T/e2" >&2; }
}
"$Q" init --compact-thres 5 --utilization 1/2 "$T/i1" --history-blocks 7 && "$Q" init "$T/i2" --history-blocks 9 \
  --utilization=1/2 --compact-thres=5 --history-blocks 7 || bad "init with options around DIR"
"$Q" init --history-blocks 7 "$T/i1b" && "$Q" init --history-blocks 7 -- "$T/i1c" || bad "init"
same "init" "stat $T/i1 --indexer memory" "--indexer memory stat $T/i2"
expect_eq "$("$Q" stat "$T/i2" | grep '^parameters')" \
  "parameters: compact_thres 5, utilization 1/2, history_blocks 7" "init: the last of a repeated option wins"
same "apply" "apply --quiet $T/i1 $V/example.ops" "apply $T/i2 --quiet $V/example.ops --indexer memory"
same "root" "root --height 2 $D" "root $D --height 2"
same "root =" "root --height=2 $D" "root $D --height 2"
same "root global after" "root $D --salvage" "--salvage root $D"
same "get" "get $D --str alice" "get --str $D alice"
same "get 2" "get $D alice --key-str" "get --key-str $D 616c696365 --hex"
same "stat" "stat --json $D" "stat $D --json"
same "stat json global" "--json stat $D" "stat $D --json"
same "check" "check --json $D" "check $D --json"
same "prove" "prove -o $T/p1 --height 2 $D alice --key-str" "prove $D --key-str alice --height=2 --output=$T/p2"
cmp -s "$T/p1" "$T/p2" && ok || bad "prove: the two orders wrote different proofs"
same "verify" "verify --root $R --key alice --key-str --value 0a $T/p1 --height 2" \
  "verify $T/p1 --height 2 --value 0a --key=alice --root=$R --key-str"
same "help" "help get" "get --help"
# --indexer after the command: a hybrid apply leaves a checkpoint that a hybrid stat resumes.
"$Q" init "$T/hy" --indexer hybrid && "$Q" apply "$T/hy" "$V/example.ops" --indexer hybrid > /dev/null ||
  bad "init/apply with --indexer hybrid after the command"
[ -e "$T/hy/s00.hix" ] && ok || bad "apply DIR SCRIPT --indexer hybrid left no s00.hix"
same "stat --indexer hybrid" "stat $T/hy --indexer hybrid --json" "--indexer hybrid stat --json $T/hy"
expect_eq "$(jq_py "$T/o1" 'd["indexer"], d["index_resumed_shards"]')" "('hybrid', 16)" "stat DIR --indexer hybrid"
cp -a "$D" "$T/d1"
cp -a "$D" "$T/d2"
same "put" "put --str $T/d1 k v" "put $T/d2 k --str v"
same "put mixed" "put $T/d1 --key-str k 76 --json" "put $T/d2 --json k --key-str 0x76"
same "del" "del --str $T/d1 k" "del $T/d2 k --key-str"

# ---- 4. put / del round trips ---------------------------------------------------------------
P="$T/pd"
"$Q" init "$P" > /dev/null
run put "$P" "hello key" "hello value" --str
expect_rc $rc 0 "put --str"
[[ $(cat "$T/out") =~ ^1\ [0-9a-f]{64}$ ]] && ok || bad "put output: '$(cat "$T/out")'"
expect_eq "$(cat "$T/out")" "$("$Q" root "$P")" "put prints the committed height and root"
expect_eq "$("$Q" get "$P" "hello key" --str)" "hello value" "get --str after put --str"
expect_eq "$("$Q" get "$P" 68656c6c6f206b6579)" "68656c6c6f2076616c7565" "get hex after put --str"
run put "$P" 0x0102 ff00
expect_eq "$(cut -d' ' -f1 "$T/out")" "2" "put hex: next height"
expect_eq "$("$Q" get "$P" 0102)" "ff00" "get after put hex"
run put "$P" 0102 --value-str 'text value'
expect_eq "$("$Q" get "$P" 0102 --value-str)" "text value" "put --value-str"
run put "$P" 0102 --key-str 'x'
expect_rc $rc 2 "put --key-str with a non-hex value"
# The same key and value as an op script: the same root.
"$Q" init "$T/pd2" > /dev/null
printf 'block 1\nput 68656c6c6f206b6579 68656c6c6f2076616c7565\ncommit\n' | "$Q" apply "$T/pd2" - > "$T/o1"
expect_eq "$(cat "$T/o1")" "$("$Q" root "$P" --height 1)" "put commits what apply commits"
run del "$P" 0102
expect_rc $rc 0 "del"
expect_eq "$(cut -d' ' -f1 "$T/out")" "4" "del: next height"
expect_eq "$(cat "$T/out")" "$("$Q" root "$P")" "del prints the committed root"
run get "$P" 0102
expect_rc $rc 1 "get after del"
run del "$P" 0102
expect_rc $rc 1 "del of an absent key"
grep -q "not found (nothing committed)" "$T/err" && ok || bad "del absent: message: $(cat "$T/err")"
expect_eq "$("$Q" root "$P" | cut -d' ' -f1)" "4" "del of an absent key committed nothing"
run del "$P" "hello key" --str
expect_rc $rc 0 "del --str"
run get "$P" "hello key" --str
expect_rc $rc 1 "get --str after del --str"
expect_eq "$(cat "$T/out")" "" "get not found: stdout empty"
expect_eq "$(cat "$T/err")" "qmdb get: not found at height 5" "get not found: stderr"

# ---- 5. --json ----------------------------------------------------------------------------
json_ok() { # label, args: runs, expects exit 0 and one JSON value on stdout
  local label=$1
  shift
  run "$@"
  expect_rc $rc 0 "$label"
  is_json "$T/out" && ok || bad "$label: not JSON: $(head -c 300 "$T/out")"
}
json_ok "root --json" root "$D" --json
expect_eq "$(jq_py "$T/out" 'd["height"], d["root"]')" "($H, '$("$Q" root "$D" | cut -d' ' -f2)')" "root --json fields"
expect_eq "$(jq_py "$T/out" 'type(d["height"]).__name__')" "int" "root --json: height is a number"
json_ok "root --json --height" root "$D" --json --height 1
expect_eq "$(jq_py "$T/out" 'd["height"], d["root"]')" "(1, '$(sed -n 1p "$V/example.expected" | cut -d' ' -f2)')" "root --json --height 1"
json_ok "get --json" get "$D" alice --key-str --json
expect_eq "$(jq_py "$T/out" 'd["key"], d["value"], d["length"]')" "('616c696365', '08', 1)" "get --json fields"
json_ok "stat --json" stat "$D" --json
"$Q" stat "$D" > "$T/plain"
expect_eq "$(jq_py "$T/out" 'd["height"]')" "$(sed -n 's/^height: //p' "$T/plain")" "stat --json height"
expect_eq "$(jq_py "$T/out" 'd["live_entries"], d["sentries"]')" \
  "$(sed -n 's/^live entries: \([0-9]*\) (plus \([0-9]*\) sentries)$/(\1, \2)/p' "$T/plain")" "stat --json entries"
expect_eq "$(jq_py "$T/out" 'd["total_entries"], d["unpruned_entries"], d["pruned_twigs"]')" \
  "$(sed -n 's/^total entries: \([0-9]*\) (unpruned: \([0-9]*\), pruned twigs: \([0-9]*\))$/(\1, \2, \3)/p' "$T/plain")" "stat --json totals"
expect_eq "$(jq_py "$T/out" '"%.2f" % d["per_live_entry"]["dram_bytes"]')" \
  "$(sed -n 's/^dram bytes per live entry: \([0-9.]*\) .*/\1/p' "$T/plain")" "stat --json dram per entry"
expect_eq "$(jq_py "$T/out" 'd["parameters"]["utilization_ratio"], d["parameters"]["history_blocks"]')" "(7, 100000)" "stat --json parameters"
json_ok "stat --json, no live entries" stat "$T/pd2" --json
"$Q" init "$T/empty" > /dev/null
json_ok "stat --json, empty" stat "$T/empty" --json
expect_eq "$(jq_py "$T/out" 'd["live_entries"], d["per_live_entry"]["ssd_bytes"]')" "(0, None)" "stat --json: null without live entries"
json_ok "check --json" check "$D" --json
expect_eq "$(jq_py "$T/out" 'd["ok"], d["problem_count"], d["problems"], d["height"], d["root"]')" \
  "(True, 0, [], $H, '$("$Q" root "$D" | cut -d' ' -f2)')" "check --json fields"
cp -a "$T/pd2" "$T/chk"
f=$(ls "$T"/chk/s*.entries.0000000000 | head -1)
printf '\x5a' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") - 30)) conv=notrunc 2> /dev/null
run check "$T/chk" --json
expect_rc $rc 3 "check --json of a damaged database"
is_json "$T/out" && ok || bad "check --json (damaged): not JSON: $(cat "$T/out")"
expect_eq "$(jq_py "$T/out" 'd["ok"], d["problem_count"] == len(d["problems"]) > 0')" "(False, True)" "check --json: problems listed"
expect_eq "$(jq_py "$T/out" 'all(isinstance(p, str) for p in d["problems"])')" "True" "check --json: problems are strings"
# prove: the header against the proof file and the plain summary line.
"$Q" prove "$D" alice --key-str -o "$T/pa" > "$T/plain"
json_ok "prove --json" prove "$D" alice --key-str --json
expect_eq "$(jq_py "$T/out" 'd["proof"]')" "$(xxd -p "$T/pa" | tr -d '\n')" "prove --json: proof hex = the proof file"
expect_eq "$(jq_py "$T/out" 'd["length"]')" "$(stat -c %s "$T/pa")" "prove --json: length"
expect_eq "$(jq_py "$T/out" 'd["key_hash"]')" "$(printf alice | sha256sum | cut -d' ' -f1)" "prove --json: key hash"
expect_eq "$(jq_py "$T/out" 'd["key"], d["file"]')" "('616c696365', None)" "prove --json: key, file"
expect_eq "$(jq_py "$T/out" '"%s proof: height %d, shard %d, %d bytes" % (d["kind"], d["height"], d["shard"], d["length"])')" \
  "$(cat "$T/plain")" "prove --json agrees with the summary line"
expect_eq "$(jq_py "$T/out" 'd["shard"] == int(d["key_hash"][0], 16), d["format_version"], d["deactivated"]')" \
  "(True, 1, False)" "prove --json: shard from the key hash"
if [ -w /dev/full ]; then
  for out in "-o /dev/full" "--output=/dev/full --json"; do
    run prove "$D" alice --key-str $out
    expect_rc $rc 3 "prove $out"
    grep -q "cannot write /dev/full: No space left on device" "$T/err" && ok || bad "prove $out: $(cat "$T/err")"
  done
fi
json_ok "prove --json -o" prove "$D" nobody --str --json -o "$T/pn"
expect_eq "$(jq_py "$T/out" 'd["kind"], d["file"]')" "('exclusion', '$T/pn')" "prove --json: exclusion, file"
# verify
json_ok "verify --json" verify --root "$R" --key alice --key-str --value 08 "$T/pa" --json
expect_eq "$(jq_py "$T/out" 'd["valid"], d["proof"]["kind"], d["proof"]["height"], d["height_checked"]')" \
  "(True, 'inclusion', $H, False)" "verify --json fields"
run verify --root "$R" --key alice --key-str --value 09 "$T/pa" --json
expect_rc $rc 4 "verify --json, wrong value"
is_json "$T/out" && ok || bad "verify --json (invalid): not JSON"
expect_eq "$(jq_py "$T/out" 'd["valid"], d["reason"]')" "(False, 'entry holds a different value')" "verify --json invalid"
run verify --root "$R" --key nobody --str --absent "$T/pn"
expect_eq "$(cat "$T/out")" "valid" "verify of the exclusion proof"
# put / del --json
cp -a "$P" "$T/pj"
json_ok "put --json" put "$T/pj" k v --str --json
expect_eq "$(jq_py "$T/out" '"%d %s" % (d["height"], d["root"])')" "$("$Q" root "$T/pj")" "put --json fields"
json_ok "del --json" del "$T/pj" k --str --json
expect_eq "$(jq_py "$T/out" '"%d %s" % (d["height"], d["root"])')" "$("$Q" root "$T/pj")" "del --json fields"
# Errors with --json: the message on stderr, and an error object on stdout.
json_error() { # code, kind, args
  local code=$1 kind=$2
  shift 2
  run "$@"
  expect_rc $rc "$code" "qmdb $*"
  is_json "$T/out" && ok || bad "qmdb $*: no JSON error object: $(cat "$T/out")"
  expect_eq "$(jq_py "$T/out" 'd["code"], d["kind"]')" "($code, '$kind')" "qmdb $*: error object"
  [ "$(head -1 "$T/err" | sed 's/^qmdb [a-z]*: //')" == "$(jq_py "$T/out" 'd["error"]')" ] && ok ||
    bad "qmdb $*: error object and stderr differ: $(cat "$T/out") / $(cat "$T/err")"
}
json_error 1 not_found get "$D" nobody --str --json
json_error 1 not_found root "$D" --height 99 --json
json_error 2 usage root "$D" --json --height x
json_error 2 usage get "$D" --json --bogus
json_error 2 usage root "$T/nothing" --json
json_error 3 database verify --root "$R" --key 01 --absent "$T" --json
# Escaping: a directory name with a quote, a backslash, a newline, a tab, a control byte, valid
# UTF-8 and sequences that are not UTF-8 (a stray byte, an overlong form, a surrogate, a cut
# sequence, a code point above U+10FFFF) comes back in the error object as valid JSON, each
# invalid part replaced by U+FFFD as Python's decode(errors="replace") does.
weird="$T/a\"b\\c
d	e$(printf '\001\377.\300\257.\355\240\200.\342\202x.\364\220\200\200.\360\237\230\200.\303\251')f"
run root "$weird" --json
expect_rc $rc 2 "root of a missing weird directory"
is_json "$T/out" && ok || bad "escaping: not JSON: $(cat "$T/out")"
expect_eq "$(jq_py "$T/out" 'ascii(d["error"].split(": ")[0])')" \
  "$(python3 -c 'import os,sys; print(ascii(os.fsencode(sys.argv[1]).decode("utf-8", "replace")))' "$weird")" "escaping: the name"
grep -q '\\u0001' "$T/out" && ok || bad "escaping: a control byte is not \\u0001"
mkdir "$T/ü"
run root "$T/ü" --json
expect_eq "$(jq_py "$T/out" 'd["error"].split(": ")[0]')" "$T/ü" "escaping: UTF-8 is kept"

# ---- 6. busy: another process holds the database -------------------------------------------
B="$T/busy"
"$Q" init "$B" > /dev/null
mkfifo "$T/fifo"
"$Q" apply "$B" "$T/fifo" > "$T/hold.out" 2> "$T/hold.err" &
HOLD_PID=$!
exec 3> "$T/fifo"
printf 'block 1\nput 01 02\ncommit\n' >&3
for _ in $(seq 300); do [ -s "$T/hold.out" ] && break; sleep 0.1; done
expect_eq "$(cut -d' ' -f1 "$T/hold.out")" "1" "the holding apply committed block 1"
busy() { # args: the command must fail with exit 5 and say why
  run "$@"
  expect_rc $rc 5 "busy: qmdb $*"
  grep -q "locked by another process" "$T/err" && ok || bad "busy: qmdb $*: message: $(cat "$T/err")"
}
busy put "$B" 03 04
busy del "$B" 01
printf 'block 2\ncommit\n' > "$T/b2.ops"
busy apply "$B" "$T/b2.ops"
busy put "$B" 03 04 --json
expect_eq "$(jq_py "$T/out" 'd["code"], d["kind"]')" "(5, 'busy')" "busy: JSON error object"
# Readers take no lock: they answer from the state the writer has made durable.
run root "$B" --json
expect_rc $rc 0 "live: root"
expect_eq "$(jq_py "$T/out" 'd["height"]')" "1" "live: root sees the committed block"
LIVE_ROOT=$(jq_py "$T/out" 'd["root"]')
run get "$B" 01 --json
expect_rc $rc 0 "live: get"
expect_eq "$(jq_py "$T/out" 'd["height"], d["value"]')" "(1, '02')" "live: get's height and value"
run get "$B" 05
expect_rc $rc 1 "live: get of an absent key"
expect_eq "$(cat "$T/err")" "qmdb get: not found at height 1" "live: not found names the height"
run stat "$B" --json
expect_eq "$(jq_py "$T/out" 'd["height"], d["live_entries"]')" "(1, 1)" "live: stat"
run check "$B"
expect_rc $rc 0 "live: check"
run prove "$B" 01 -o "$T/pb"
expect_rc $rc 0 "live: prove"
run verify --root "$LIVE_ROOT" --key 01 --value 02 "$T/pb"
expect_rc $rc 0 "live: the proof verifies against the root read"
printf 'block 2\nput 01 03\ncommit\n' >&3
for _ in $(seq 300); do [ "$(wc -l < "$T/hold.out")" -ge 2 ] && break; sleep 0.1; done
run get "$B" 01 --json
expect_eq "$(jq_py "$T/out" 'd["height"], d["value"]')" "(2, '03')" "live: a later get sees block 2"
exec 3>&-
wait "$HOLD_PID"
expect_rc $? 0 "the holding apply"
HOLD_PID=""
run put "$B" 03 04
expect_rc $rc 0 "put once the holder is gone"
expect_eq "$(cut -d' ' -f1 "$T/out")" "3" "put once the holder is gone: height"

# ---- 7. progress: stderr only ---------------------------------------------------------------
awk 'BEGIN { for (b = 1; b <= 3; b++) { print "block " b; for (i = 0; i < 500; i++) printf "put %02x%04x 01\n", b, i; print "commit" } }' > "$T/prog.ops"
stdout_is_roots() { # file, label
  if grep -qvE '^[0-9]+ [0-9a-f]{64}$' "$1"; then bad "$2: stdout has more than roots: $(grep -vE '^[0-9]+ [0-9a-f]{64}$' "$1" | head -2)"; else ok; fi
  expect_eq "$(wc -l < "$1")" "3" "$2: one line per block"
}
"$Q" init "$T/pg1" > /dev/null
"$Q" apply "$T/pg1" "$T/prog.ops" --progress > "$T/out" 2> "$T/err"
expect_rc $? 0 "apply --progress"
stdout_is_roots "$T/out" "apply --progress"
grep -q "^qmdb apply: done: 3 blocks, 1500 ops in [0-9.]* s; [0-9]* blocks/s, [0-9]* ops/s$" "$T/err" && ok ||
  bad "apply --progress: no summary on stderr: $(cat "$T/err")"
"$Q" init "$T/pg2" > /dev/null
"$Q" apply "$T/pg2" "$T/prog.ops" > "$T/out" 2> "$T/err"
expect_eq "$(cat "$T/err")" "" "apply without a terminal: no progress"
cmp -s "$T/out" <("$Q" root "$T/pg1" --height 1; "$Q" root "$T/pg1" --height 2; "$Q" root "$T/pg1") && ok ||
  bad "apply --progress changed the roots printed"
"$Q" init "$T/pg3" > /dev/null
"$Q" apply "$T/pg3" "$T/prog.ops" --progress --quiet > "$T/out" 2> "$T/err"
expect_eq "$(cat "$T/err")" "" "apply --progress --quiet: nothing on stderr"
# Updates while it runs: blocks arrive more than a second apart.
"$Q" init "$T/pg4" > /dev/null
{ for b in 1 2 3; do printf 'block %d\nput %02x 01\ncommit\n' $b $b; sleep 1.2; done; } |
  "$Q" apply "$T/pg4" - --progress > "$T/out" 2> "$T/err"
grep -qE "^qmdb apply: height [23], [23] blocks, [23] ops; [0-9]+ blocks/s, [0-9]+ ops/s$" "$T/err" && ok ||
  bad "apply --progress: no update while running: $(cat "$T/err")"
expect_eq "$(wc -l < "$T/out")" "3" "apply --progress (slow): stdout"
# On a terminal (script(1) gives it one) progress is on by default, rewritten with \r.
if script -qc true /dev/null > /dev/null 2>&1; then
  "$Q" init "$T/pg5" > /dev/null
  script -qc "'$Q' apply '$T/pg5' '$T/prog.ops' > '$T/out'" /dev/null > "$T/tty" 2>&1
  grep -q $'\rqmdb apply: done: 3 blocks, 1500 ops' "$T/tty" && ok || bad "apply on a terminal: no progress: $(od -c "$T/tty" | head -5)"
  stdout_is_roots "$T/out" "apply on a terminal"
  "$Q" init "$T/pg6" > /dev/null
  script -qc "'$Q' apply '$T/pg6' '$T/prog.ops' --quiet > '$T/out'" /dev/null > "$T/tty" 2>&1
  expect_eq "$(cat "$T/tty")" "" "apply --quiet on a terminal"
else
  echo "skip: apply on a terminal (no script(1))" >&2
  skipped=$((skipped + 1))
fi
# A script error after a progress line on a terminal starts on a line of its own.
printf 'block 1\nput zz 01\ncommit\n' > "$T/badline.ops"
"$Q" init "$T/pg7" > /dev/null
run apply "$T/pg7" "$T/badline.ops" --progress
expect_rc $rc 2 "apply --progress with a bad line"
grep -q "^qmdb apply: $T/badline.ops:2: key is not even-length hex" "$T/err" && ok || bad "bad line message: $(cat "$T/err")"
grep -q "^qmdb apply: stopped: 0 blocks" "$T/err" && ok || bad "apply --progress: no 'stopped' summary: $(cat "$T/err")"

# ---- rollback: back to an earlier height, then other blocks -----------------------------------
RB="$T/rb"
"$Q" init "$RB" > /dev/null
printf 'block 1\nput 01 0a\ncommit\nblock 2\nput 01 0b\nput 02 0c\ncommit\nblock 3\ndel 01\ncommit\n' |
  "$Q" apply "$RB" - > "$T/rbroots"
R0=$("$Q" root "$RB" --height 0)
R1=$(sed -n 1p "$T/rbroots")
R3=$(sed -n 3p "$T/rbroots")
run rollback "$RB" 4
expect_rc $rc 2 "rollback above the latest"
grep -q "the latest is 3" "$T/err" && ok || bad "rollback above the latest: $(cat "$T/err")"
run rollback "$RB" x1
expect_rc $rc 2 "rollback to a height that is not a number"
expect_eq "$("$Q" root "$RB")" "$R3" "a refused rollback changes nothing"
run rollback "$RB" 3
expect_rc $rc 0 "rollback to the latest"
expect_eq "$(cat "$T/out")" "$R3" "rollback to the latest prints it"
run rollback "$RB" 1
expect_rc $rc 0 "rollback 1"
expect_eq "$(cat "$T/out")" "$R1" "rollback prints \"<height> <root>\""
expect_eq "$("$Q" root "$RB")" "$R1" "root after the rollback"
expect_eq "$("$Q" get "$RB" 01)" "0a" "value after the rollback"
run get "$RB" 02
expect_rc $rc 1 "a key created after the height is gone"
run root "$RB" --height 2
expect_rc $rc 1 "the root of a discarded height"
"$Q" put "$RB" 03 0d > "$T/out"
grep -q "^2 " "$T/out" && ok || bad "the next commit after a rollback: $(cat "$T/out")"
run check "$RB"
expect_rc $rc 0 "check after a rollback and a new block"
run rollback "$RB" 0 --json
expect_rc $rc 0 "rollback --json"
is_json "$T/out" && ok || bad "rollback --json: not JSON: $(cat "$T/out")"
expect_eq "$(jq_py "$T/out" 'd["height"], d["from_height"], d["blocks_undone"]')" "(0, 2, 2)" "rollback --json fields"
expect_eq "0 $(jq_py "$T/out" 'd["root"]')" "$R0" "rollback --json root"
# A database whose state records start later (STATES lost, or made before it existed): the
# heights before the first record are outside the window (exit 1), nothing changes.
"$Q" put "$RB" 04 0e > /dev/null
"$Q" put "$RB" 05 0f > /dev/null
rm "$RB/STATES"
run rollback "$RB" 1
expect_rc $rc 1 "rollback below the first state record"
grep -q "pruned" "$T/err" && ok || bad "rollback below the window: $(cat "$T/err")"
expect_eq "$("$Q" root "$RB" | cut -d' ' -f1)" "2" "a rollback outside the window changes nothing"
"$Q" put "$RB" 06 10 > /dev/null
run rollback "$RB" 2
expect_rc $rc 0 "rollback to the first recorded height"

echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
