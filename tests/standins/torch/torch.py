"""A stand-in torch for the PyTorch helper's checks (check-torch-helper.py, check-torch-package.sh):
the few calls the helper makes, recording in `installed` the allocator it installs."""
import types

installed = []


class CUDAPluggableAllocator:
    def __init__(self, path, alloc, free):
        self.path = path


memory = types.SimpleNamespace(CUDAPluggableAllocator=CUDAPluggableAllocator, change_current_allocator=installed.append)
cuda = types.SimpleNamespace(is_initialized=lambda: False, memory=memory)
