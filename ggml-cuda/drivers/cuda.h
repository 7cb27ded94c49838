#pragma once
// The cuda driver is a driver (driver.h) over cuda_primitives (drivers/cuda.cpp).
// The real device, through the CUDA runtime for plain allocations and the driver API (reached
// through the runtime's entry-point query, so nothing links libcuda) for virtual memory.

#include "driver.h"

#include <memory>

namespace gcp {

// UNSUPPORTED with a log line when no device is visible
status make_cuda_driver(std::shared_ptr<driver> * out);

} // namespace gcp
