#!/bin/sh
# test.sh -- the README's test command: installs dependencies, builds the `dev` preset
# (Debug, ASan + UBSan, -Werror) and runs every CTest test. Used by .ci/run unchanged.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset dev
cmake --build --preset dev
ctest --preset dev
