#!/usr/bin/env bash
# scripts/llama.sh serve with the stand-ins of tests/standins (llama-server, hold-memory): every
# case runs, ggml's server is lost to the spike with every request after it, the module's server
# answers the window's requests with "Compute error." and completes every request after it, a
# window within the wait is served through, and the summary prints the tables.
#   check-llama-serve.sh PATH/TO/llama.sh
. "$(dirname "$0")/standins/check.sh"
out=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build SERVE_CONFIGS="ggml legacy" SERVE_PORT=$port SERVE_PER_PHASE=3 \
    SERVE_PARALLEL=2 timeout 300 bash "$llama_sh" serve 2>&1)
done_all='"before": \{"completed": 3, "error": 0, "lost": 0, "predicted": [0-9]+[^}]*\}, "during": \{"completed": 3, "error": 0, "lost": 0, "predicted": [0-9]+[^}]*\}, "after": \{"completed": 3'
expect "$out" "serve: ggml free: .*$done_all" "ggml unconstrained: every request completed"
expect "$out" "serve: legacy free: .*$done_all" "legacy unconstrained: every request completed"
expect "$out" 'serve: ggml spike: .*"during": \{"completed": 0, "error": 0, "lost": 3.*"after": \{"completed": 0, "error": 0, "lost": 3.*"alive_after": false' \
    "ggml under the spike: the server is lost with every later request"
expect "$out" "serve: legacy spike: .*$done_all.*\"alive_after\": true" "legacy under the spike: served throughout"
expect "$out" 'serve: legacy window: .*"during": \{"completed": 0, "error": 3, "lost": 0.*"after": \{"completed": 3, "error": 0, "lost": 0.*"alive_after": true.*Compute error' \
    "legacy under the fault window: its requests fail with the error, the server lives, every later request completes"
grep -q "serve: ggml window" <<<"$out" && { echo "FAIL ggml ran the window case"; failed=1; } ||
    echo "ok   no window case under ggml's pools (the fault driver is the module's)"
[ ! -e "$work/results/serve-legacy-window.window" ] && [ ! -e "$work/held" ] &&
    echo "ok   the window and the co-tenant end with their phase" || { echo "FAIL the window or the co-tenant outlived its phase"; failed=1; }
tables=$(python3 "$results_py" summary "$work/results" 2>&1)
for want in "llama-server, unconstrained" "\| legacy \| 9 of 9 \| .* \| 48 \| 40 \| 10 \| 150 \|" \
    "\| ggml \| 3 of 3 \| 0 / 0 / 3 \| \*\*dead\*\* \| 0 of 3 \| " "\| legacy \| 3 of 3 \| 0 / 3 / 0 \| alive \| 3 of 3 \|.*\| the pool, 8.00 MiB asked: out of memory with nothing cached"; do
    expect "$tables" "$want" "summary: $want"
done
# a rerun skips what finished
again=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build SERVE_CONFIGS="ggml legacy" SERVE_PORT=$port timeout 60 bash "$llama_sh" serve 2>&1)
grep -q "serve: " <<<"$again" && { echo "FAIL a rerun ran again: $again"; failed=1; } || echo "ok   a rerun skips finished runs"
# a round of the unconstrained case: its files in serve-r2/, where the pairs table reads rounds
round=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build SERVE_CONFIGS="ggml legacy" SERVE_PORT=$port SERVE_PER_PHASE=1 \
    SERVE_PARALLEL=2 SERVE_CASES=free SERVE_ROUND=2 timeout 120 bash "$llama_sh" serve 2>&1)
[ -s "$work/results/serve-r2/serve-ggml-free.stats" ] && [ -s "$work/results/serve-r2/serve-legacy-free.stats" ] &&
    [ ! -e "$work/results/serve-r2/serve-ggml-spike-h64.jsonl" ] && echo "ok   SERVE_ROUND: the round's runs in serve-r2/" ||
    { echo "FAIL SERVE_ROUND: $round"; failed=1; }
tables=$(python3 "$results_py" summary "$work/results" 2>&1)
for want in "\| llama-server \| ggml \| 1 \| 150 \| 150 \| 1.00x \|" "\| llama-server \| legacy \| 1 \| 150 \| 150 \| 1.00x \|"; do
    expect "$tables" "$want" "summary: $want"
done
grep -q "r2/" <<<"$tables" && { echo "FAIL a round's runs in the unconstrained table"; failed=1; } ||
    echo "ok   the round's runs stay out of the unconstrained table"
# stretches of fixed length, ended by time: a window of 1 s under a wait of 3 s serves every request,
# the ones in flight through it included; a co-tenant of 1 s from start-up kills ggml's server at once
timed=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build SERVE_CONFIGS="ggml legacy" SERVE_PORT=$port SERVE_PER_PHASE=3 \
    SERVE_PARALLEL=2 SERVE_CASES="window:1 spike:1:start" GGML_CUDA_POOL_WAIT_MS=3000 timeout 120 bash "$llama_sh" serve 2>&1)
expect "$timed" "serve: legacy window:1: .*$done_all.*\"alive_after\": true, .*\"stretch_s\": 1\.[0-2]" \
    "legacy through a window of 1 s within the wait: every request served; the window lasts 1 s"
expect "$timed" 'serve: legacy window:1: .*"during": \{[^}]*"met_trouble_completed": [1-3]\}' \
    "legacy through a window of 1 s: the requests in flight through it served"
expect "$timed" 'serve: ggml spike:1:start: .*"before": \{"completed": 0, "error": 0, "lost": 3.*"alive_after": false.*"stretch_from_s": 0\.' \
    "ggml under a co-tenant from start-up: lost with the first requests"
tables=$(python3 "$results_py" summary "$work/results" 2>&1)
for want in "\| fault window, 1 s mid-run \| results \| legacy \| 9 \| 9 \([1-3]\) \| 0 \| 0 \| alive \| 1\.[0-2] \| [1-3] of [1-3] \(" \
    "\| co-tenant, 64 MiB free, 1 s from start-up \| results \| ggml \| 9 \| 0 \(0\) \| 0 \| 9 \| \*\*dead\*\* \|"; do
    expect "$tables" "$want" "summary: $want"
done
[ "$failed" -eq 0 ] || { echo "$out"; echo "$timed"; echo "$tables"; }
exit $failed
