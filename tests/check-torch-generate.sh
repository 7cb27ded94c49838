#!/usr/bin/env bash
# scripts/torch_generate.py on the tiny config: PyTorch's own allocator and every pool kind, each
# in a fresh process, one round, on the package the build lays out (its folder on PYTHONPATH);
# fails when a run fails or logits differ from native's. Exits 77 (ctest: skipped), with the
# reason, where torch or transformers cannot be imported or torch sees no CUDA device.
#   check-torch-generate.sh BUILD/integrations/pytorch PATH/TO/torch_generate.py
set -u
export PYTHONPATH=$1${PYTHONPATH:+:$PYTHONPATH}
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
exec python3 "$script" --config tiny --prompt 32 --gen 16 --rounds 1
