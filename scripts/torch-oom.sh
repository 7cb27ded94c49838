#!/usr/bin/env bash
# On a CUDA machine with torch, tests/torch-oom.py without installing the package: checks that the
# python imports torch and sees a device, then configures and builds only the PyTorch library
# (Release, against that torch's headers, so that a refusal raises torch.OutOfMemoryError) in a
# build directory outside the tree, and runs the script on the package folder it builds
# (PYTHONPATH). It prints one row per configuration (PyTorch's allocator and every kind, each in a
# fresh process) and the VMM reservation's cost. Needs nvcc's toolkit, cmake, ninja and a python3
# that imports torch.
#   bash scripts/torch-oom.sh
# PYTHON: that python3 (default: python3 on PATH); BUILD_DIR: the build directory (default
# ${TMPDIR:-/tmp}/ggml-cuda-pool-torch). Exit status: the script's (77: SKIPPED, with the reason).
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(command -v "${PYTHON:-python3}")
SKIP=77
# before the build: without torch or a device there is nothing to run it on
why=$("$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else "torch sees no CUDA device")' \
    2>&1 >/dev/null) || { echo "SKIPPED: $python: ${why##*$'\n'}"; exit $SKIP; }
BUILD_DIR=${BUILD_DIR:-${TMPDIR:-/tmp}/ggml-cuda-pool-torch}
mkdir -p "$BUILD_DIR"
log=$BUILD_DIR/configure.log
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DGGML_CPOOL_TORCH=ON \
    -DGGML_CPOOL_TESTS=OFF -DGGML_CPOOL_TOOLS=OFF -DPython3_EXECUTABLE="$python" >"$log" 2>&1 ||
    { cat "$log"; exit 1; }
grep -h 'PyTorch library:' "$log" || true
cmake --build "$BUILD_DIR" --target ggml-cuda-pool-torch >"$BUILD_DIR/build.log" 2>&1 ||
    { tail -40 "$BUILD_DIR/build.log"; exit 1; }
PYTHONPATH="$BUILD_DIR/integrations/pytorch${PYTHONPATH:+:$PYTHONPATH}" exec "$python" tests/torch-oom.py \
    --require-torch-errors
