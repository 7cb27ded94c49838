#!/usr/bin/env bash
# On a CUDA machine: builds for the local GPU, runs every ctest label (gpu included), then the
# same suites and the demo under compute-sanitizer memcheck; prints a summary table.
# Logs go to build-gpu/logs; where $OUT is set (the device runner) the summary, the benchmark's
# JSON and one file holding every log are copied there.
# Where GoogleTest or Google Benchmark is not installed, .deps/ supplies them (scripts/deps.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-gpu}
LOGS=$BUILD_DIR/logs
mkdir -p "$LOGS"
rows=()
failed=0

# step NAME COMMAND...: runs it, logs it, records a summary row
step() {
    local name=$1
    shift
    local t0=$SECONDS
    "$@" >"$LOGS/$name.log" 2>&1
    local rc=$?
    local tests
    tests=$(grep -Eo '[0-9]+% tests passed(, [0-9]+ tests failed)? out of [0-9]+|ERROR SUMMARY: [0-9]+ errors?|\[  PASSED  \] [0-9]+ tests?|[0-9]+ of [0-9]+ configurations passed|SKIPPED: .*' \
        "$LOGS/$name.log" | tail -1)
    local skipped
    skipped=$(grep -cE '\[  SKIPPED \] .* \([0-9]+ ms\)$' "$LOGS/$name.log")
    rows+=("$(printf '%-24s %-5s %5ss  skipped %-4s %s' "$name" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" \
        $((SECONDS - t0)) "$skipped" "$tests")")
    [ $rc -eq 0 ] || failed=1
    tail -3 "$LOGS/$name.log"
    return $rc
}

# step_stream NAME PATTERN COMMAND...: a step whose log lines matching PATTERN print as they happen
step_stream() {
    local name=$1 pattern=$2
    shift 2
    step "$name" bash -c '"$@" 2>&1 | tee /dev/stderr | grep --line-buffered -E "'"$pattern"'" >&3; exit ${PIPESTATUS[0]}' _ "$@" 3>&1
}
RECLAIM='injected|LRU-style reclaim|retry succeeded|freeing all|fault sweep'

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$LOGS/gpu.txt"

deps=()
[ -d .deps/googletest ] && deps+=(-DGGML_CPOOL_GTEST_SRC="$PWD/.deps/googletest")
[ -d .deps/benchmark ] && deps+=(-DGGML_CPOOL_BENCHMARK_ROOT="$PWD/.deps/benchmark")
step configure cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGGML_CUDA=ON "${deps[@]}" "$@"
step build cmake --build "$BUILD_DIR" -j "$(nproc)" ||
    { grep -E -A6 '^FAILED|error' "$LOGS/build.log" | head -60; printf '%s\n' "${rows[@]}"; exit 1; }

T="$BUILD_DIR/tests"
step ctest-cpu ctest --test-dir "$BUILD_DIR" -LE gpu -j 8 --output-on-failure
step ctest-gpu ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure -V
# the gpu label must have run on this machine: the only skip allowed is a test that needs more GPUs
for t in test-gpu test-gpu-fault test-graphs test-multigpu; do "$T/$t"; done >"$LOGS/gpu-skips.log" 2>&1
unexpected=$(grep -A1 ': Skipped$' "$LOGS/gpu-skips.log" | grep -v -e ': Skipped$' -e '^--$' -e 'needs two devices')
if [ -n "$unexpected" ]; then
    echo "gpu tests skipped on a GPU machine: $unexpected"; failed=1
fi
echo "gpu tests skipped for want of devices: $(grep -c 'needs two devices' "$LOGS/gpu-skips.log")"
# the fault suites over the cuda driver, legacy pool (GGML_CUDA_NO_VMM=1) and VMM pool
step_stream fault-legacy "$RECLAIM" env GGML_CUDA_NO_VMM=1 GGML_CUDA_POOL_LOG=debug "$T/test-gpu-fault"
step_stream fault-vmm "$RECLAIM" env GGML_CUDA_NO_VMM=0 GGML_CUDA_POOL_LOG=debug "$T/test-gpu-fault"
# the demo with a one-shot fault injected from the environment: reclaim on a real device
step_stream demo-oneshot "$RECLAIM" env GGML_CUDA_POOL_FAULT=oneshot=64MiB GGML_CUDA_POOL_LOG=debug \
    "$BUILD_DIR/tools/pool-demo" --driver cuda --kinds legacy,plain,vmm --tokens 2048
# every executable over the cuda driver under memcheck (several GPUs: pools on two devices, peer
# access, cross-device release; skipped with the reason on one). The graph tests' negative
# controls read memory freed under a live graph on purpose, and the tests on a full device fill it
# with cudaMalloc until the driver refuses (memcheck counts every refusal as an error), so memcheck
# leaves both out.
for t in test-gpu test-gpu-fault test-graphs test-multigpu; do
    step "memcheck-$t" compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 "$T/$t" \
        --gtest_filter='-*NegativeControl*:*OnAFullDevice*'
done
grep -hE 'graph replays|negative control' "$LOGS/memcheck-test-graphs.log" 2>/dev/null
step demo "$BUILD_DIR/tools/pool-demo" --driver cuda
step memcheck-demo compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 \
    "$BUILD_DIR/tools/pool-demo" --driver cuda --tokens 512

# PyTorch with the library as its allocator (where python3 imports torch and sees the GPU; SKIPPED
# with the reason otherwise): what a refused allocation raises under each kind, a 40 GiB tensor, a
# loop that halves its chunk after an out-of-memory, the VMM reservation's cost (tests/torch-oom.py)
step torch-oom bash -c 'PYTHONPATH="$1" python3 tests/torch-oom.py; rc=$?; [ $rc -eq 77 ] || exit $rc' _ \
    "$BUILD_DIR/integrations/pytorch"
sed -n '/^config /,/^torch-oom:/p' "$LOGS/torch-oom.log"

# the warm stream-ordered pool against CUDA's default threshold (GPU_TEST_BENCH=0 leaves it out)
[ "${GPU_TEST_BENCH:-1}" = 0 ] || step bench-async "$BUILD_DIR/tools/bench-async" --benchmark_out="$LOGS/bench-async.json" --benchmark_out_format=json
grep -E '_median|Benchmark' "$LOGS/bench-async.log" 2>/dev/null

echo
echo "== summary ($(cut -d, -f1 "$LOGS/gpu.txt" | head -1)) =="
printf '%s\n' "${rows[@]}" | tee "$LOGS/summary.txt"
if [ -n "${OUT:-}" ]; then
    cp "$LOGS/summary.txt" "$OUT/"
    [ -f "$LOGS/bench-async.json" ] && cp "$LOGS/bench-async.json" "$OUT/"
    for f in "$LOGS"/*.log; do echo "=== $(basename "$f")"; cat "$f"; done >"$OUT/gpu-test.log"
fi
exit $failed
