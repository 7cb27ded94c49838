# llama.sh step: llama-server under a steady stream of requests beside random memory spikes (sourced
# after serve.sh, whose helpers start and stop the servers).
#   spikes  per case of SPIKES_CASES ("calm spikes"), one llama-server per configuration of
#           SPIKES_CONFIGS ("ggml ggml-legacy vmm legacy"), side by side on the one GPU, each on its
#           own port (serve.sh's server: SERVE_MODEL, SERVE_PARALLEL, SERVE_CTX, SERVE_ARGS), and
#           scripts/serve-client.py --soak SPIKES_S (300) against each at once: mixed requests for
#           SPIKES_S s, the same ones to every server (SPIKES_SEED, 1). The spikes case runs
#           scripts/spikes.py beside them: a co-tenant (scripts/hold-memory.cu) leaving 0-256 MiB
#           free for 0.2-15 s, at random gaps of 2-20 s, the same spikes for every server;
#           SPIKES_ARGS (flags of spikes.py: --free, --length, --gap) reshapes them. Per
#           configuration $RESULTS/serve-<config>-soak-<case>.* (.jsonl the client's records and
#           summary, .log the server's, .stats its pools' lines, .up start-up's seconds and memory,
#           .mem its memory at the end and its exit); the spikes in $RESULTS/soak-spikes.jsonl, the
#           pools' wait budget the servers ran with in $RESULTS/soak-spikes.wait

SPIKES_CONFIGS=${SPIKES_CONFIGS:-ggml ggml-legacy vmm legacy}
SPIKES_S=${SPIKES_S:-300}
SPIKES_SEED=${SPIKES_SEED:-1}
SPIKES_CASES=${SPIKES_CASES:-calm spikes}
ADAPTER_WAIT_MS=5000 # the llama.cpp adapter's GGML_CUDA_POOL_WAIT_MS where the environment sets none

# whether case $1 finished: every configuration's client summary and memory, and the spikes' file
spikes_done() {
    local c
    for c in $SPIKES_CONFIGS; do serve_done "$c" "soak-$1" || return 1; done
    [ "$1" != spikes ] || [ -e "$RESULTS/soak-spikes.jsonl" ]
}

# the servers of the case running (serve_start's die leaves the ones it started before)
SPIKES_PIDS=()
spikes_servers_kill() { [ ${#SPIKES_PIDS[@]} -eq 0 ] || kill "${SPIKES_PIDS[@]}" 2>/dev/null; }

# case $1: the servers, their clients at once (and the spikes beside them), the servers stopped
spikes_run() {
    local case=$1 configs=($SPIKES_CONFIGS) i clients=() tags=() spiker=
    SPIKES_PIDS=()
    for i in "${!configs[@]}"; do # one after another: each start-up's memory is its own
        tags+=("$(serve_tag "${configs[i]}" "soak-$case")")
        serve_start "${configs[i]}" "soak-$case" "$((SERVE_PORT + i + 1))" "${tags[i]}"
        SPIKES_PIDS+=("$SERVE_PID")
    done
    if [ "$case" = spikes ]; then
        echo "wait_ms ${GGML_CUDA_POOL_WAIT_MS:-$ADAPTER_WAIT_MS}" >"$RESULTS/soak-spikes.wait"
        python3 "$ROOT/scripts/spikes.py" --seconds "$SPIKES_S" --seed "$SPIKES_SEED" --out "$RESULTS/soak-spikes.jsonl" \
            --hold "CUDA_VISIBLE_DEVICES=$GPU $WORK/hold-memory" ${SPIKES_ARGS:-} >"$RESULTS/soak-spikes.log" 2>&1 &
        spiker=$!
    fi
    for i in "${!configs[@]}"; do
        python3 "$ROOT/scripts/serve-client.py" --port "$((SERVE_PORT + i + 1))" --out "$RESULTS/${tags[i]}.jsonl" \
            --parallel "$SERVE_PARALLEL" --seed "$SPIKES_SEED" --soak "$SPIKES_S" >"$RESULTS/${tags[i]}.client" 2>&1 &
        clients+=($!)
    done
    wait "${clients[@]}"
    [ -n "$spiker" ] && stop_bg "$spiker" # it ends at SPIKES_S by itself; SIGTERM ends a spike in progress
    for i in "${!configs[@]}"; do
        serve_stop "${SPIKES_PIDS[i]}" "${tags[i]}"
        say "spikes: ${configs[i]} $case: $(tail -1 "$RESULTS/${tags[i]}.jsonl" 2>/dev/null)"
    done
    SPIKES_PIDS=()
}

step_spikes() {
    [ -x "$BIN/llama-server" ] || die "no llama-server: the build step makes it (LLAMA_BUILD_SERVER=ON)"
    serve_hold_memory
    trap spikes_servers_kill EXIT # no server outlives the step, whichever way it ends
    local k
    for k in $SPIKES_CASES; do
        spikes_done "$k" && continue
        past_deadline "spikes $k" && return 0
        spikes_run "$k"
    done
}
