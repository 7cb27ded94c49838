#pragma once
// What the testing library adds to the drivers, fixed at link time: the full library defines these
// in testing/seam.cpp, the core alone (llama.cpp, the PyTorch library) in drivers/seam-core.cpp.

#include "factory.h"

#include <memory>

namespace gcp {

// a sim driver of *params (nullptr: the defaults); a status and a log line where the parameters are
// refused or, in the core alone, always (UNSUPPORTED)
status make_sim_driver(const ggml_cpool_sim_params * params, driver_ref * out);

// the primitives a cuda driver runs over: prims in the core alone, prims under the leak ledger in
// the full library; may throw std::bad_alloc
std::shared_ptr<device_primitives> watch_cuda_primitives(std::shared_ptr<device_primitives> prims);

} // namespace gcp
