#!/usr/bin/env bash
# llama.cpp with ggml-cuda-pool, on a CUDA machine (README: "Use in llama.cpp"). Unpacks the
# pinned snapshot (or takes LLAMA_CPP_DIR, a checkout at that commit), applies the integration
# patch, builds llama.cpp with CUDA for the local GPU, writes random-weight models, then runs
# llama.cpp's own tools once per pool configuration, side by side, in one binary
# (GGML_CUDA_POOL picks ggml's own pools or a module kind at run time):
#
#   prepare   unpack the snapshot and apply integrations/llama.cpp/ggml-cuda-pool.patch
#   build     cmake + ninja: test-backend-ops, llama-bench, llama-completion, llama-quantize,
#             llama-speculative-simple
#   models    random-weight Llama models (scripts/llama-model.py): 1B f16 and q8_0, 8B q8_0 (LLAMA_MODELS)
#   ops       test-backend-ops -b CUDA0, every op, per configuration (one per GPU at a time)
#   complete  llama-completion, greedy, the same tokens for every configuration (KV q8_0, graphs on)
#   faults    per module kind: a one-shot fault and a prob= fault (reclaim lines, the same tokens),
#             a persistent one (the adapter's out-of-memory message), and for async one inside a
#             graph capture (the capture ends there, the rest runs eagerly, the same tokens); each
#             recovered run's text compared with the run without faults
#   soak      per module kind: a long generation under random faults (same tokens or the adapter's
#             clear out-of-memory message)
#   memcheck  per module kind (MEMCHECK_KINDS): a short generation under random faults in
#             compute-sanitizer memcheck with leak check
#   bench     llama-bench tg128 -fa 1 on 1b-q8_0, KV f16 and q8_0, at depths 0/4096/32768;
#             configurations interleaved round by round so drift hits all alike, each round starting
#             one configuration further along (8 rounds x 3 repetitions: 24 samples a
#             configuration); each pool's statistics and each context's CUDA graph counts
#             (captures, instantiations, updates). BENCH_ROTATE=1: a round is one process whose
#             contexts take the configurations in turn (GGML_CUDA_POOL_ROTATE), so what a process
#             shares (its model's memory, its CPU) every configuration of the round shares; one
#             test per depth (BENCH_TESTS' default), and no ':' configurations; each test keeps its
#             context's place in the process, whose own effect the summary's second table takes out
#   memory    peak total device memory (nvidia-smi every 50 ms) while llama-bench pp512+tg32 runs
#             on 8b-q8_0, KV q8_0, at depths 0/8192/32768, per configuration; llama.cpp's own
#             buffer lines (-v)
#   speculative  llama-speculative-simple, 1b-f16 target + 1b-q8_0 draft (two contexts in one
#             process), graphs on: the text per configuration and t/s, rounds interleaved
#   pressure  another process holds the GPU's memory but for S + H MiB (S: what llama.cpp needs
#             besides its pools); llama-completion, 8b-q8_0 into a 32k context, per configuration at
#             H stepping down until it fails; then each beside a co-tenant loading and unloading a
#             second model
#   growing   the same for llama-batched-bench: prompts of growing length (128 to 2048 tokens) one
#             after another into one context, as a server gets them
#   trace     the pool calls of a llama-bench depth sweep (GGML_CUDA_POOL_TRACE), for pool-replay
#   summary   the tables (scripts/llama-summary.py)
#
#   scripts/llama.sh [step ...]     (default: every step in that order)
#
# Every step is resumable: what finished leaves its result under $LLAMA_WORK/results and is not
# run again (delete the file to redo it); build outputs and models stay in $LLAMA_WORK, outside
# the tree. One command of the GPU machine may run 10 minutes: run the steps across calls.
#
# A configuration is ggml's own pools (ggml, ggml-legacy) or a module kind, optionally with
# ":kvpool": the flash-attention K/V f16 conversions from the pool (GGML_CUDA_POOL_KV_F16=pool)
# instead of the graph allocator's buffer.
#
# Environment: LLAMA_WORK (/tmp/llama-work), LLAMA_CPP_DIR, LLAMA_SNAPSHOT (the .tar.xz;
# default ../shared/llama.cpp/llama.cpp-*.tar.xz), LLAMA_BUILD (a build dir; default
# $LLAMA_WORK/build), LLAMA_CMAKE_ARGS (more configure arguments), CONFIGS ("ggml legacy plain
# vmm async"), BENCH_MODELS ("1b-q8_0"), BENCH_KV ("f16 q8_0"), BENCH_DEPTHS ("0,4096,32768"),
# BENCH_ROUNDS (8), BENCH_REPS (3: reps per round, so 24 in all), BENCH_TESTS ("-p 0 -n 128"),
# MEMORY_CONFIGS (CONFIGS, ggml-legacy and legacy:kvpool), MEMORY_DEPTHS ("0 8192 32768"), MEMORY_MODEL
# (8b-q8_0), SPEC_ROUNDS (6), SPEC_TOKENS (192), LLAMA_GPU (0: the GPU every step but
# ops runs on), OPS_FILTER (test-backend-ops -o), OPS_AT_ONCE (configurations run side by side,
# spread over the GPUs; default all), OPS_TIMEOUT (seconds, 0: none), GEN_TOKENS (64),
# SOAK_TOKENS (512), BENCH_DEADLINE (epoch seconds: no bench run or speculative round starts
# after it, the next call resumes), BENCH_ROTATE (0; 1: one process a round), MEMCHECK_KINDS (the module kinds),
# MEMCHECK_TIMEOUT (seconds a run, 0: none), MEMCHECK_FAULT (the fault spec under memcheck; default: 5% of
# the kind's allocating calls),
# PRESSURE_CONFIGS (ggml ggml-legacy and the module kinds), PRESSURE_HEADROOM (H in MiB, from high to
# low: "256 128 64 32 16 8 0"), PRESSURE_BASE (ggml-legacy: the run that measures S),
# PRESSURE_MODEL (8b-q8_0), PRESSURE_TOKENS (64), PRESSURE_COTENANT_HEADROOM (64), PRESSURE_ARGS
# (more llama-completion arguments), PRESSURE_PROMPT_REPEAT (600), PRESSURE_MODULE_LOADING (LAZY,
# CUDA's default: kernels load on first use and take device memory then; EAGER loads them all first),
# GROWING_PP (the growing step's prompt lengths: "128,512,1024,2048"), GROWING_TG (16 tokens
# generated after each), GROWING_ARGS, GROWING_CONFIGS (PRESSURE_CONFIGS), GROWING_HEADROOM
# ("256 128 96 80 64 56 48 40 32 24 16").
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${LLAMA_WORK:-/tmp/llama-work}
SRC=${LLAMA_CPP_DIR:-$WORK/llama.cpp}
BUILD=${LLAMA_BUILD:-$WORK/build}
RESULTS=$WORK/results
MODELS=$WORK/models
BIN=$BUILD/bin
CONFIGS=${CONFIGS:-"ggml legacy plain vmm async"}
MODEL_LIST=${LLAMA_MODELS:-"1b-f16 1b-q8_0 8b-q8_0"}
PATCH=$ROOT/integrations/llama.cpp/ggml-cuda-pool.patch
PINNED=81ff7abe50b95fb81cc70a6cdba1eb1a02a48f62
PROMPT="The pools of a CUDA backend hand out scratch buffers"
GPU=${LLAMA_GPU:-0} # one GPU: llama.cpp would split a model over every visible one
mkdir -p "$RESULTS" "$MODELS"
export LD_LIBRARY_PATH=$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

say() { printf '[llama.sh %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { say "error: $*"; exit 1; }
gpus() { nvidia-smi -L 2>/dev/null | wc -l; }
# the environment of a configuration: GGML_CUDA_POOL (ggml's own pools or a module kind), and
# GGML_CUDA_POOL_KV_F16=pool for a ":kvpool" one
pool_env() {
    echo "GGML_CUDA_POOL=${1%%:*}"
    [[ $1 == *:kvpool ]] && echo "GGML_CUDA_POOL_KV_F16=pool"
}
# a configuration as a file name part
tag_of() { echo "${1/:/-}"; }
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
    nvidia-smi -i "$GPU" --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 >"$1" &
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

step_prepare() {
    if [ -n "${LLAMA_CPP_DIR:-}" ]; then
        [ -d "$SRC/ggml/src/ggml-cuda" ] || die "LLAMA_CPP_DIR=$SRC is not a llama.cpp tree"
    elif [ ! -d "$SRC" ]; then
        local snapshot=${LLAMA_SNAPSHOT:-$(ls "$ROOT"/../shared/llama.cpp/llama.cpp-*.tar.xz 2>/dev/null | head -1)}
        [ -f "$snapshot" ] || die "no snapshot: set LLAMA_SNAPSHOT or LLAMA_CPP_DIR"
        say "unpacking $snapshot"
        tar -xJf "$snapshot" -C "$WORK" || die "unpacking failed"
    fi
    local commit
    commit=$(cat "$SRC/.commit" 2>/dev/null || git -C "$SRC" rev-parse HEAD 2>/dev/null)
    [ "$commit" = "$PINNED" ] || say "warning: $SRC is at ${commit:-an unknown commit}, the patch is for $PINNED"
    # the trimmed snapshot leaves pocs/ out, which the examples' CMakeLists still adds
    [ -f "$SRC/pocs/CMakeLists.txt" ] || { mkdir -p "$SRC/pocs" && : >"$SRC/pocs/CMakeLists.txt"; }
    if patch -d "$SRC" -p1 -R --dry-run -s -f <"$PATCH" >/dev/null 2>&1; then
        say "patch already applied"
    else
        patch -d "$SRC" -p1 -s -f <"$PATCH" || die "the patch does not apply to $SRC"
        say "patch applied"
    fi
}

step_build() {
    [ -d "$SRC" ] || die "no source tree: run the prepare step"
    local arch
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
    if [ ! -f "$BUILD/build.ninja" ]; then
        cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
            -DCMAKE_CUDA_ARCHITECTURES="${arch:-90}" -DGGML_CUDA_FA_ALL_QUANTS=OFF -DLLAMA_CURL=OFF \
            -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=OFF \
            -DLLAMA_BUILD_APP=OFF -DGGML_CUDA_CPOOL=ON -DGGML_CUDA_CPOOL_DIR="$ROOT" ${LLAMA_CMAKE_ARGS:-} \
            >"$WORK/configure.log" 2>&1 || { tail -20 "$WORK/configure.log"; die "configure failed"; }
    fi
    local t0=$SECONDS
    ninja -C "$BUILD" test-backend-ops llama-bench llama-completion llama-quantize llama-speculative-simple \
        llama-batched-bench \
        >"$WORK/build.log" 2>&1 ||
        { tail -30 "$WORK/build.log"; die "build failed"; }
    say "built in $((SECONDS - t0)) s"
}

# LLAMA_MODELS names them shape-type: f16 is written, q8_0 quantized from it
step_models() {
    for name in $MODEL_LIST; do
        local shape=${name%%-*} type=${name#*-}
        [ -f "$MODELS/$name.gguf" ] && continue
        [ -f "$MODELS/$shape-f16.gguf" ] || python3 "$ROOT/scripts/llama-model.py" --llama-cpp "$SRC" --shape "$shape" \
            --out "$MODELS/$shape-f16.gguf" || die "writing the $shape model failed"
        [ "$type" = f16 ] && continue
        "$BIN/llama-quantize" "$MODELS/$shape-f16.gguf" "$MODELS/$name.gguf" "$type" >"$WORK/quantize-$name.log" 2>&1 ||
            die "quantizing $name failed"
        [[ " $MODEL_LIST " == *" $shape-f16 "* ]] || rm -f "$MODELS/$shape-f16.gguf" # only a step
    done
    ls -la "$MODELS"
}

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
    local jobs=$(($(nproc) / (4 * at_once)))
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
        # every allocation refused: the retries cannot help, the adapter's message ends it
        persistent) spec="fail=$(alloc_call "$k"):1+" ;;
    esac
    say "faults: $k with $spec, exit $(GEN_ARGS="-lv 5" generate "$k-$f" "$k" "$tokens" \
        GGML_CUDA_POOL_FAULT="$spec" GGML_CUDA_POOL_LOG=debug)"
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

step_memcheck() {
    for k in ${MEMCHECK_KINDS:-$(module_kinds)}; do
        [ -s "$RESULTS/memcheck-$k.log" ] && continue
        say "memcheck: $k"
        env $(pool_env "$k") CUDA_VISIBLE_DEVICES=$GPU \
            GGML_CUDA_POOL_FAULT="${MEMCHECK_FAULT:-prob=0.05;on=$(alloc_call "$k");seed=11}" \
            timeout "${MEMCHECK_TIMEOUT:-0}" compute-sanitizer --tool memcheck \
            --leak-check full "$BIN/llama-completion" -m "$MODELS/1b-f16.gguf" -p "$PROMPT" -n 16 --temp 0 \
            --seed 1 --ignore-eos -no-cnv -ngl 99 -fa on -ctk q8_0 -ctv q8_0 -c 1024 \
            >"$RESULTS/memcheck-$k.txt" 2>"$RESULTS/memcheck-$k.log"
        grep -h 'ERROR SUMMARY' "$RESULTS/memcheck-$k.log"
    done
}

# llama-bench, configurations interleaved round by round: each round runs every configuration
# once (BENCH_REPS repetitions each); every run appends its JSONL and its pools' statistics.
# BENCH_ROTATE=1: a round is one process, its contexts taking the configurations in turn
# (GGML_CUDA_POOL_ROTATE), every depth once per configuration; scripts/llama-bench-split.py then
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

# whether BENCH_DEADLINE has passed (saying so, before $1)
past_deadline() {
    [ -n "${BENCH_DEADLINE:-}" ] && [ "$(date +%s)" -ge "$BENCH_DEADLINE" ] || return 1
    say "deadline reached before $1; the next call resumes"
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
        python3 "$ROOT/scripts/llama-bench-split.py" "$RESULTS" "$prefix" "$r" >>"$dir/$prefix-r$r.log" 2>&1; then
        say "bench round $r: $m KV $kv, rotating: $(grep -c . "$dir/$prefix-r$r.jsonl") tests"
    else
        say "bench round $r: $m KV $kv, rotating: FAILED ($(tail -1 "$dir/$prefix-r$r.log"))"
    fi
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
PRESSURE_PROMPT_REPEAT=${PRESSURE_PROMPT_REPEAT:-600} # copies of $PROMPT: about 6000 tokens of prompt
PRESSURE_CONFIGS=${PRESSURE_CONFIGS:-ggml ggml-legacy legacy plain vmm async}

# one run of a workload under pressure: the caller's holder (if any) is in place
pressure_run() {
    local tag=$1 config=$2 workload=$3 model=$MODELS/${PRESSURE_MODEL:-8b-q8_0}.gguf
    local common=(-m "$model" -ngl 99 -fa on -ctk q8_0 -ctv q8_0 -c 32768) cmd
    case $workload in
        completion) cmd=("$BIN/llama-completion" "${common[@]}" -f "$WORK/pressure-prompt.txt"
                         -n "${PRESSURE_TOKENS:-64}" --temp 0 --seed 1 --ignore-eos -no-cnv ${PRESSURE_ARGS:-}) ;;
        growing) cmd=("$BIN/llama-batched-bench" "${common[@]}" -npp "${GROWING_PP:-128,512,1024,2048}"
                      -ntg "${GROWING_TG:-16}" -npl 1 -b 2048 -ub 2048 ${GROWING_ARGS:-}) ;;
        *) die "unknown workload $workload" ;;
    esac
    sample_start "$RESULTS/$tag.smi"
    env $(pool_env "$config") CUDA_VISIBLE_DEVICES=$GPU GGML_CUDA_POOL_STATS="$RESULTS/$tag.stats" \
        GGML_CUDA_POOL_LOG=info CUDA_MODULE_LOADING=${PRESSURE_MODULE_LOADING:-LAZY} "${cmd[@]}" \
        >"$RESULTS/$tag.txt" 2>"$RESULTS/$tag.log"
    echo "exit $?" >>"$RESULTS/$tag.log"
    stop_bg "$SAMPLER"
}

# S of a workload into $RESULTS/PREFIX-fixed.txt and FIXED (IDLE: memory.used before it): the
# unconstrained PRESSURE_BASE run's peak above idle less its pools' peak
pressure_fixed() {
    local prefix=$1 workload=$2 base=${PRESSURE_BASE:-ggml-legacy} total peak pools
    command -v nvcc >/dev/null || die "nvcc builds hold-memory"
    [ -x "$WORK/hold-memory" ] || nvcc -O2 -o "$WORK/hold-memory" "$ROOT/scripts/hold-memory.cu" || die "hold-memory"
    IDLE=$(gpu_mib used)
    total=$(gpu_mib total)
    [ -s "$RESULTS/$prefix-free.log" ] || pressure_run "$prefix-free" "$base" "$workload"
    grep -q '^exit 0$' "$RESULTS/$prefix-free.log" || die "$prefix: the unconstrained $base run failed"
    peak=$(peak_of "$RESULTS/$prefix-free.smi")
    pools=$(grep -ao 'peak_reserved_mib=[0-9.]*' "$RESULTS/$prefix-free.stats" | cut -d= -f2 |
        awk '{ s += $1 } END { printf "%.0f", s }')
    FIXED=$((peak - IDLE - pools))
    say "$prefix: $base unconstrained peaks at $((peak - IDLE)) MiB above idle, its pools at $pools MiB: S = $FIXED MiB"
    echo "idle_mib $IDLE total_mib $total peak_mib $peak pools_mib $pools fixed_mib $FIXED" >"$RESULTS/$prefix-fixed.txt"
}

# every configuration of $3 at each H of $4, from high to low, until it fails
pressure_sweep() {
    local prefix=$1 workload=$2 configs=$3 heads=$4
    for c in $configs; do
        for h in $heads; do
            local tag="$prefix-$(tag_of "$c")-h$h"
            if [ ! -s "$RESULTS/$tag.log" ]; then
                hold_start $((FIXED + h)) "$RESULTS/$tag.hold"
                pressure_run "$tag" "$c" "$workload"
                stop_bg "$HOLDER"
            fi
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
    # the co-tenant: a second model loading and unloading beside each configuration
    local co_h=${PRESSURE_COTENANT_HEADROOM:-64}
    [ -s "$RESULTS/cotenant-free.txt" ] || {
        local flag=$WORK/cotenant-measure
        sample_start "$RESULTS/cotenant-free.smi"
        touch "$flag"; rm -f "$flag.loads"; cotenant_loop "$flag" & local loop=$!
        sleep 8; rm -f "$flag"; wait "$loop"; stop_bg "$SAMPLER"
        echo "peak_mib $(( $(peak_of "$RESULTS/cotenant-free.smi") - IDLE ))" >"$RESULTS/cotenant-free.txt"
    }
    local co_peak
    co_peak=$(awk '{print $2}' "$RESULTS/cotenant-free.txt")
    for c in $PRESSURE_CONFIGS; do
        local tag="cotenant-$(tag_of "$c")-h$co_h" flag=$WORK/cotenant-$c
        [ -s "$RESULTS/$tag.log" ] && continue
        touch "$flag"; rm -f "$flag.loads"
        hold_start $((FIXED + co_h + co_peak)) "$RESULTS/$tag.hold"
        cotenant_loop "$flag" &
        local loop=$!
        pressure_run "$tag" "$c" completion
        rm -f "$flag"; wait "$loop"; stop_bg "$HOLDER"
        mv "$flag.loads" "$RESULTS/$tag.loads"
        say "co-tenant: $c H=$co_h MiB (+$co_peak MiB for the co-tenant): $(grep -ao 'exit [0-9]*' "$RESULTS/$tag.log" | tail -1), co-tenant loads $(grep -c 'exit 0' "$RESULTS/$tag.loads") ok of $(grep -c . "$RESULTS/$tag.loads")"
    done
}

# prompts of growing length into one context under pressure (llama-batched-bench): a pool that
# keeps the buffers of the shorter prompts cached holds them beside the longer ones'
step_growing() {
    pressure_fixed growing growing
    pressure_sweep growing growing "${GROWING_CONFIGS:-$PRESSURE_CONFIGS}" \
        "${GROWING_HEADROOM:-256 128 96 80 64 56 48 40 32 24 16}"
}

# the pool calls of a llama-bench depth sweep, for pool-replay (README: Trace and replay); the
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
    python3 "$ROOT/scripts/llama-summary.py" "$RESULTS" | tee "$RESULTS/summary.md"
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(prepare build models ops complete faults soak memcheck bench memory speculative pressure growing trace summary)
t0=$SECONDS
for s in "${steps[@]}"; do
    declare -F "step_$s" >/dev/null || die "unknown step: $s"
    say "== $s"
    "step_$s"
done
say "done in $((SECONDS - t0)) s"
