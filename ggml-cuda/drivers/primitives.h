#pragma once
// What a device provides (cuda_primitives, sim_primitives), reached only through driver.h. Every
// primitive names its device, so none depends on the calling thread's current device.

#include "../support/common.h"

#include <cstdint>

namespace gcp {

using vmm_handle = uint64_t; // an opaque physical-memory handle
using stream_t   = void *;   // an opaque stream (a cudaStream_t on the real device)

// a device's identity across processes (cudaDeviceProp::uuid): processes that see one UUID share the device
struct device_uuid {
    uint8_t bytes[16];
};

class vmm_primitives;
class mempool_primitives;

class device_primitives {
  public:
    virtual ~device_primitives() = default;

    virtual ggml_cpool_platform platform() const     = 0;
    virtual int                 device_count() const = 0;

    // device memory; OUT_OF_MEMORY when the device is full
    virtual status malloc(int device, size_t size, void ** ptr) = 0;
    // ptr came from malloc on this device
    virtual status free(int device, void * ptr) = 0;
    // waits until no queued work on the device can still touch its memory
    virtual status synchronize(int device) = 0;

    virtual status stream_create(int device, stream_t * stream) = 0;
    // stream came from stream_create on this device
    virtual status stream_destroy(int device, stream_t stream)     = 0;
    virtual status stream_synchronize(int device, stream_t stream) = 0;
    // whether stream is being captured into a graph
    virtual status stream_capturing(int device, stream_t stream, bool * capturing) = 0;
    // whether kernels on peer can reach memory of device
    virtual bool   can_access_peer(int device, int peer) const = 0;

    // the device's virtual memory management, or nullptr where it has none
    virtual vmm_primitives *     vmm(int device) = 0;
    // the device's default stream-ordered pool, or nullptr where it has none
    virtual mempool_primitives * mempool(int device) = 0;

    // (optional) leak check: allocations, physical handles and reservations not yet given back
    virtual size_t outstanding() const { return 0; }
    // (optional) device bytes handed out (allocations and physical handles), not yet taken back
    virtual size_t used(int /*device*/) const { return 0; }

    // (optional) whether a failed call left an error a later call would report (CUDA's last error)
    virtual bool         error_latched() const { return false; }
    // (optional) primitives of one identity share devices, so process-wide records key on it
    virtual const void * identity() const { return this; }
    // (optional) the device's memory free now, as the driver counts it (cudaMemGetInfo)
    virtual status       free_memory(int /*device*/, size_t * /*free*/) { return UNSUPPORTED; }
    // (optional) the device's UUID, the same in every process that sees the device
    virtual status       uuid(int /*device*/, device_uuid * /*out*/) const { return UNSUPPORTED; }
    // (optional) the pause in microseconds before a refused allocation is tried again: the sim's
    // free memory changes only with calls, so it has none
    virtual uint32_t     transient_pause_us() const { return 0; }
};

// Virtual memory management: an address range reserved once, physical memory created in the
// granularity's multiples, mapped into the range and made accessible.
class vmm_primitives {
  public:
    virtual ~vmm_primitives() = default;

    // every size below is a multiple of it
    virtual size_t granularity(int device) const                      = 0;
    virtual status reserve(int device, size_t size, uintptr_t * addr) = 0;
    // a whole range reserve returned, with nothing mapped in it any more
    virtual status unreserve(int device, uintptr_t addr, size_t size) = 0;
    // physical memory; OUT_OF_MEMORY when the device is full
    virtual status create(int device, size_t size, vmm_handle * handle) = 0;
    // a handle no longer mapped
    virtual status release(int device, vmm_handle handle) = 0;
    // maps a whole handle at addr, inside a reserved range
    virtual status map(int device, uintptr_t addr, size_t size, vmm_handle handle) = 0;
    virtual status unmap(int device, uintptr_t addr, size_t size)                  = 0;
    // makes [addr, addr + size) readable and writable from device accessor
    virtual status access(int device, uintptr_t addr, size_t size, int accessor) = 0;
};

// what of a stream-ordered pool is read and set by id
enum class mempool_attr {
    release_threshold, // unused bytes the pool keeps at a synchronize
    reuse_policies,    // REUSE_* bits
    reserved,          // bytes the pool holds from the device (read only)
    used,              // of those, bytes allocated (read only)
};

// the release threshold that keeps a stream-ordered pool warm: never give memory back at a sync
constexpr uint64_t THRESHOLD_MAX = UINT64_MAX;

// a stream-ordered pool's cross-stream reuse policies (CUDA's default: both), which would hand one
// context's freed block, still used by a captured graph, to another context's stream
constexpr uint64_t REUSE_OPPORTUNISTIC         = 1;
constexpr uint64_t REUSE_INTERNAL_DEPENDENCIES = 2;

// A device's default stream-ordered pool: allocation and free ordered on a stream.
class mempool_primitives {
  public:
    virtual ~mempool_primitives() = default;

    // OUT_OF_MEMORY when the device is full
    virtual status malloc_async(int device, size_t size, stream_t stream, void ** ptr) = 0;
    virtual status free_async(int device, void * ptr, stream_t stream)                 = 0;
    virtual status get_attr(int device, mempool_attr attr, uint64_t * value)           = 0;
    // release_threshold and reuse_policies only
    virtual status set_attr(int device, mempool_attr attr, uint64_t value) = 0;
    // gives unused memory back until at most max(keep, used) stays
    virtual status trim(int device, size_t keep) = 0;
};

} // namespace gcp
