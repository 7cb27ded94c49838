#!/usr/bin/env bash
# Remakes README's trace-and-replay reports and figures from the demo on the sim driver: records
# the demo's trace (the legacy kind, K/V conversions asking for OVERALLOCATE), replays it against
# every configuration at the demo's 700 MiB and at the capacity its peak request fills to 95%,
# and draws reserved against live over time (docs/figures/demo-*-overview.png; every
# configuration's own PNG stays in the build directory). Then the same for a llama.cpp depth
# sweep recorded on an H200 (docs/traces, KV q8_0), each kind with and without the headroom rule
# (docs/figures/llama-q8_0-overview.png).
#   scripts/figures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_packages cmake ninja-build g++ python3-matplotlib

BUILD_DIR=${BUILD_DIR:-build-run}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CPOOL_TESTS=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target pool-demo pool-replay >/dev/null

trace=$BUILD_DIR/demo.trace
echo "\$ GGML_CUDA_POOL_TRACE=$trace pool-demo --driver sim --kinds legacy --overallocate 1"
GGML_CUDA_POOL_TRACE=$trace "$BUILD_DIR/tools/pool-demo" --driver sim --kinds legacy --overallocate 1
mkdir -p docs/figures
for run in "700:700mib:700 MiB, the demo's own" "0.95:95pct:the peak request fills 95% of it"; do
    IFS=: read -r capacity suffix what <<<"$run"
    name=demo-$suffix
    echo
    echo "\$ pool-replay $trace --configs all --capacity $capacity --perfetto $name.json"
    "$BUILD_DIR/tools/pool-replay" "$trace" --configs all --capacity "$capacity" --perfetto "$BUILD_DIR/$name.json"
    scripts/plot.py "$BUILD_DIR/$name.json" "$BUILD_DIR/figures" \
        --title "the demo's trace replayed on the sim driver; device capacity: $what" >/dev/null
    cp "$BUILD_DIR/figures/$name-overview.png" docs/figures/
done

# the llama.cpp trace: every pool stays far from the device's capacity
trace=$BUILD_DIR/llama-1b-f16-q8_0.trace
xz -dc docs/traces/llama-1b-f16-q8_0.trace.xz >"$trace"
configs=legacy,legacy-keep,legacy-1x-keep,plain,vmm,vmm-1x,async,async-keep
echo
echo "\$ pool-replay $trace --configs $configs --capacity 8192 --perfetto llama-q8_0.json"
"$BUILD_DIR/tools/pool-replay" "$trace" --configs "$configs" --capacity 8192 --perfetto "$BUILD_DIR/llama-q8_0.json"
scripts/plot.py "$BUILD_DIR/llama-q8_0.json" "$BUILD_DIR/figures" \
    --title "llama.cpp 1B, KV q8_0, pp512/tg128 at depths 0, 8192, 32768 (H200 trace) replayed on the sim driver" >/dev/null
cp "$BUILD_DIR/figures/llama-q8_0-overview.png" docs/figures/
