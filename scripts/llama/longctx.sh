# llama.sh steps: the flash-attention K/V f16 conversions over long contexts (sourced). With a
# quantized KV cache each layer converts its K and V views to f16 in buffers as large as the
# context so far: in ggml's compute buffer, reserved for the whole context at start-up (ggml,
# ggml-legacy), or from the pool, growing with the context (":kvpool"; ggml-legacy:kvpool is
# ggml's legacy pool before that reservation, whose cache keeps every size it passed through).
#   longctx         each of LONGCTX_CONFIGS unconstrained on each of LONGCTX_WORKLOADS:
#                     short    llama-completion, a prompt of about 500 tokens and 64 generated
#                              into a 32k context: what a start-up reservation holds for nothing;
#                              also every module kind as it runs by default (LONGCTX_SHORT_CONFIGS)
#                     prefill  llama-bench -p LONGCTX_PREFILL (32768) -n 0 -ub 512: one prompt
#                              into a context of its length, the conversions growing ubatch by ubatch
#                     longgen  llama-completion, a prompt of about 4000 tokens, then
#                              LONGCTX_TOKENS (4096) generated greedily: they grow token by token
#                     batches  llama-batched-bench, prompts of LONGCTX_BATCHES_PP tokens (100 to
#                              8000, in no order) in ubatches of 512, for 1 and 4 sequences, 16
#                              generated after each: batches of every size, as a server meets them
#   longctx_budget  each of LONGCTX_BUDGET_WORKLOADS (prefill longgen) with S + H MiB left free
#                   (S: the unconstrained ggml-legacy run's peak less its pools'), searching
#                   LONGCTX_HEADROOM (MiB, high to low; may go below 0, since the :kvpool
#                   configurations' compute buffer is smaller by the conversions) for each
#                   configuration's lowest H that completes, by bisection: completion at one H
#                   is taken to mean completion at every higher one
# Model PRESSURE_MODEL (8b-q8_0), KV q8_0, flash attention, graphs on, every kernel loaded at the
# start unless PRESSURE_MODULE_LOADING says otherwise.
LONGCTX_CONFIGS=${LONGCTX_CONFIGS:-ggml-legacy ggml-legacy:kvpool legacy:kvpool plain:kvpool legacy:kvpool1x ggml vmm:kvpool async:kvpool}
LONGCTX_SHORT_CONFIGS=${LONGCTX_SHORT_CONFIGS:-$LONGCTX_CONFIGS legacy plain vmm async}
# copies of $PROMPT (about 15 tokens each): a prompt of about 4000 tokens, which leaves the long
# generation's context (8448) room for its 4096 tokens; and one of about 500
LONGCTX_PROMPT_REPEAT=${LONGCTX_PROMPT_REPEAT:-270}
LONGCTX_SHORT_REPEAT=${LONGCTX_SHORT_REPEAT:-34}

longctx_prompts() {
    local n
    for n in "$LONGCTX_PROMPT_REPEAT:longgen" "$LONGCTX_SHORT_REPEAT:short"; do
        local file=$WORK/longctx-prompt-${n#*:}.txt
        [ -s "$file" ] || for _ in $(seq 1 "${n%%:*}"); do printf '%s. ' "$PROMPT"; done >"$file"
    done
}

workload_short() {
    cmd=("$BIN/llama-completion" $(pressure_common) -c 32768 -f "$WORK/longctx-prompt-short.txt" -n 64
         --temp 0 --seed 1 --ignore-eos -no-cnv)
}
workload_prefill() {
    local n=${LONGCTX_PREFILL:-32768}
    cmd=("$BIN/llama-bench" $(pressure_common | sed 's/-fa on/-fa 1/') -p "$n" -n 0 -ub 512 -r 1 -o jsonl)
}
workload_batches() {
    cmd=("$BIN/llama-batched-bench" $(pressure_common) -c 32768 -npp "${LONGCTX_BATCHES_PP:-100,8000,300,4000,700,2000,150,6000}"
         -ntg 16 -npl 1,4 -ub 512)
}
workload_longgen() {
    cmd=("$BIN/llama-completion" $(pressure_common) -c 8448 -f "$WORK/longctx-prompt-longgen.txt"
         -n "${LONGCTX_TOKENS:-4096}" --temp 0 --seed 1 --ignore-eos -no-cnv)
}

step_longctx() {
    longctx_prompts
    local PRESSURE_MODULE_LOADING=${PRESSURE_MODULE_LOADING:-EAGER} # pressure_run reads it
    for w in ${LONGCTX_WORKLOADS:-short prefill longgen}; do
        local configs=$LONGCTX_CONFIGS
        [ "$w" = short ] && configs=$LONGCTX_SHORT_CONFIGS
        for c in $configs; do
            local tag="longctx-$w-$(tag_of "$c")"
            [ -s "$RESULTS/$tag.log" ] && continue
            past_deadline "$tag" && return 0
            local idle
            idle=$(gpu_mib used)
            echo "idle_mib $idle" >"$RESULTS/$tag.idle"
            pressure_run "$tag" "$c" "$w"
            say "longctx: $w $c: $(tail -1 "$RESULTS/$tag.log"), peak $(($(peak_of "$RESULTS/$tag.smi") - idle)) MiB above idle"
        done
    done
}

# the lowest H of grid $4 at which each configuration of $3 completes workload $2, by bisection
budget_bisect() {
    local prefix=$1 workload=$2 configs=$3 grid=($4)
    for c in $configs; do
        local ok=-1 fail=${#grid[@]}
        while [ $((fail - ok)) -gt 1 ]; do
            local mid=$(((ok + fail) / 2))
            local tag="$prefix-$(tag_of "$c")-h${grid[mid]}"
            held_run "$tag" "$c" "$workload" "${grid[mid]}" || return 0
            if grep -q '^exit 0$' "$RESULTS/$tag.log"; then ok=$mid; else fail=$mid; fi
        done
        say "$prefix: $c: lowest H that completes: $([ "$ok" -ge 0 ] && echo "${grid[ok]} MiB" || echo none)"
    done
}

step_longctx_budget() {
    longctx_prompts
    local PRESSURE_MODULE_LOADING=${PRESSURE_MODULE_LOADING:-EAGER} # pressure_run reads it
    for w in ${LONGCTX_BUDGET_WORKLOADS:-prefill longgen}; do
        local free="longctx-$w-ggml-legacy"
        [ -s "$RESULTS/$free.log" ] || { past_deadline "$free" && return 0; }
        pressure_fixed "longctx-$w" "$w" "$free"
        budget_bisect "longctx-$w" "$w" "$LONGCTX_CONFIGS" \
            "${LONGCTX_HEADROOM:-512 256 128 64 32 16 0 -16 -32 -64 -128 -256}"
        past_deadline "the next workload" && return 0
    done
}
