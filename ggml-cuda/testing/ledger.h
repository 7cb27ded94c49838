#pragma once
// The leak ledger: a decorator over a device's primitives (drivers/primitives.h) that records what
// they hand out until it is given back, for the leak checks of ggml-cuda-pool-testing.h. The testing
// library puts it over every cuda driver it creates (testing/seam.cpp); the core's keeps no books.

#include "../drivers/primitives.h"

#include <memory>

namespace gcp {

// prims under a ledger; may throw std::bad_alloc
std::shared_ptr<device_primitives> make_ledger_primitives(std::shared_ptr<device_primitives> prims);

} // namespace gcp
