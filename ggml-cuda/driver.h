#pragma once
// The few device-memory primitives the pools need, behind one interface.
// Implementations: cuda (real device, HIP through vendors/hip.h) and sim (host memory).
// Every call names its device, so no call depends on the device current on the calling thread.

#include "common.h"

#include <cstdint>

namespace gcp {

// every kind of driver call, for counters and (later) fault injection
enum class call : int {
    malloc,
    free,
    synchronize,
    vmm_reserve,
    vmm_unreserve,
    vmm_create,
    vmm_release,
    vmm_map,
    vmm_unmap,
    vmm_access,
    count,
};

const char * call_name(call c);

// an opaque physical-memory handle of the VMM calls
using vmm_handle = uint64_t;

class driver {
  public:
    virtual ~driver() = default;

    virtual ggml_cpool_platform platform() const     = 0;
    virtual int                 device_count() const = 0;

    // plain allocations; OUT_OF_MEMORY when the device is full
    virtual status malloc(int device, size_t size, void ** ptr) = 0;
    virtual status free(int device, void * ptr)                 = 0;
    // wait until no queued work on the device can still touch pool memory
    virtual status synchronize(int device)                      = 0;
    // forget a latched error, so that it is not reported against an unrelated later call
    virtual void   clear_error()                                = 0;

    // virtual memory management
    virtual bool   vmm_supported(int device) const                                          = 0;
    virtual size_t vmm_granularity(int device) const                                        = 0;
    virtual status vmm_reserve(int device, size_t size, uintptr_t * addr)                   = 0;
    virtual status vmm_unreserve(int device, uintptr_t addr, size_t size)                   = 0;
    virtual status vmm_create(int device, size_t size, vmm_handle * handle)                 = 0;
    virtual status vmm_release(int device, vmm_handle handle)                               = 0;
    virtual status vmm_map(int device, uintptr_t addr, size_t size, vmm_handle handle)      = 0;
    virtual status vmm_unmap(int device, uintptr_t addr, size_t size)                       = 0;
    // make [addr, addr+size) readable and writable from device `accessor`
    virtual status vmm_access(int device, uintptr_t addr, size_t size, int accessor)        = 0;

    // leak check: allocations, physical handles and reservations not yet given back
    // (the cuda driver cannot see those of other users, so it counts its own)
    virtual size_t outstanding() const = 0;
};

} // namespace gcp
