#!/usr/bin/env python3
"""integrations/pytorch/ggml_cuda_pool_torch.py without torch or a GPU: a stand-in `torch` records
what the helper installs. Checks the options table's rule as the helper applies it: a pool kind in
any case, an unknown one refused before anything is installed, and a GGML_CUDA_POOL_TORCH_LIBRARY
that names no file refused with a line naming it (not passed over for another library).

    check-torch-helper.py PATH/TO/ggml_cuda_pool_torch.py
"""

import os
import sys
import tempfile
import types

from script_check import check, load_script


def fake_torch():
    """The few calls the helper makes, recording the allocator it installs."""
    torch = types.ModuleType("torch")
    installed = []

    class CUDAPluggableAllocator:
        def __init__(self, path, alloc, free):
            self.path = path

    memory = types.SimpleNamespace(CUDAPluggableAllocator=CUDAPluggableAllocator,
                                   change_current_allocator=installed.append)
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: False, memory=memory)
    return torch, installed


def main():
    helper_path = sys.argv[1]
    torch, installed = fake_torch()
    sys.modules["torch"] = torch
    with tempfile.TemporaryDirectory() as tmp:
        library = os.path.join(tmp, "libggml-cuda-pool-torch.so")
        open(library, "w").close()
        os.environ.pop("GGML_CUDA_POOL", None)

        helper = load_script(helper_path, "helper_any_case")
        try:
            helper.use_ggml_cuda_pool("VMM", library=library)
            error = None
        except ValueError as e:
            error = e
        check(error is None and len(installed) == 1, "a kind in upper case is a kind", repr(error))
        check(os.environ.get("GGML_CUDA_POOL", "").lower() == "vmm", "GGML_CUDA_POOL names it",
              os.environ.get("GGML_CUDA_POOL"))

        helper = load_script(helper_path, "helper_unknown")
        try:
            helper.use_ggml_cuda_pool("fastest", library=library)
            error = None
        except ValueError as e:
            error = e
        check(error is not None and len(installed) == 1, "an unknown kind is refused, nothing installed",
              repr(error))

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


if __name__ == "__main__":
    main()
