#!/bin/bash
# test_cli_reliability.sh QMDB VECTORS_DIR -- the `qmdb` tool on damaged and read-only
# databases: read-only commands work on a read-only file system and in a directory the user
# cannot write, and change no file; a wiped or truncated newest META slot is refused (exit 3,
# naming META) instead of silently opening the previous height; `check` reports it;
# `--salvage` opens the older height only when asked, and a writing command repairs META.
set -u
Q=$1
V=$2
T=$(mktemp -d /tmp/qmdb-clirel-XXXXXX)
MNT=""
cleanup() {
  [ -n "$MNT" ] && umount "$MNT" 2> /dev/null
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
# A listing of every file with its size, mode, mtime and content hash.
snapshot() { (cd "$1" && find . -type f -printf '%p %s %m %T@\n' | sort && find . -type f -exec sha256sum {} + | sort); }

D="$T/db"
"$Q" init "$D" > /dev/null || bad "init"
"$Q" apply "$D" "$V/example.ops" > "$T/roots" || bad "apply example.ops"
H=$(tail -1 "$T/roots" | cut -d' ' -f1)
RH=$(tail -1 "$T/roots")                 # "<height> <root>", as `qmdb root` prints it
RPREV=$("$Q" root "$D" --height $((H - 1)))

# Runs every read-only command on directory $1 (as "$2..." if given), and checks answers.
read_only_commands() {
  local d=$1
  shift
  expect_eq "$("$@" "$Q" root "$d" 2> "$T/err")" "$RH" "root ($*)" || cat "$T/err" >&2
  "$@" "$Q" get "$d" alice --str > /dev/null 2> "$T/err"
  expect_rc $? 0 "get ($*)"
  "$@" "$Q" stat "$d" > /dev/null 2> "$T/err"
  expect_rc $? 0 "stat ($*)"
  "$@" "$Q" check "$d" > /dev/null 2> "$T/err"
  expect_rc $? 0 "check ($*)"
  "$@" "$Q" prove "$d" alice --str -o /dev/null > /dev/null 2> "$T/err"
  expect_rc $? 0 "prove ($*)"
  grep -q . "$T/err" && { echo "stderr ($*):" >&2; cat "$T/err" >&2; }
}

before=$(snapshot "$D")
# 1. A read-only file system (a read-only bind mount; needs root and mount).
if [ "$(id -u)" -eq 0 ] && mkdir -p "$T/mnt" && mount --bind "$D" "$T/mnt" 2> /dev/null; then
  MNT="$T/mnt"
  if mount -o remount,bind,ro "$T/mnt" 2> /dev/null && ! touch "$T/mnt/x" 2> /dev/null; then
    read_only_commands "$T/mnt"
  else
    echo "skip: cannot make a read-only bind mount" >&2
    skipped=$((skipped + 1))
  fi
  umount "$T/mnt"
  MNT=""
else
  echo "skip: read-only file system (needs root and mount)" >&2
  skipped=$((skipped + 1))
fi
# 2. A directory the user cannot write.
chmod 755 "$T"
chmod -R a+rX,a-w "$D"
if [ "$(id -u)" -eq 0 ]; then
  if setpriv --reuid=65534 --regid=65534 --clear-groups true 2> /dev/null &&
    setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$Q"; then
    read_only_commands "$D" setpriv --reuid=65534 --regid=65534 --clear-groups
  else
    echo "skip: cannot run as an unprivileged user" >&2
    skipped=$((skipped + 1))
  fi
else
  read_only_commands "$D"
fi
chmod -R u+w "$D"
expect_eq "$(snapshot "$D")" "$before" "read-only commands changed no file"
[ -e "$D/LOCK" ] && bad "a LOCK file was created"

# 3. META damage. Wiping either slot, or truncating slot 1 away, is refused.
cp "$D/META" "$T/META.save"
for off in 0 4096 trunc; do
  if [ "$off" = trunc ]; then
    truncate -s 4096 "$D/META"
  else
    dd if=/dev/zero of="$D/META" bs=4096 seek=$((off / 4096)) count=1 conv=notrunc status=none
  fi
  "$Q" root "$D" > "$T/out" 2> "$T/err"
  expect_rc $? 3 "root with META slot $off wiped"
  grep -q "META" "$T/err" && grep -q "offset" "$T/err" && ok ||
    { bad "message names META and the offset ($off)"; cat "$T/err" >&2; }
  [ -s "$T/out" ] && bad "root printed a root with META slot $off wiped"
  "$Q" check "$D" > "$T/out" 2>&1
  expect_rc $? 3 "check with META slot $off wiped"
  grep -q "META" "$T/out" && ok || { bad "check names META ($off)"; cat "$T/out" >&2; }
  # The one-byte-per-key script that would fork the chain at the lost height is refused.
  printf 'block %d\nput 7a7a 01\ncommit\n' "$H" | "$Q" apply "$D" - > /dev/null 2>&1
  expect_rc $? 3 "apply over a damaged META ($off)"
  cp "$T/META.save" "$D/META"
done
expect_eq "$("$Q" root "$D")" "$RH" "intact again"
# Salvage: wipe the slot holding the newest record; --salvage opens H-1 read-only (changing
# nothing), and a writing command repairs META so plain opens work again.
newest=""
for off in 0 4096; do
  dd if=/dev/zero of="$D/META" bs=4096 seek=$((off / 4096)) count=1 conv=notrunc status=none
  r=$("$Q" --salvage root "$D" 2> /dev/null)
  if [ "$r" == "$RPREV" ]; then newest=$off; break; fi
  cp "$T/META.save" "$D/META"
done
[ -n "$newest" ] && ok || bad "--salvage never opened height $((H - 1))"
"$Q" root "$D" > /dev/null 2>&1
expect_rc $? 3 "--salvage root repaired nothing"
printf 'block %d\nput 7a7a 01\ncommit\n' "$H" | "$Q" --salvage apply "$D" - > "$T/out" 2> "$T/err"
expect_rc $? 0 "--salvage apply"
"$Q" root "$D" > /dev/null 2> "$T/err"
expect_rc $? 0 "plain open after the salvage repaired META"
"$Q" check "$D" > /dev/null 2>&1
expect_rc $? 0 "check after the salvage"

echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
