#!/usr/bin/env bash
# The run command: builds the tools and runs the demo (the real GPU when one is visible, else
# the sim driver). Arguments go to the demo: scripts/run.sh --capacity 500 --kinds legacy
# The build is quiet when it succeeds; when it fails, its output is shown.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_packages cmake ninja-build g++

BUILD_DIR=${BUILD_DIR:-build-run}
mkdir -p "$BUILD_DIR"
log=$BUILD_DIR/run-build.log
if ! { cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CPOOL_TESTS=OFF &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" --target pool-demo; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "run.sh: the build failed (its output above, also in $log)" >&2
    exit 1
fi
exec "$BUILD_DIR/tools/pool-demo" "$@"
