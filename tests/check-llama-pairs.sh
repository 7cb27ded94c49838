#!/usr/bin/env bash
# scripts/llama.sh pairs with a stand-in llama-bench that writes one statistics line per run (its
# time per pair set by the configuration) and records its environment: every configuration runs
# once a round, graphs off, the declared one with its captures declared, each round starting one
# further along; the summary's table gives each round's figure and the ratio to ggml's, without
# the first call too; a rerun runs nothing.
#   check-llama-pairs.sh PATH/TO/llama.sh
set -u
llama_sh=$1
results_py=$(dirname "$llama_sh")/results.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/bin"
cat >"$work/build/bin/llama-bench" <<'STUB'
#!/usr/bin/env bash
echo "${GGML_CUDA_POOL}${GGML_CUDA_POOL_CAPTURES:+:$GGML_CUDA_POOL_CAPTURES} graphs_off=${GGML_CUDA_DISABLE_GRAPHS:-0} $*" >>"$LLAMA_WORK/runs"
case $GGML_CUDA_POOL in ggml) ms=0.100 ;; vmm) ms=0.090 ;; *) ms=0.200 ;; esac
echo "ggml-cuda-pool stats: context=1 device=0 slot=0 pool=$GGML_CUDA_POOL allocs=1001 call_ms=$ms first_call_ms=0.000" >>"$GGML_CUDA_POOL_STATS"
echo '{"avg_ts": 500}'
STUB
chmod +x "$work/build/bin/llama-bench"
failed=0
check() { # CONDITION-STATUS WHAT
    if [ "$1" -eq 0 ]; then echo "ok   $2"; else echo "FAIL $2"; failed=1; fi
}
out=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build PAIRS_ROUNDS=2 bash "$llama_sh" pairs 2>&1)
runs=$(cat "$work/runs" 2>/dev/null)
[ "$(grep -c . <<<"$runs")" -eq 12 ]
check $? "six configurations, two rounds: 12 runs"
! grep -qv "graphs_off=1" <<<"$runs"
check $? "every run with CUDA graphs off"
grep -q "^async:declared " <<<"$runs" && [ "$(grep -c "^async " <<<"$runs")" -eq 2 ]
check $? "async queried and async declared, apart"
[ "$(sed -n 1p <<<"$runs" | cut -d' ' -f1)" = ggml ] && [ "$(sed -n 7p <<<"$runs" | cut -d' ' -f1)" = vmm ]
check $? "round 1 starts with ggml, round 2 one further along"
grep -q -- "-n 128" <<<"$runs" && grep -q -- "-p 0" <<<"$runs"
check $? "tg128 alone"
tables=$(python3 "$results_py" summary "$work/results" 2>&1)
for want in "\| graphs-off llama-bench \| ggml \| 2 \| 100 / 100 \| 100 \| 1.00x \| 1.00x \|" \
    "\| graphs-off llama-bench \| vmm \| 2 \| 90 / 90 \| 90 \| 0.90x \| 0.90x \|" \
    "\| graphs-off llama-bench \| async-declared \| 2 \| 200 / 200 \| 200 \| 2.00x \| 2.00x \|"; do
    grep -qE "$want" <<<"$tables"
    check $? "summary: $want"
done
again=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build PAIRS_ROUNDS=2 bash "$llama_sh" pairs 2>&1)
[ "$(grep -c . "$work/runs")" -eq 12 ]
check $? "a rerun runs nothing"
[ "$failed" -eq 0 ] || { echo "$out"; echo "$tables"; }
exit $failed
