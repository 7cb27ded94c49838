# llama.sh steps: the llama.cpp (or ggml) tree, its build and the models (sourced)
#   prepare   unpack the snapshot, apply integrations/llama.cpp/ggml-cuda-pool.patch and put in
#             llama-server (LLAMA_TARGETS: only these)'s stand-ins (SERVER_STANDINS: ../shared/llama.cpp/server-standins)
#   build     cmake + ninja (GGML_RPC on): test-backend-ops, llama-bench, llama-completion,
#             llama-quantize, llama-speculative-simple, llama-batched-bench, ggml-rpc-server,
#             llama-server; in the standalone ggml, test-backend-ops
#   models    random-weight Llama models (scripts/llama-model.py): LLAMA_MODELS, named shape-type
#             (1b-f16, 1b-q8_0, 8b-q8_0): f16 is written, q8_0 quantized from it
#   graphs    GRAPHS_STEPS ("build ops") over the prepared tree twice side by side, built with CUDA
#             graphs off and on, in $LLAMA_WORK/graphs-off and graphs-on (each its build and results)

step_prepare() {
    if [ -n "${LLAMA_CPP_DIR:-}" ]; then
        [ -d "$SRC/ggml/src/ggml-cuda" ] || [ -d "$SRC/src/ggml-cuda" ] ||
            die "LLAMA_CPP_DIR=$SRC is not a llama.cpp or ggml tree"
    elif [ ! -d "$SRC" ]; then
        local snapshot=${LLAMA_SNAPSHOT:-$(ls "$ROOT/../shared/$TREE/$TREE"-*.tar.xz 2>/dev/null | head -1)}
        [ -f "$snapshot" ] || die "no snapshot: set LLAMA_SNAPSHOT or LLAMA_CPP_DIR"
        say "unpacking $snapshot"
        tar -xJf "$snapshot" -C "$WORK" || die "unpacking failed"
        # ggml's snapshot (a git archive) names its commit in the file's name only
        [ -f "$SRC/.commit" ] || basename "$snapshot" .tar.xz | sed 's/.*-//' >"$SRC/.commit"
    fi
    local commit
    commit=$(cat "$SRC/.commit" 2>/dev/null || git -C "$SRC" rev-parse HEAD 2>/dev/null)
    [[ -n $commit && $PINNED == "$commit"* ]] ||
        say "warning: $SRC is at ${commit:-an unknown commit}, the patch is for $PINNED"
    if patch -d "$SRC" -p"$STRIP" -R --dry-run -s -f <"$PATCH" >/dev/null 2>&1; then
        say "patch already applied"
    else
        patch -d "$SRC" -p"$STRIP" -s -f <"$PATCH" || die "the patch does not apply to $SRC"
        say "patch applied"
    fi
    [ "$TREE" = llama.cpp ] || return 0
    # the trimmed snapshot leaves pocs/ out, which the examples' CMakeLists still adds
    [ -f "$SRC/pocs/CMakeLists.txt" ] || { mkdir -p "$SRC/pocs" && : >"$SRC/pocs/CMakeLists.txt"; }
    # llama-server needs the web UI and an audio decoder, which the trimmed snapshot leaves out
    local standins=${SERVER_STANDINS:-$ROOT/../shared/llama.cpp/server-standins}
    [ -f "$SRC/tools/ui/CMakeLists.txt" ] && [ -f "$SRC/vendor/miniaudio/miniaudio.h" ] && return 0
    if [ -f "$standins/install.sh" ]; then
        bash "$standins/install.sh" "$SRC" >/dev/null || die "installing llama-server's stand-ins failed"
    else
        say "warning: no llama-server stand-ins ($standins): the build leaves llama-server out"
    fi
}

step_build() {
    [ -d "$SRC" ] || die "no source tree: run the prepare step"
    local arch server=OFF server_target=
    [ -f "$SRC/tools/ui/CMakeLists.txt" ] && server=ON server_target=llama-server
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
    if [ ! -f "$BUILD/build.ninja" ]; then
        cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
            -DCMAKE_CUDA_ARCHITECTURES="${arch:-90}" -DGGML_CUDA_FA_ALL_QUANTS=OFF -DLLAMA_CURL=OFF \
            -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=$server -DMTMD_VIDEO=OFF \
            -DLLAMA_BUILD_APP=OFF -DGGML_RPC=ON -DGGML_CUDA_POOL=ON -DGGML_CUDA_POOL_DIR="$ROOT" ${LLAMA_CMAKE_ARGS:-} \
            >"$WORK/configure.log" 2>&1 || { tail -20 "$WORK/configure.log"; die "configure failed"; }
    fi
    local t0=$SECONDS targets="test-backend-ops llama-bench llama-completion llama-quantize
        llama-speculative-simple llama-batched-bench ggml-rpc-server $server_target"
    [ "$TREE" = ggml ] && targets=test-backend-ops # the standalone ggml has none of llama.cpp's tools
    ninja -C "$BUILD" ${LLAMA_TARGETS:-$targets} >"$WORK/build.log" 2>&1 ||
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

# two llama.sh of their own over this tree, one a CUDA graphs setting: the build's option decides
# what ggml-cuda compiles (GGML_CUDA_DISABLE_GRAPHS=1 only skips the graphs at run time)
step_graphs() {
    [ -d "$SRC" ] || die "no source tree: run the prepare step"
    # the two test-backend-ops of a configuration share the cores: each sizes its workers to half
    local settings=(off on) pids=() g i jobs=$(($(nproc) / (8 * $(wc -w <<<"$CONFIGS"))))
    for g in "${settings[@]}"; do
        env -u LLAMA_BUILD LLAMA_WORK="$WORK/graphs-$g" LLAMA_CPP_DIR="$SRC" OPS_JOBS="${OPS_JOBS:-$jobs}" \
            LLAMA_CMAKE_ARGS="${LLAMA_CMAKE_ARGS:-} -DGGML_CUDA_GRAPHS=${g^^}" \
            bash "$ROOT/scripts/llama.sh" ${GRAPHS_STEPS:-build ops} >"$WORK/graphs-$g.log" 2>&1 &
        pids+=($!)
    done
    for i in 0 1; do
        wait "${pids[i]}"
        say "graphs ${settings[i]}: exit $? ($WORK/graphs-${settings[i]}.log)"
        tail -n 6 "$WORK/graphs-${settings[i]}.log"
    done
}
