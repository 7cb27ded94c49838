"""ggml-cuda-pool as PyTorch's CUDA allocator.

    pip install --no-build-isolation ./integrations/pytorch   # builds the library into this package
    from ggml_cuda_pool_torch import use_ggml_cuda_pool
    use_ggml_cuda_pool("legacy")   # before the first CUDA allocation of the process

Every CUDA allocation of the process then goes through libggml-cuda-pool-torch.so, which lies
in this package's folder: one pool per (device, stream), the kind given here. report() writes
one statistics line per pool; GGML_CUDA_POOL_STATS=1 (stderr) or =<file> writes them at exit.

A request the pools cannot serve raises, as under PyTorch's own allocator: out_of_memory_error()
(torch.OutOfMemoryError where the library was built against torch's headers, else RuntimeError),
after the device's other stream pools gave back their cache and one retry. A bad setting raises
ValueError here, in use_ggml_cuda_pool, with the module's line.
"""

import ctypes
import os
import re
import sys
import tempfile

ALLOC_SYMBOL = "ggml_cuda_pool_torch_alloc"
FREE_SYMBOL = "ggml_cuda_pool_torch_free"
REPORT_SYMBOL = "ggml_cuda_pool_torch_report"
CHECK_SYMBOL = "ggml_cuda_pool_torch_check"
RAISES_SYMBOL = "ggml_cuda_pool_torch_raises_torch_errors"
LINE_BYTES = 2048  # room for the library's check line (the module's, up to 1024)
LIBRARY_NAME = "libggml-cuda-pool-torch.so"
# where the library is, when not next to this file; like GGML_CUDA_POOL, a row of the options table
# (include/ggml-cuda-pool-options.h), which a Python file cannot include: tests/test-docs.cpp checks both
LIBRARY_ENV = "GGML_CUDA_POOL_TORCH_LIBRARY"
KINDS = ("auto", "legacy", "plain", "vmm", "async")  # the module's kind names (test-docs.cpp checks them too)
# taken in any case, as the module takes GGML_CUDA_POOL (the options table's rule)

_installed = None  # (path, kind) once installed


def find_library(library=None):
    """The library's path: `library`, else GGML_CUDA_POOL_TORCH_LIBRARY, else in this package's
    folder (where pip installs it, and where a CMake build puts it beside a copy of this file). A
    GGML_CUDA_POOL_TORCH_LIBRARY that names no file is an error, not a reason to look elsewhere;
    set empty, it is unset."""
    here = os.path.dirname(os.path.abspath(__file__))
    named = os.environ.get(LIBRARY_ENV)
    if not library and named and not os.path.isfile(named):
        raise FileNotFoundError(f"{LIBRARY_ENV}={named}: no such file; it takes a path: where {LIBRARY_NAME} is")
    path = library or named or os.path.join(here, LIBRARY_NAME)
    if os.path.isfile(path):
        return os.path.abspath(path)
    raise FileNotFoundError(f"{path}: no such file; install the package with its library (pip install "
                            f"--no-build-isolation ./integrations/pytorch) or pass library= / set {LIBRARY_ENV}")


def check_settings(path):
    """Runs the library's check of every setting it reads (no device touched), as its first
    allocation would: a bad one raises ValueError with the line that names it."""
    lib = ctypes.CDLL(path)  # the handle PyTorch gets too
    check = getattr(lib, CHECK_SYMBOL)
    check.restype = ctypes.c_int
    check.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    line = ctypes.create_string_buffer(LINE_BYTES)
    if check(line, LINE_BYTES) != 0:
        raise ValueError(line.value.decode(errors="replace"))


def _torch():
    """torch, or ModuleNotFoundError saying what to install where this python has none"""
    try:
        import torch
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(f"ggml_cuda_pool_torch needs torch, which {sys.executable} cannot import ({e}): "
                                  "python3 -m pip install torch (docs/pytorch.md)", name=e.name) from e
    return torch


def use_ggml_cuda_pool(kind, library=None):
    """Makes the module PyTorch's CUDA allocator for the rest of the process. kind: one of KINDS,
    in any case, or None to leave GGML_CUDA_POOL as the environment has it (unset or empty:
    legacy). Must come before the first CUDA allocation: PyTorch cannot change an allocator that
    has served one. A bad setting (GGML_CUDA_POOL, GGML_CUDA_POOL_STATS, any variable of the
    options table) raises ValueError with the module's line, and nothing is installed. Returns
    the library's path."""
    global _installed
    torch = _torch()

    if kind is not None and (not isinstance(kind, str) or kind.lower() not in KINDS):
        raise ValueError(f"unknown pool kind {kind!r}: one of {', '.join(KINDS)}, in any case")
    kind = kind.lower() if kind is not None else None
    path = find_library(library)
    if _installed is not None:
        if _installed == (path, kind):
            return path
        raise RuntimeError(f"ggml-cuda-pool is already PyTorch's allocator ({_installed[1]}, {_installed[0]})")
    if torch.cuda.is_initialized():
        raise RuntimeError("CUDA is already initialized in this process, so PyTorch's allocator can no longer be "
                           "replaced: call use_ggml_cuda_pool() before anything touches CUDA")
    previous = os.environ.get("GGML_CUDA_POOL")
    if kind is not None:
        os.environ["GGML_CUDA_POOL"] = kind  # read by the library when it makes its context
    try:
        check_settings(path)
    except ValueError:
        if kind is not None:  # as it was, so that a call with a good kind can follow
            if previous is None:
                del os.environ["GGML_CUDA_POOL"]
            else:
                os.environ["GGML_CUDA_POOL"] = previous
        raise
    allocator = torch.cuda.memory.CUDAPluggableAllocator(path, ALLOC_SYMBOL, FREE_SYMBOL)
    torch.cuda.memory.change_current_allocator(allocator)
    _installed = (path, kind)
    return path


def out_of_memory_error():
    """The exception a refused allocation raises: torch.OutOfMemoryError where the library was
    built against torch's headers, else RuntimeError (its message starts "CUDA out of memory."),
    for `except out_of_memory_error():` in a loop that shrinks its batch."""
    if _installed is None:
        raise RuntimeError("use_ggml_cuda_pool() has not installed the library")
    torch = _torch()

    lib = ctypes.CDLL(_installed[0])
    return torch.cuda.OutOfMemoryError if getattr(lib, RAISES_SYMBOL)() else RuntimeError


def report(where="-"):
    """Writes one statistics line per pool to `where` ("-": stderr, else a file, appended);
    returns the number of lines."""
    if _installed is None:
        raise RuntimeError("use_ggml_cuda_pool() has not installed the library")
    lib = ctypes.CDLL(_installed[0])  # the same handle PyTorch loaded: the same pools
    lib.ggml_cuda_pool_torch_report.restype = ctypes.c_int
    lib.ggml_cuda_pool_torch_report.argtypes = [ctypes.c_char_p]
    n = lib.ggml_cuda_pool_torch_report(where.encode())
    if n < 0:
        raise OSError(f"writing the pool statistics to {where} failed")
    return n


def timing(on):
    """Turns the module's timing of its pool calls on or off (as GGML_CUDA_POOL_TIMING=1 does from
    the start): their time is call_ms in the statistics lines."""
    if _installed is None:
        raise RuntimeError("use_ggml_cuda_pool() has not installed the library")
    ctypes.CDLL(_installed[0]).ggml_cuda_pool_torch_timing(1 if on else 0)


_FIELD = re.compile(r"(\w+)=(\S+)")


def parse_line(line):
    """A statistics line as a dict: numbers as int or float, the rest as text."""
    fields = {}
    for key, value in _FIELD.findall(line):
        try:
            fields[key] = int(value)
        except ValueError:
            try:
                fields[key] = float(value)
            except ValueError:
                fields[key] = value
    return fields


def pool_stats():
    """Every pool's statistics now, one dict each (the fields of report()'s lines)."""
    with tempfile.NamedTemporaryFile("r", suffix=".stats") as f:
        report(f.name)
        return [parse_line(line) for line in f if line.startswith("ggml-cuda-pool stats:")]
