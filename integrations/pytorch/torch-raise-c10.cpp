// raise (torch-raise.h) with PyTorch's own exception types: what PyTorch's caching allocator
// throws when it runs out of memory (c10::OutOfMemoryError, torch.OutOfMemoryError in Python),
// c10::ValueError for a bad setting, c10::Error for the rest.

#include "torch-raise.h"

#include <c10/util/Exception.h>

#include <string>

namespace gcp_torch {

void raise(const refusal & r) {
    const std::string message(r.message);
    switch (r.what) {
        case refusal::kind::out_of_memory:
            C10_THROW_ERROR(OutOfMemoryError, message);
        case refusal::kind::bad_setting:
            C10_THROW_ERROR(ValueError, message);
        default:
            C10_THROW_ERROR(Error, message);
    }
}

bool raises_torch_errors() {
    return true;
}

} // namespace gcp_torch
