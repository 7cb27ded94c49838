#pragma once
// The cuda driver is a driver (driver.h) over cuda_primitives (drivers/cuda.cpp); the factory
// (drivers/factory.cpp) builds it.
// The real device, through the CUDA runtime for plain allocations and the driver API (reached
// through the runtime's entry-point query, so nothing links libcuda) for virtual memory.

#include "primitives.h"

#include <memory>

namespace gcp {

// the primitives of every visible device; UNSUPPORTED with a log line when none is visible
status make_cuda_primitives(std::shared_ptr<device_primitives> * out);

} // namespace gcp
