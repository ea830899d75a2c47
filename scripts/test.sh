#!/bin/sh
# test.sh -- the README's test command: installs dependencies, builds the `dev` preset
# (Debug at -O1, ASan + UBSan, -Werror) and runs every CTest test, then builds the `tsan` preset
# (ThreadSanitizer) and runs the threaded tests there (worker pool, API, block pipeline,
# randomized model with the pipeline on, fault injection in the concurrent configuration,
# snapshot export and restore, whose export cuts the shards on the worker pool).
# Before building, the style gates: formatting (scripts/check_format.sh) and the layer table
# (scripts/check_layers.py). Between the
# two builds, scripts/test_embed.sh installs a non-sanitized build into build/embed/prefix
# and runs the examples and the Rust, Go and Python bindings' tests against it. Used by
# .ci/run unchanged.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
# Style gates: clang-format on every C file; every #include in src/ against the layer table
# in docs/DESIGN.md.
scripts/check_format.sh
python3 scripts/check_layers.py
cmake --preset dev
cmake --build --preset dev
ctest --preset dev
scripts/test_embed.sh
cmake --preset tsan
cmake --build --preset tsan --target test_pool test_rio test_db test_pipeline test_preimage test_model_random test_fault test_sync
ctest --preset tsan
