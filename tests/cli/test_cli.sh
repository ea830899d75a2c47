#!/bin/bash
# test_cli.sh QMDB VECTORS_DIR -- the `qmdb` command line: every known answer in the shared
# vectors (each *.ops script against each of its *.expected files, with the parameters the file
# names), genesis, and the exact output forms and exit codes for good and bad input.
set -u
Q=$1
V=$2
T=$(mktemp -d /tmp/qmdb-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
expect_eq() { if [ "$1" == "$2" ]; then ok; else bad "$3: got '$1' want '$2'"; fi; }
expect_rc() { if [ "$1" -eq "$2" ]; then ok; else bad "$3: exit $1, want $2"; fi; }

# Genesis root.
"$Q" init "$T/g" || bad "init"
expect_eq "$("$Q" root "$T/g")" "$(head -1 "$V/genesis.txt")" "genesis root"

# Every script with every expected file: <script>[-compact-T[-R-D]].expected.
nvec=0
for ops in "$V"/*.ops; do
  name=$(basename "$ops" .ops)
  for exp in "$V/$name".expected "$V/$name"-compact-*.expected; do
    [ -f "$exp" ] || continue
    suffix=$(basename "$exp" .expected)
    suffix=${suffix#"$name"}
    args=()
    if [[ $suffix =~ ^-compact-([0-9]+)-([0-9]+)-([0-9]+)$ ]]; then
      args=(--compact-thres "${BASH_REMATCH[1]}" --utilization "${BASH_REMATCH[2]}/${BASH_REMATCH[3]}")
    elif [[ $suffix =~ ^-compact-([0-9]+)$ ]]; then
      args=(--compact-thres "${BASH_REMATCH[1]}")
    elif [ -n "$suffix" ]; then
      bad "cannot parse parameters of $exp"; continue
    fi
    d="$T/v$nvec"
    nvec=$((nvec + 1))
    "$Q" init "$d" "${args[@]}" || bad "init $exp"
    if "$Q" apply "$d" "$ops" > "$T/out" 2> "$T/err" && diff -q "$T/out" "$exp" > /dev/null; then
      ok
    else
      bad "$(basename "$ops") with ${args[*]:-defaults}: output differs from $(basename "$exp")"
      diff "$T/out" "$exp" | head -5 >&2
      cat "$T/err" >&2
    fi
    # Reopen: root and check agree with the last expected line.
    expect_eq "$("$Q" root "$d")" "$(tail -1 "$exp")" "root after apply $(basename "$exp")"
    "$Q" check "$d" > /dev/null
    expect_rc $? 0 "check $(basename "$exp")"
  done
done
[ "$nvec" -ge 4 ] && ok || bad "only $nvec vector files found"

# get / root --height forms.
d="$T/v0"
expect_eq "$("$Q" get "$d" 0x626f62)" "07" "get hex with 0x"
expect_eq "$("$Q" get "$d" alice --str)" "08" "get --str"
out=$("$Q" get "$d" nobody --str); rc=$?
expect_rc $rc 1 "get missing"; expect_eq "$out" "not found" "get missing output"
expect_eq "$("$Q" root "$d" --height 2)" "$(sed -n 2p "$V/example.expected")" "root --height"
"$Q" root "$d" --height 99 > /dev/null 2>&1; expect_rc $? 1 "root above latest"
"$Q" stat "$d" | grep -q "^dram bytes per live entry: " && ok || bad "stat output"
QMDB_NO_URING=1 "$Q" stat "$d" | grep -q "^batched reads: pread thread pool" && ok || bad "stat: QMDB_NO_URING=1 not reported"

# --indexer hybrid: the same roots; apply leaves a checkpoint that stat resumes from.
for ops in "$V"/example.ops; do
  h="$T/hyb"
  "$Q" --indexer hybrid init "$h" || bad "init --indexer hybrid"
  "$Q" --indexer hybrid apply "$h" "$ops" > "$T/out" 2> "$T/err" || { bad "hybrid apply"; cat "$T/err" >&2; }
  expect_eq "$(tail -1 "$T/out")" "$(tail -1 "$V/example.expected")" "hybrid apply root"
  ls "$h"/s00.hix > /dev/null 2>&1 && ok || bad "hybrid apply left no s00.hix"
  out=$("$Q" --indexer hybrid stat "$h")
  echo "$out" | grep -q "^indexer: hybrid; dram .* resumed from its checkpoint in 16 of 16 shards" && ok ||
    bad "hybrid stat: $(echo "$out" | grep indexer)"
  expect_eq "$("$Q" --indexer hybrid get "$h" alice --str)" "$("$Q" get "$h" alice --str)" "hybrid get"
  "$Q" stat "$h" | grep -q "^indexer: memory" && ok || bad "stat without --indexer"
done
"$Q" --indexer fast stat "$d" > /dev/null 2>&1; expect_rc $? 2 "--indexer with a bad value"

# check: passes on a healthy database, fails naming the file on a damaged one.
cp -a "$T/v0" "$T/chk"
"$Q" check "$T/chk" > "$T/out" 2>&1; expect_rc $? 0 "check healthy"
f="$T/chk/s02.entries.0000000000"
sz=$(stat -c %s "$f")
printf '\x5a' | dd of="$f" bs=1 seek=$((sz - 30)) conv=notrunc 2> /dev/null
"$Q" check "$T/chk" > "$T/out" 2>&1; rc=$?
expect_rc $rc 3 "check damaged"
grep -q "s02.entries" "$T/out" && ok || { bad "check does not name the damaged file"; cat "$T/out" >&2; }

# Bad input: nothing of the rejected block is committed, line numbers are reported.
"$Q" init "$T/b" > /dev/null
printf 'block 1\nput 01 02\ncommit\n' | "$Q" apply "$T/b" - > /dev/null || bad "good block"
r1=$("$Q" root "$T/b")
check_reject() { # script, expected message fragment
  printf "$1" | "$Q" apply "$T/b" - > "$T/out" 2> "$T/err"
  local rc=$?
  expect_rc $rc 2 "reject: $2"
  grep -q -- "$2" "$T/err" && ok || { bad "message for '$2'"; cat "$T/err" >&2; }
  expect_eq "$("$Q" root "$T/b")" "$r1" "nothing committed after: $2"
}
check_reject 'block 2\nput 0a 0b\nput zz 01\ncommit\n' ':3: key is not even-length hex'
check_reject 'block 2\nput 0a 0b\nput 0a\ncommit\n' ':3: expected'
check_reject 'block 2\nput 0a 0b\nput 0a 0\ncommit\n' ':3: value is not even-length hex'
check_reject 'block 3\nput 0a 0b\ncommit\n' 'is not last committed height + 1'
check_reject 'block 2\nput 0a 0b\n' 'missing'
check_reject 'block 2\nfrobnicate\ncommit\n' ':2: unknown command'
check_reject 'put 0a 0b\n' ':1: operation outside a block'
check_reject "block 2\nput $(printf '%0512d' 0) 01\ncommit\n" ':2: key must be 1..255 bytes'
"$Q" init "$T/b" > /dev/null 2>&1; expect_rc $? 2 "init over a database"
"$Q" root "$T/nothing" > /dev/null 2>&1; expect_rc $? 2 "root of a missing dir"
"$Q" get "$T/b" 0 > /dev/null 2>&1; expect_rc $? 2 "odd-length hex key"
"$Q" init "$T/c" --utilization 7 > /dev/null 2>&1; expect_rc $? 2 "bad --utilization"
"$Q" bogus > /dev/null 2>&1; expect_rc $? 2 "unknown command"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
