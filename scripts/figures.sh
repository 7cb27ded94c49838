#!/usr/bin/env bash
# The one command that remakes what the docs show from files, with no GPU: builds the sim tools,
# reruns the demo's report (scripts/run.sh's, on the sim driver), records the demo's trace (the
# legacy kind, K/V conversions asking for OVERALLOCATE) and replays it against every configuration
# at the demo's 700 MiB and at the capacity its peak request fills to 95%, replays the llama.cpp
# depth sweep recorded on an H200 (docs/traces, KV q8_0) and torch_bench's training run recorded on
# an H100, runs reclaim-sim (LRU reclaim against a
# flush); keeps each report as
# docs/results/sim/NAME.txt (a replay of the trace recorded just now without what follows its
# timing), draws reserved against live over time (docs/figures/demo-*-overview.png and
# llama-q8_0-overview.png, each kind with and without the headroom rule; every configuration's own
# PNG stays in the build directory), then rewrites every generated table from docs/results
# (scripts/results.py tables).
#   scripts/figures.sh [--check]
# --check (ctest sim-tables): remakes the reports alone, from the tools in TOOLS where it is set,
# and compares each with docs/results/sim/NAME.txt, which the docs' tables print; exit 1 naming
# each that differs, with the difference. Nothing is written.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
check=
[ "${1:-}" = --check ] && check=--check

BUILD_DIR=${BUILD_DIR:-build-run}
[ -z "$check" ] && need_packages python3-matplotlib
if [ -z "${TOOLS:-}" ]; then
    need_packages cmake ninja-build g++
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CPOOL_TESTS=OFF >/dev/null
    cmake --build "$BUILD_DIR" -j "$(nproc)" --target pool-demo pool-replay reclaim-sim >/dev/null
    TOOLS=$BUILD_DIR/tools
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stale=()

# report NAME SHOWN FLAGS COMMAND...: runs COMMAND, shows "$ SHOWN" and its output and keeps them
# as docs/results/sim/NAME.txt (FLAGS: results.py sim's, --untimed or none); with --check, compares
report() {
    local name=$1 shown=$2 flags=$3 out rc=0
    shift 3
    out=$(printf '$ %s\n' "$shown"; "$@") || rc=$?
    [ -z "$check" ] && printf '%s\n\n' "$out"
    [ "$rc" -eq 0 ] || stale+=("$name (its tool exited $rc)")
    printf '%s\n' "$out" | python3 scripts/results.py sim "$name" $flags $check || stale+=("$name")
}

# draw JSON TITLE PNG: a replay's reserved against live over time, into docs/figures (not with --check)
draw() {
    [ -n "$check" ] && return 0
    scripts/plot.py "$1" "$BUILD_DIR/figures" --title "$2" >/dev/null
    mkdir -p docs/figures
    cp "$BUILD_DIR/figures/$3" docs/figures/
}

report demo "pool-demo --driver sim" "" "$TOOLS/pool-demo" --driver sim

trace=$work/demo.trace
[ -z "$check" ] && echo "\$ GGML_CUDA_POOL_TRACE=demo.trace pool-demo --driver sim --kinds legacy --overallocate 1"
GGML_CUDA_POOL_TRACE=$trace "$TOOLS/pool-demo" --driver sim --kinds legacy --overallocate 1 >/dev/null
for run in "700:700mib:700 MiB, the demo's own" "0.95:95pct:the peak request fills 95% of it"; do
    IFS=: read -r capacity suffix what <<<"$run"
    name=demo-$suffix
    report "replay-$suffix" "pool-replay demo.trace --configs all --capacity $capacity --perfetto $name.json" \
        --untimed "$TOOLS/pool-replay" "$trace" --configs all --capacity "$capacity" --perfetto "$work/$name.json"
    draw "$work/$name.json" "the demo's trace replayed on the sim driver; device capacity: $what" "$name-overview.png"
done

# the llama.cpp trace: every pool stays far from the device's capacity. The report's
# configurations and the figure's (each kind with and without the headroom rule) differ
trace=$work/llama-1b-f16-q8_0.trace
xz -dc docs/traces/llama-1b-f16-q8_0.trace.xz >"$trace"
configs=recorded,legacy,plain,vmm,async,legacy-1x,vmm-1x,legacy-keep,legacy-1x-keep,async-keep
report replay-llama "pool-replay llama-1b-f16-q8_0.trace --configs $configs --capacity 8192" "" \
    "$TOOLS/pool-replay" "$trace" --configs "$configs" --capacity 8192
if [ -z "$check" ]; then
    configs=legacy,legacy-keep,legacy-1x-keep,plain,vmm,vmm-1x,async,async-keep
    "$TOOLS/pool-replay" "$trace" --configs "$configs" --capacity 8192 --perfetto "$work/llama-q8_0.json" >/dev/null
    draw "$work/llama-q8_0.json" "llama.cpp 1B, KV q8_0, pp512/tg128 at depths 0, 8192, 32768 (H200 trace) replayed on \
the sim driver" llama-q8_0-overview.png
fi

# PyTorch: torch_bench's training run under legacy, recorded on an H100 (docs/traces), at its 79 GiB
trace=$work/torch-training-legacy.trace
xz -dc docs/traces/torch-training-legacy.trace.xz >"$trace"
report replay-torch "pool-replay torch-training-legacy.trace --configs recorded,legacy,plain,vmm --capacity 81080" "" \
    "$TOOLS/pool-replay" "$trace" --configs recorded,legacy,plain,vmm --capacity 81080

# LRU reclaim against a full flush, each row the mean of 128 seeded runs (deterministic), and the
# seed's regime it checks (reclaim-sim's exit status)
report reclaim "reclaim-sim" "" "$TOOLS/reclaim-sim"

if [ ${#stale[@]} -ne 0 ]; then
    echo "figures: ${stale[*]}: ${check:+stale; }scripts/figures.sh remakes them"
    exit 1
fi
[ -n "$check" ] && echo "figures: every report under docs/results/sim is what its tool prints" && exit 0
python3 scripts/results.py tables
