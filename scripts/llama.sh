#!/usr/bin/env bash
# llama.cpp with ggml-cuda-pool, on a CUDA machine (docs/llama-cpp.md). Unpacks the pinned snapshot
# (or takes LLAMA_CPP_DIR, a checkout at that commit), applies the integration patch, builds
# llama.cpp with CUDA for the local GPU, writes random-weight models, then runs llama.cpp's own
# tools once per pool configuration, side by side, in one binary (GGML_CUDA_POOL picks ggml's
# own pools or a module kind at run time). LLAMA_TREE=ggml takes the later standalone ggml instead
# (../shared/ggml), where only test-backend-ops is built. The steps, each in the file named:
#
#   prepare build models graphs          llama/setup.sh     the tree, the build, the models, graphs off and on
#   ops complete faults soak memcheck memcheck_oom
#                                        llama/checks.sh    test-backend-ops, greedy text, faults
#   bench memory speculative pairs trace summary
#                                        llama/bench.sh     speed, total memory, time per pool call, the tables
#   pressure cotenant growing            llama/pressure.sh  runs with S + H MiB left free
#   longctx longctx_budget               llama/longctx.sh   the K/V conversions over long contexts
#   rpc                                  llama/rpc.sh       the RPC backend: servers, clients, a killed server
#   serve                                llama/serve.sh     llama-server under load, a memory spike, a fault window
#   spikes                               llama/spikes.sh    llama-server for minutes beside random memory spikes
#
#   scripts/llama.sh [step ...]     (default: every step but cotenant, longctx, rpc, serve and spikes, in that order)
#
# Every step is resumable: what finished leaves its result under $LLAMA_WORK/results and is not
# run again (delete the file to redo it); build outputs and models stay in $LLAMA_WORK, outside
# the tree. BENCH_DEADLINE (epoch seconds) bounds a call: no run starts after it.
#
# A configuration is ggml's own pools (ggml, ggml-legacy) or a module kind, optionally with
# ":kvpool" (the flash-attention K/V f16 conversions from the pool, GGML_CUDA_POOL_KV_F16=pool)
# or ":kvpool1x" (the same without OVERALLOCATE, GGML_CUDA_POOL_KV_F16=pool-1x), or ":declared"
# (the adapter declares ggml's captures, GGML_CUDA_POOL_CAPTURES=declared), ":lazy" (kernels loaded at
# first use, CUDA_MODULE_LOADING=LAZY, as CUDA does by default and ggml's pools run) or ":nowait"
# (GGML_CUDA_POOL_WAIT_MS=0); variants combine (legacy:kvpool:nowait).
#
# Environment: LLAMA_WORK (/tmp/llama-work), LLAMA_TREE (llama.cpp or ggml), LLAMA_CPP_DIR (a
# checkout of that tree), LLAMA_SNAPSHOT (the .tar.xz; default ../shared/TREE/TREE-*.tar.xz),
# LLAMA_BUILD ($LLAMA_WORK/build), LLAMA_CMAKE_ARGS, CONFIGS ("ggml legacy plain vmm async"),
# LLAMA_MODELS ("1b-f16 1b-q8_0 8b-q8_0"), LLAMA_GPU (0); each step file names the variables of its steps.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${LLAMA_WORK:-/tmp/llama-work}
TREE=${LLAMA_TREE:-llama.cpp}
SRC=${LLAMA_CPP_DIR:-$WORK/$TREE}
BUILD=${LLAMA_BUILD:-$WORK/build}
RESULTS=$WORK/results
MODELS=$WORK/models
BIN=$BUILD/bin
CONFIGS=${CONFIGS:-"ggml legacy plain vmm async"}
MODEL_LIST=${LLAMA_MODELS:-"1b-f16 1b-q8_0 8b-q8_0"}
PATCH=$ROOT/integrations/llama.cpp/ggml-cuda-pool.patch
# each tree at the upstream commit the patch is known to work at, and its paths' depth in the patch
case $TREE in
    llama.cpp) PINNED=81ff7abe50b95fb81cc70a6cdba1eb1a02a48f62 STRIP=1 ;;
    ggml) PINNED=d99724f2b141fed9e1a9f402213506c081433465 STRIP=2 ;;
    *) echo "llama.sh: LLAMA_TREE is llama.cpp or ggml, not $TREE" >&2; exit 1 ;;
esac
PROMPT="The pools of a CUDA backend hand out scratch buffers"
GPU=${LLAMA_GPU:-0} # one GPU: llama.cpp would split a model over every visible one
mkdir -p "$RESULTS" "$MODELS"
export LD_LIBRARY_PATH=$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}


for part in lib setup checks bench pressure longctx rpc serve spikes; do
    . "$ROOT/scripts/llama/$part.sh"
done

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(prepare build models ops complete faults soak memcheck bench memory speculative pairs pressure growing trace summary)
t0=$SECONDS
for s in "${steps[@]}"; do
    declare -F "step_$s" >/dev/null || die "unknown step: $s"
    say "== $s"
    "step_$s"
done
say "done in $((SECONDS - t0)) s"
