#pragma once
// The few device-memory primitives the pools need, behind one interface.
// Implementations: cuda (real device, HIP through vendors/hip.h), sim (host memory) and fault
// (a decorator that fails calls on command). Every call names its device, so no call depends on
// the device current on the calling thread. Each public call is counted, then forwarded to the
// implementation's do_ function.

#include "common.h"

#include <array>
#include <atomic>
#include <cstdint>

namespace gcp {

// the driver calls, from the table in the public header (GGML_CPOOL_CALLS)
enum class call : int {
#define GCP_CALL(name, spec, takes) name = GGML_CPOOL_CALL_##name,
    GGML_CPOOL_CALLS(GCP_CALL)
#undef GCP_CALL
    COUNT = GGML_CPOOL_CALL_COUNT,
};

constexpr size_t CALL_KINDS = size_t(call::COUNT);

// what a call takes from the device (the table's third column)
enum class takes { NOTHING, RESOURCE, MEMORY };

takes call_takes(call c);

// an opaque physical-memory handle of the VMM calls
using vmm_handle = uint64_t;
// an opaque stream (a cudaStream_t on the real device)
using stream_t = void *;

// the release threshold that keeps a stream-ordered pool warm: never give memory back at a sync
constexpr uint64_t THRESHOLD_MAX = UINT64_MAX;

// a stream-ordered pool's cross-stream reuse policies (CUDA enables both by default): a block
// freed on one stream handed to another once its free completed on the device, or with a
// dependency the driver inserts. Either would give one context's freed block, which a captured
// graph may still use, to another context's stream.
constexpr uint32_t REUSE_OPPORTUNISTIC          = 1;
constexpr uint32_t REUSE_INTERNAL_DEPENDENCIES  = 2;

class driver {
  public:
    virtual ~driver() = default;

    virtual ggml_cpool_platform platform() const     = 0;
    virtual int                 device_count() const = 0;

    // plain allocations; OUT_OF_MEMORY when the device is full
    status malloc(int device, size_t size, void ** ptr) {
        return noted(call::MALLOC, do_malloc(device, size, ptr));
    }
    status free(int device, void * ptr) {
        return noted(call::FREE, do_free(device, ptr));
    }
    // wait until no queued work on the device can still touch pool memory
    status synchronize(int device) {
        return noted(call::SYNCHRONIZE, do_synchronize(device));
    }
    // forget a latched error, so that it is not reported against an unrelated later call
    void clear_error() {
        latched_.store(false, std::memory_order_relaxed);
        do_clear_error();
    }

    // virtual memory management
    virtual bool   vmm_supported(int device) const   = 0;
    virtual size_t vmm_granularity(int device) const = 0;
    status vmm_reserve(int device, size_t size, uintptr_t * addr) {
        return noted(call::VMM_RESERVE, do_vmm_reserve(device, size, addr));
    }
    status vmm_unreserve(int device, uintptr_t addr, size_t size) {
        return noted(call::VMM_UNRESERVE, do_vmm_unreserve(device, addr, size));
    }
    status vmm_create(int device, size_t size, vmm_handle * handle) {
        return noted(call::VMM_CREATE, do_vmm_create(device, size, handle));
    }
    status vmm_release(int device, vmm_handle handle) {
        return noted(call::VMM_RELEASE, do_vmm_release(device, handle));
    }
    status vmm_map(int device, uintptr_t addr, size_t size, vmm_handle handle) {
        return noted(call::VMM_MAP, do_vmm_map(device, addr, size, handle));
    }
    status vmm_unmap(int device, uintptr_t addr, size_t size) {
        return noted(call::VMM_UNMAP, do_vmm_unmap(device, addr, size));
    }
    // make [addr, addr+size) readable and writable from device `accessor`
    status vmm_access(int device, uintptr_t addr, size_t size, int accessor) {
        return noted(call::VMM_ACCESS, do_vmm_access(device, addr, size, accessor));
    }

    // stream-ordered allocation from the device's default pool
    virtual bool async_supported(int device) const = 0;
    status stream_create(int device, stream_t * stream) {
        return noted(call::STREAM, do_stream_create(device, stream));
    }
    status stream_destroy(int device, stream_t stream) {
        return noted(call::STREAM, do_stream_destroy(device, stream));
    }
    status malloc_async(int device, size_t size, stream_t stream, void ** ptr) {
        return noted(call::MALLOC_ASYNC, do_malloc_async(device, size, stream, ptr));
    }
    status free_async(int device, void * ptr, stream_t stream) {
        return noted(call::FREE_ASYNC, do_free_async(device, ptr, stream));
    }
    status stream_synchronize(int device, stream_t stream) {
        return noted(call::STREAM_SYNC, do_stream_synchronize(device, stream));
    }
    status pool_threshold(int device, uint64_t * threshold) {
        return noted(call::POOL_ATTR, do_pool_threshold(device, threshold));
    }
    status pool_set_threshold(int device, uint64_t threshold) {
        return noted(call::POOL_ATTR, do_pool_set_threshold(device, threshold));
    }
    status pool_reuse(int device, uint32_t * policies) {
        return noted(call::POOL_ATTR, do_pool_reuse(device, policies));
    }
    status pool_set_reuse(int device, uint32_t policies) {
        return noted(call::POOL_ATTR, do_pool_set_reuse(device, policies));
    }
    // bytes the pool holds from the device, and of those the bytes allocated
    status pool_usage(int device, size_t * reserved, size_t * used) {
        return noted(call::POOL_ATTR, do_pool_usage(device, reserved, used));
    }
    // give unused pool memory back until at most max(keep, used) stays
    status pool_trim(int device, size_t keep) {
        return noted(call::POOL_TRIM, do_pool_trim(device, keep));
    }

    // whether kernels on `peer` can reach memory of `device`
    virtual bool can_access_peer(int device, int peer) const = 0;
    // whether `stream` is being captured into a graph (a query: neither counted nor injected)
    virtual status stream_capturing(int device, stream_t stream, bool * capturing) = 0;

    // whether a failed call left an error that a later, unrelated call would report: every
    // failure latches until clear_error, as CUDA's last error does
    virtual bool error_latched() const { return latched_.load(std::memory_order_relaxed); }
    // what identifies the devices behind this driver: drivers with the same identity share
    // devices (every cuda driver), so process-wide records key on it
    virtual const void * identity() const { return this; }

    // leak check: allocations, physical handles and reservations not yet given back
    // (the cuda driver cannot see those of other users, so it counts its own)
    virtual size_t outstanding() const      = 0;
    // device bytes handed out (allocations and physical handles) and not yet taken back
    virtual size_t used(int device) const   = 0;

    uint64_t calls(call c) const { return calls_[size_t(c)].load(std::memory_order_relaxed); }
    uint64_t calls() const;

  protected:
    virtual void   do_clear_error() {}
    virtual status do_malloc(int device, size_t size, void ** ptr)                         = 0;
    virtual status do_free(int device, void * ptr)                                         = 0;
    virtual status do_synchronize(int device)                                              = 0;
    virtual status do_vmm_reserve(int device, size_t size, uintptr_t * addr)               = 0;
    virtual status do_vmm_unreserve(int device, uintptr_t addr, size_t size)               = 0;
    virtual status do_vmm_create(int device, size_t size, vmm_handle * handle)             = 0;
    virtual status do_vmm_release(int device, vmm_handle handle)                           = 0;
    virtual status do_vmm_map(int device, uintptr_t addr, size_t size, vmm_handle handle)  = 0;
    virtual status do_vmm_unmap(int device, uintptr_t addr, size_t size)                   = 0;
    virtual status do_vmm_access(int device, uintptr_t addr, size_t size, int accessor)    = 0;
    virtual status do_stream_create(int device, stream_t * stream)                         = 0;
    virtual status do_stream_destroy(int device, stream_t stream)                          = 0;
    virtual status do_malloc_async(int device, size_t size, stream_t stream, void ** ptr)  = 0;
    virtual status do_free_async(int device, void * ptr, stream_t stream)                  = 0;
    virtual status do_stream_synchronize(int device, stream_t stream)                      = 0;
    virtual status do_pool_threshold(int device, uint64_t * threshold)                     = 0;
    virtual status do_pool_set_threshold(int device, uint64_t threshold)                   = 0;
    virtual status do_pool_reuse(int device, uint32_t * policies)                          = 0;
    virtual status do_pool_set_reuse(int device, uint32_t policies)                        = 0;
    virtual status do_pool_usage(int device, size_t * reserved, size_t * used)             = 0;
    virtual status do_pool_trim(int device, size_t keep)                                   = 0;

  private:
    status noted(call c, status st) {
        calls_[size_t(c)].fetch_add(1, std::memory_order_relaxed);
        if (st != OK) {
            latched_.store(true, std::memory_order_relaxed);
        }
        return st;
    }

    std::array<std::atomic<uint64_t>, CALL_KINDS> calls_{};
    std::atomic<bool>                             latched_{ false };
};

} // namespace gcp
