// The seam of drivers/seam.h in the core alone: no sim driver, and no bookkeeping per cuda call.

#include "seam.h"

#include "../support/log.h"

namespace gcp {

status make_sim_driver(const ggml_cpool_sim_params * /*params*/, driver_ref * /*out*/) {
    GCP_LOG_ERROR("the sim driver is not in this build (link ggml-cuda-pool, not its core, for tests)");
    return UNSUPPORTED;
}

std::shared_ptr<device_primitives> watch_cuda_primitives(std::shared_ptr<device_primitives> prims) {
    return prims;
}

} // namespace gcp
