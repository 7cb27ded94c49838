#pragma once
// Where drivers come from: a driver of a kind (cuda or sim), and a fault driver over any driver.

#include "driver.h"
#include "../support/fault-spec.h"

#include <memory>

namespace gcp {

class sim_primitives;
class fault_driver;

// the driver, and the parts of it the testing calls (ggml-cuda-pool-testing.h) reach, typed
struct driver_ref {
    std::shared_ptr<driver> drv;
    sim_primitives *        sim   = nullptr; // the primitives below, when it is the sim driver
    fault_driver *          fault = nullptr; // the driver, when it injects faults
};

// a driver of the given kind (a ggml_cpool_driver_kind, read with raw_enum), or a status and a
// log line saying why not; sim: the sim driver's parameters, nullptr for its defaults
status     make_driver(int kind, const ggml_cpool_sim_params * sim, driver_ref * out);
// the primitives of every visible device (cuda.cpp, in a build with CUDA); UNSUPPORTED and a line if none is
status     make_cuda_primitives(std::shared_ptr<device_primitives> * out);
// a fault driver over inner, armed with spec; may throw std::bad_alloc
driver_ref make_fault_driver(const driver_ref & inner, const fault_spec & spec);
// wraps *ref in a fault driver when GGML_CUDA_POOL_FAULT is set; a malformed spec fails
status     apply_env_faults(driver_ref * ref);

} // namespace gcp
