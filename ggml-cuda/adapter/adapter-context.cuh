#pragma once
// The context: what the pools of one backend context share, never another's (whose graphs may still use it).

#include "adapter-settings.cuh"
#include "ggml-cuda-pool-adapter.cuh"
#include "ggml-cuda-pool.h"

#include <cstdint>
#include <string>

struct ggml_cuda_cpool_context {
    uint64_t             id = 0; // the stats lines name it
    std::string          config; // the configuration's name: GGML_CUDA_POOL's, or its turn in GGML_CUDA_POOL_ROTATE
    cpool_adapter::owner pools = cpool_adapter::owner::module;
    ggml_cpool_ctx_t     ctx   = nullptr; // the module's pools; null where ggml's own serve
    uint64_t             graph_events[GGML_CUDA_CPOOL_GRAPH_EVENTS] = {};
    bool                 capture_abandoned                          = false; // since ggml last asked
    // GGML_CUDA_POOL_CAPTURES=declared: whether ggml captures its first stream, and each device's pool of it
    bool                 capture_open                              = false;
    ggml_cpool_t         first_stream_pool[GGML_CPOOL_MAX_DEVICES] = {};

    ~ggml_cuda_cpool_context(); // synchronizes the borrowed streams before the memory goes back
};

namespace cpool_adapter {

// opened by whichever comes first: a pool, a graph or a compute
ggml_cuda_cpool_context & context_of(ggml_backend_cuda_context & ctx);

// ggml begins (open) or has ended a capture of `device`'s first stream, which its pool is told if declared
void declare_capture(ggml_cuda_cpool_context & context, int device, bool open);

// the module refused after its recovery: an out-of-memory inside a compute that may fail fails the
// compute (adapter-compute.cu); anything else ends the process, as ggml's own pools do
[[noreturn]] void fail(int device, const char * what, ggml_cpool_status st);

} // namespace cpool_adapter
