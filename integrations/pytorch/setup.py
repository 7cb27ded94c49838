"""The package ggml_cuda_pool_torch with its library inside: CMake builds libggml-cuda-pool-torch.so
from this checkout (Release, the CUDA toolkit; against the torch of the python that runs this,
where it imports one, so that a refusal raises torch.OutOfMemoryError), and the wheel holds it in
the package's folder, beside the helper that finds it there.

    pip install --no-build-isolation ./integrations/pytorch

Offline, with the setuptools and wheel already installed (Debian's do). What the build needs and
the python lacks (wheel beside a setuptools older than 70.1; torch) stops it at once, with a line
that says how to get it: pip shows a failed build's output, never a successful one's.
"""

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PACKAGE = "ggml_cuda_pool_torch"
LIBRARY = "libggml-cuda-pool-torch.so"
LOG_TAIL = 40  # lines of a failed step's log shown


def missing():
    """what this python lacks for the build, as the line that says how to get it; None when nothing"""
    # setuptools 70.1 and later make wheels themselves; before, pip needs wheel's bdist_wheel
    if not importlib.util.find_spec("wheel") and not importlib.util.find_spec("setuptools.command.bdist_wheel"):
        return (f"ggml-cuda-pool-torch: {sys.executable} has no 'wheel' package, which pip needs to build this one "
                "beside a setuptools older than 70.1: on Debian, apt-get install python3-wheel and make the "
                "virtual environment with --system-site-packages; or python3 -m pip install wheel")
    try:
        import torch  # noqa: F401  (the library is built against its headers, and is of no use without it)
    except Exception as e:
        return (f"ggml-cuda-pool-torch: {sys.executable} cannot import torch ({e}): install torch into this "
                "environment first (python3 -m pip install torch), then this package with --no-build-isolation, "
                "so that its build sees that torch (docs/pytorch.md)")
    return None


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(ggml-cuda-pool VERSION ([0-9.]+)", f.read()).group(1)


def run(cmd, log):
    """runs a build step with its output in `log`; a failure stops the install with its tail"""
    with open(log, "w") as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
    if rc != 0:
        with open(log) as f:
            tail = f.read().splitlines()[-LOG_TAIL:]
        sys.exit("\n".join(tail + [f"{shlex.join(cmd)}: exit {rc} (the whole log: {log})"]))


class build_with_cmake(build_py):
    """the helper as setuptools copies it, then the library CMake builds beside it"""

    def run(self):
        super().run()
        build = os.path.join(os.path.abspath(self.get_finalized_command("build").build_temp), "cmake")
        os.makedirs(build, exist_ok=True)
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        run(["cmake", "-S", ROOT, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release", "-DGGML_CUDA=ON",
             "-DGGML_CPOOL_TORCH=ON", "-DGGML_CPOOL_TESTS=OFF", "-DGGML_CPOOL_TOOLS=OFF",
             f"-DPython3_EXECUTABLE={sys.executable}"],
            os.path.join(build, "configure.log"))
        with open(os.path.join(build, "configure.log")) as f:
            print("".join(line for line in f if "PyTorch library:" in line), end="")
        run(["cmake", "--build", build, "--target", "ggml-cuda-pool-torch"], os.path.join(build, "build.log"))
        self.copy_file(os.path.join(build, "integrations", "pytorch", PACKAGE, LIBRARY),
                       os.path.join(self.build_lib, PACKAGE, LIBRARY))


class with_library(Distribution):
    """a wheel for this platform and python: it holds a compiled library"""

    def has_ext_modules(self):
        return True


why = missing()
if why:
    sys.exit(why)

setup(
    name="ggml-cuda-pool-torch",
    version=version(),
    description="ggml-cuda-pool as PyTorch's CUDA allocator (CUDAPluggableAllocator)",
    packages=[PACKAGE],
    python_requires=">=3.8",
    license="MIT",
    cmdclass={"build_py": build_with_cmake},
    distclass=with_library,
    zip_safe=False,
)
