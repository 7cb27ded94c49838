#!/usr/bin/env bash
# scripts/torch_generate.py on the tiny config: PyTorch's own allocator and every pool kind, each
# in a fresh process, one round; fails when a run fails or logits differ from native's. Exits 77
# (ctest: skipped), with the reason, where torch or transformers cannot be imported or torch sees
# no CUDA device.
#   check-torch-generate.sh PATH/TO/libggml-cuda-pool-torch.so PATH/TO/torch_generate.py
set -u
library=$1
script=$2
SKIP=77
why=$(python3 - 2>&1 <<'PY'
import sys
try:
    import torch, transformers  # noqa: F401
except Exception as e:
    sys.exit(f"cannot import torch and transformers: {e}")
if not torch.cuda.is_available():
    sys.exit("torch sees no CUDA device")
PY
) || { echo "SKIPPED: $why"; exit $SKIP; }
exec python3 "$script" --config tiny --prompt 32 --gen 16 --rounds 1 --library "$library"
