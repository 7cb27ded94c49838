#!/usr/bin/env bash
# The PyTorch package as a user installs it: pip install --no-build-isolation ./integrations/pytorch
# into a fresh virtual environment, offline, with the setuptools the environment has. Where it has no
# wheel (and a setuptools that needs one), and then where it cannot import torch, the install is
# refused with a line pip shows that says what to install; wheel then comes from Debian's
# python3-wheel-whl and a stand-in torch (no headers: the library raises standard exceptions) from tests/.
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
# pip install of the package, as a user types it (no -v): what it says lands in $work/$1.log
install() {
    local log=$1
    shift
    "$@" "$venv" -m pip install --no-build-isolation --no-index "$source_dir/integrations/pytorch" >"$work/$log.log" 2>&1
}
# a refused install names what is missing and how to get it, in what pip shows without -v
expect_refused() { # LOG, the line's part, WHAT
    if install "$1" env; then
        echo "FAILED: $3: pip installed it"
        exit 1
    elif grep -q -- "$2" "$work/$1.log"; then
        echo "ok   $3"
    else
        tail -20 "$work/$1.log"
        echo "FAILED: $3"
        exit 1
    fi
}
install_wheel() { "$venv" -m pip install -q --no-index "$WHEELS"/"$1"-*.whl >"$work/$1.log" 2>&1; }
"$venv" -c "import setuptools" 2>/dev/null || install_wheel setuptools ||
    { echo "SKIPPED: no setuptools for the virtual environment: $(tail -1 "$work/setuptools.log")"; exit $SKIP; }
bdist_wheel='import importlib.util as u, sys; sys.exit(not (u.find_spec("wheel") or u.find_spec("setuptools.command.bdist_wheel")))'
if ! "$venv" -c "$bdist_wheel" 2>/dev/null; then
    expect_refused no-wheel "no 'wheel' package.*python3-wheel" "without wheel, setup.py names it and how to get it"
    install_wheel wheel || { echo "SKIPPED: no wheel for the virtual environment: $(tail -1 "$work/wheel.log")"; exit $SKIP; }
fi
"$venv" -c 'import torch' 2>/dev/null && { echo "FAILED: the virtual environment imports torch"; exit 1; }
expect_refused no-torch "cannot import torch.*pip install torch" "without torch, setup.py refuses, saying to install it"

# the stand-in torch lets the build go on: no torch headers, so standard exceptions
install pip env PYTHONPATH="$source_dir/tests/standins/torch" || { tail -40 "$work/pip.log"; echo "FAILED: pip install"; exit 1; }
echo "ok   installed beside an importable torch (a stand-in: the library raises standard exceptions)"

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
