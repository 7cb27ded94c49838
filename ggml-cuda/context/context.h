#pragma once
// A context (ggml_cpool_ctx; one per ggml backend context): a pool per (device, stream slot), of a
// kind it picks, made on first use. Memory one context frees is never handed to another.

#include "../drivers/driver.h"
#include "../pools/pool.h"
#include "stream-slots.h"

#include <memory>
#include <vector>

namespace gcp {

constexpr size_t   DEFAULT_VMM_RESERVE = 32 * GiB; // ggml's: virtual only, so generous is free
// a pool holds at most a quarter more than it has needed at once: enough for best fit to serve
// an LLM's layer after layer from what it holds, too little to strand outgrown buffers
constexpr uint32_t DEFAULT_HEADROOM_PCT = 25;

class context {
  public:
    // reads the environment once; a malformed variable fails creation
    static status create(const ggml_cpool_ctx_params & params, std::shared_ptr<driver> drv,
                         std::unique_ptr<context> * out);
    // every pool's stream is synchronized before its memory goes back; what a live graph still
    // pins, or what sits behind a stream whose synchronize failed, goes to the quarantine instead
    ~context();

    status get_pool(int device, int slot, pool ** out);
    status stream(int device, int slot, stream_t * out) { return slots_.stream(device, slot, out); }
    status set_stream(int device, int slot, stream_t stream) { return slots_.set_stream(device, slot, stream); }

    // moves whenever any of the context's pools returns memory to the driver
    uint64_t generation() const;
    // pin mode (CUDA graphs): buffers handed out between begin and end stay with the graph
    status   pin_begin(uint64_t * graph);
    status   pin_end();
    status   pin_release(uint64_t graph);

  private:
    context(const ggml_cpool_ctx_params & params, std::shared_ptr<driver> drv);
    status resolve_kind(int device, ggml_cpool_kind * kind);

    ggml_cpool_ctx_params   params_;
    std::shared_ptr<driver> drv_;
    stream_slots            slots_;          // after drv_, which it uses
    uint64_t                pinning_    = 0; // the open graph, which a pool made now joins; 0 when none is open
    uint64_t                next_graph_ = 1;
    std::vector<uint64_t>   graphs_; // pinned, not released
    ggml_cpool_kind         env_kind_     = GGML_CPOOL_KIND_AUTO;
    bool                    no_vmm_       = false;
    bool                    guard_logged_ = false;
    bool                    neighbours_   = false; // its pools sit with the device's neighbours
};

} // namespace gcp
