// raise (torch-raise.h) with standard exceptions, for a build without torch's headers: PyTorch
// turns each into RuntimeError carrying its what(), the refusal's message. An out-of-memory
// message starts as PyTorch's own does ("CUDA out of memory. Tried to allocate ..."), so code
// that matches the text still finds it.

#include "torch-raise.h"

#include <stdexcept>

namespace gcp_torch {

void raise(const refusal & r) {
    if (r.what == refusal::kind::bad_setting) {
        throw std::invalid_argument(r.message);
    }
    throw std::runtime_error(r.message);
}

bool raises_torch_errors() {
    return false;
}

} // namespace gcp_torch
