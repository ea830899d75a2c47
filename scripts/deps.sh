#!/bin/sh
# deps.sh -- installs the Debian 12 packages qmdb needs to build, test and benchmark.
# Idempotent: packages already present are left alone. Run as root (or with sudo).
set -eu
PKGS="build-essential cmake ninja-build pkg-config liburing-dev libssl-dev librocksdb-dev liblmdb-dev clang-format gnuplot-nox jq"
# The bindings' tests (scripts/test_embed.sh): Go (cgo), the man page check (man-db, groff).
PKGS="$PKGS golang-go man-db groff-base"
# Python and Rust: a toolchain already on PATH (pyenv, rustup) is used as it is.
command -v python3 >/dev/null 2>&1 || PKGS="$PKGS python3"
command -v cargo >/dev/null 2>&1 || PKGS="$PKGS cargo"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "deps.sh: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "deps.sh: installing:$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
