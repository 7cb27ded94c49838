// The seam of drivers/seam.h in the full library: the sim driver, and cuda primitives under the leak ledger.

#include "../drivers/seam.h"

#include "ledger.h"
#include "sim.h"

namespace gcp {

status make_sim_driver(const ggml_cpool_sim_params * params, driver_ref * out) {
    const ggml_cpool_sim_params p  = params ? *params : sim_primitives::defaults();
    status                      st = sim_primitives::check(p);
    if (st == OK) {
        auto prims = std::make_shared<sim_primitives>(p);
        st         = prims->share();
        if (st == OK) {
            *out = { std::make_shared<driver>(prims), prims.get(), nullptr };
        }
    }
    return st;
}

std::shared_ptr<device_primitives> watch_cuda_primitives(std::shared_ptr<device_primitives> prims) {
    return make_ledger_primitives(std::move(prims));
}

} // namespace gcp
