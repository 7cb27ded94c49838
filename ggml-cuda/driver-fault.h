#pragma once
// A driver decorator that makes chosen calls fail (fault-spec.h says how they are chosen), over
// any driver: the sim one in CI, the cuda one on a GPU. A failed call never reaches the driver
// below; an allocating call fails with OUT_OF_MEMORY, any other with DRIVER_ERROR.

#include "driver.h"
#include "fault-spec.h"

#include <memory>
#include <mutex>
#include <random>

namespace gcp {

class fault_driver final : public driver {
  public:
    fault_driver(std::shared_ptr<driver> inner, const fault_spec & spec) : inner_(std::move(inner)) { arm(spec); }

    // replaces the spec and restarts the call counts it refers to
    void     arm(const fault_spec & spec);
    uint64_t fired() const;

    ggml_cpool_platform platform() const override { return inner_->platform(); }
    int                 device_count() const override { return inner_->device_count(); }
    bool                error_latched() const override { return driver::error_latched() || inner_->error_latched(); }
    const void *        identity() const override { return inner_->identity(); }
    bool                async_supported(int device) const override { return inner_->async_supported(device); }
    bool                can_access_peer(int device, int peer) const override { return inner_->can_access_peer(device, peer); }
    status              stream_capturing(int device, stream_t stream, bool * capturing) override {
        return inner_->stream_capturing(device, stream, capturing);
    }
    bool                vmm_supported(int device) const override { return inner_->vmm_supported(device); }
    size_t              vmm_granularity(int device) const override { return inner_->vmm_granularity(device); }
    size_t              outstanding() const override { return inner_->outstanding(); }
    size_t              used(int device) const override { return inner_->used(device); }

  protected:
    void   do_clear_error() override { inner_->clear_error(); }
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
    // OK to let the call through, else the status it fails with; size is the bytes an allocation asks for
    status inject(call c, int device, size_t size);
    // the call below, unless a fault fires first
    template <typename F> status through(call c, int device, size_t size, F && forward) {
        status st = inject(c, device, size);
        return st != OK ? st : forward();
    }

    std::shared_ptr<driver> inner_;
    mutable std::mutex      mutex_;
    fault_spec              spec_;
    std::mt19937_64         rng_;
    uint64_t                seen_[CALL_KINDS] = {}; // calls of each kind since armed
    uint64_t                seen_any_         = 0;
    uint64_t                fired_            = 0;
    bool                    oneshot_done_     = false;
};

} // namespace gcp
