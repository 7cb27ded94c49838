#pragma once
// A driver over any other that fails the calls a fault spec chooses, before they go below: with
// OUT_OF_MEMORY where the call takes something from the device (GGML_CPOOL_CALLS), else DRIVER_ERROR.

#include "driver.h"
#include "../support/fault-spec.h"

#include <memory>
#include <mutex>
#include <random>

namespace gcp {

class fault_driver final : public driver {
  public:
    fault_driver(std::shared_ptr<driver> inner, const fault_spec & spec) : driver(std::move(inner)) { arm(spec); }

    // replaces the spec and restarts the call counts it refers to
    void     arm(const fault_spec & spec);
    uint64_t fired() const;
    // while= alone: nothing is free while its window is open, since every allocation fails then
    status   free_memory(int device, size_t * free) override;

  protected:
    status intercept(call c, int device, size_t size) override;
    void   completed(call c, int device) override; // counts the device allocations made below

  private:
    bool window_open() const; // while= names no file, or its file exists

    mutable std::mutex mutex_;
    fault_spec         spec_;
    std::mt19937_64    rng_;
    uint64_t           seen_[CALL_KINDS] = {}; // calls of each kind since armed
    uint64_t           seen_any_         = 0;
    uint64_t           fired_            = 0;
    bool               oneshot_done_     = false;
    // each device's allocations made through this driver: a one-shot waits for one
    uint64_t           allocated_[GGML_CPOOL_MAX_DEVICES] = {};
};

} // namespace gcp
