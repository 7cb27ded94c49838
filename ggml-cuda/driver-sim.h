#pragma once
// Host memory that behaves like a device: a capacity limit per device, 256-byte aligned
// allocations, reservable virtual ranges mapped at a granularity (PROT_NONE until mapped, so a
// stray access faults), platform and device count as parameters, a counter per call kind.

#include "driver.h"
#include "sim-arena.h"

#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace gcp {

class sim_driver final : public driver {
  public:
    static constexpr size_t ALIGNMENT = 256; // cudaMalloc's guaranteed alignment

    explicit sim_driver(const ggml_cpool_sim_params & params);
    ~sim_driver() override;

    ggml_cpool_platform platform() const override { return params_.platform; }
    int                 device_count() const override { return params_.device_count; }
    void                clear_error() override {}
    bool                vmm_supported(int device) const override;
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
    };

    bool     valid(int device) const { return device >= 0 && device < params_.device_count; }
    bool     in_reservation(const device_state & d, uintptr_t addr, size_t size) const;

    ggml_cpool_sim_params                          params_;
    mutable std::mutex                             mutex_;
    std::vector<device_state>                      devices_;
    vmm_handle                                     next_handle_ = 1;
};

} // namespace gcp
