#!/bin/bash
# test_sync_cli.sh QMDB -- `qmdb snapshot`, `qmdb restore` and `qmdb backup` end to end: a
# snapshot and a backup taken while a writer commits (both hold one committed height: the
# copy passes `qmdb check`, the restore ends at the snapshot's printed root, which is the
# source's root of that height); a damaged chunk (exit 4, named on stderr, the good chunks
# kept), missing chunks (exit 1, then a second run completes), a wrong root (exit 4), an
# existing target (exit 2); then the same blocks on source, restored copy and backup give the
# same roots; a snapshot of an earlier height (--height). Uses compact_thres 1 and a 3-block
# history for the live part, so compaction and pruning run.
set -u
Q=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
T=$(mktemp -d /tmp/qmdb-synccli-XXXXXX)
WPID=""
cleanup() {
  [ -n "$WPID" ] && kill "$WPID" 2> /dev/null && wait "$WPID" 2> /dev/null
  rm -rf "$T"
}
trap cleanup EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
expect_eq() { if [ "$1" == "$2" ]; then ok; else bad "$3: got '$1' want '$2'"; fi; }
expect_rc() { if [ "$1" -eq "$2" ]; then ok; else bad "$3: exit $1, want $2"; fi; }
run() { "$Q" "$@" > "$T/out" 2> "$T/err"; rc=$?; }

# A script of blocks FROM..TO: puts and deletes over 3000 keys.
script() {
  python3 - "$1" "$2" "$3" << 'PY'
import random, sys
first, last, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
r = random.Random(seed)
for h in range(first, last + 1):
    print("block %d" % h)
    for i in range(3000 if h == 1 else 400):
        k = r.randrange(3000)
        if h > 1 and r.random() < 0.2:
            print("del %08x" % k)
        else:
            print("put %08x %s" % (k, "%02x" % (h % 256) * r.randint(1, 40)))
    print("commit")
PY
}

run init "$T/db" --compact-thres 1 --history-blocks 3
expect_rc $rc 0 "init"
script 1 20 1 > "$T/s1"
run apply "$T/db" "$T/s1"
expect_rc $rc 0 "apply 1..20"

# A writer commits blocks 21..220 while the snapshot and the backup are taken.
script 21 220 2 > "$T/s2"
"$Q" apply "$T/db" "$T/s2" > "$T/writer.out" 2>&1 &
WPID=$!
sleep 0.3
run snapshot "$T/db" "$T/snap"
expect_rc $rc 0 "snapshot beside a writer"
SNAP=$(cat "$T/out")
run backup "$T/db" "$T/bk"
expect_rc $rc 0 "backup beside a writer"
BK=$(cat "$T/out")
wait "$WPID"
expect_rc $? 0 "the writer"
WPID=""
H=${SNAP%% *}
run root "$T/db" --height "$H"
expect_eq "$(cat "$T/out")" "$SNAP" "snapshot root = source root of its height"
run root "$T/db" --height "${BK%% *}"
expect_eq "$(cat "$T/out")" "$BK" "backup root = source root of its height"
run check "$T/bk"
expect_rc $rc 0 "check of the backup"
run backup "$T/db" "$T/bk"
expect_rc $rc 2 "backup into an existing database"

# Restore: first without two chunks, then with a damaged one, then complete.
mkdir "$T/in"
cp "$T/snap/MANIFEST" "$T/in/"
mapfile -t chunks < <(grep '^chunk ' "$T/snap/MANIFEST" | cut -d' ' -f2)
n=${#chunks[@]}
for ((i = 2; i < n; i++)); do cp "$T/snap/${chunks[$i]}" "$T/in/"; done
run restore "$T/new" --root "$SNAP" "$T/in"
expect_rc $rc 1 "restore with two chunks missing"
grep -q "missing ${chunks[0]}" "$T/err" && ok || bad "missing chunk not named"
cp "$T/snap/${chunks[1]}" "$T/in/"
cp "$T/snap/${chunks[0]}" "$T/in/"
printf '\x55' | dd of="$T/in/${chunks[0]}" bs=1 seek=700 conv=notrunc 2> /dev/null
run restore "$T/new" --root "$SNAP" "$T/in"
expect_rc $rc 4 "restore with a damaged chunk"
grep -q "rejected ${chunks[0]}" "$T/err" && ok || bad "damaged chunk not named: $(cat "$T/err")"
run restore "$T/other" --root "$(echo "$SNAP" | tr '0123456789abcdef' '123456789abcdef0')" "$T/in"
expect_rc $rc 4 "restore against another root"
cp "$T/snap/${chunks[0]}" "$T/in/"
run restore "$T/new" --root "$SNAP" --height "$H" "$T/in" --json
expect_rc $rc 0 "restore completes"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['complete'] and d['accepted']==$n, d" "$T/out" && ok || bad "restore --json"
run root "$T/new"
expect_eq "$(cat "$T/out")" "$SNAP" "restored root"
run check "$T/new"
expect_rc $rc 0 "check of the restored database"
run restore "$T/new" --root "$SNAP" "$T/in"
expect_rc $rc 2 "restore into an existing database"

# The same next blocks on the source's copies at the snapshot height give the same roots.
run backup "$T/new" "$T/new-bk"
expect_rc $rc 0 "backup of the restored database"
script $((H + 1)) $((H + 30)) 3 > "$T/s3"
run apply "$T/new" "$T/s3"
cp "$T/out" "$T/new.roots"
# A second restore of the same snapshot, and the source rolled back to H, must agree.
run restore "$T/new2" --root "$SNAP" "$T/snap"
expect_rc $rc 0 "second restore"
run apply "$T/new2" "$T/s3"
expect_eq "$(cat "$T/out")" "$(cat "$T/new.roots")" "30 blocks on two restores"
run rollback "$T/db" "$H"
if [ $rc -eq 0 ]; then
  run apply "$T/db" "$T/s3"
  expect_eq "$(cat "$T/out")" "$(cat "$T/new.roots")" "30 blocks on the source and the restore"
else
  ok # H is outside the source's rollback window: nothing to compare
fi

# A restore killed (SIGKILL) part-way, at several points, then run again: completes with the
# snapshot's root.
for delay in 0.05 0.2 0.5; do
  rm -rf "$T/killed"
  "$Q" restore "$T/killed" --root "$SNAP" "$T/snap" > /dev/null 2>&1 &
  KPID=$!
  sleep $delay
  kill -9 $KPID 2> /dev/null
  wait $KPID 2> /dev/null
  run restore "$T/killed" --root "$SNAP" "$T/snap"
  if [ $rc -eq 2 ] && [ -f "$T/killed/META" ]; then
    ok # the first run had finished before the kill
  else
    expect_rc $rc 0 "restore after a SIGKILL at ${delay}s"
  fi
  run root "$T/killed"
  expect_eq "$(cat "$T/out")" "$SNAP" "root after a killed restore (${delay}s)"
done

# An earlier height (default history window): its snapshot restores to that height's root.
run init "$T/db3"
run apply "$T/db3" "$T/s1"
run snapshot "$T/db3" "$T/snap15" --height 15
expect_rc $rc 0 "snapshot --height 15"
S15=$(cat "$T/out")
run root "$T/db3" --height 15
expect_eq "$S15" "$(cat "$T/out")" "snapshot --height 15 names the root of 15"
run restore "$T/new15" --root "$S15" --height 15 "$T/snap15"
expect_rc $rc 0 "restore of height 15"
expect_eq "$(cat "$T/out")" "$S15" "restored height 15"
run snapshot "$T/db3" "$T/snap99" --height 99
expect_rc $rc 1 "snapshot above the latest height"

echo "test_sync_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
