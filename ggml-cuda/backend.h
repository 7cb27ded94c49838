#pragma once
// A backend context: one session. Owns one pool per device, created on first use, and picks
// each pool's kind. Memory one context frees is never handed to another.

#include "driver.h"
#include "pool.h"

#include <array>
#include <memory>
#include <vector>

namespace gcp {

constexpr size_t DEFAULT_VMM_RESERVE = 32 * GiB; // ggml's: virtual only, so generous is free

// a driver of the given kind (a ggml_cpool_driver_kind, read with raw_enum), or a status and a
// log line saying why not
status make_driver(int kind, const ggml_cpool_sim_params & sim, std::shared_ptr<driver> * out);

// wraps *drv in a fault driver when GGML_CUDA_POOL_FAULT is set; a malformed spec fails
status apply_env_faults(std::shared_ptr<driver> * drv);

class backend {
  public:
    // reads the environment once; a malformed variable fails creation
    static status create(const ggml_cpool_ctx_params & params, std::shared_ptr<driver> drv,
                         std::unique_ptr<backend> * out);
    ~backend(); // pools release their memory by device id, whatever device is current

    status get_pool(int device, pool ** out);
    // this context's stream on a device, created on first use
    status stream(int device, stream_t * out);

    // moves whenever any of the context's pools returns memory to the driver
    uint64_t generation() const;
    // pin mode (CUDA graphs): buffers handed out between begin and end stay with the graph
    status   pin_begin(uint64_t * graph);
    status   pin_end();
    status   pin_release(uint64_t graph);

  private:
    backend(const ggml_cpool_ctx_params & params, std::shared_ptr<driver> drv);
    status resolve_kind(int device, ggml_cpool_kind * kind);
    bool   valid_device(int device) const;

    ggml_cpool_ctx_params                                  params_;
    std::shared_ptr<driver>                                drv_;
    ggml_cpool_kind                                        env_kind_ = GGML_CPOOL_KIND_AUTO;
    bool                                                   no_vmm_   = false;
    bool                                                   guard_logged_ = false;
    uint64_t                                               pinning_      = 0; // the open graph
    uint64_t                                               next_graph_   = 1;
    std::vector<uint64_t>                                  graphs_;           // pinned, not released
    std::array<stream_t, GGML_CPOOL_MAX_DEVICES>           streams_{}; // destroyed after the pools
    std::array<std::unique_ptr<pool>, GGML_CPOOL_MAX_DEVICES> pools_;
};

} // namespace gcp
