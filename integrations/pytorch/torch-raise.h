#pragma once
// The exception a refusal (refusal.h) becomes when the library's exported allocation function
// raises it. PyTorch calls that function from C++ (CUDAPluggableAllocator's malloc, through a
// std::function, nothing noexcept on the way) and its Python bindings translate what arrives
// (torch/csrc/Exceptions.h, CATCH_ALL_ERRORS): c10::OutOfMemoryError becomes
// torch.OutOfMemoryError, c10::ValueError ValueError, any other c10::Error RuntimeError, and any
// other std::exception RuntimeError with its what() (std::bad_alloc's is only "std::bad_alloc").
// Two builds of this one function:
//   torch-raise-c10.cpp   PyTorch's own types, where the installed torch's headers and libc10 were
//                         found at configure time (compiled with torch's _GLIBCXX_USE_CXX11_ABI)
//   torch-raise-std.cpp   standard exceptions (RuntimeError in Python), everywhere else

#include "refusal.h"

namespace gcp_torch {

// throws the exception for r (r.what is not none)
[[noreturn]] void raise(const refusal & r);

// whether raise throws PyTorch's own types: a refused allocation is torch.OutOfMemoryError
bool raises_torch_errors();

} // namespace gcp_torch
