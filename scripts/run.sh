#!/usr/bin/env bash
# The run command: builds the tools and runs the demo (the real GPU when one is visible, else
# the sim driver). Arguments go to the demo: scripts/run.sh --capacity 500 --kinds legacy
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_packages cmake ninja-build g++

BUILD_DIR=${BUILD_DIR:-build-run}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CPOOL_TESTS=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target pool-demo >/dev/null
exec "$BUILD_DIR/tools/pool-demo" "$@"
