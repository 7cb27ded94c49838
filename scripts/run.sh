#!/usr/bin/env bash
# The run command: builds the demo first (Release, into BUILD_DIR, build-run by default; cmake,
# ninja and g++ installed with apt-get where missing), then runs it: the real GPU when one is
# visible, else the sim driver. Arguments go to the demo: scripts/run.sh --capacity 500 --kinds legacy
# The build is quiet when it succeeds; when it fails, its output is shown.
# --help or -h: this text, then, once built, the demo's options and their defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
    echo "usage: scripts/run.sh [demo option...]"
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" # the comment above
    echo
fi
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
