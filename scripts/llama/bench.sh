# llama.sh steps: speed and memory: llama-bench rounds, total device memory, speculative decoding,
#   bench     llama-bench BENCH_TESTS ("-p 0 -n 128") -fa 1 on BENCH_MODELS (1b-q8_0), KV BENCH_KV
#             ("f16 q8_0"), depths BENCH_DEPTHS ("0,4096,32768"); BENCH_ROUNDS (8) rounds of BENCH_REPS
#             (3) repetitions, configurations interleaved, each round starting one further along.
#             BENCH_ROTATE=1: a round is one process whose contexts take the configurations in turn
#             (GGML_CUDA_POOL_ROTATE), split into the configurations' rounds by results.py split
#   memory    peak total device memory (nvidia-smi every 50 ms) while llama-bench pp512+tg32 runs on
#             MEMORY_MODEL (8b-q8_0), KV q8_0, at MEMORY_DEPTHS ("0 8192 32768"), per MEMORY_CONFIGS
#   speculative  llama-speculative-simple, 1b-f16 target + 1b-q8_0 draft: SPEC_ROUNDS (6) rounds of
#             SPEC_TOKENS (192), the text per configuration and t/s
#   pairs     the time inside the pools per alloc+free pair (the statistics lines' call_ms over
#             allocs): graphs-off llama-bench (GGML_CUDA_DISABLE_GRAPHS=1, so every token's graph calls
#             the pool) tg128 -fa 1 on PAIRS_MODEL (1b-q8_0), PAIRS_ROUNDS (3) rounds of 3 repetitions,
#             PAIRS_CONFIGS ("ggml vmm legacy plain async async:declared") interleaved as bench's are;
#             pairs-CONFIG-rR.{jsonl,stats,log}
#   trace     the pool calls of a llama-bench depth sweep (GGML_CUDA_POOL_TRACE), for pool-replay
#   summary   the tables (scripts/results.py summary)
# the trace for pool-replay, the summary (sourced)

# llama-bench, configurations interleaved round by round: each round runs every configuration
# once (BENCH_REPS repetitions each); every run appends its JSONL and its pools' statistics.
# BENCH_ROTATE=1: a round is one process, its contexts taking the configurations in turn
# (GGML_CUDA_POOL_ROTATE), every depth once per configuration; `scripts/results.py split` then
# leaves each configuration the files a process of its own would have
step_bench() {
    local rounds=${BENCH_ROUNDS:-8} reps=${BENCH_REPS:-3} depths=${BENCH_DEPTHS:-0,4096,32768}
    for r in $(seq 1 "$rounds"); do
        for m in ${BENCH_MODELS:-1b-q8_0}; do
            for kv in ${BENCH_KV:-f16 q8_0}; do
                if [ "${BENCH_ROTATE:-0}" = 1 ]; then
                    bench_rotated "$r" "$m" "$kv" "$reps" "$depths" || return 0
                    continue
                fi
                for c in $(round_order "$r"); do
                    local tag="bench-$m-$kv-$(tag_of "$c")-r$r"
                    [ -s "$RESULTS/$tag.jsonl" ] && continue
                    past_deadline "round $r ($m KV $kv $c)" && return 0
                    bench_run "$RESULTS/$tag" "$m" "$kv" "$reps" "$depths" $(pool_env "$c")
                    say "bench round $r: $m KV $kv $c: $(grep -c . "$RESULTS/$tag.jsonl" 2>/dev/null || echo FAILED) tests"
                done
            done
        done
    done
}

# one llama-bench run into $1.jsonl (whole, or not there), .stats and .log: model $2, KV $3, $4
# repetitions, depths $5, the rest the run's environment
bench_run() {
    local base=$1 m=$2 kv=$3 reps=$4 depths=$5
    shift 5
    env "$@" CUDA_VISIBLE_DEVICES=$GPU GGML_CUDA_POOL_STATS="$base.stats" "$BIN/llama-bench" -m "$MODELS/$m.gguf" \
        ${BENCH_TESTS:--p 0 -n 128} -fa 1 -ctk "$kv" -ctv "$kv" -d "$depths" -r "$reps" -o jsonl \
        >"$base.part" 2>"$base.log" && mv "$base.part" "$base.jsonl"
}

# one rotating round (see step_bench); returns 1 at the deadline. The depths vary fastest: context
# k runs depth k mod D for configuration k mod C, so with D and C sharing no factor every
# configuration runs every depth once, and no context follows one of its own depth (llama-bench
# would reuse that one's prefill instead of running its own)
bench_rotated() {
    local r=$1 m=$2 kv=$3 reps=$4 depths=$5 c n=0 each=()
    local prefix="bench-$m-$kv" dir="$RESULTS/rotate" configs=($CONFIGS) ds=(${depths//,/ })
    for c in $CONFIGS; do
        [[ $c == *:* ]] && die "bench: BENCH_ROTATE takes configurations without ':' ($c): one process has one KV placement"
        [ -s "$RESULTS/$prefix-$c-r$r.jsonl" ] || n=$((n + 1))
    done
    [ "$n" -eq 0 ] && return 0
    local a=${#ds[@]} b=${#configs[@]} t
    while [ "$b" -ne 0 ]; do t=$((a % b)); a=$b; b=$t; done
    [ "$a" -eq 1 ] || die "bench: BENCH_ROTATE needs the numbers of depths (${#ds[@]}) and configurations (${#configs[@]}) to share no factor"
    past_deadline "round $r ($m KV $kv, rotating)" && return 1
    for c in $CONFIGS; do each+=("${ds[@]}"); done
    mkdir -p "$dir"
    rm -f "$dir/$prefix-r$r.stats" "$dir/$prefix-r$r.jsonl"
    # the rotation replaces GGML_CUDA_POOL, which the module would still read
    if bench_run "$dir/$prefix-r$r" "$m" "$kv" "$reps" "$(IFS=,; echo "${each[*]}")" -u GGML_CUDA_POOL \
        -u GGML_CUDA_POOL_KV_F16 GGML_CUDA_POOL_ROTATE="$(round_order "$r" | paste -sd,)" &&
        python3 "$ROOT/scripts/results.py" split "$RESULTS" "$prefix" "$r" >>"$dir/$prefix-r$r.log" 2>&1; then
        say "bench round $r: $m KV $kv, rotating: $(grep -c . "$dir/$prefix-r$r.jsonl") tests"
    else
        say "bench round $r: $m KV $kv, rotating: FAILED ($(tail -1 "$dir/$prefix-r$r.log"))"
    fi
}

step_pairs() {
    local CONFIGS=${PAIRS_CONFIGS:-ggml vmm legacy plain async async:declared} m=${PAIRS_MODEL:-1b-q8_0} r c
    for r in $(seq 1 "${PAIRS_ROUNDS:-3}"); do
        for c in $(round_order "$r"); do # round_order reads the CONFIGS above
            local tag="pairs-$(tag_of "$c")-r$r"
            [ -s "$RESULTS/$tag.jsonl" ] && continue
            past_deadline "pairs round $r ($c)" && return 0
            BENCH_TESTS="-p 0 -n 128" bench_run "$RESULTS/$tag" "$m" f16 3 0 $(pool_env "$c") GGML_CUDA_DISABLE_GRAPHS=1
            say "pairs round $r: $c: $([ -s "$RESULTS/$tag.jsonl" ] && echo done || echo FAILED)"
        done
    done
}

# peak total device memory per configuration: nvidia-smi samples memory.used every 50 ms while
# one llama-bench run (pp512 + tg32 at one depth) is the only process on the GPU; the peak less
# what was used before it started is the run's. llama.cpp's buffer lines come from -v.
step_memory() {
    local model=${MEMORY_MODEL:-8b-q8_0}
    for d in ${MEMORY_DEPTHS:-0 8192 32768}; do
        for c in ${MEMORY_CONFIGS:-$CONFIGS ggml-legacy legacy:kvpool}; do
            local tag="memory-$model-d$d-$(tag_of "$c")"
            [ -s "$RESULTS/$tag.txt" ] && continue
            local idle peak rc
            idle=$(gpu_mib used)
            sample_start "$RESULTS/$tag.smi"
            env $(pool_env "$c") CUDA_VISIBLE_DEVICES=$GPU GGML_CUDA_POOL_STATS="$RESULTS/$tag.stats" \
                "$BIN/llama-bench" -m "$MODELS/$model.gguf" -p 512 -n 32 -fa 1 -ctk q8_0 -ctv q8_0 -d "$d" -r 1 -v \
                -o jsonl >"$RESULTS/$tag.jsonl" 2>"$RESULTS/$tag.log"
            rc=$?
            sleep 0.2
            stop_bg "$SAMPLER"
            peak=$(peak_of "$RESULTS/$tag.smi")
            { echo "config $c depth $d exit $rc idle_mib $idle peak_mib $peak"
              grep -aE 'buffer size' "$RESULTS/$tag.log" | sed 's/^.*llama_[a-z_]*: *//' | sort | uniq -c; } >"$RESULTS/$tag.txt"
            say "memory: $model depth $d $c: peak $((peak - idle)) MiB above idle, exit $rc"
        done
    done
}

# speculative decoding: a target and a draft context in one process, graphs on; the text must be
# the same for every configuration, the t/s are compared round by round
step_speculative() {
    local rounds=${SPEC_ROUNDS:-6} tokens=${SPEC_TOKENS:-192}
    for r in $(seq 1 "$rounds"); do
        local left=0
        for c in $CONFIGS; do [ -s "$RESULTS/spec-$(tag_of "$c")-r$r.log" ] || left=1; done
        # a round runs whole or not at all: its configurations pair only with each other
        [ "$left" -eq 1 ] && past_deadline "speculative round $r" && return 0
        for c in $(round_order "$r"); do
            local tag="spec-$(tag_of "$c")-r$r"
            [ -s "$RESULTS/$tag.log" ] && continue
            env $(pool_env "$c") CUDA_VISIBLE_DEVICES=$GPU GGML_CUDA_POOL_STATS="$RESULTS/$tag.stats" \
                "$BIN/llama-speculative-simple" --spec-type draft-simple -m "$MODELS/1b-f16.gguf" -md "$MODELS/1b-q8_0.gguf" -p "$PROMPT" \
                -n "$tokens" --temp 0 --seed 1 --ignore-eos -ngl 99 -ngld 99 -fa on -c 4096 \
                >"$RESULTS/$tag.txt" 2>"$RESULTS/$tag.log"
            say "speculative round $r: $c: exit $? $(grep -ao 'decoded.*' "$RESULTS/$tag.log" | head -1)"
        done
    done
}

# the pool calls of a llama-bench depth sweep, for pool-replay (docs/trace-and-replay.md); the
# requests ggml makes do not depend on the pool kind, so one trace serves every kind and policy
step_trace() {
    for kv in ${BENCH_KV:-f16 q8_0}; do
        local tag="trace-1b-f16-$kv"
        [ -s "$RESULTS/$tag.trace" ] && continue
        env GGML_CUDA_POOL=legacy CUDA_VISIBLE_DEVICES=$GPU GGML_CUDA_POOL_TRACE="$RESULTS/$tag.part" \
            "$BIN/llama-bench" -m "$MODELS/1b-f16.gguf" \
            ${BENCH_TESTS:--p 512 -n 128} -fa 1 -ctk "$kv" -ctv "$kv" -d "${BENCH_DEPTHS:-0,8192,32768}" -r 1 -o jsonl \
            >"$RESULTS/$tag.jsonl" 2>"$RESULTS/$tag.log" && mv "$RESULTS/$tag.part" "$RESULTS/$tag.trace"
        say "trace: KV $kv, $(grep -c . "$RESULTS/$tag.trace" 2>/dev/null || echo FAILED) lines"
    done
}

step_summary() {
    python3 "$ROOT/scripts/results.py" summary "$RESULTS" | tee "$RESULTS/summary.md"
}
