# llama.sh: helpers every step uses (sourced)

say() { printf '[llama.sh %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { say "error: $*"; exit 1; }
gpus() { nvidia-smi -L 2>/dev/null | wc -l; }
# the environment of a configuration: GGML_CUDA_POOL (ggml's own pools or a module kind), then
# one line per variant: where the K/V f16 conversions live (":kvpool", ":kvpool1x"), the captures
# the adapter declares (":declared"), kernels loaded at first use (":lazy", CUDA's default), no
# wait for memory (":nowait"), or no neighbours (":alone")
pool_env() {
    echo "GGML_CUDA_POOL=${1%%:*}"
    local v
    for v in $(tr : ' ' <<<"${1#*:}"); do
        [ "$v" = "${1%%:*}" ] && continue # no variant
        case $v in
            kvpool) echo "GGML_CUDA_POOL_KV_F16=pool" ;;
            kvpool1x) echo "GGML_CUDA_POOL_KV_F16=pool-1x" ;;
            declared) echo "GGML_CUDA_POOL_CAPTURES=declared" ;;
            lazy) echo "CUDA_MODULE_LOADING=LAZY" ;;
            nowait) echo "GGML_CUDA_POOL_WAIT_MS=0" ;;
            alone) echo "GGML_CUDA_POOL_NEIGHBOURS=off" ;;
            *) say "unknown variant :$v of $1, left out" >&2 ;;
        esac
    done
}
# a configuration as a file name part
tag_of() { echo "${1//:/-}"; }
# the configurations in round $1's order: each round starts one further along, so no configuration
# always runs first (or last) in its round, where a round's own trend would favour it
round_order() {
    local r=$1 configs=($CONFIGS)
    local n=${#configs[@]} i
    for ((i = 0; i < n; i++)); do echo "${configs[(i + r - 1) % n]}"; done
}
module_kinds() { for c in $CONFIGS; do case $c in ggml* | *:*) ;; *) echo "$c" ;; esac; done; }
# the driver call that takes device memory for a module kind (what a fault spec aims at)
alloc_call() { case $1 in vmm) echo create ;; async) echo malloc_async ;; *) echo malloc ;; esac; }
# the faults step's case of an allocation failing inside a graph capture, for the kinds where one
# fault spec lands there every time
capture_fault() { [ "$1" = async ] && echo capture; }
# the GPU's memory.$1 (used, total) in MiB, now
gpu_mib() { nvidia-smi -i "$GPU" --query-gpu="memory.$1" --format=csv,noheader,nounits | head -1; }
# memory.used every 50 ms into $1, until stop_bg "$SAMPLER"; its peak: peak_of $1
sample_start() {
    nvidia-smi -i "$GPU" --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 >"$1" 2>/dev/null &
    SAMPLER=$!
}
peak_of() { sort -n "$1" | tail -1; }
# another tenant holding all but $1 MiB of the GPU (scripts/hold-memory.cu; its line in $2), until
# stop_bg "$HOLDER"
hold_start() {
    "$WORK/hold-memory" "$1" >"$2" 2>&1 &
    HOLDER=$!
    for _ in $(seq 1 100); do grep -qs holding "$2" && return 0; sleep 0.1; done
    kill "$HOLDER" 2>/dev/null
    die "hold-memory did not start: $(cat "$2")"
}
stop_bg() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# whether BENCH_DEADLINE has passed (saying so, before $1)
past_deadline() {
    [ -n "${BENCH_DEADLINE:-}" ] && [ "$(date +%s)" -ge "$BENCH_DEADLINE" ] || return 1
    say "deadline reached before $1; the next call resumes"
}

