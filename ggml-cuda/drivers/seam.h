#pragma once
// What the testing library adds to the drivers, fixed at link time (as mimalloc's prim.h is by
// the one prim file a build links): the full library defines these in testing/seam.cpp, the core
// alone (llama.cpp, the PyTorch library) in drivers/seam-core.cpp. The two libraries differ by
// that one object.

#include "factory.h"

#include <memory>

namespace gcp {

// a sim driver (GGML_CPOOL_DRIVER_SIM) of *params, or of the sim's defaults where params is
// nullptr; a status and a log line where the parameters are refused or, in the core alone, where
// the build has no sim driver (UNSUPPORTED)
status make_sim_driver(const ggml_cpool_sim_params * params, driver_ref * out);

// the primitives a cuda driver runs over: prims themselves in the core alone; prims under the leak
// ledger (testing/ledger.h) in the full library, whose leak checks count what they hand out.
// May throw std::bad_alloc
std::shared_ptr<device_primitives> watch_cuda_primitives(std::shared_ptr<device_primitives> prims);

} // namespace gcp
