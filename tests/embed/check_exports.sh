#!/bin/sh
# check_exports.sh LIB.so [qmdb.h] -- fails if the shared library defines a dynamic symbol
# that is not qmdb_*, or (with the header) if a QMDB_API function of the header is missing
# from it or the library exports a qmdb_ function the header does not declare.
set -eu
lib=$1
hdr=${2:-}
[ -f "$lib" ] || { echo "check_exports: no such file: $lib" >&2; exit 1; }
syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u)
[ -n "$syms" ] || { echo "check_exports: $lib exports nothing" >&2; exit 1; }
bad=$(printf '%s\n' "$syms" | grep -v '^qmdb_' || true)
if [ -n "$bad" ]; then
  echo "check_exports: $lib exports symbols outside the qmdb_ API:" >&2
  printf '  %s\n' $bad >&2
  exit 1
fi
if [ -n "$hdr" ]; then
  want=$(tr '\n' ' ' < "$hdr" | grep -o 'QMDB_API[^(;]*(' | grep -o 'qmdb_[a-z_0-9]*[ ]*($' |
         tr -d ' (' | sort -u)
  missing=$(printf '%s\n' "$want" | grep -vxF "$syms" || true)
  extra=$(printf '%s\n' "$syms" | grep -vxF "$want" || true)
  [ -z "$missing" ] || { echo "check_exports: declared but not exported: $missing" >&2; exit 1; }
  [ -z "$extra" ] || { echo "check_exports: exported but not declared: $extra" >&2; exit 1; }
fi
echo "check_exports: $(printf '%s\n' "$syms" | wc -l) symbols, all qmdb_*"
