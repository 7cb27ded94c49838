# llama.sh steps: runs under memory pressure (sourced)
#   pressure  llama-completion, PRESSURE_MODEL (8b-q8_0) into a 32k context after a prompt of
#             PRESSURE_PROMPT_REPEAT copies of the prompt, per PRESSURE_CONFIGS at H stepping down
#             (PRESSURE_HEADROOM, MiB, high to low); then each beside a co-tenant at
#             PRESSURE_COTENANT_HEADROOM (64; PRESSURE_COTENANT=0: none; the cotenant step alone).
#             PRESSURE_BASE (ggml-legacy) measures S;
#             PRESSURE_TOKENS (64), PRESSURE_ARGS; PRESSURE_MODULE_LOADING (LAZY, CUDA's default;
#             EAGER: every kernel loaded first, so none takes memory mid-run)
#   cotenant  the co-tenant case alone: COTENANT_WORKLOAD (completion; or longgen), COTENANT_CONFIGS
#             (PRESSURE_CONFIGS), COTENANT_HEADROOM (PRESSURE_COTENANT_HEADROOM)
#   growing   llama-batched-bench: prompts of GROWING_PP ("128,512,1024,2048") tokens, GROWING_TG
#             (16) generated after each, into one context; GROWING_CONFIGS, GROWING_HEADROOM, GROWING_ARGS

# memory pressure: another process (scripts/hold-memory.cu) holds the GPU's memory so that only
# S + H MiB stay free, S being what the workload needs besides its pools (model, KV cache, compute
# buffers, the CUDA context: the peak of an unconstrained PRESSURE_BASE run less its pools' peak);
# each configuration runs at H stepping down until it fails. Two workloads:
#   completion  llama-completion generates into a 32k context after a long prompt (step pressure,
#               which adds the co-tenant case: a second llama-completion, 1b-q8_0, loads, generates
#               and exits over and over beside it, with its own peak added to what stays free)
#   growing     llama-batched-bench: prompts of growing length (GROWING_PP) one after another into
#               one context, as a server sees them, so the pools' request sizes grow during the
#               run (step growing)
PRESSURE_PROMPT_REPEAT=${PRESSURE_PROMPT_REPEAT:-600} # copies of $PROMPT: about 9000 tokens of prompt
PRESSURE_CONFIGS=${PRESSURE_CONFIGS:-ggml ggml-legacy legacy plain vmm async}

# the command of a workload, into the array cmd: workload_NAME for each workload (this file's
# two; llama/longctx.sh adds its own)
pressure_common() { echo -m "$MODELS/${PRESSURE_MODEL:-8b-q8_0}.gguf" -ngl 99 -fa on -ctk q8_0 -ctv q8_0; }
workload_completion() {
    cmd=("$BIN/llama-completion" $(pressure_common) -c 32768 -f "$WORK/pressure-prompt.txt"
         -n "${PRESSURE_TOKENS:-64}" --temp 0 --seed 1 --ignore-eos -no-cnv ${PRESSURE_ARGS:-})
}
workload_growing() {
    cmd=("$BIN/llama-batched-bench" $(pressure_common) -c 32768 -npp "${GROWING_PP:-128,512,1024,2048}"
         -ntg "${GROWING_TG:-16}" -npl 1 -b 2048 -ub 2048 ${GROWING_ARGS:-})
}

# one run of a workload ($3) for configuration $2 into $RESULTS/$1.*: the caller's holder (if
# any) is in place
pressure_run() {
    local tag=$1 config=$2 workload=$3 cmd
    declare -F "workload_$workload" >/dev/null || die "unknown workload $workload"
    "workload_$workload"
    sample_start "$RESULTS/$tag.smi"
    env $(pool_env "$config") CUDA_VISIBLE_DEVICES=$GPU GGML_CUDA_POOL_STATS="$RESULTS/$tag.stats" \
        GGML_CUDA_POOL_LOG=info CUDA_MODULE_LOADING=${PRESSURE_MODULE_LOADING:-LAZY} "${cmd[@]}" \
        >"$RESULTS/$tag.txt" 2>"$RESULTS/$tag.log"
    echo "exit $?" >>"$RESULTS/$tag.log"
    stop_bg "$SAMPLER"
}

# S of a workload into $RESULTS/PREFIX-fixed.txt and FIXED (IDLE: memory.used before it): the
# unconstrained PRESSURE_BASE run's peak above idle less its pools' peak. $3: the tag of that run
# where another step made it already (default PREFIX-free, made here)
pressure_fixed() {
    local prefix=$1 workload=$2 free=${3:-$1-free} base=${PRESSURE_BASE:-ggml-legacy} total peak pools
    command -v nvcc >/dev/null || die "nvcc builds hold-memory"
    [ -x "$WORK/hold-memory" ] || nvcc -O2 -o "$WORK/hold-memory" "$ROOT/scripts/hold-memory.cu" || die "hold-memory"
    IDLE=$(gpu_mib used)
    total=$(gpu_mib total)
    [ -s "$RESULTS/$free.log" ] || pressure_run "$free" "$base" "$workload"
    grep -q '^exit 0$' "$RESULTS/$free.log" || die "$prefix: the unconstrained $base run failed"
    peak=$(peak_of "$RESULTS/$free.smi")
    pools=$(grep -ao 'peak_reserved_mib=[0-9.]*' "$RESULTS/$free.stats" | cut -d= -f2 |
        awk '{ s += $1 } END { printf "%.0f", s }')
    FIXED=$((peak - IDLE - pools))
    say "$prefix: $base unconstrained peaks at $((peak - IDLE)) MiB above idle, its pools at $pools MiB: S = $FIXED MiB"
    echo "idle_mib $IDLE total_mib $total peak_mib $peak pools_mib $pools fixed_mib $FIXED" >"$RESULTS/$prefix-fixed.txt"
}

# the run $1 (configuration $2, workload $3) with S + $4 MiB left free, unless it ran already;
# returns 1 at the deadline, where it does not start
held_run() {
    local tag=$1 config=$2 workload=$3 h=$4
    [ -s "$RESULTS/$tag.log" ] && return 0
    past_deadline "$tag" && return 1
    hold_start $((FIXED + h)) "$RESULTS/$tag.hold"
    pressure_run "$tag" "$config" "$workload"
    stop_bg "$HOLDER"
    return 0 # the holder's killed status is no failure of the run
}

# every configuration of $3 at each H of $4, from high to low, until it fails
pressure_sweep() {
    local prefix=$1 workload=$2 configs=$3 heads=$4
    for c in $configs; do
        for h in $heads; do
            local tag="$prefix-$(tag_of "$c")-h$h"
            held_run "$tag" "$c" "$workload" "$h" || return 0
            local rc
            rc=$(grep -ao 'exit [0-9]*' "$RESULTS/$tag.log" | tail -1)
            say "$prefix: $c H=$h MiB: $rc"
            [ "$rc" = "exit 0" ] || break # lower H fails as well
        done
    done
}

# a second llama-completion on the GPU, over and over, until the file $1 goes away
cotenant_loop() {
    local flag=$1 n=0
    while [ -e "$flag" ]; do
        CUDA_VISIBLE_DEVICES=$GPU "$BIN/llama-completion" -m "$MODELS/1b-q8_0.gguf" -p "$PROMPT" -n 16 --temp 0 \
            --seed 1 -no-cnv -ngl 99 -c 2048 >/dev/null 2>&1
        echo "load $((++n)) exit $?" >>"$flag.loads"
    done
}

step_pressure() {
    [ -s "$WORK/pressure-prompt.txt" ] ||
        for _ in $(seq 1 $PRESSURE_PROMPT_REPEAT); do printf '%s. ' "$PROMPT"; done >"$WORK/pressure-prompt.txt"
    pressure_fixed pressure completion
    pressure_sweep pressure completion "$PRESSURE_CONFIGS" "${PRESSURE_HEADROOM:-256 128 64 32 16 8 0}"
    [ "${PRESSURE_COTENANT:-1}" = 1 ] || return 0
    step_cotenant
}

# the co-tenant: a second model loading and unloading beside each configuration, S + H + its own
# peak MiB left free. COTENANT_WORKLOAD: completion (the pressure step's), or a longctx one
# (longgen: the K/V conversions growing token by token, so a pool in them asks the driver again
# and again while the co-tenant takes and gives back memory)
step_cotenant() {
    local w=${COTENANT_WORKLOAD:-completion} prefix=cotenant
    if [ "$w" = completion ]; then
        [ -s "$WORK/pressure-prompt.txt" ] || die "the co-tenant's completion workload needs the pressure step first"
        pressure_fixed pressure completion
    else
        longctx_prompts
        local PRESSURE_MODULE_LOADING=${PRESSURE_MODULE_LOADING:-EAGER} # pressure_run reads it
        prefix=cotenant-$w
        pressure_fixed "longctx-$w" "$w" "longctx-$w-ggml-legacy"
    fi
    local co_h=${COTENANT_HEADROOM:-${PRESSURE_COTENANT_HEADROOM:-64}}
    [ -s "$RESULTS/cotenant-free.txt" ] || {
        local flag=$WORK/cotenant-measure
        sample_start "$RESULTS/cotenant-free.smi"
        touch "$flag"; rm -f "$flag.loads"; cotenant_loop "$flag" & local loop=$!
        sleep 8; rm -f "$flag"; wait "$loop"; stop_bg "$SAMPLER"
        echo "peak_mib $(( $(peak_of "$RESULTS/cotenant-free.smi") - IDLE ))" >"$RESULTS/cotenant-free.txt"
    }
    local co_peak c
    co_peak=$(awk '{print $2}' "$RESULTS/cotenant-free.txt")
    for c in ${COTENANT_CONFIGS:-$PRESSURE_CONFIGS}; do
        local tag="$prefix-$(tag_of "$c")-h$co_h" flag=$WORK/cotenant-$(tag_of "$c")
        [ -s "$RESULTS/$tag.log" ] && continue
        past_deadline "$tag" && return 0
        touch "$flag"; rm -f "$flag.loads"
        hold_start $((FIXED + co_h + co_peak)) "$RESULTS/$tag.hold"
        cotenant_loop "$flag" &
        local loop=$!
        pressure_run "$tag" "$c" "$w"
        rm -f "$flag"; wait "$loop"; stop_bg "$HOLDER"
        mv "$flag.loads" "$RESULTS/$tag.loads"
        say "co-tenant: $w $c H=$co_h MiB (+$co_peak MiB for the co-tenant): $(grep -ao 'exit [0-9]*' "$RESULTS/$tag.log" | tail -1), co-tenant loads $(grep -c 'exit 0' "$RESULTS/$tag.loads") ok of $(grep -c . "$RESULTS/$tag.loads")"
    done
}

# prompts of growing length into one context under pressure (llama-batched-bench): a pool that
# keeps the buffers of the shorter prompts cached holds them beside the longer ones'
step_growing() {
    pressure_fixed growing growing
    pressure_sweep growing growing "${GROWING_CONFIGS:-$PRESSURE_CONFIGS}" \
        "${GROWING_HEADROOM:-256 128 96 80 64 56 48 40 32 24 16}"
}
