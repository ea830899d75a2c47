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
expect_eq "$("$Q" get "$d" alice --key-str)" "08" "get --key-str (value in hex)"
expect_eq "$("$Q" get "$d" alice --str | od -An -tx1 | tr -d ' ')" "080a" "get --str: raw value, newline"
"$Q" get "$d" nobody --str > "$T/out" 2> "$T/err"; rc=$?
expect_rc $rc 1 "get missing"; expect_eq "$(cat "$T/out")" "" "get missing: nothing on stdout"
expect_eq "$(cat "$T/err")" "qmdb get: not found at height 4" "get missing: stderr"
expect_eq "$("$Q" root "$d" --height 2)" "$(sed -n 2p "$V/example.expected")" "root --height"
"$Q" root "$d" --height 99 > /dev/null 2>&1; expect_rc $? 1 "root above latest"
"$Q" stat "$d" | grep -q "^dram bytes per live entry: " && ok || bad "stat output"
# The in-memory indexer too: the writer's close left a checkpoint that the fast read-only
# opens load; a verifying one scans the log.
"$Q" --indexer memory stat "$d" | grep -q "^indexer: memory; .* loaded from its checkpoint in 16 of 16 shards" &&
  ok || bad "memory stat: $("$Q" --indexer memory stat "$d" | grep indexer)"
"$Q" --indexer memory stat --verify "$d" | grep -q "loaded from its checkpoint in 0 of 16 shards" &&
  ok || bad "memory stat --verify"
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
  expect_eq "$("$Q" --indexer hybrid get "$h" alice --key-str)" "$("$Q" get "$h" alice --key-str)" "hybrid get"
  env -u QMDB_INDEXER "$Q" stat "$h" | grep -q "^indexer: memory" && ok || bad "stat without --indexer"
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
"$Q" root "$T/chk" --verify > /dev/null 2> "$T/err"; rc=$?
expect_rc $rc 3 "root --verify of a damaged database"
grep -q "s02.entries" "$T/err" && ok || { bad "root --verify does not name the damaged file"; cat "$T/err" >&2; }

# Read-only commands open fast by default (the youngest twig hashed); --verify hashes every
# unpruned entry, as check does, and gives the same answers.
for c in "root" "stat" "get alice --key-str" "prove alice --key-str -o $T/p.bin"; do
  set -- $c
  cmd=$1; shift
  a=$("$Q" "$cmd" "$T/v0" "$@" 2>&1 | grep -v "^proof\|bytes"); ra=$?
  b=$("$Q" "$cmd" "$T/v0" "$@" --verify 2>&1 | grep -v "^proof\|bytes"); rb=$?
  expect_rc $rb $ra "$cmd --verify exit code"
  expect_eq "$b" "$a" "$cmd --verify answer"
done
"$Q" apply "$T/v0" --verify /dev/null > /dev/null 2>&1; expect_rc $? 2 "apply takes no --verify"

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

# apply: a read error is not the end of the script. It stops with the script and line named and
# exit 3, and nothing after it is applied.
"$Q" init "$T/rd" > /dev/null
"$Q" apply "$T/rd" "$T/rd" > /dev/null 2> "$T/err"; expect_rc $? 3 "apply of a directory (EISDIR)"
grep -q "^qmdb apply: $T/rd:1: cannot read the script: " "$T/err" && ok || { bad "EISDIR message"; cat "$T/err" >&2; }
"$Q" apply "$T/rd" /proc/self/mem > /dev/null 2> "$T/err"; expect_rc $? 3 "apply of /proc/self/mem (EIO)"
grep -q "^qmdb apply: /proc/self/mem:1: cannot read the script: " "$T/err" && ok || { bad "EIO message"; cat "$T/err" >&2; }
# A line too long for memory (getline: ENOMEM) after a committed block: block 2 must not be
# skipped silently. Needs an allocation limit: AddressSanitizer's, when the tool is built with it.
if ASAN_OPTIONS=help=1 "$Q" --version 2>&1 | grep -q AddressSanitizer; then
  { printf 'block 1\nput 01 02\ncommit\n#'; head -c 40000000 /dev/zero | tr '\0' x
    printf '\nblock 2\nput 03 04\ncommit\n'; } |
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=16" \
    "$Q" apply "$T/rd" - > "$T/out" 2> "$T/err"
  expect_rc $? 3 "apply: a line too long for memory"
  grep -q "^qmdb apply: -:4: cannot read the script: " "$T/err" && ok || { bad "ENOMEM message"; cat "$T/err" >&2; }
  expect_eq "$(cut -d' ' -f1 "$T/out")" "1" "apply: blocks before the ENOMEM line"
  expect_eq "$("$Q" root "$T/rd" | cut -d' ' -f1)" "1" "apply: nothing after the ENOMEM line"
else
  echo "skipped: ENOMEM in apply (needs an AddressSanitizer build)"
fi
"$Q" verify --root "$(head -1 "$V/genesis.txt")" --key 01 --absent "$T/rd" > /dev/null 2> "$T/err"
expect_rc $? 3 "verify of a directory (EISDIR)"

# Numbers: digits only, no blanks, no sign, no empty string, 64 bits; R/D with 1 <= R <= D.
check_number() { # expected message fragment, command...
  local want=$1
  shift
  "$Q" "$@" > "$T/out" 2> "$T/err"
  local rc=$?
  expect_rc $rc 2 "bad number: $*"
  grep -q -- "$want" "$T/err" && ok || { bad "message for: $*"; cat "$T/err" >&2; }
}
for h in ' -1' '+1' ' 1' '1 ' '-1' '' '0x1' '1e3' '18446744073709551616'; do
  check_number "--height wants an unsigned decimal number" root "$d" --height "$h"
  check_number "--height wants an unsigned decimal number" prove "$d" alice --str --height "$h"
  check_number "--height wants an unsigned decimal number" verify --root "$(head -1 "$V/genesis.txt")" \
    --key 01 --absent --height "$h" /dev/null
done
check_number "--height 18446744073709551615 is too large" root "$d" --height 18446744073709551615
for opt in --compact-thres --history-blocks --entry-segment-bytes; do
  for n in ' -1' '+5' ' 65536' '65536 ' '-1' '' '1_000' '18446744073709551616'; do
    check_number "$opt wants an unsigned decimal number" init "$T/num" "$opt" "$n"
  done
done
check_number "--compact-thres needs a value" init "$T/num" --compact-thres
for u in '-1/10' '11/10' '2/1' ' 7/10' '7/ 10' '7/10 ' '+7/10' '0/10' '7/0' '7' '7/' '/7' '7/10/1' \
         '4294967296/4294967296' '1/4294967296'; do
  check_number "--utilization wants R/D" init "$T/num" --utilization "$u"
done
[ -e "$T/num" ] && bad "a rejected init created $T/num" || ok
"$Q" init "$T/num" --utilization 1/1 --compact-thres 1 --history-blocks 0 > /dev/null || bad "init 1/1"
"$Q" stat "$T/num" | grep -q "utilization 1/1, history_blocks 0$" && ok || bad "init 1/1: parameters"

# stat: per-entry figures are n/a without live entries; pruned twigs are counted from the
# durable metadata (the same after every reopen, consistent with the unpruned entry count).
out=$("$Q" stat "$T/g")
echo "$out" | grep -q "^dram bytes per live entry: n/a (indexer n/a, tree n/a; total [0-9]* bytes)$" &&
  ok || bad "stat of an empty database: $(echo "$out" | grep dram)"
echo "$out" | grep -q "^ssd bytes per live entry: n/a (entry files n/a, twig files n/a, index runs n/a; total [0-9]* bytes)$" &&
  ok || bad "stat of an empty database: $(echo "$out" | grep ssd)"
awk 'BEGIN { print "block 1"; for (i = 0; i < 20000; i++) printf "put %08x 01\n", i; print "commit"
             print "block 2"; print "commit"; print "block 3"; print "commit" }' > "$T/prune.ops"
"$Q" init "$T/pr" --compact-thres 1 --utilization 1/1 --history-blocks 1 > /dev/null
"$Q" apply "$T/pr" "$T/prune.ops" > /dev/null || bad "apply prune.ops"
for i in 1 2; do
  line=$("$Q" stat "$T/pr" | grep "^total entries: ")
  if [[ $line =~ ^total\ entries:\ ([0-9]+)\ \(unpruned:\ ([0-9]+),\ pruned\ twigs:\ ([0-9]+)\)$ ]] &&
     [ "${BASH_REMATCH[3]}" -gt 0 ] &&
     [ $((BASH_REMATCH[1] - BASH_REMATCH[2])) -eq $((BASH_REMATCH[3] * 2048)) ]; then ok
  else bad "stat after reopen $i: '$line'"; fi
done
"$Q" stat "$T/pr" | grep -q "^dram bytes per live entry: [0-9.]* (indexer [0-9.]*, tree [0-9.]*; total" &&
  ok || bad "stat: per-entry figures with live entries"
# The largest history_blocks keeps every twig (deact_height + history_blocks must not wrap).
"$Q" init "$T/pr2" --compact-thres 1 --utilization 1/1 --history-blocks 18446744073709551615 > /dev/null
"$Q" apply "$T/pr2" "$T/prune.ops" > /dev/null || bad "apply prune.ops (history 2^64-1)"
line=$("$Q" stat "$T/pr2" | grep "^total entries: ")
[[ $line =~ ^total\ entries:\ ([0-9]+)\ \(unpruned:\ ([0-9]+),\ pruned\ twigs:\ 0\)$ ]] &&
  [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && ok || bad "history_blocks 2^64-1 pruned: '$line'"

# Hybrid indexer, disk full at close: the checkpoint cannot be written, but every printed
# height is durable. apply warns and exits 0. Uses a small private tmpfs (user and mount
# namespaces; skipped where unshare or mount is not allowed). The disk is filled after the
# commit is printed, while apply waits for more of its script (a FIFO).
cat > "$T/full.sh" << 'EOF'
Q=$1 S=$2 R=$3
mount -t tmpfs -o size=32m tmpfs "$S" 2> /dev/null || exit 77
"$Q" --indexer hybrid init "$S/db" > /dev/null || exit 1
mkfifo "$S/in"
"$Q" --indexer hybrid apply "$S/db" "$S/in" > "$R/out" 2> "$R/err" &
pid=$!
exec 3> "$S/in"
printf 'block 1\nput 01 02\ncommit\n' >&3
for _ in $(seq 600); do [ -s "$R/out" ] && break; sleep 0.1; done
dd if=/dev/zero of="$S/fill" bs=64k 2> /dev/null
exec 3>&-
wait $pid
echo $? > "$R/rc"
rm -f "$S/fill"
"$Q" --indexer hybrid root "$S/db" > "$R/root"
EOF
mkdir -p "$T/small" "$T/res"
if unshare -rm true 2> /dev/null; then
  unshare -rm bash "$T/full.sh" "$Q" "$T/small" "$T/res"
  src=$?
else
  src=77
fi
if [ "$src" -eq 77 ]; then
  echo "skipped: full disk at close (no private tmpfs here)"
else
  expect_rc "$(cat "$T/res/rc" 2> /dev/null || echo 99)" 0 "hybrid apply with a full disk at close"
  grep -q "^qmdb apply: warning: the index checkpoint was not written (.*No space left on device); every committed block is durable" "$T/res/err" &&
    ok || { bad "no warning for the unwritten checkpoint"; cat "$T/res/err" >&2; }
  expect_eq "$(cut -d' ' -f1 "$T/res/out")" "1" "full disk: height printed"
  expect_eq "$(cat "$T/res/root")" "$(cat "$T/res/out")" "full disk: printed height is durable"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
