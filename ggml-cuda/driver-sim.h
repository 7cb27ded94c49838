#pragma once
// Host memory that behaves like a device: a capacity limit per device, 256-byte aligned
// allocations, reservable virtual ranges mapped at a granularity (PROT_NONE until mapped, so a
// stray access faults), platform and device count as parameters, a counter per call kind.

#include "driver.h"
#include "sim-arena.h"
#include "sim-mempool.h"

#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace gcp {

class sim_driver final : public driver {
  public:
    static constexpr size_t ALIGNMENT = 256; // cudaMalloc's guaranteed alignment

    // the defaults a C caller starts from, and the check of what it asks for (a status and a line)
    static ggml_cpool_sim_params defaults();
    static status                check(const ggml_cpool_sim_params & params);

    explicit sim_driver(const ggml_cpool_sim_params & params);
    ~sim_driver() override;

    ggml_cpool_platform platform() const override { return params_.platform; }
    int                 device_count() const override { return params_.device_count; }
    bool                vmm_supported(int device) const override;
    bool                async_supported(int device) const override;
    bool                can_access_peer(int device, int peer) const override {
        return valid(device) && valid(peer) && device != peer;
    }
    status              stream_capturing(int device, stream_t stream, bool * capturing) override;
    // the sim's stand-in for cudaStreamBeginCapture / cudaStreamEndCapture
    status              set_capturing(int device, stream_t stream, bool capturing);
    // stream-ordered calls made on a stream (0 for an unknown one)
    uint64_t            stream_calls(int device, stream_t stream) const;
    size_t              vmm_granularity(int /*device*/) const override { return params_.granularity; }
    size_t              outstanding() const override;
    size_t              used(int device) const override;

  protected:
    status do_malloc(int device, size_t size, void ** ptr) override;
    status do_free(int device, void * ptr) override;
    status do_synchronize(int device) override;

    status do_vmm_reserve(int device, size_t size, uintptr_t * addr) override;
    status do_vmm_unreserve(int device, uintptr_t addr, size_t size) override;
    status do_vmm_create(int device, size_t size, vmm_handle * handle) override;
    status do_vmm_release(int device, vmm_handle handle) override;
    status do_vmm_map(int device, uintptr_t addr, size_t size, vmm_handle handle) override;
    status do_vmm_unmap(int device, uintptr_t addr, size_t size) override;
    status do_vmm_access(int device, uintptr_t addr, size_t size, int accessor) override;
    status do_stream_create(int device, stream_t * stream) override;
    status do_stream_destroy(int device, stream_t stream) override;
    status do_malloc_async(int device, size_t size, stream_t stream, void ** ptr) override;
    status do_free_async(int device, void * ptr, stream_t stream) override;
    status do_stream_synchronize(int device, stream_t stream) override;
    status do_pool_threshold(int device, uint64_t * threshold) override;
    status do_pool_set_threshold(int device, uint64_t threshold) override;
    status do_pool_reuse(int device, uint32_t * policies) override;
    status do_pool_set_reuse(int device, uint32_t policies) override;
    status do_pool_usage(int device, size_t * reserved, size_t * used) override;
    status do_pool_trim(int device, size_t keep) override;


  private:
    struct block { // a piece of device memory: where it sits in the arena
        size_t offset;
        size_t size;
    };
    struct device_state {
        explicit device_state(size_t capacity) : arena(capacity) {}
        sim_arena                              arena;
        std::unordered_map<void *, block>      allocs;       // host pages -> device memory
        std::unordered_map<vmm_handle, block>  handles;      // physical handle -> device memory
        std::map<uintptr_t, size_t>            reservations; // base -> bytes
        std::map<uintptr_t, vmm_handle>        mappings;     // mapped base -> handle
        std::unique_ptr<sim_mempool>           mempool = std::make_unique<sim_mempool>();
        struct stream_state {
            bool     capturing = false;
            uint64_t calls     = 0; // stream-ordered calls made on it
        };
        // every stream created, and nullptr: the default stream, which always exists
        std::map<stream_t, stream_state>       streams{ { nullptr, {} } };
        // stream-ordered allocations made while their stream was capturing: the graph's memory,
        // outside the stream-ordered pool, as CUDA's graph memory nodes are
        std::unordered_map<void *, block>      graph_allocs;
    };

    bool     valid(int device) const { return device >= 0 && device < params_.device_count; }
    bool     in_reservation(const device_state & d, uintptr_t addr, size_t size) const;
    // the device's mempool after checking device and stream, counting a call on the stream;
    // nullptr when either is unknown
    sim_mempool * stream_pool(int device, stream_t stream);
    // the state of a known stream, or nullptr
    device_state::stream_state * find_stream(int device, stream_t stream);

    ggml_cpool_sim_params                          params_;
    mutable std::mutex                             mutex_;
    std::vector<device_state>                      devices_;
    vmm_handle                                     next_handle_ = 1;
    uintptr_t                                      next_stream_ = 1;
};

} // namespace gcp
