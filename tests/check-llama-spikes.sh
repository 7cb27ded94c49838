#!/usr/bin/env bash
# scripts/llama.sh spikes with the stand-ins of tests/standins (llama-server, whose module pools
# here wait for the co-tenant to go, and hold-memory), short spikes over a short soak: both cases
# run for each configuration, ggml's server dies in the spikes with requests lost, legacy's lives
# and serves requests late, the calm runs fail nothing, and the summary prints the rows.
#   check-llama-spikes.sh PATH/TO/llama.sh
. "$(dirname "$0")/standins/check.sh"
# spikes of 0.3-2 s under a wait of 1 s: some outlast it
run() {
    LLAMA_WORK=$work LLAMA_BUILD=$work/build SPIKES_CONFIGS="ggml legacy" SERVE_PORT=$port SERVE_PARALLEL=2 \
        SPIKES_S=6 SPIKES_ARGS="--gap 0.5,1 --length 0.3,2" GGML_CUDA_POOL_WAIT_MS=1000 \
        STANDIN_COTENANT_REFUSES=1 STANDIN_COMPUTE_S=0.05 timeout 120 bash "$llama_sh" spikes 2>&1
}
out=$(run)
for c in ggml legacy; do
    expect "$out" "spikes: $c calm: .*\"soak\": \{\"completed\": [1-9][0-9]*, \"error\": 0, \"lost\": 0.*\"alive_after\": true" \
        "$c calm: every request completed"
done
expect "$out" 'spikes: ggml spikes: .*"soak": \{"completed": [0-9]+, "error": 0, "lost": [1-9].*"alive_after": false' \
    "ggml in the spikes: the server dies, requests lost"
expect "$out" 'spikes: legacy spikes: .*"soak": \{"completed": [1-9][0-9]*, "error": [0-9]+, "lost": 0.*"alive_after": true' \
    "legacy in the spikes: the server lives, nothing lost"
[ -s "$work/results/soak-spikes.jsonl" ] && [ ! -e "$work/held" ] && echo "ok   spikes ran, none outlives the step" ||
    { echo "FAIL no spike ran, or the co-tenant outlived the step"; failed=1; }
tables=$(python3 "$results_py" summary "$work/results" 2>&1)
for want in "\| ggml \| calm \| ([0-9]+) \| \1 \| 0 \| 0 / 0 \| 0 \| alive \| [0-9.]+ / [0-9.]+ \| - \|" \
    "\| legacy \| calm \| ([0-9]+) \| \1 \| 0 \| 0 / 0 \| 0 \| alive \| [0-9.]+ / [0-9.]+ \| - \|" \
    "\| ggml \| spikes \| [0-9]+ \| [0-9]+ \| [0-9]+ \| 0 / 0 \| [1-9][0-9]* \| \*\*dead\*\* \|" \
    "\| legacy \| spikes \| [0-9]+ \| [0-9]+ \| [1-9][0-9]* \| [0-9]+ / 0 \| 0 \| alive \| [0-9.]+ / [0-9.]+ \| [0-9.]+x / [0-9.]+x \|"; do
    expect "$tables" "$want" "summary: $want"
done
# a rerun skips what finished
again=$(run)
grep -q "spikes: " <<<"$again" && { echo "FAIL a rerun ran again: $again"; failed=1; } || echo "ok   a rerun skips finished cases"
[ "$failed" -eq 0 ] || { echo "$out"; echo "$tables"; cat "$work/results/soak-spikes.jsonl"; }
exit $failed
