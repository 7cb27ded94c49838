# llama.sh steps: correctness: test-backend-ops, greedy generation, faults, soak, memcheck (sourced)
#   ops       test-backend-ops -b CUDA0, every op, per configuration (OPS_FILTER: -o; OPS_AT_ONCE:
#             configurations side by side over the GPUs, default all; OPS_JOBS: -j, default the
#             cores over 4 a side-by-side run; OPS_TIMEOUT seconds, 0: none)
#   complete  llama-completion, greedy, GEN_TOKENS (64) tokens: the same text for every configuration
#   faults    per module kind: a one-shot fault and a prob= fault (the same text as without), a
#             persistent one (the pool's line, llama.cpp's decode failure, exit 1), and for async one inside a
#             graph capture (the capture ends there, the rest runs eagerly, the same text)
#   soak      per module kind: SOAK_TOKENS (512) generated under random faults
#   memcheck  MEMCHECK_KINDS under compute-sanitizer memcheck with a fault spec (MEMCHECK_FAULT;
#             default 5% of the kind's allocating calls), MEMCHECK_TIMEOUT seconds a run
#   memcheck_oom  MEMCHECK_OOM_KINDS (legacy async) under memcheck, graphs off and on, while
#             computes fail: allocations refused from the second on, MEMCHECK_OOM_REFUSALS (10) in all

# test-backend-ops per configuration, OPS_AT_ONCE side by side over the GPUs. Its CPU reference
# backend runs 4 threads a worker, so the workers are sized to the cores: more would spin idle.
step_ops() {
    local n
    n=$(gpus)
    [ "$n" -ge 1 ] || die "no GPU"
    local pending=() running=() gpu=0
    for c in $CONFIGS; do
        grep -qs 'tests passed' "$RESULTS/ops-$c.txt" || pending+=("$c")
    done
    local at_once=${OPS_AT_ONCE:-${#pending[@]}}
    [ "$at_once" -ge 1 ] || return 0
    local jobs=${OPS_JOBS:-$(($(nproc) / (4 * at_once)))}
    [ "$jobs" -ge 1 ] || jobs=1
    for c in "${pending[@]}"; do
        say "test-backend-ops: $c on GPU $gpu (-j $jobs)"
        (env $(pool_env "$c") CUDA_VISIBLE_DEVICES=$gpu timeout "${OPS_TIMEOUT:-0}" "$BIN/test-backend-ops" -b CUDA0 \
            -j "$jobs" ${OPS_FILTER:+-o "$OPS_FILTER"} >"$RESULTS/ops-$c.log" 2>&1
         echo "exit $?" >>"$RESULTS/ops-$c.log"
         { grep -aE 'tests passed|backends passed|^exit' "$RESULTS/ops-$c.log"
           echo "OK $(grep -ac 'OK' "$RESULTS/ops-$c.log") FAIL $(grep -ac 'FAIL' "$RESULTS/ops-$c.log")"; } \
            >"$RESULTS/ops-$c.txt") &
        running+=($!)
        gpu=$(((gpu + 1) % n))
        if [ ${#running[@]} -ge "$at_once" ]; then
            wait "${running[0]}"
            running=("${running[@]:1}")
        fi
    done
    wait
    for c in $CONFIGS; do
        printf '%-12s %s\n' "$c" "$(tr '\n' ' ' <"$RESULTS/ops-$c.txt" 2>/dev/null)"
    done
}

# one greedy generation: completion-$tag.txt holds the text, .log the rest
generate() {
    local tag=$1 config=$2 tokens=$3
    shift 3
    env $(pool_env "$config") CUDA_VISIBLE_DEVICES=$GPU GGML_CUDA_POOL_STATS="$RESULTS/stats-$tag.txt" "$@" \
        "$BIN/llama-completion" -m "$MODELS/1b-f16.gguf" -p "$PROMPT" -n "$tokens" --temp 0 --seed 1 --ignore-eos \
        -no-cnv -ngl 99 -fa on -ctk q8_0 -ctv q8_0 -c 4096 ${GEN_ARGS:-} >"$RESULTS/completion-$tag.txt" \
        2>"$RESULTS/completion-$tag.log"
    echo $?
}

step_complete() {
    local tokens=${GEN_TOKENS:-64}
    for c in $CONFIGS; do
        [ -s "$RESULTS/completion-$c.txt" ] && continue
        rm -f "$RESULTS/stats-$c.txt"
        say "completion: $c, exit $(generate "$c" "$c" "$tokens")"
    done
    md5sum "$RESULTS"/completion-{$(echo $CONFIGS | tr ' ' ,)}.txt 2>/dev/null | sed "s|$RESULTS/||"
}

# one case of the faults step ($2) for module kind $1: its run and the pool's lines it printed
fault_run() {
    local k=$1 f=$2 tokens=$3 spec
    case $f in
        oneshot) spec="oneshot=${ONESHOT_SIZE:-100KiB}" ;;
        # the async kind's first cudaMalloc is its first allocation inside a capture: the adapter
        # ends the capture there, runs what it holds, and the rest of the graph runs eagerly
        capture) spec="fail=malloc:1" ;;
        prob) spec="prob=${FAULT_PROB:-0.2};on=$(alloc_call "$k");seed=7;limit=3" ;;
        # every allocation refused: the retries cannot help, the compute fails with the pool's
        # line and llama-completion ends with its decode failure
        persistent) spec="fail=$(alloc_call "$k"):1+" ;;
    esac
    local rc
    rc=$(GEN_ARGS="-lv 5" generate "$k-$f" "$k" "$tokens" GGML_CUDA_POOL_FAULT="$spec" GGML_CUDA_POOL_LOG=debug)
    echo "exit $rc" >>"$RESULTS/completion-$k-$f.log" # 1: llama.cpp's decode failed; 134: an abort
    say "faults: $k with $spec, exit $rc"
    grep -hE 'injected|reclaim|retry|retrying|freeing all|ggml-cuda-pool: alloc' "$RESULTS/completion-$k-$f.log" |
        head -6
}

# the module's debug lines go through ggml's logger: llama.cpp shows them at verbosity 5
step_faults() {
    local tokens=${GEN_TOKENS:-64}
    for k in $(module_kinds); do
        for f in oneshot prob persistent $(capture_fault "$k"); do
            [ -s "$RESULTS/completion-$k-$f.log" ] || fault_run "$k" "$f" "$tokens"
            # a fault the pool recovers from changes nothing the model writes
            if [ "$f" != persistent ]; then
                [ -s "$RESULTS/completion-$k.txt" ] || generate "$k" "$k" "$tokens" >/dev/null
                say "faults: $k $f: $(cmp -s "$RESULTS/completion-$k-$f.txt" "$RESULTS/completion-$k.txt" &&
                    echo "text identical to the run without faults" || echo "TEXT DIFFERS from the run without faults")"
            fi
        done
    done
    md5sum "$RESULTS"/completion-*.txt | sed "s|$RESULTS/||"
}

step_soak() {
    local tokens=${SOAK_TOKENS:-512}
    for k in $(module_kinds); do
        [ -s "$RESULTS/completion-$k-soak.log" ] && continue
        [ -s "$RESULTS/completion-$k-nofault.txt" ] || generate "$k-nofault" "$k" "$tokens" >/dev/null
        say "soak: $k, exit $(generate "$k-soak" "$k" "$tokens" \
            GGML_CUDA_POOL_FAULT="prob=0.05;on=$(alloc_call "$k");seed=11")"
        grep -hE 'ggml-cuda-pool:.*failed' "$RESULTS/completion-$k-soak.log" | head -2
    done
}

# llama-completion under compute-sanitizer memcheck: $RESULTS/$1.*, kind $2, fault spec $3, then
# further environment
memcheck_run() {
    local tag=$1 k=$2 spec=$3
    shift 3
    env $(pool_env "$k") CUDA_VISIBLE_DEVICES=$GPU GGML_CUDA_POOL_FAULT="$spec" "$@" \
        timeout "${MEMCHECK_TIMEOUT:-0}" compute-sanitizer --tool memcheck \
        --leak-check full "$BIN/llama-completion" -m "$MODELS/1b-f16.gguf" -p "$PROMPT" -n 16 --temp 0 \
        --seed 1 --ignore-eos -no-cnv -ngl 99 -fa on -ctk q8_0 -ctv q8_0 -c 1024 \
        >"$RESULTS/$tag.txt" 2>"$RESULTS/$tag.log"
    echo "exit $?" >>"$RESULTS/$tag.log"
}

step_memcheck() {
    for k in ${MEMCHECK_KINDS:-$(module_kinds)}; do
        [ -s "$RESULTS/memcheck-$k.log" ] && continue
        say "memcheck: $k"
        memcheck_run "memcheck-$k" "$k" "${MEMCHECK_FAULT:-prob=0.05;on=$(alloc_call "$k");seed=11}"
        grep -h 'ERROR SUMMARY' "$RESULTS/memcheck-$k.log"
    done
}

# memcheck over computes that fail: the kind's allocations refused from the second on, ten
# refusals in all (a few computes fail mid-graph and unwind, then the window is over), with CUDA
# graphs off and on, every run side by side
step_memcheck_oom() {
    local k g
    for k in ${MEMCHECK_OOM_KINDS:-legacy async}; do
        for g in off on; do
            local tag="memcheck-oom-$k-graphs-$g"
            [ -s "$RESULTS/$tag.log" ] && continue
            memcheck_run "$tag" "$k" "fail=$(alloc_call "$k"):2+;limit=${MEMCHECK_OOM_REFUSALS:-10}" \
                GGML_CUDA_POOL_STATS="$RESULTS/$tag.stats" $([ $g = off ] && echo GGML_CUDA_DISABLE_GRAPHS=1) &
        done
    done
    wait
    for k in ${MEMCHECK_OOM_KINDS:-legacy async}; do
        for g in off on; do
            local log="$RESULTS/memcheck-oom-$k-graphs-$g.log"
            say "memcheck_oom: $k, graphs $g: $(grep -c 'the compute fails' "$log") failed computes," \
                "$(grep -h 'ERROR SUMMARY' "$log" | tail -1), $(tail -1 "$log")"
        done
    done
}
