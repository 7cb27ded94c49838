#!/usr/bin/env python3
"""integrations/pytorch/ggml_cuda_pool_torch.py without torch or a GPU: a stand-in `torch` records
what the helper installs. Checks the options table's rule as the helper applies it: a pool kind in
any case, an unknown one refused before anything is installed, and a GGML_CUDA_POOL_TORCH_LIBRARY
that names no file refused with a line naming it (not passed over for another library). With the
built library (its check touches no device): a bad setting raises ValueError with the module's
line and installs nothing, leaving GGML_CUDA_POOL as it was; an empty GGML_CUDA_POOL is legacy.
Without torch, use_ggml_cuda_pool says to install it.

    check-torch-helper.py PATH/TO/ggml_cuda_pool_torch.py [PATH/TO/libggml-cuda-pool-torch.so]
"""

import importlib.util
import os
import sys
import tempfile

from script_check import check, load_script


def fake_torch():
    """The stand-in torch (tests/standins/torch), fresh: the few calls the helper makes, recording the
    allocator it installs."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standins", "torch", "torch.py")
    spec = importlib.util.spec_from_file_location("torch", path)
    torch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(torch)
    return torch, torch.installed


def attempt(helper, kind, library):
    """use_ggml_cuda_pool's ValueError, or None when it installed"""
    try:
        helper.use_ggml_cuda_pool(kind, library=library)
        return None
    except ValueError as e:
        return e


def loader(helper_path, stub_check):
    """A fresh helper by name; with stub_check, one whose check of the library's settings passes
    (a stand-in file is no library to load)."""
    def load(name):
        helper = load_script(helper_path, name)
        if stub_check:
            helper.check_settings = lambda path: None
        return helper
    return load


def check_kinds(load, library, installed):
    helper = load("helper_any_case")
    error = attempt(helper, "VMM", library)
    check(error is None and len(installed) == 1, "a kind in upper case is a kind", repr(error))
    check(os.environ.get("GGML_CUDA_POOL", "").lower() == "vmm", "GGML_CUDA_POOL names it",
          os.environ.get("GGML_CUDA_POOL"))

    helper = load("helper_unknown")
    error = attempt(helper, "fastest", library)
    check(error is not None and len(installed) == 1, "an unknown kind is refused, nothing installed", repr(error))


def check_settings(load, library, installed):
    """With the real library: its check, through the helper."""
    before = len(installed)
    os.environ["GGML_CUDA_POOL"] = "plain"
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GGML_CUDA_POOL_STATS"] = os.path.join(tmp, "no-such-dir", "stats")
        error = attempt(load("helper_stats"), "legacy", library)
        del os.environ["GGML_CUDA_POOL_STATS"]
    check(error is not None and str(error).startswith("GGML_CUDA_POOL_STATS=") and "cannot open it" in str(error),
          "an unwritable statistics file is refused with the module's line", repr(error))
    check(len(installed) == before and os.environ.get("GGML_CUDA_POOL") == "plain",
          "nothing installed, GGML_CUDA_POOL as it was", f"{len(installed)} {os.environ.get('GGML_CUDA_POOL')}")

    os.environ["GGML_CUDA_POOL"] = "ggml"
    error = attempt(load("helper_ggml"), None, library)
    check(error is not None and "only the llama.cpp adapter serves" in str(error),
          "ggml's own pools, named in the environment, are refused", repr(error))

    os.environ["GGML_CUDA_POOL"] = ""
    error = attempt(load("helper_empty"), None, library)
    check(error is None and len(installed) == before + 1, "an exported empty GGML_CUDA_POOL is legacy", repr(error))


def check_library_variable(helper_path, tmp):
    helper = load_script(helper_path, "helper_missing_library")
    os.environ["GGML_CUDA_POOL_TORCH_LIBRARY"] = os.path.join(tmp, "missing.so")
    try:
        found = helper.find_library()
        error = None
    except FileNotFoundError as e:
        found, error = None, e
    check(error is not None and "GGML_CUDA_POOL_TORCH_LIBRARY" in str(error),
          "a library variable naming no file is refused, naming the variable", f"{found!r} {error!r}")

    os.environ["GGML_CUDA_POOL_TORCH_LIBRARY"] = ""
    try:
        helper.find_library()
        error = None
    except FileNotFoundError as e:
        error = e
    check(error is None or "GGML_CUDA_POOL_TORCH_LIBRARY=" not in str(error),
          "an empty library variable is unset", repr(error))


def check_without_torch(load, library):
    """where torch cannot be imported, use_ggml_cuda_pool says what to install"""
    saved = sys.modules.get("torch")
    sys.modules["torch"] = None  # import torch: ModuleNotFoundError, as without the package
    try:
        load("helper_no_torch").use_ggml_cuda_pool("legacy", library=library)
        error = None
    except ModuleNotFoundError as e:
        error = e
    finally:
        sys.modules["torch"] = saved
    check(error is not None and "pip install torch" in str(error),
          "without torch, use_ggml_cuda_pool says to install it", repr(error))


def main():
    helper_path = sys.argv[1]
    library = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else None
    torch, installed = fake_torch()
    sys.modules["torch"] = torch
    os.environ.pop("GGML_CUDA_POOL", None)
    with tempfile.TemporaryDirectory() as tmp:
        stub_check = library is None
        if stub_check:  # a stand-in file: the helper's own checks only
            library = os.path.join(tmp, "libggml-cuda-pool-torch.so")
            open(library, "w").close()
        load = loader(helper_path, stub_check)
        check_kinds(load, library, installed)
        check_without_torch(load, library)
        if stub_check:
            print("skipped: the library's check of its settings (no library built: pass its path)")
        else:
            check_settings(load, library, installed)
        check_library_variable(helper_path, tmp)


if __name__ == "__main__":
    main()
