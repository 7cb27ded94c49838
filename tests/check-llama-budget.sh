#!/usr/bin/env bash
# scripts/llama.sh longctx_budget with stand-ins for nvidia-smi, hold-memory and llama-bench: each
# configuration completes when at least its own MiB stay free, so the bisection over the grid
# must find, for each, the lowest H that completes, the next lower H failing, in about log2 of the
# grid's runs; a grid none of whose H completes says so.
#   check-llama-budget.sh PATH/TO/llama.sh
set -u
llama_sh=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/bin" "$work/fake"
# the device: 1000 MiB used when idle; the workload's unconstrained run peaks 5000 MiB above it
cat >"$work/fake/nvidia-smi" <<'STUB'
#!/usr/bin/env bash
case "$*" in
    *-lms*) echo 6000 ;;
    *memory.used*) echo 1000 ;;
    *memory.total*) echo 140000 ;;
esac
STUB
cat >"$work/hold-memory" <<'STUB'
#!/usr/bin/env bash
echo "$1" >"$LLAMA_WORK/free"
echo "hold-memory: holding"
exec sleep 60
STUB
# S = 5000 - 40 (the pools' peak) = 4960; a configuration needs S + its own headroom
cat >"$work/build/bin/llama-bench" <<'STUB'
#!/usr/bin/env bash
echo "ggml-cuda-pool stats: peak_reserved_mib=40.0" >>"$GGML_CUDA_POOL_STATS"
echo run >>"$LLAMA_WORK/runs"
case "$GGML_CUDA_POOL${GGML_CUDA_POOL_KV_F16:+:$GGML_CUDA_POOL_KV_F16}" in
    ggml-legacy) need=50 ;;
    legacy:pool) need=-40 ;;
    *) need=100000 ;;
esac
free=$(cat "$LLAMA_WORK/free" 2>/dev/null || echo 999999)
[ "$free" -ge $((4960 + need)) ] || { echo "out of memory" >&2; exit 1; }
STUB
printf "#!/bin/sh\nexit 0\n" >"$work/fake/nvcc" # hold-memory is there: nothing to build
chmod +x "$work/fake/nvcc" "$work/fake/nvidia-smi" "$work/hold-memory" "$work/build/bin/llama-bench"
out=$(PATH=$work/fake:$PATH LLAMA_WORK=$work LLAMA_BUILD=$work/build LONGCTX_BUDGET_WORKLOADS=prefill \
    LONGCTX_CONFIGS="ggml-legacy legacy:kvpool vmm" LONGCTX_HEADROOM="256 128 64 32 0 -32 -64" \
    timeout 120 bash "$llama_sh" longctx_budget 2>&1)
failed=0
expect() {
    if grep -qF "$1" <<<"$out"; then
        echo "ok   $1"
    else
        echo "FAIL expected: $1"
        failed=1
    fi
}
expect "S = 4960 MiB"
expect "ggml-legacy: lowest H that completes: 64 MiB"
expect "legacy:kvpool: lowest H that completes: -32 MiB"
expect "vmm: lowest H that completes: none"
# the unconstrained run, then at most ceil(log2(8)) = 3 runs a configuration
runs=$(grep -c . "$work/runs")
if [ "$runs" -gt 10 ]; then
    echo "FAIL $runs runs, expected at most 10"
    failed=1
fi
[ "$failed" -eq 0 ] || echo "$out"
exit $failed
