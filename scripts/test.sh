#!/bin/sh
# test.sh -- the README's test command: installs dependencies, builds the `dev` preset
# (Debug, ASan + UBSan, -Werror) and runs every CTest test, then builds the `tsan` preset
# (ThreadSanitizer) and runs the threaded tests there (worker pool, API, block pipeline,
# randomized model with the pipeline on). Between the two, scripts/test_embed.sh installs a
# non-sanitized build into a prefix and runs the examples and the Rust, Go and
# Python bindings' tests against it. Used by .ci/run unchanged.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset dev
cmake --build --preset dev
ctest --preset dev
scripts/test_embed.sh
cmake --preset tsan
cmake --build --preset tsan --target test_pool test_db test_pipeline test_model_random
ctest --preset tsan
