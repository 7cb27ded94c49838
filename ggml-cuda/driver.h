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

enum class call : int {
    malloc        = GGML_CPOOL_CALL_MALLOC,
    free          = GGML_CPOOL_CALL_FREE,
    synchronize   = GGML_CPOOL_CALL_SYNCHRONIZE,
    vmm_reserve   = GGML_CPOOL_CALL_VMM_RESERVE,
    vmm_unreserve = GGML_CPOOL_CALL_VMM_UNRESERVE,
    vmm_create    = GGML_CPOOL_CALL_VMM_CREATE,
    vmm_release   = GGML_CPOOL_CALL_VMM_RELEASE,
    vmm_map       = GGML_CPOOL_CALL_VMM_MAP,
    vmm_unmap     = GGML_CPOOL_CALL_VMM_UNMAP,
    vmm_access    = GGML_CPOOL_CALL_VMM_ACCESS,
    count         = GGML_CPOOL_CALL_COUNT,
};

constexpr size_t CALL_KINDS = size_t(call::count);

// the name fault specs use: malloc, free, sync, reserve, unreserve, create, release, map, unmap, access
const char * call_name(call c);
// calls that obtain device memory: an injected failure of one is an out-of-memory
bool         call_allocates(call c);

// an opaque physical-memory handle of the VMM calls
using vmm_handle = uint64_t;

class driver {
  public:
    virtual ~driver() = default;

    virtual ggml_cpool_platform platform() const     = 0;
    virtual int                 device_count() const = 0;

    // plain allocations; OUT_OF_MEMORY when the device is full
    status malloc(int device, size_t size, void ** ptr) {
        counted(call::malloc);
        return do_malloc(device, size, ptr);
    }
    status free(int device, void * ptr) {
        counted(call::free);
        return do_free(device, ptr);
    }
    // wait until no queued work on the device can still touch pool memory
    status synchronize(int device) {
        counted(call::synchronize);
        return do_synchronize(device);
    }
    // forget a latched error, so that it is not reported against an unrelated later call
    virtual void clear_error() = 0;

    // virtual memory management
    virtual bool   vmm_supported(int device) const   = 0;
    virtual size_t vmm_granularity(int device) const = 0;
    status vmm_reserve(int device, size_t size, uintptr_t * addr) {
        counted(call::vmm_reserve);
        return do_vmm_reserve(device, size, addr);
    }
    status vmm_unreserve(int device, uintptr_t addr, size_t size) {
        counted(call::vmm_unreserve);
        return do_vmm_unreserve(device, addr, size);
    }
    status vmm_create(int device, size_t size, vmm_handle * handle) {
        counted(call::vmm_create);
        return do_vmm_create(device, size, handle);
    }
    status vmm_release(int device, vmm_handle handle) {
        counted(call::vmm_release);
        return do_vmm_release(device, handle);
    }
    status vmm_map(int device, uintptr_t addr, size_t size, vmm_handle handle) {
        counted(call::vmm_map);
        return do_vmm_map(device, addr, size, handle);
    }
    status vmm_unmap(int device, uintptr_t addr, size_t size) {
        counted(call::vmm_unmap);
        return do_vmm_unmap(device, addr, size);
    }
    // make [addr, addr+size) readable and writable from device `accessor`
    status vmm_access(int device, uintptr_t addr, size_t size, int accessor) {
        counted(call::vmm_access);
        return do_vmm_access(device, addr, size, accessor);
    }

    // leak check: allocations, physical handles and reservations not yet given back
    // (the cuda driver cannot see those of other users, so it counts its own)
    virtual size_t outstanding() const      = 0;
    // device bytes handed out (allocations and physical handles) and not yet taken back
    virtual size_t used(int device) const   = 0;

    uint64_t calls(call c) const { return calls_[size_t(c)].load(std::memory_order_relaxed); }
    uint64_t calls() const;

  protected:
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

  private:
    void counted(call c) { calls_[size_t(c)].fetch_add(1, std::memory_order_relaxed); }

    std::array<std::atomic<uint64_t>, CALL_KINDS> calls_{};
};

} // namespace gcp
