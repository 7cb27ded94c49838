#!/usr/bin/env bash
# The test command: installs what is missing (Debian), configures, builds and runs every ctest
# label that this machine can run. GPU tests report SKIPPED with the reason where no GPU is seen.
#   scripts/test.sh                      # build/ , labels unit and gpu
#   BUILD_DIR=build-x scripts/test.sh -DGGML_CPOOL_SANITIZE=address,undefined
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

need_packages cmake ninja-build g++ libgtest-dev libgmock-dev pkg-config

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
cd "$BUILD_DIR"
ctest --output-on-failure -j "$(nproc)" ${CTEST_ARGS:-}
