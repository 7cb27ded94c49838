#pragma once
// The leak ledger: a decorator over a device's primitives (drivers/primitives.h) that records what
// they hand out (allocations, physical VMM handles, reserved ranges, stream-ordered allocations)
// until it is given back, for outstanding() and used(), the leak checks of
// ggml-cuda-pool-testing.h. The testing library puts it over every cuda driver it creates
// (testing/seam.cpp); the core's cuda driver keeps no books.

#include "../drivers/primitives.h"

#include <memory>

namespace gcp {

// prims under a ledger: every call goes to prims, and what a successful one hands out or takes
// back is recorded; may throw std::bad_alloc
std::shared_ptr<device_primitives> make_ledger_primitives(std::shared_ptr<device_primitives> prims);

} // namespace gcp
