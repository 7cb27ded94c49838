#!/usr/bin/env bash
# Without a GPU: the llama.cpp integration patch applies to each tree it is known to work on, the
# pinned llama.cpp (patch -p1) and the later standalone ggml (patch -p2), and there the tree's own
# CMake compiles with nvcc what the patch changes, three ways: the integration on with CUDA graphs
# off (ggml's standalone default) and on (llama.cpp's), and the integration off with graphs off (a
# ggml that carries the patch without taking the option). Each way compiles every .cu source the
# patch changes (with the headers it changes) and, with the integration on, every adapter source.
# Exit 0 passed, 1 failed, 2 skipped: a tree without a snapshot, named (LLAMA_SNAPSHOT, the .tar.xz,
# or LLAMA_CPP_DIR, a pristine checkout; GGML_SNAPSHOT or GGML_DIR for ggml).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=${LLAMA_CHECK_DIR:-build-llama-check}
PATCH=integrations/llama.cpp/ggml-cuda-pool.patch
JOBS=${LLAMA_CHECK_JOBS:-2}
# each way: its name, then its CMake arguments
ways=("graphs-off -DGGML_CUDA_POOL=ON -DGGML_CUDA_GRAPHS=OFF"
    "graphs-on -DGGML_CUDA_POOL=ON -DGGML_CUDA_GRAPHS=ON"
    "option-off -DGGML_CUDA_POOL=OFF -DGGML_CUDA_GRAPHS=OFF")
# PTX only: what the patch changes is host code, and ptxas would add time, not coverage
ARCH=90-virtual
# llama.cpp configured without what it builds on top of ggml
LLAMA_OFF="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF"
patched=($(sed -n 's|^+++ b/.*/\([^/]*\.cu\)$|\1|p' "$PATCH"))
adapter=(ggml-cuda/adapter/*.cu)
rm -rf "$DIR" && mkdir -p "$DIR"
for tool in nvcc cmake ninja; do
    command -v $tool >/dev/null || { echo "llama-check: FAILED: $tool is not on PATH"; exit 1; }
done

# the objects that build sources $2... into ggml-cuda, from ninja's targets in $1; fails naming a
# source with none (an adapter source missing from integrations/llama.cpp/ggml-cuda-pool.cmake)
objects_of() {
    local targets=$1 cu object
    shift
    for cu in "$@"; do
        object=$(grep -o "^[^:]*/ggml-cuda\.dir/\([^:]*/\)\?${cu//./\\.}\.o:" <<<"$targets" | tr -d :)
        [ -n "$object" ] || { echo "llama-check: ggml-cuda builds no $cu" >&2; return 1; }
        echo "$object"
    done
}

# check_tree NAME STRIP CHECKOUT SNAPSHOT WHERE [CMAKE_ARGS...]: the tree copied (or unpacked),
# patched, configured and compiled each way; WHERE says where a snapshot is looked for. Returns 0
# passed, 1 failed, 2 no snapshot
check_tree() {
    local name=$1 strip=$2 checkout=$3 snapshot=$4 where=$5
    shift 5
    local src=$DIR/$name build=$DIR/$name-build said='' failed=0 way
    if [ -n "$checkout" ]; then
        cp -r "$checkout" "$src" || return 1
    elif [ -f "$snapshot" ]; then
        tar -xJf "$snapshot" -C "$DIR" || { echo "llama-check: FAILED: cannot unpack $snapshot"; return 1; }
    else
        echo "llama-check: $name SKIPPED: no snapshot ($where)"
        return 2
    fi
    patch -d "$src" -p"$strip" -s -f --dry-run <"$PATCH" >"$src.patch.log" 2>&1 &&
        patch -d "$src" -p"$strip" -s -f <"$PATCH" >>"$src.patch.log" 2>&1 ||
        { cat "$src.patch.log"; echo "llama-check: FAILED: the patch does not apply to $name (-p$strip)"; return 1; }
    for way in "${ways[@]}"; do
        local w=${way%% *} log=$build.${way%% *}.log sources=("${patched[@]}") objects
        # one build folder a tree: CMake detects the compilers once, and each way reconfigures it
        cmake -S "$src" -B "$build" -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=$ARCH \
            -DGGML_CUDA_POOL_DIR="$ROOT" ${way#* } "$@" >"$log" 2>&1 ||
            { tail -20 "$log"; echo "llama-check: FAILED: $name does not configure $w"; failed=1; continue; }
        [[ $way == *POOL=ON* ]] && sources+=("${adapter[@]##*/}")
        objects=($(objects_of "$(ninja -C "$build" -t targets all)" "${sources[@]}")) ||
            { echo "llama-check: FAILED: $name $w leaves a source out"; failed=1; continue; }
        ninja -C "$build" -j "$JOBS" "${objects[@]}" >>"$log" 2>&1 ||
            { grep -E 'error|^FAILED' "$log" | head -20; echo "llama-check: FAILED: $name $w does not compile"; failed=1; }
        said+="${said:+, }$w ${#objects[@]}"
    done
    [ "$failed" -eq 0 ] || return 1
    local at
    at=$(cat "$src/.commit" 2>/dev/null || basename "${checkout:-$snapshot}" .tar.xz)
    echo "llama-check: $name $at: the patch applies (-p$strip), and nvcc compiles its sources and the adapter's" \
        "(sources compiled: $said)"
}

results=()
check_tree llama.cpp 1 "${LLAMA_CPP_DIR:-}" \
    "${LLAMA_SNAPSHOT:-$(ls ../shared/llama.cpp/llama.cpp-*.tar.xz 2>/dev/null | head -1)}" \
    "LLAMA_SNAPSHOT, LLAMA_CPP_DIR or ../shared/llama.cpp/llama.cpp-*.tar.xz" $LLAMA_OFF
results+=($?)
check_tree ggml 2 "${GGML_DIR:-}" "${GGML_SNAPSHOT:-$(ls ../shared/ggml/ggml-*.tar.xz 2>/dev/null | head -1)}" \
    "GGML_SNAPSHOT, GGML_DIR or ../shared/ggml/ggml-*.tar.xz"
results+=($?)
[[ " ${results[*]} " == *" 1 "* ]] && exit 1
[[ " ${results[*]} " == *" 2 "* ]] && exit 2
exit 0
