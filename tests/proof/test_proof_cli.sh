#!/bin/sh
# test_proof_cli.sh QMDB -- qmdb prove / qmdb verify end to end: inclusion, exclusion and
# historical proofs verified against `qmdb root` output; wrong value, key, height, root or a
# flipped proof byte must fail with exit code 4 and a reason. Multi-key proofs: answers of
# several keys (latest and historical) printed by verify; wrong height, order or key list fail.
# Block witnesses: qmdb witness / qmdb verify-block print the engine's root of the block.
set -eu
QMDB=$1
T=$(mktemp -d "${TMPDIR:-/tmp}/qmdb-proof-cli-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$QMDB" init "$T/db" --compact-thres 1 --utilization 1/1 >/dev/null
cat > "$T/s1" <<'S'
block 1
put 6b31 7631      # k1 = v1
put 6b32 7632
put 6b33 7633
commit
block 2
put 6b31 763131    # k1 = v11
del 6b32
commit
block 3
tx
put 6b34 7634
commit
S
"$QMDB" apply "$T/db" "$T/s1" >/dev/null
ROOT=$("$QMDB" root "$T/db" | cut -d' ' -f2)
ROOTLINE=$("$QMDB" root "$T/db" --height 3)

# Inclusion (latest), hex key and --str forms.
"$QMDB" prove "$T/db" 6b31 -o "$T/p1" >/dev/null
[ "$("$QMDB" verify --root "$ROOT" --key 6b31 --value 763131 "$T/p1")" = valid ] || fail incl
[ "$("$QMDB" verify --root "0x$ROOT" --key k1 --value v11 --str --height 3 "$T/p1")" = valid ] \
    || fail incl-str
[ "$("$QMDB" verify --root "$ROOTLINE" --key k1 --value v11 --str "$T/p1")" = valid ] \
    || fail incl-rootline
set +e
"$QMDB" verify --root "$ROOT" --key 6b31 --value 7631 "$T/p1" > "$T/out"; rc=$?
set -e
[ $rc -eq 4 ] || fail "wrong value exit $rc"
grep -q "invalid: entry holds a different value" "$T/out" || fail "reason: $(cat "$T/out")"
set +e
"$QMDB" verify --root "$ROOT" --key 6b31 --value 763131 --height 2 "$T/p1" >/dev/null; rc=$?
[ $rc -eq 4 ] || fail "wrong height exit $rc"
BADROOT=$(echo "$ROOT" | sed 's/^./0/;t;s/^/0/' )
[ "$BADROOT" != "$ROOT" ] || BADROOT=$(echo "$ROOT" | sed 's/^./1/')
"$QMDB" verify --root "$BADROOT" --key 6b31 --value 763131 "$T/p1" >/dev/null; rc=$?
[ $rc -eq 4 ] || fail "wrong root exit $rc"
"$QMDB" verify --root "$ROOT" --key 6b33 --value 763131 "$T/p1" >/dev/null; rc=$?
[ $rc -eq 4 ] || fail "wrong key exit $rc"
"$QMDB" verify --root "$ROOT" --key 6b31 --absent "$T/p1" >/dev/null; rc=$?
[ $rc -eq 4 ] || fail "absent claim on inclusion exit $rc"
set -e
# Flip one byte in the middle of the proof.
SIZE=$(wc -c < "$T/p1")
cp "$T/p1" "$T/p1bad"
printf '\377' | dd of="$T/p1bad" bs=1 seek=$((SIZE / 2)) conv=notrunc 2>/dev/null
set +e
"$QMDB" verify --root "$ROOT" --key 6b31 --value 763131 "$T/p1bad" >/dev/null; rc=$?
set -e
[ $rc -eq 4 ] || fail "flipped byte exit $rc"

# Exclusion: deleted key and a never-written key (proof to stdout).
"$QMDB" prove "$T/db" 6b32 -o "$T/p2" >/dev/null
[ "$("$QMDB" verify --root "$ROOT" --key 6b32 --absent "$T/p2")" = valid ] || fail excl
"$QMDB" prove "$T/db" nosuchkey --str > "$T/p3" 2>/dev/null
[ "$("$QMDB" verify --root "$ROOT" --key nosuchkey --str --absent - < "$T/p3")" = valid ] \
    || fail excl-stdin

# Historical: k1 = v1 and k2 = v2 at height 1, k4 absent at height 2, checked at the latest root.
"$QMDB" prove "$T/db" 6b31 --height 1 -o "$T/h1" >/dev/null
[ "$("$QMDB" verify --root "$ROOT" --key 6b31 --value 7631 --height 1 "$T/h1")" = valid ] \
    || fail hist1
"$QMDB" prove "$T/db" 6b32 --height 1 -o "$T/h2" >/dev/null
[ "$("$QMDB" verify --root "$ROOT" --key 6b32 --value 7632 --height 1 "$T/h2")" = valid ] \
    || fail hist2
"$QMDB" prove "$T/db" 6b34 --height 2 -o "$T/h3" >/dev/null
[ "$("$QMDB" verify --root "$ROOT" --key 6b34 --absent --height 2 "$T/h3")" = valid ] \
    || fail hist3
set +e
"$QMDB" verify --root "$ROOT" --key 6b31 --value 7631 "$T/h1" >/dev/null; rc=$?
[ $rc -eq 4 ] || fail "historical proof without --height exit $rc"
"$QMDB" prove "$T/db" 6b31 --height 9 -o "$T/h9" 2>/dev/null; rc=$?
[ $rc -eq 1 ] || fail "height above latest exit $rc"
"$QMDB" verify --root "$ROOT" --key 6b31 "$T/h1" 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "missing --value/--absent exit $rc"
set -e

# Multi-key proofs: several KEYs to prove, the same KEYs after FILE to verify.
"$QMDB" prove "$T/db" 6b31 6b32 6b34 6b39 --height 1 -o "$T/m1" >/dev/null
"$QMDB" verify --root "$ROOT" --height 1 "$T/m1" 6b31 6b32 6b34 6b39 > "$T/out"
printf '6b31 7631\n6b32 7632\n6b34 absent\n6b39 absent\nvalid (height 1, 4 keys)\n' > "$T/want"
cmp -s "$T/out" "$T/want" || fail "multi-key historical: $(cat "$T/out")"
"$QMDB" prove "$T/db" k1 k2 k4 --str > "$T/m2" 2>/dev/null
"$QMDB" verify --root "$ROOTLINE" --str "$T/m2" k1 k2 k4 > "$T/out"
printf 'k1 v11\nk2 absent\nk4 v4\nvalid (height 3, 3 keys)\n' > "$T/want"
cmp -s "$T/out" "$T/want" || fail "multi-key latest: $(cat "$T/out")"
"$QMDB" verify --root "$ROOT" --json --str "$T/m2" k1 k2 k4 | grep -q '"valid": true' \
    || fail "multi-key json"
set +e
"$QMDB" verify --root "$ROOT" "$T/m1" 6b31 6b32 6b34 6b39 > "$T/out"; rc=$?
[ $rc -eq 4 ] && grep -q "^invalid: " "$T/out" || fail "multi-key without --height exit $rc"
"$QMDB" verify --root "$ROOT" --height 1 "$T/m1" 6b31 6b32 6b39 6b34 >/dev/null; rc=$?
[ $rc -eq 4 ] || fail "multi-key with keys in another order exit $rc"
"$QMDB" verify --root "$ROOT" --height 1 "$T/m1" 6b31 6b32 6b34 >/dev/null; rc=$?
[ $rc -eq 4 ] || fail "multi-key with a key missing exit $rc"
"$QMDB" verify --root "$ROOT" --key 6b31 --absent "$T/m1" 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "multi-key proof with --key exit $rc"
"$QMDB" prove "$T/db" 6b31 6b32 --height 9 -o "$T/m9" 2>/dev/null; rc=$?
[ $rc -eq 1 ] || fail "multi-key height above latest exit $rc"
set -e

# Block witnesses: block 2 of s1 (update, delete) checked against the root of height 1.
cat > "$T/b2" <<'S'
block 2
put 6b31 763131
del 6b32
commit
S
PRE=$("$QMDB" root "$T/db" --height 1)
POST=$("$QMDB" root "$T/db" --height 2)
"$QMDB" witness "$T/db" --height 2 -o "$T/w2" "$T/b2" >/dev/null
[ "$("$QMDB" verify-block --pre-root "$PRE" "$T/w2" "$T/b2")" = "$POST" ] || fail "verify-block"
"$QMDB" witness "$T/db" --height 2 -o "$T/w2log" >/dev/null 2>&1
[ "$("$QMDB" verify-block --pre-root "$PRE" "$T/w2log" "$T/b2")" = "$POST" ] \
    || fail "verify-block (witness from the log)"
sed 's/763131/763132/' "$T/b2" > "$T/b2x"
set +e
"$QMDB" verify-block --pre-root "$PRE" "$T/w2" "$T/b2x" > "$T/out"; rc=$?
[ $rc -eq 4 ] && grep -q "^invalid: " "$T/out" || fail "verify-block other block exit $rc"
"$QMDB" verify-block --pre-root "$POST" "$T/w2" "$T/b2" >/dev/null; rc=$?
[ $rc -eq 4 ] || fail "verify-block wrong pre-root exit $rc"
"$QMDB" witness "$T/db" --height 9 -o "$T/w9" 2>/dev/null; rc=$?
[ $rc -eq 1 ] || fail "witness above the latest exit $rc"
"$QMDB" witness "$T/db" -o "$T/w9" 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "witness without --height exit $rc"
set -e
echo "proof CLI: ok"
