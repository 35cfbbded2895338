#!/usr/bin/env bash
# Installs dependencies, builds bitarc with ASan+UBSan and warnings as errors,
# and runs the whole test suite (unit, differential, end-to-end, fuzz-corpus
# replays). When nvcc is present the CUDA module is compiled too.
# Usage: scripts/test.sh [extra ctest args]   (BUILD_DIR=... to choose the folder)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
BUILD_DIR=${BUILD_DIR:-build-test}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Debug -DBA_SANITIZE=ON -DBA_WERROR=ON \
  -DBA_BUILD_TESTS=ON >"$BUILD_DIR.configure.log" 2>&1 || { cat "$BUILD_DIR.configure.log"; exit 1; }
cmake --build "$BUILD_DIR" -j"$jobs"
cd "$BUILD_DIR"
ctest --output-on-failure -j"$jobs" "$@"
