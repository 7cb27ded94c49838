#!/usr/bin/env bash
# The one command that remakes what the docs show from files, with no GPU: builds the sim tools,
# reruns the demo's report (scripts/run.sh's, on the sim driver), records the demo's trace (the
# legacy kind, K/V conversions asking for OVERALLOCATE) and replays it against every configuration
# at the demo's 700 MiB and at the capacity its peak request fills to 95%, replays the llama.cpp
# depth sweep recorded on an H200 (docs/traces, KV q8_0), runs reclaim-sim (LRU reclaim against a
# flush); keeps each report as
# docs/results/sim/NAME.txt (a replay of the trace recorded just now without what follows its
# timing), draws reserved against live over time (docs/figures/demo-*-overview.png and
# llama-q8_0-overview.png, each kind with and without the headroom rule; every configuration's own
# PNG stays in the build directory), then rewrites every generated table from docs/results
# (scripts/results.py tables).
#   scripts/figures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_packages cmake ninja-build g++ python3-matplotlib

BUILD_DIR=${BUILD_DIR:-build-run}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CPOOL_TESTS=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target pool-demo pool-replay reclaim-sim >/dev/null
tools=$BUILD_DIR/tools

# report NAME SHOWN FLAGS COMMAND...: runs COMMAND, shows "$ SHOWN" and its output and keeps them
# as docs/results/sim/NAME.txt (FLAGS: results.py sim's, --untimed or none)
report() {
    local name=$1 shown=$2 flags=$3 out
    shift 3
    out=$(printf '$ %s\n' "$shown"; "$@")
    printf '%s\n\n' "$out"
    printf '%s\n' "$out" | python3 scripts/results.py sim "$name" $flags
}

report demo "pool-demo --driver sim" "" "$tools/pool-demo" --driver sim

trace=$BUILD_DIR/demo.trace
echo "\$ GGML_CUDA_POOL_TRACE=demo.trace pool-demo --driver sim --kinds legacy --overallocate 1"
GGML_CUDA_POOL_TRACE=$trace "$tools/pool-demo" --driver sim --kinds legacy --overallocate 1 >/dev/null
mkdir -p docs/figures
for run in "700:700mib:700 MiB, the demo's own" "0.95:95pct:the peak request fills 95% of it"; do
    IFS=: read -r capacity suffix what <<<"$run"
    name=demo-$suffix
    report "replay-$suffix" "pool-replay demo.trace --configs all --capacity $capacity --perfetto $name.json" \
        --untimed "$tools/pool-replay" "$trace" --configs all --capacity "$capacity" --perfetto "$BUILD_DIR/$name.json"
    scripts/plot.py "$BUILD_DIR/$name.json" "$BUILD_DIR/figures" \
        --title "the demo's trace replayed on the sim driver; device capacity: $what" >/dev/null
    cp "$BUILD_DIR/figures/$name-overview.png" docs/figures/
done

# the llama.cpp trace: every pool stays far from the device's capacity. The report's
# configurations and the figure's (each kind with and without the headroom rule) differ
trace=$BUILD_DIR/llama-1b-f16-q8_0.trace
xz -dc docs/traces/llama-1b-f16-q8_0.trace.xz >"$trace"
configs=recorded,legacy,plain,vmm,async,legacy-1x,vmm-1x,legacy-keep,legacy-1x-keep,async-keep
report replay-llama "pool-replay llama-1b-f16-q8_0.trace --configs $configs --capacity 8192" "" \
    "$tools/pool-replay" "$trace" --configs "$configs" --capacity 8192
configs=legacy,legacy-keep,legacy-1x-keep,plain,vmm,vmm-1x,async,async-keep
"$tools/pool-replay" "$trace" --configs "$configs" --capacity 8192 --perfetto "$BUILD_DIR/llama-q8_0.json" >/dev/null
scripts/plot.py "$BUILD_DIR/llama-q8_0.json" "$BUILD_DIR/figures" \
    --title "llama.cpp 1B, KV q8_0, pp512/tg128 at depths 0, 8192, 32768 (H200 trace) replayed on the sim driver" >/dev/null
cp "$BUILD_DIR/figures/llama-q8_0-overview.png" docs/figures/

# LRU reclaim against a full flush, each row the mean of 128 seeded runs (deterministic)
report reclaim "reclaim-sim" "" "$tools/reclaim-sim"

python3 scripts/results.py tables
