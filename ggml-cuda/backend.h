#pragma once
// A backend context: one session. Owns one pool per (device, consumer stream slot), created on
// first use on that slot's stream, and picks each pool's kind. Memory one context frees is never
// handed to another. The consumer's streams are borrowed, never destroyed; where a slot has none
// the context creates one of its own.

#include "driver.h"
#include "pool.h"

#include <array>
#include <memory>
#include <vector>

namespace gcp {

constexpr size_t DEFAULT_VMM_RESERVE = 32 * GiB; // ggml's: virtual only, so generous is free
// a pool holds at most a quarter more than it has needed at once: enough for best fit to serve
// an LLM's layer after layer from what it holds, too little to strand outgrown buffers
constexpr uint32_t DEFAULT_HEADROOM_PCT = 25;

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
    // every pool's stream is synchronized before its memory goes back, whatever device is
    // current; what a live graph still pins, or what sits behind a stream whose synchronize
    // failed, goes to the quarantine instead
    ~backend();

    status get_pool(int device, int slot, pool ** out);
    // the stream of (device, slot): the borrowed one, or the context's own, created on first use
    status stream(int device, int slot, stream_t * out);
    // borrows the consumer's stream for (device, slot); nullptr gives the slot one of its own
    status set_stream(int device, int slot, stream_t stream);

    // moves whenever any of the context's pools returns memory to the driver
    uint64_t generation() const;
    // pin mode (CUDA graphs): buffers handed out between begin and end stay with the graph
    status   pin_begin(uint64_t * graph);
    status   pin_end();
    status   pin_release(uint64_t graph);

  private:
    struct slot {
        stream_t              stream   = nullptr;
        bool                  borrowed = false;
        std::unique_ptr<pool> instance;
    };

    backend(const ggml_cpool_ctx_params & params, std::shared_ptr<driver> drv);
    status resolve_kind(int device, ggml_cpool_kind * kind);
    bool   valid_slot(int device, int slot) const;
    void   retire(std::unique_ptr<pool> p); // at destruction: free, or quarantine
    void   destroy_own_stream(int device, stream_t stream);
    // every pool of the context
    template <typename F> void each_pool(F && f) const {
        for (auto & device : slots_) {
            for (auto & s : device) {
                if (s.instance) {
                    f(*s.instance);
                }
            }
        }
    }

    ggml_cpool_ctx_params                                  params_;
    std::shared_ptr<driver>                                drv_;
    ggml_cpool_kind                                        env_kind_ = GGML_CPOOL_KIND_AUTO;
    bool                                                   no_vmm_   = false;
    bool                                                   guard_logged_ = false;
    uint64_t                                               pinning_      = 0; // the open graph
    uint64_t                                               next_graph_   = 1;
    std::vector<uint64_t>                                  graphs_;           // pinned, not released
    std::array<std::array<slot, GGML_CPOOL_MAX_STREAMS>, GGML_CPOOL_MAX_DEVICES> slots_;
};

} // namespace gcp
