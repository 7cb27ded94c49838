#pragma once
// The driver every pool calls, in front of a device's primitives: it counts each call by kind, and
// leaves no failure latched (the primitives clear CUDA's last error). A decorator may fail a call first.

#include "primitives.h"

#include <array>
#include <atomic>
#include <memory>
#include <utility>

namespace gcp {

// the driver calls, from the table in the public header (GGML_CPOOL_CALLS); clang-format 14 misindents it
// clang-format off
enum class call : int {
#define GCP_CALL(name, spec, takes) name = GGML_CPOOL_CALL_##name,
    GGML_CPOOL_CALLS(GCP_CALL)
#undef GCP_CALL
    COUNT = GGML_CPOOL_CALL_COUNT,
};
// clang-format on

constexpr size_t CALL_KINDS = size_t(call::COUNT);

class driver {
  public:
    explicit driver(std::shared_ptr<device_primitives> prims) : prims_(std::move(prims)) {}
    virtual ~driver() = default;

    driver(const driver &)             = delete;
    driver & operator=(const driver &) = delete;

    ggml_cpool_platform platform() const { return prims_->platform(); }
    int                 device_count() const { return prims_->device_count(); }

    status malloc(int device, size_t size, void ** ptr) {
        return run(call::MALLOC, device, size, [&](device_primitives & p) { return p.malloc(device, size, ptr); });
    }
    status free(int device, void * ptr) {
        return run(call::FREE, device, 0, [&](device_primitives & p) { return p.free(device, ptr); });
    }
    status synchronize(int device) {
        return run(call::SYNCHRONIZE, device, 0, [&](device_primitives & p) { return p.synchronize(device); });
    }
    // whether a failed call left an error a later one would report (CUDA's last error): never should
    bool error_latched() const { return prims_->error_latched(); }

    // virtual memory management, where vmm_supported(device)
    bool   vmm_supported(int device) const { return prims_->vmm(device) != nullptr; }
    size_t vmm_granularity(int device) const {
        return vmm_supported(device) ? prims_->vmm(device)->granularity(device) : 0;
    }
    status vmm_reserve(int device, size_t size, uintptr_t * addr) {
        return run_vmm(call::VMM_RESERVE, device, size,
                       [&](vmm_primitives & v) { return v.reserve(device, size, addr); });
    }
    status vmm_unreserve(int device, uintptr_t addr, size_t size) {
        return run_vmm(call::VMM_UNRESERVE, device, 0,
                       [&](vmm_primitives & v) { return v.unreserve(device, addr, size); });
    }
    status vmm_create(int device, size_t size, vmm_handle * handle) {
        return run_vmm(call::VMM_CREATE, device, size,
                       [&](vmm_primitives & v) { return v.create(device, size, handle); });
    }
    status vmm_release(int device, vmm_handle handle) {
        return run_vmm(call::VMM_RELEASE, device, 0, [&](vmm_primitives & v) { return v.release(device, handle); });
    }
    status vmm_map(int device, uintptr_t addr, size_t size, vmm_handle handle) {
        return run_vmm(call::VMM_MAP, device, size,
                       [&](vmm_primitives & v) { return v.map(device, addr, size, handle); });
    }
    status vmm_unmap(int device, uintptr_t addr, size_t size) {
        return run_vmm(call::VMM_UNMAP, device, 0, [&](vmm_primitives & v) { return v.unmap(device, addr, size); });
    }
    status vmm_access(int device, uintptr_t addr, size_t size, int accessor) {
        return run_vmm(call::VMM_ACCESS, device, 0,
                       [&](vmm_primitives & v) { return v.access(device, addr, size, accessor); });
    }

    status stream_create(int device, stream_t * stream) {
        return run(call::STREAM, device, 0, [&](device_primitives & p) { return p.stream_create(device, stream); });
    }
    status stream_destroy(int device, stream_t stream) {
        return run(call::STREAM, device, 0, [&](device_primitives & p) { return p.stream_destroy(device, stream); });
    }
    status stream_synchronize(int device, stream_t stream) {
        return run(call::STREAM_SYNC, device, 0,
                   [&](device_primitives & p) { return p.stream_synchronize(device, stream); });
    }
    // a query: neither counted nor failed by a decorator
    status stream_capturing(int device, stream_t stream, bool * capturing) {
        return prims_->stream_capturing(device, stream, capturing);
    }
    bool can_access_peer(int device, int peer) const { return prims_->can_access_peer(device, peer); }

    // the device's stream-ordered pool, where async_supported(device)
    bool   async_supported(int device) const { return prims_->mempool(device) != nullptr; }
    status malloc_async(int device, size_t size, stream_t stream, void ** ptr) {
        return run_mempool(call::MALLOC_ASYNC, device, size,
                           [&](mempool_primitives & m) { return m.malloc_async(device, size, stream, ptr); });
    }
    status free_async(int device, void * ptr, stream_t stream) {
        return run_mempool(call::FREE_ASYNC, device, 0,
                           [&](mempool_primitives & m) { return m.free_async(device, ptr, stream); });
    }
    status pool_attr(int device, mempool_attr attr, uint64_t * value) {
        return run_mempool(call::POOL_ATTR, device, 0,
                           [&](mempool_primitives & m) { return m.get_attr(device, attr, value); });
    }
    status pool_set_attr(int device, mempool_attr attr, uint64_t value) {
        return run_mempool(call::POOL_ATTR, device, 0,
                           [&](mempool_primitives & m) { return m.set_attr(device, attr, value); });
    }
    // the pool's reserved bytes and, of those, the bytes allocated: one attribute call
    status pool_usage(int device, size_t * reserved, size_t * used) {
        return run_mempool(call::POOL_ATTR, device, 0, [&](mempool_primitives & m) {
            uint64_t r = 0, u = 0;
            status   st = m.get_attr(device, mempool_attr::reserved, &r);
            if (st == OK) {
                st = m.get_attr(device, mempool_attr::used, &u);
            }
            *reserved = size_t(r);
            *used     = size_t(u);
            return st;
        });
    }
    status pool_trim(int device, size_t keep) {
        return run_mempool(call::POOL_TRIM, device, 0, [&](mempool_primitives & m) { return m.trim(device, keep); });
    }

    // the device's free memory, which an out-of-memory wait polls: a query, neither counted nor
    // latched, which a decorator may answer first
    virtual status free_memory(int device, size_t * free) {
        return below_ ? below_->free_memory(device, free) : prims_->free_memory(device, free);
    }

    // the device's UUID, which names it across processes: a query, neither counted nor failed
    status       uuid(int device, device_uuid * out) const { return prims_->uuid(device, out); }
    const void * identity() const { return prims_->identity(); }
    uint32_t     transient_pause_us() const { return prims_->transient_pause_us(); }
    size_t       outstanding() const { return prims_->outstanding(); }
    size_t       used(int device) const { return prims_->used(device); }

    // calls made through this driver, of one kind or of every kind
    uint64_t calls(call c) const { return calls_[size_t(c)].load(std::memory_order_relaxed); }
    uint64_t calls() const {
        uint64_t n = 0;
        for (size_t i = 0; i < CALL_KINDS; i++) {
            n += calls(call(i));
        }
        return n;
    }

  protected:
    // a decorator over below: the calls it lets through go there
    explicit driver(std::shared_ptr<driver> below) : prims_(below->prims_), below_(std::move(below)) {}
    // a decorator's say before a call of size bytes goes below: OK lets it through, any other fails it
    virtual status intercept(call /*c*/, int /*device*/, size_t /*size*/) { return OK; }
    // a call it let through succeeded below
    virtual void   completed(call /*c*/, int /*device*/) {}

  private:
    template <typename F> status run(call c, int device, size_t size, F && op) {
        status st = intercept(c, device, size);
        if (st == OK) {
            st = below_ ? below_->run(c, device, size, op) : op(*prims_);
            if (st == OK) {
                completed(c, device);
            }
        }
        calls_[size_t(c)].fetch_add(1, std::memory_order_relaxed);
        return st;
    }
    // a call of an optional capability: UNSUPPORTED where the device has none
    template <typename Cap, typename F>
    status run_capability(Cap * (device_primitives::*get)(int), call c, int device, size_t size, F && op) {
        return run(c, device, size, [&](device_primitives & p) {
            Cap * cap = (p.*get)(device);
            return cap ? op(*cap) : UNSUPPORTED;
        });
    }
    template <typename F> status run_vmm(call c, int device, size_t size, F && op) {
        return run_capability(&device_primitives::vmm, c, device, size, std::forward<F>(op));
    }
    template <typename F> status run_mempool(call c, int device, size_t size, F && op) {
        return run_capability(&device_primitives::mempool, c, device, size, std::forward<F>(op));
    }

    std::shared_ptr<device_primitives>            prims_; // the device's primitives, at the bottom
    std::shared_ptr<driver>                       below_; // a decorator's next driver
    std::array<std::atomic<uint64_t>, CALL_KINDS> calls_{};
};

} // namespace gcp
