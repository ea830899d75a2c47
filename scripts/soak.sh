#!/bin/sh
# soak.sh -- the soak run (docs/RELIABILITY.md, "Soak"; not part of CI or CTest): builds the
# release preset's qmdb-soak (tests/soak/soak.c) and runs it at low CPU priority. For
# --minutes (default 30) a writer process applies mixed blocks while reader threads check
# every read; the writer is SIGKILLed every 10-60 s and restarted, alternating the memory and
# hybrid indexers, and each restart is checked against a deterministic model (heights, roots,
# values). Prints progress on stderr every 30 s and the figures at the end; exits non-zero if
# any block was lost, any root or value mismatched, or the writer's RSS grew by more than 5%.
#
#   scripts/soak.sh [--minutes N] [--dir D] [--keep] [--seed S] [other qmdb-soak options]
#
# The database is D/qmdb-soak-PID (D defaults to /tmp), deleted at the end unless --keep.
# Other options (--keys, --readers, --rate, --kill-min, --kill-max, --history, ...) are
# passed to qmdb-soak as they are; `build/release/tests/soak/qmdb-soak --help` lists them.
set -eu
cd "$(dirname "$0")/.."
cmake --preset release > /dev/null
cmake --build --preset release --target qmdb-soak > /dev/null
echo "soak.sh: commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)," \
  "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores" >&2
exec nice -n 10 build/release/tests/soak/qmdb-soak "$@"
