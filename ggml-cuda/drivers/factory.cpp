#include "factory.h"

#include "fault.h"
#include "seam.h"
#include "../support/env.h"
#include "../support/log.h"

namespace gcp {

status make_driver(int kind, const ggml_cpool_sim_params * sim, driver_ref * out) {
    if (kind == GGML_CPOOL_DRIVER_SIM) {
        return make_sim_driver(sim, out);
    }
    if (kind == GGML_CPOOL_DRIVER_CUDA) {
#ifdef GGML_CPOOL_HAVE_CUDA
        std::shared_ptr<device_primitives> prims;
        status                             st = make_cuda_primitives(&prims);
        if (st == OK) {
            *out = { std::make_shared<driver>(watch_cuda_primitives(std::move(prims))), nullptr, nullptr };
        }
        return st;
#else
        GCP_LOG_ERROR("cuda driver: this build has no CUDA support (configure with GGML_CUDA=ON); without a GPU, "
                      "the sim driver serves (GGML_CPOOL_DRIVER_SIM)");
        return UNSUPPORTED;
#endif
    }
    GCP_LOG_ERROR("unknown driver kind %d", kind);
    return INVALID_ARGUMENT;
}

driver_ref make_fault_driver(const driver_ref & inner, const fault_spec & spec) {
    auto drv = std::make_shared<fault_driver>(inner.drv, spec);
    return { drv, nullptr, drv.get() };
}

status apply_env_faults(driver_ref * ref) {
    option_value v;
    status       st = read_option(GGML_CPOOL_OPTION_FAULT, &v);
    if (st != OK || !v.set) {
        return st;
    }
    fault_spec spec;
    (void) parse_fault_spec(v.text, &spec); // the reading above read it whole: this parse cannot refuse it
    GCP_LOG_INFO("%s=%s: fault injection armed", option_name(GGML_CPOOL_OPTION_FAULT), v.text);
    *ref = make_fault_driver(*ref, spec);
    return OK;
}

} // namespace gcp
