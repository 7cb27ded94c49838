#!/usr/bin/env bash
# scripts/llama.sh speculative under BENCH_DEADLINE, with a stand-in llama-speculative-simple that
# only counts its runs: every round runs without a deadline or before it; none starts after it,
# and a round left unfinished is not resumed past it (its configurations pair only with each other).
#   check-llama-deadline.sh PATH/TO/llama.sh
set -u
llama_sh=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/bin"
cat >"$work/build/bin/llama-speculative-simple" <<'STUB'
#!/usr/bin/env bash
echo run >>"$LLAMA_WORK/runs"
echo "decoded 8 tokens" >&2
STUB
chmod +x "$work/build/bin/llama-speculative-simple"
failed=0

# case NAME DEADLINE EXPECTED_RUNS [round file made beforehand]: a fresh results folder each time
case_() {
    local name=$1 deadline=$2 expected=$3 made=${4:-}
    rm -rf "$work/results" "$work/runs"
    mkdir -p "$work/results"
    [ -n "$made" ] && echo "decoded 8 tokens" >"$work/results/$made"
    local out
    out=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build CONFIGS="ggml legacy" SPEC_ROUNDS=3 BENCH_DEADLINE=$deadline \
        bash "$llama_sh" speculative 2>&1)
    local runs
    runs=$(grep -c . "$work/runs" 2>/dev/null)
    if [ "${runs:-0}" -ne "$expected" ]; then
        echo "FAIL $name: $runs runs, expected $expected; output:"
        echo "$out"
        failed=1
    else
        echo "ok   $name: $expected runs"
    fi
}
now=$(date +%s)
case_ "no deadline" "" 6
case_ "deadline an hour ahead" $((now + 3600)) 6
case_ "deadline passed" $((now - 1)) 0
case_ "deadline passed, round 1 half done" $((now - 1)) 0 spec-ggml-r1.log
case_ "no deadline, round 1 half done" "" 5 spec-ggml-r1.log
exit $failed
