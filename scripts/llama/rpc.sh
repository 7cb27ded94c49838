# llama.sh step: llama.cpp's RPC backend across processes (sourced). Two ggml-rpc-server processes
# on this machine's GPU (ports RPC_PORT, RPC_PORT + 1), each with the configuration's pools; the
# client (llama-completion, llama-bench) puts the model's layers on them and on its own CUDA
# backend, one third each (-ts 1,1,1; llama.cpp lists the servers first, so its own device holds
# the output layer). Per configuration of RPC_CONFIGS ($CONFIGS), on one pair of servers:
#   1, 2  the complete step's generation, twice: the same text as the single process
#   3     llama-bench pp512 + tg128 (RPC_BENCH_REPS, 3): round 1
#   4     a long generation; the second server is killed (SIGKILL) once tokens flow: the client
#         fails with llama.cpp's own message
#   5     the first server alone serves a new client: the same text again
# Before clients 2-5 each live server gets SIGUSR1, so its pools write snapshot lines (the
# adapter, GGML_CUDA_POOL_STATS) at the next client's first call: what they hold after the one
# before. Nothing is left over across clients where the snapshot after client 2 equals the one
# after client 1, and the one after the killed client equals the one after the bench before it.
# Rounds 2..RPC_ROUNDS (2) of the bench run on fresh servers, configurations interleaved.

RPC_PORT=${RPC_PORT:-50052}
RPC_PID=() # the live servers, by index

# server $2 (0 or 1) with configuration $1, its files $RESULTS/$3-server$2.*; its pid in RPC_PID[$2]
rpc_server_start() {
    local config=$1 i=$2 tag=$3 port=$((RPC_PORT + $2)) hex
    hex=$(printf '%04X' "$port")
    # a server left listening there would serve the clients in place of this one
    ! rpc_listening "$hex" || die "port $port is in use: another ggml-rpc-server?"
    env $(pool_env "$config") CUDA_VISIBLE_DEVICES=$GPU GGML_CUDA_POOL_STATS="$RESULTS/$tag-server$i.stats" \
        "$BIN/ggml-rpc-server" -H 127.0.0.1 -p "$port" >"$RESULTS/$tag-server$i.log" 2>&1 &
    RPC_PID[$i]=$!
    for _ in $(seq 1 300); do
        kill -0 "${RPC_PID[$i]}" 2>/dev/null || break
        rpc_listening "$hex" && return 0
        sleep 0.1
    done
    die "ggml-rpc-server $i ($config) did not start: $(tail -3 "$RESULTS/$tag-server$i.log")"
}
# a socket listening on port $1 (hex) in /proc/net/tcp, state 0A (a probe connection would be a client)
rpc_listening() { grep -qi ":$1 00000000:0000 0A" /proc/net/tcp; }
rpc_servers_stop() {
    local pid
    for pid in "${RPC_PID[@]}"; do stop_bg "$pid"; done
    RPC_PID=()
}
rpc_endpoints() { seq -f '127.0.0.1:%g' "$RPC_PORT" $((RPC_PORT + $1 - 1)) | paste -sd,; }
# after a client ($2): SIGUSR1 to the live servers, for their pools' snapshot lines at the next
# client's first call, and each server process's device memory (nvidia-smi) into $RESULTS/$1.mem
rpc_snapshot() {
    local tag=$1 after=$2 i
    for i in "${!RPC_PID[@]}"; do
        kill -USR1 "${RPC_PID[i]}" 2>/dev/null
        echo "after client $after: server $i used_mib $(nvidia-smi --query-compute-apps=pid,used_memory \
            --format=csv,noheader,nounits 2>/dev/null | awk -F', ' -v p="${RPC_PID[i]}" '$1 == p { print $2 }')"
    done >>"$RESULTS/$tag.mem"
}

# a client that has not ended by then is stuck on a server: it fails instead of hanging the step
RPC_CLIENT_TIMEOUT=${RPC_CLIENT_TIMEOUT:-600}

# llama-bench through $2 servers into $RESULTS/$1.jsonl
rpc_bench() {
    local tag=$1 n=$2 config=$3
    env $(pool_env "$config") CUDA_VISIBLE_DEVICES=$GPU GGML_CUDA_POOL_STATS="$RESULTS/$tag.stats" \
        timeout "$RPC_CLIENT_TIMEOUT" "$BIN/llama-bench" -m "$MODELS/1b-f16.gguf" -ngl 99 -fa 1 -ctk q8_0 -ctv q8_0 -p 512 -n 128 \
        -r "${RPC_BENCH_REPS:-3}" -o jsonl --rpc "$(rpc_endpoints "$n")" -ts 1/1/1 \
        >"$RESULTS/$tag.jsonl" 2>"$RESULTS/$tag.log"
}

# clients 1-5 for configuration $1
rpc_sequence() {
    local c=$1 tokens=${GEN_TOKENS:-64} tag="rpc-$(tag_of "$1")"
    local two="--rpc $(rpc_endpoints 2) -ts 1,1,1" one="--rpc $(rpc_endpoints 1) -ts 1,1"
    rm -f "$RESULTS/$tag"-server?.* "$RESULTS/$tag.mem" # an interrupted sequence's lines would shift the rows
    rpc_server_start "$c" 0 "$tag"
    rpc_server_start "$c" 1 "$tag"
    say "rpc: $c: client 1, exit $(GEN_ARGS="$two" generate "$tag-1" "$c" "$tokens" timeout "$RPC_CLIENT_TIMEOUT")"
    rpc_snapshot "$tag" 1
    say "rpc: $c: client 2, exit $(GEN_ARGS="$two" generate "$tag-2" "$c" "$tokens" timeout "$RPC_CLIENT_TIMEOUT")"
    rpc_snapshot "$tag" 2
    rpc_bench "$tag-bench-r1" 2 "$c"
    say "rpc: $c: client 3 (llama-bench), $(grep -c . "$RESULTS/$tag-bench-r1.jsonl") tests"
    rpc_snapshot "$tag" 3
    rpc_killed "$tag-4" "$c" "$two"
    RPC_PID=("${RPC_PID[0]}")
    rpc_snapshot "$tag" 4
    say "rpc: $c: client 5 (server 0 alone), exit $(GEN_ARGS="$one" generate "$tag-5" "$c" "$tokens" timeout "$RPC_CLIENT_TIMEOUT")"
    rpc_snapshot "$tag" 5
    rpc_servers_stop
    local k
    for k in 1 2 5; do
        echo "client $k: $(cmp -s "$RESULTS/completion-$tag-$k.txt" "$RESULTS/completion-$c.txt" &&
            echo "text identical to the single process" || echo "TEXT DIFFERS from the single process")"
    done >"$RESULTS/$tag.txt"
    cat "$RESULTS/$tag.txt"
}

# client 4 ($1): a long generation through both servers; server 1 killed once tokens flow
rpc_killed() {
    local tag=$1 c=$2 args=$3 out=$RESULTS/completion-$1.txt
    (GEN_ARGS="$args" generate "$tag" "$c" 4096 timeout "$RPC_CLIENT_TIMEOUT" >"$RESULTS/$tag.exit") &
    local client=$! start
    start=$(printf '%s' "$PROMPT" | wc -c)
    for _ in $(seq 1 600); do
        [ "$(stat -c %s "$out" 2>/dev/null || echo 0)" -gt $((start + 64)) ] && break
        kill -0 "$client" 2>/dev/null || break
        sleep 0.05
    done
    kill -KILL "${RPC_PID[1]}" 2>/dev/null
    wait "${RPC_PID[1]}" 2>/dev/null
    wait "$client"
    say "rpc: $c: client 4, server 1 killed after $(($(stat -c %s "$out") - start)) bytes of text: exit $(cat "$RESULTS/$tag.exit"): $(grep -aiE 'rpc|error|abort' "$RESULTS/completion-$tag.log" | head -2 | tr '\n' ' ')"
}

step_rpc() {
    [ -x "$BIN/ggml-rpc-server" ] || die "no ggml-rpc-server: the build step makes it with GGML_RPC=ON"
    trap rpc_servers_stop EXIT # no server outlives the step, whichever way it ends
    local configs=${RPC_CONFIGS:-$CONFIGS} c
    for c in $configs; do
        [ -s "$RESULTS/completion-$c.txt" ] || generate "$c" "$c" "${GEN_TOKENS:-64}" >/dev/null
        [ -s "$RESULTS/rpc-$(tag_of "$c").txt" ] && continue
        past_deadline "rpc $c" && return 0
        rpc_sequence "$c"
    done
    local r
    for r in $(seq 2 "${RPC_ROUNDS:-2}"); do
        for c in $(CONFIGS=$configs round_order "$r"); do
            local tag="rpc-$(tag_of "$c")-bench-r$r"
            [ -s "$RESULTS/$tag.jsonl" ] && continue
            past_deadline "rpc bench round $r" && return 0
            rpc_server_start "$c" 0 "$tag"
            rpc_server_start "$c" 1 "$tag"
            rpc_bench "$tag" 2 "$c"
            rpc_servers_stop
            say "rpc bench round $r: $c: $(grep -c . "$RESULTS/$tag.jsonl") tests"
        done
    done
}
