# llama.sh step: llama-server under load, and what a refused allocation does to it (sourced).
#   serve   per configuration of SERVE_CONFIGS, llama-server (SERVE_MODEL, 8b-q8_0; KV q8_0, flash
#           attention, -np SERVE_PARALLEL (8), a SERVE_CTX (65536) context) and scripts/serve-client.py:
#           mixed requests SERVE_PARALLEL at a time in three phases (before, during, after; SERVE_PER_PHASE
#           requests each), three cases:
#             free    unconstrained
#             spike   a co-tenant (scripts/hold-memory.cu, or the command SERVE_HOLD) takes all but
#                     SERVE_SPIKE_FREE (64) MiB of the GPU over the during phase, then gives it back
#             window  a fault window over the during phase (GGML_CUDA_POOL_FAULT=while=FILE: every
#                     driver allocation refused while FILE exists); the module's pools only, the
#                     fault driver being theirs
#           SERVE_CASES ("free spike window") picks. spike:W and window:W last W s from their start
#           whenever the requests return, spike:W:start and window:W:start start before the first
#           phase, while the server idles after start-up. Per run $RESULTS/serve-<config>-<case>.*
#           (a case named with its free MiB and length: spike-h64, spike-h16-w3-start, window-w3):
#           .jsonl the client's records and summary, .log the server's, .stats its pools' lines,
#           .smi the GPU's memory every 50 ms, .up start-up's seconds and the server's memory then,
#           .mem the server's memory before it stops. SERVE_ROUND=R
#           puts a round's files in $RESULTS/serve-rR/ instead, where the pairs table reads rounds, and
#           starts the configurations' order at the R-th (as the pairs rounds rotate it).
#           The window case runs for SERVE_WINDOW_CONFIGS (the module's configurations of
#           SERVE_CONFIGS), SERVE_WINDOW_CONFIGS_AT_ONCE (1) side by side, each its own server and
#           port (their outcome does not depend on time; their speed is not compared)

SERVE_CONFIGS=${SERVE_CONFIGS:-ggml ggml-legacy legacy plain vmm async ggml-legacy:kvpool legacy:kvpool plain:kvpool}
SERVE_PORT=${SERVE_PORT:-8090}
SERVE_PARALLEL=${SERVE_PARALLEL:-8}
SERVE_START_TIMEOUT=${SERVE_START_TIMEOUT:-300} # s: loading the model and its warm-up

# the server of configuration $1 for case $2 on port $3 (files $RESULTS/$4.*); its pid in SERVE_PID
serve_start() {
    local config=$1 case=$2 port=$3 tag=$4 fault=()
    [ "${case%%:*}" = window ] && fault=(GGML_CUDA_POOL_FAULT="while=$RESULTS/$tag.window")
    rm -f "$RESULTS/$tag".{stats,log,window}
    env $(pool_env "$config") "${fault[@]}" CUDA_VISIBLE_DEVICES=$GPU GGML_CUDA_POOL_STATS="$RESULTS/$tag.stats" \
        "$BIN/llama-server" -m "$MODELS/${SERVE_MODEL:-8b-q8_0}.gguf" -ngl 99 -fa on -ctk q8_0 -ctv q8_0 \
        -c "${SERVE_CTX:-65536}" -np "$SERVE_PARALLEL" --host 127.0.0.1 --port "$port" ${SERVE_ARGS:-} \
        >"$RESULTS/$tag.log" 2>&1 &
    SERVE_PID=$!
    local t t0
    t0=$(date +%s.%N)
    for t in $(seq 1 $((SERVE_START_TIMEOUT * 10))); do
        kill -0 "$SERVE_PID" 2>/dev/null || break
        if serve_healthy "$port"; then # start-up's time and the server's device memory then
            echo "start_s $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') used_mib $(serve_mib "$SERVE_PID")" >"$RESULTS/$tag.up"
            return 0
        fi
        sleep 0.1
    done
    stop_bg "$SERVE_PID"
    die "llama-server ($config) did not start: $(tail -3 "$RESULTS/$tag.log")"
}

# whether the server on port $1 answers /health with 200 (503 while it loads)
serve_healthy() {
    python3 -c "import sys, urllib.request; urllib.request.urlopen('http://127.0.0.1:$1/health', timeout=2)" \
        >/dev/null 2>&1
}

# the device memory of process $1 (nvidia-smi), MiB
serve_mib() {
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
        awk -F', ' -v p="$1" '$1 == p { print $2 }'
}

# the server's device memory (nvidia-smi) into $RESULTS/$1.mem, then SIGTERM: it shuts down and its
# pools write their stats lines
serve_stop() {
    local pid=$1 tag=$2
    echo "used_mib $(serve_mib "$pid")" >"$RESULTS/$tag.mem"
    kill -TERM "$pid" 2>/dev/null
    local t
    for t in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    echo "exit $?" >>"$RESULTS/$tag.mem"
}

# a run's files: $RESULTS/$(serve_tag CONFIG CASE).*; a case KIND[:W[:start]] named KIND[-hH][-wW][-start]
serve_tag() {
    local kind w at
    IFS=: read -r kind w at <<<"$2"
    echo "serve-$(tag_of "$1")-$kind$([ "$kind" = spike ] && echo "-h${SERVE_SPIKE_FREE:-64}")${w:+-w$w}${at:+-$at}"
}

# one run: configuration $1, case $2, port $3
serve_run() {
    local config=$1 case=$2 port=$3 tag trouble=() kind w at
    tag=$(serve_tag "$1" "$2")
    IFS=: read -r kind w at <<<"$case"
    case $kind in
        spike) trouble=(--hold "CUDA_VISIBLE_DEVICES=$GPU ${SERVE_HOLD:-$WORK/hold-memory} ${SERVE_SPIKE_FREE:-64}") ;;
        window) trouble=(--window "$RESULTS/$tag.window") ;;
    esac
    [ -n "$w" ] && trouble+=(--spike-s "$w" --spike-at "${at:-during}")
    serve_start "$config" "$case" "$port" "$tag"
    local pid=$SERVE_PID
    sample_start "$RESULTS/$tag.smi"
    python3 "$ROOT/scripts/serve-client.py" --port "$port" --out "$RESULTS/$tag.jsonl" --parallel "$SERVE_PARALLEL" \
        --per-phase "${SERVE_PER_PHASE:-8}" --seed "${SERVE_SEED:-1}" "${trouble[@]}" >"$RESULTS/$tag.client" 2>&1
    stop_bg "$SAMPLER"
    serve_stop "$pid" "$tag"
    say "serve: $config $case: $(tail -1 "$RESULTS/$tag.jsonl" 2>/dev/null)"
}

# the co-tenant, $WORK/hold-memory, built where it is not
serve_hold_memory() {
    command -v nvcc >/dev/null || [ -x "$WORK/hold-memory" ] || die "nvcc builds hold-memory"
    [ -x "$WORK/hold-memory" ] || nvcc -O2 -o "$WORK/hold-memory" "$ROOT/scripts/hold-memory.cu" || die "hold-memory"
}

serve_done() { [ -s "$RESULTS/$(serve_tag "$1" "$2").mem" ] && grep -qs '"summary"' "$RESULTS/$(serve_tag "$1" "$2").jsonl"; }

step_serve() {
    [ -x "$BIN/llama-server" ] || die "no llama-server: the build step makes it (LLAMA_BUILD_SERVER=ON)"
    local RESULTS=$RESULTS${SERVE_ROUND:+/serve-r$SERVE_ROUND} # every function below writes there
    mkdir -p "$RESULTS"
    serve_hold_memory
    local cases=${SERVE_CASES:-free spike window} c k
    SERVE_WINDOW_CONFIGS=${SERVE_WINDOW_CONFIGS:-$(for c in $SERVE_CONFIGS; do [[ $c == ggml* ]] || echo "$c"; done)}
    # the window runs first where they go side by side: the others then have the GPU to themselves
    if [ "${SERVE_WINDOW_CONFIGS_AT_ONCE:-1}" -gt 1 ]; then
        for k in $cases; do
            [ "${k%%:*}" = window ] && serve_windows_at_once "$k"
        done
    fi
    for k in $cases; do
        # no fault driver under ggml's pools: the window is the module's. A round's order rotates
        # with its number, as the pairs rounds' does, so that no configuration always goes first
        for c in $([ "${k%%:*}" = window ] && echo $SERVE_WINDOW_CONFIGS || CONFIGS=$SERVE_CONFIGS round_order "${SERVE_ROUND:-1}"); do
            serve_done "$c" "$k" && continue
            past_deadline "serve $c $k" && return 0
            serve_run "$c" "$k" "$SERVE_PORT"
        done
    done
}

# window case $1 of every module configuration, SERVE_WINDOW_CONFIGS_AT_ONCE at a time, a port each
serve_windows_at_once() {
    local pending=() running=() port=$SERVE_PORT c
    for c in $SERVE_WINDOW_CONFIGS; do
        serve_done "$c" "$1" || pending+=("$c")
    done
    for c in "${pending[@]}"; do
        past_deadline "serve $c $1" && break
        port=$((port + 1))
        (serve_run "$c" "$1" "$port") &
        running+=($!)
        if [ ${#running[@]} -ge "$SERVE_WINDOW_CONFIGS_AT_ONCE" ]; then
            wait "${running[0]}"
            running=("${running[@]:1}")
        fi
    done
    wait
}
