// The seam of drivers/seam.h in the full library: the sim driver, and cuda primitives under the leak
// ledger, which records what they hand out until it is given back, for the leak checks of
// ggml-cuda-pool-testing.h (the core's keeps no books).

#include "../drivers/seam.h"

#include "../support/log.h"
#include "sim.h"

#include <mutex>
#include <unordered_map>

namespace gcp {

namespace {

// the virtual memory and the stream-ordered pool are those below, asked per call (a device's may differ)
class ledger_primitives final : public device_primitives, public vmm_primitives, public mempool_primitives {
  public:
    explicit ledger_primitives(std::shared_ptr<device_primitives> below) : below_(std::move(below)) {}

    ggml_cpool_platform platform() const override { return below_->platform(); }
    int                 device_count() const override { return below_->device_count(); }

    status malloc(int device, size_t size, void ** ptr) override {
        return handed_out(below_->malloc(device, size, ptr), ALLOCATIONS, ptr, device, size);
    }
    status free(int device, void * ptr) override { return taken_back(below_->free(device, ptr), ALLOCATIONS, ptr); }
    status synchronize(int device) override { return below_->synchronize(device); }

    status stream_create(int device, stream_t * stream) override { return below_->stream_create(device, stream); }
    status stream_destroy(int device, stream_t stream) override { return below_->stream_destroy(device, stream); }
    status stream_synchronize(int device, stream_t stream) override {
        return below_->stream_synchronize(device, stream);
    }
    status stream_capturing(int device, stream_t stream, bool * capturing) override {
        return below_->stream_capturing(device, stream, capturing);
    }
    bool can_access_peer(int device, int peer) const override { return below_->can_access_peer(device, peer); }

    vmm_primitives *     vmm(int device) override { return below_->vmm(device) ? this : nullptr; }
    mempool_primitives * mempool(int device) override { return below_->mempool(device) ? this : nullptr; }

    size_t outstanding() const override {
        std::lock_guard<std::mutex> lock(mutex_);
        size_t                      n = 0;
        for (auto & map : held_) {
            n += map.size();
        }
        return n;
    }

    size_t used(int device) const override {
        std::lock_guard<std::mutex> lock(mutex_);
        size_t                      n = 0;
        for (auto & map : held_) {
            for (auto & p : map) {
                n += p.second.device == device ? p.second.size : 0;
            }
        }
        return n;
    }

    bool         error_latched() const override { return below_->error_latched(); }
    const void * identity() const override { return below_->identity(); }
    uint32_t     transient_pause_us() const override { return below_->transient_pause_us(); }
    status       free_memory(int device, size_t * free) override { return below_->free_memory(device, free); }
    status       uuid(int device, device_uuid * out) const override { return below_->uuid(device, out); }

    size_t granularity(int device) const override { return below_->vmm(device)->granularity(device); }
    status reserve(int device, size_t size, uintptr_t * addr) override {
        return handed_out(below_->vmm(device)->reserve(device, size, addr), RANGES, addr, device, 0);
    }
    status unreserve(int device, uintptr_t addr, size_t size) override {
        return taken_back(below_->vmm(device)->unreserve(device, addr, size), RANGES, addr);
    }
    status create(int device, size_t size, vmm_handle * handle) override {
        return handed_out(below_->vmm(device)->create(device, size, handle), HANDLES, handle, device, size);
    }
    status release(int device, vmm_handle handle) override {
        return taken_back(below_->vmm(device)->release(device, handle), HANDLES, handle);
    }
    status map(int device, uintptr_t addr, size_t size, vmm_handle handle) override {
        return below_->vmm(device)->map(device, addr, size, handle);
    }
    status unmap(int device, uintptr_t addr, size_t size) override {
        return below_->vmm(device)->unmap(device, addr, size);
    }
    status access(int device, uintptr_t addr, size_t size, int accessor) override {
        return below_->vmm(device)->access(device, addr, size, accessor);
    }

    status malloc_async(int device, size_t size, stream_t stream, void ** ptr) override {
        return handed_out(below_->mempool(device)->malloc_async(device, size, stream, ptr), ASYNC, ptr, device, size);
    }
    status free_async(int device, void * ptr, stream_t stream) override {
        return taken_back(below_->mempool(device)->free_async(device, ptr, stream), ASYNC, ptr);
    }
    status get_attr(int device, mempool_attr attr, uint64_t * value) override {
        return below_->mempool(device)->get_attr(device, attr, value);
    }
    status set_attr(int device, mempool_attr attr, uint64_t value) override {
        return below_->mempool(device)->set_attr(device, attr, value);
    }
    status trim(int device, size_t keep) override { return below_->mempool(device)->trim(device, keep); }

  private:
    enum kind { ALLOCATIONS, HANDLES, RANGES, ASYNC, KINDS };
    struct piece {
        int    device;
        size_t size; // 0 for a range: no memory behind it
    };

    // st; where OK, the piece put at *out is recorded (without room for it, only the leak check misses it)
    template <typename T> status handed_out(status st, kind k, const T * out, int device, size_t size) noexcept {
        if (st == OK) {
            log_hold                    hold; // the line goes out once the lock is released
            std::lock_guard<std::mutex> lock(mutex_);
            try {
                held_[k][uintptr_t(*out)] = { device, size }; // an address or a handle
            } catch (...) {
                GCP_LOG_ERROR("%s: no host memory to record an allocation for the leak check",
                              pool_label(below_->platform(), device).c_str());
            }
        }
        return st;
    }

    template <typename T> status taken_back(status st, kind k, T given) {
        if (st == OK) {
            std::lock_guard<std::mutex> lock(mutex_);
            held_[k].erase(uintptr_t(given));
        }
        return st;
    }

    std::shared_ptr<device_primitives>   below_;
    mutable std::mutex                   mutex_;
    std::unordered_map<uintptr_t, piece> held_[KINDS];
};

} // namespace

status make_sim_driver(const ggml_cpool_sim_params * params, driver_ref * out) {
    const ggml_cpool_sim_params p  = params ? *params : sim_primitives::defaults();
    status                      st = sim_primitives::check(p);
    if (st == OK) {
        auto prims = std::make_shared<sim_primitives>(p);
        *out       = { std::make_shared<driver>(prims), prims.get(), nullptr };
    }
    return st;
}

std::shared_ptr<device_primitives> watch_cuda_primitives(std::shared_ptr<device_primitives> prims) {
    return std::make_shared<ledger_primitives>(std::move(prims));
}

} // namespace gcp
