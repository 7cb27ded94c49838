#!/usr/bin/env bash
# Without a GPU: the llama.cpp integration patch applies to the pinned snapshot, and the adapter
# compiles with nvcc against the patched ggml-cuda headers. Exit 0 passed, 1 failed, 2 skipped
# (no snapshot: set LLAMA_SNAPSHOT to the .tar.xz or LLAMA_CPP_DIR to a pristine checkout).
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=${LLAMA_CHECK_DIR:-build-llama-check}
snapshot=${LLAMA_SNAPSHOT:-$(ls ../shared/llama.cpp/llama.cpp-*.tar.xz 2>/dev/null | head -1)}
rm -rf "$DIR" && mkdir -p "$DIR"
if [ -n "${LLAMA_CPP_DIR:-}" ]; then
    cp -r "$LLAMA_CPP_DIR" "$DIR/llama.cpp" || exit 1
elif [ -f "$snapshot" ]; then
    tar -xJf "$snapshot" -C "$DIR" || { echo "llama-check: cannot unpack $snapshot"; exit 1; }
else
    echo "llama-check: SKIPPED: no llama.cpp snapshot (LLAMA_SNAPSHOT or LLAMA_CPP_DIR)"
    exit 2
fi
src=$DIR/llama.cpp
patch -d "$src" -p1 -s -f --dry-run <integrations/llama.cpp/ggml-cuda-pool.patch >"$DIR/patch.log" 2>&1 &&
    patch -d "$src" -p1 -s -f <integrations/llama.cpp/ggml-cuda-pool.patch >>"$DIR/patch.log" 2>&1 ||
    { cat "$DIR/patch.log"; echo "llama-check: FAILED: the patch does not apply"; exit 1; }
command -v nvcc >/dev/null || { echo "llama-check: FAILED: nvcc is not on PATH"; exit 1; }
# every adapter source, each named in the list the integration builds into ggml-cuda
adapter=(ggml-cuda/adapter/*.cu)
for cu in "${adapter[@]}"; do
    grep -q "/$cu\b" integrations/llama.cpp/ggml-cuda-pool.cmake ||
        { echo "llama-check: FAILED: $cu is not in integrations/llama.cpp/ggml-cuda-pool.cmake"; exit 1; }
    nvcc -std=c++17 -arch=sm_90 -DGGML_CUDA_POOL \
        -I"$src/ggml/include" -I"$src/ggml/src" -I"$src/ggml/src/ggml-cuda" -Iinclude -Iggml-cuda/adapter \
        -c "$cu" -o "$DIR/$(basename "$cu" .cu).o" 2>&1 | tee -a "$DIR/nvcc.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "llama-check: FAILED: $cu does not compile"; exit 1; }
done
echo "llama-check: the patch applies to $(cat "$src/.commit" 2>/dev/null || echo 'the checkout'), the adapter" \
    "compiles (${#adapter[@]} sources)"
