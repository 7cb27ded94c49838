#pragma once
// The leak ledger: a decorator over a device's primitives (drivers/primitives.h) that records what
// they hand out (allocations, physical VMM handles, reserved ranges, stream-ordered allocations)
// until it is given back, for outstanding() and used(), the leak checks of
// ggml-cuda-pool-testing.h. The testing library puts it over every cuda driver it creates
// (testing/seam.cpp); the core's cuda driver keeps no books.

#include "../drivers/primitives.h"

#include <memory>
#include <mutex>
#include <unordered_map>

namespace gcp {

// what was handed out and not yet given back; without room to record a piece the memory is
// still handed out, only the leak check loses sight of it
class ledger {
  public:
    enum kind { ALLOCATIONS, HANDLES, RANGES, ASYNC_ALLOCATIONS, KINDS };

    void   track(kind k, uintptr_t key, int device, size_t size, ggml_cpool_platform platform) noexcept;
    void   untrack(kind k, uintptr_t key);
    size_t pieces() const;
    size_t bytes(int device) const;

  private:
    struct piece {
        int    device;
        size_t size;
    };
    mutable std::mutex                   mutex_;
    std::unordered_map<uintptr_t, piece> held_[KINDS];
};

// prims under a ledger: every call goes to prims, and what a successful one hands out or takes
// back is recorded; may throw std::bad_alloc
std::shared_ptr<device_primitives> make_ledger_primitives(std::shared_ptr<device_primitives> prims);

} // namespace gcp
