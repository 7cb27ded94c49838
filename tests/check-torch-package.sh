#!/usr/bin/env bash
# The PyTorch package as a user installs it: pip install --no-build-isolation ./integrations/pytorch
# into a fresh virtual environment without torch (so the library raises standard exceptions), offline,
# with the setuptools the environment has (wheel from Debian's python3-wheel-whl where it has none).
# Then, from another directory with no path set: the package imports, its library lies inside it and
# loads, and use_ggml_cuda_pool("legacy"), with no library argument, hands that library to a stand-in
# torch's pluggable allocator after the library's own check of the settings. Exits 77 (ctest:
# skipped), with the reason, where the python makes no virtual environment with pip.
#   check-torch-package.sh PYTHON SOURCE_DIR
set -euo pipefail
python=$1
source_dir=$2
SKIP=77
WHEELS=/usr/share/python-wheels # Debian's wheels of pip, setuptools and wheel (python3-*-whl)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset PYTHONPATH

"$python" -m venv "$work/venv" >"$work/venv.log" 2>&1 ||
    { echo "SKIPPED: $python -m venv failed (python3-venv): $(tail -1 "$work/venv.log")"; exit $SKIP; }
venv=$work/venv/bin/python
for module in setuptools wheel; do
    "$venv" -c "import $module" 2>/dev/null && continue
    "$venv" -m pip install -q --no-index "$WHEELS"/"$module"-*.whl >"$work/$module.log" 2>&1 ||
        { echo "SKIPPED: no $module for the virtual environment: $(tail -1 "$work/$module.log")"; exit $SKIP; }
done
"$venv" -c 'import torch' 2>/dev/null && { echo "FAILED: the virtual environment imports torch"; exit 1; }

"$venv" -m pip install -v --no-build-isolation --no-index "$source_dir/integrations/pytorch" >"$work/pip.log" 2>&1 ||
    { tail -40 "$work/pip.log"; echo "FAILED: pip install"; exit 1; }
grep -o 'PyTorch library: .*' "$work/pip.log"

mkdir "$work/elsewhere"
cd "$work/elsewhere"
# the few calls of torch the helper makes, recording what it installs
PYTHONPATH="$source_dir/tests/standins/torch" "$venv" - "$work/venv" <<'PY'
import ctypes, os, sys
import ggml_cuda_pool_torch as g
import torch
venv = os.path.realpath(sys.argv[1])
package = os.path.dirname(os.path.realpath(g.__file__))
library = os.path.join(package, g.LIBRARY_NAME)
assert package.startswith(venv + os.sep), f"the package comes from {package}, not the environment"
assert os.path.isfile(library), f"no {g.LIBRARY_NAME} in {package}"
assert ctypes.CDLL(library).ggml_cuda_pool_torch_raises_torch_errors() == 0, "built against a torch"
path = g.use_ggml_cuda_pool("legacy")
assert path == library and [a.path for a in torch.installed] == [library], (path, torch.installed)
assert os.environ["GGML_CUDA_POOL"] == "legacy"
print(f"installed: {library}, standard exceptions; use_ggml_cuda_pool('legacy') installs it")
PY
