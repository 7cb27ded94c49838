#pragma once
// The sim driver is a driver (driver.h) over sim_primitives, declared here.
// Host memory that behaves like a device: a capacity limit per device with first-fit placement
// (sim-arena.h), 256-byte aligned allocations, reservable virtual ranges mapped at a granularity
// (PROT_NONE until mapped, so a stray access faults), a stream-ordered pool per device
// (sim-mempool.h) whose unused memory a cudaMalloc that finds the device full takes, as CUDA's
// does, streams that can be marked as capturing, platform and device count as
// parameters. Device memory and streams here; virtual memory in testing/sim-vmm.cpp, the
// stream-ordered pool in testing/sim-async.cpp.

#include "ggml-cuda-pool-testing.h"
#include "../drivers/primitives.h"
#include "sim-arena.h"
#include "sim-mempool.h"

#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace gcp {

class sim_primitives final : public device_primitives, public vmm_primitives, public mempool_primitives {
  public:
    static constexpr size_t ALIGNMENT = 256; // cudaMalloc's guaranteed alignment

    // the defaults a C caller starts from, and the check of what it asks for (a status and a line)
    static ggml_cpool_sim_params defaults();
    static status                check(const ggml_cpool_sim_params & params);

    explicit sim_primitives(const ggml_cpool_sim_params & params);
    ~sim_primitives() override;

    ggml_cpool_platform platform() const override { return params_.platform; }
    int                 device_count() const override { return params_.device_count; }
    status              malloc(int device, size_t size, void ** ptr) override;
    status              free(int device, void * ptr) override;
    status              synchronize(int device) override;
    status              stream_create(int device, stream_t * stream) override;
    status              stream_destroy(int device, stream_t stream) override;
    status              stream_synchronize(int device, stream_t stream) override;
    status              stream_capturing(int device, stream_t stream, bool * capturing) override;
    bool can_access_peer(int device, int peer) const override { return valid(device) && valid(peer) && device != peer; }
    vmm_primitives * vmm(int device) override { return valid(device) && params_.vmm_supported != 0 ? this : nullptr; }
    mempool_primitives * mempool(int device) override { return async_supported(device) ? this : nullptr; }
    size_t               outstanding() const override;
    size_t               used(int device) const override;
    status               free_memory(int device, size_t * free) override;

    // the sim's stand-in for cudaStreamBeginCapture / cudaStreamEndCapture
    status   set_capturing(int device, stream_t stream, bool capturing);
    // stream-ordered calls made on a stream (0 for an unknown one)
    uint64_t stream_calls(int device, stream_t stream) const;

    // virtual memory (testing/sim-vmm.cpp)
    size_t granularity(int /*device*/) const override { return params_.granularity; }
    status reserve(int device, size_t size, uintptr_t * addr) override;
    status unreserve(int device, uintptr_t addr, size_t size) override;
    status create(int device, size_t size, vmm_handle * handle) override;
    status release(int device, vmm_handle handle) override;
    status map(int device, uintptr_t addr, size_t size, vmm_handle handle) override;
    status unmap(int device, uintptr_t addr, size_t size) override;
    status access(int device, uintptr_t addr, size_t size, int accessor) override;

    // the stream-ordered pool (testing/sim-async.cpp)
    status malloc_async(int device, size_t size, stream_t stream, void ** ptr) override;
    status free_async(int device, void * ptr, stream_t stream) override;
    status get_attr(int device, mempool_attr attr, uint64_t * value) override;
    status set_attr(int device, mempool_attr attr, uint64_t value) override;
    status trim(int device, size_t keep) override;

  private:
    struct block { // a piece of device memory: where it sits in the arena
        size_t offset;
        size_t size;
    };
    struct device_state {
        explicit device_state(size_t capacity) : arena(capacity) {}
        sim_arena                             arena;
        std::unordered_map<void *, block>     allocs;       // host pages -> device memory
        std::unordered_map<vmm_handle, block> handles;      // physical handle -> device memory
        std::map<uintptr_t, size_t>           reservations; // base -> bytes
        std::map<uintptr_t, vmm_handle>       mappings;     // mapped base -> handle
        std::unique_ptr<sim_mempool>          mempool = std::make_unique<sim_mempool>();
        struct stream_state {
            bool     capturing = false;
            uint64_t calls     = 0; // stream-ordered calls made on it
        };
        // every stream created, and nullptr: the default stream, which always exists
        std::map<stream_t, stream_state>  streams{ { nullptr, {} } };
        // stream-ordered allocations made while their stream was capturing: the graph's memory,
        // outside the stream-ordered pool, as CUDA's graph memory nodes are
        std::unordered_map<void *, block> graph_allocs;
    };

    bool                         valid(int device) const { return device >= 0 && device < params_.device_count; }
    // f(the device's state) under the lock; INVALID_ARGUMENT for an unknown device
    template <typename F> status with_device(int device, F && f) {
        std::lock_guard<std::mutex> lock(mutex_);
        return valid(device) ? f(devices_[size_t(device)]) : INVALID_ARGUMENT;
    }
    // as on the real platforms: HIP builds compile the stream-ordered pool out
    bool async_supported(int device) const {
        return valid(device) && params_.async_supported != 0 && params_.platform != GGML_CPOOL_PLATFORM_HIP;
    }
    bool                         in_reservation(const device_state & d, uintptr_t addr, size_t size) const;
    // the device's mempool after checking device and stream, counting a call on the stream;
    // nullptr when either is unknown
    sim_mempool *                stream_pool(int device, stream_t stream);
    // the state of a known stream, or nullptr
    device_state::stream_state * find_stream(int device, stream_t stream);

    ggml_cpool_sim_params     params_;
    mutable std::mutex        mutex_;
    std::vector<device_state> devices_;
    vmm_handle                next_handle_ = 1;
    uintptr_t                 next_stream_ = 1;
};

// host pages for the sim's device memory (nullptr when the host has none); prot as mmap takes it
void * sim_map_pages(size_t size, int prot);

// a host allocation of the sim's own records failed: as a device runtime does, the call says
// OUT_OF_MEMORY (each call has undone what it did by then)
template <typename F> status sim_host_memory(F && f) {
    try {
        return f();
    } catch (const std::bad_alloc &) {
        return OUT_OF_MEMORY;
    }
}

} // namespace gcp
