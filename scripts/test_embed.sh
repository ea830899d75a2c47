#!/bin/sh
# test_embed.sh -- embedding test: builds the `embed` preset (Release library + tool, no
# sanitizers: an ASan libqmdb.so cannot be loaded by python, go or cargo binaries), installs it
# into build/embed/prefix, then builds and runs against that installed copy only (pkg-config,
# the CMake package, LD_LIBRARY_PATH):
#   - the export check on the installed libqmdb.so, the man pages with man -l;
#   - the C examples, built once with pkg-config (shared), once with pkg-config --static, and
#     once through find_package(qmdb) in CMake;
#   - the Rust (cargo test --offline), Go (go test, no module proxy) and Python (unittest)
#     bindings' tests, which apply ../shared/vectors/example.ops and compare every root.
# Usage: scripts/test_embed.sh [VECTORS_DIR]      (called by scripts/test.sh)
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VECTORS=$(cd "${1:-$ROOT/../shared/vectors}" && pwd)
TMP=$(mktemp -d /tmp/qmdb-embed.XXXXXX)
trap 'rm -rf "$TMP"' EXIT INT TERM
# A fixed prefix: go's build cache keeps the -L directory pkg-config gave when a package was
# first compiled, so a new temporary prefix per run would leave it linking against a removed one.
PREFIX=$ROOT/build/embed/prefix
rm -rf "$PREFIX"

step() { printf '\n== test_embed: %s\n' "$*"; }

step "build and install the embed preset into $PREFIX"
cmake --preset embed >/dev/null
cmake --build --preset embed
cmake --install build/embed --prefix "$PREFIX" >/dev/null
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
export LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export QMDB_VECTORS="$VECTORS"

step "installed files"
for f in include/qmdb.h lib/libqmdb.a lib/libqmdb.so lib/libqmdb.so.0 lib/libqmdb.so.0.1.0 \
         lib/pkgconfig/qmdb.pc lib/cmake/qmdb/qmdbConfig.cmake bin/qmdb \
         share/man/man1/qmdb.1 share/man/man3/qmdb.3; do
  [ -e "$PREFIX/$f" ] || { echo "test_embed: $f was not installed" >&2; exit 1; }
done
[ "$(readlink "$PREFIX/lib/libqmdb.so.0")" = libqmdb.so.0.1.0 ] ||
  { echo "test_embed: libqmdb.so.0 does not point at libqmdb.so.0.1.0" >&2; exit 1; }
objdump -p "$PREFIX/lib/libqmdb.so.0.1.0" | grep -q 'SONAME *libqmdb.so.0$' ||
  { echo "test_embed: wrong SONAME" >&2; exit 1; }
tests/embed/check_exports.sh "$PREFIX/lib/libqmdb.so" include/qmdb.h
tests/embed/check_man.sh "$PREFIX/share/man/man1/qmdb.1" "$PREFIX/share/man/man3/qmdb.3" include/qmdb.h
"$PREFIX/bin/qmdb" --version | grep -q "^qmdb 0.1.0" || { echo "test_embed: qmdb --version" >&2; exit 1; }

step "C examples against the installed copy (pkg-config shared and static, CMake package)"
CC=${CC:-cc}
for ex in minimal_store block_executor light_client kvbench; do
  # shellcheck disable=SC2046
  $CC -O2 -Wall -Werror examples/$ex.c $(pkg-config --cflags --libs qmdb) -o "$TMP/$ex"
  # shellcheck disable=SC2046
  # Static: libqmdb.a in place of -lqmdb, the rest (liburing, -pthread) from Libs.private.
  $CC -O2 -Wall -Werror examples/$ex.c $(pkg-config --cflags qmdb) \
      $(pkg-config --static --libs qmdb | sed "s|-lqmdb|$PREFIX/lib/libqmdb.a|") -o "$TMP/${ex}_static"
done
for ex in minimal_store block_executor light_client; do
  "$TMP/$ex" "$TMP/db_$ex" >/dev/null
  "$TMP/${ex}_static" "$TMP/dbs_$ex" >/dev/null
done
"$TMP/kvbench" "$TMP/db_kvbench" 20000
ldd "$TMP/minimal_store_static" | grep -q libqmdb && { echo "test_embed: static example loads libqmdb.so" >&2; exit 1; }
mkdir -p "$TMP/cmake-consumer"
cat > "$TMP/cmake-consumer/CMakeLists.txt" <<CMK
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(qmdb 0.1 REQUIRED)
add_executable(minimal_shared $ROOT/examples/minimal_store.c)
target_link_libraries(minimal_shared PRIVATE qmdb::qmdb)
add_executable(minimal_static $ROOT/examples/minimal_store.c)
target_link_libraries(minimal_static PRIVATE qmdb::qmdb_static)
CMK
cmake -S "$TMP/cmake-consumer" -B "$TMP/cmake-consumer/build" -G Ninja \
      -DCMAKE_PREFIX_PATH="$PREFIX" >/dev/null
cmake --build "$TMP/cmake-consumer/build" >/dev/null
"$TMP/cmake-consumer/build/minimal_shared" "$TMP/db_cm_shared" >/dev/null
"$TMP/cmake-consumer/build/minimal_static" "$TMP/db_cm_static" >/dev/null

step "Python binding (ctypes, python3 -m unittest)"
(cd bindings/python && QMDB_LIB="$PREFIX/lib/libqmdb.so.0" python3 -m unittest discover -s tests -v 2>&1 | tail -3)
(cd bindings/python && QMDB_LIB="$PREFIX/lib/libqmdb.so.0" python3 examples/example.py "$TMP/db_py_example" >/dev/null)
# The loader also finds it through pkg-config alone.
(cd bindings/python && python3 -c 'import qmdb, sys; assert qmdb.version() == sys.argv[1], qmdb.version()' \
   "$(pkg-config --modversion qmdb)")

step "Go binding (cgo, go test)"
export GOCACHE="$ROOT/build/embed/gocache"   # its own: see PREFIX above
export GOPROXY=off GOFLAGS=-mod=mod   # no third-party modules: nothing is ever downloaded
(cd bindings/go && go vet ./... && go test -count=1 ./... &&
   go run ./example "$TMP/db_go_example" >/dev/null)

step "Rust binding (cargo test --offline)"
export CARGO_TARGET_DIR="$ROOT/build/embed/cargo"
(cd bindings/rust && cargo test --offline -q)
(cd bindings/rust && cargo run --offline -q --example tour -- "$TMP/db_rs_example" >/dev/null)

step "all embedding tests passed"
