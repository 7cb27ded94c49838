#pragma once
// The session: what the pools of one backend context share. Its memory is never handed to
// another backend context, whose CUDA graphs could still use it.

#include "adapter-settings.cuh"
#include "ggml-cuda-pool-adapter.cuh"
#include "ggml-cuda-pool.h"

#include <cstdint>
#include <string>

// its number (stats lines name it), its configuration, the module context, and what the
// context's CUDA graphs did
struct ggml_cuda_cpool_session {
    uint64_t             id = 0;
    std::string          config; // the configuration's name: GGML_CUDA_POOL's, or its turn in GGML_CUDA_POOL_ROTATE
    cpool_adapter::owner pools = cpool_adapter::owner::module;
    ggml_cpool_ctx_t     ctx   = nullptr; // the module's pools; null where ggml's own serve
    uint64_t             graph_events[GGML_CUDA_CPOOL_GRAPH_EVENTS] = {};
    bool                 capture_abandoned                          = false; // since ggml last asked

    ~ggml_cuda_cpool_session(); // synchronizes the borrowed streams before the memory goes back
};

namespace cpool_adapter {

// the module has exhausted its recovery: fail as ggml's own pools do, with the module's reason
[[noreturn]] void fail(int device, const char * what, ggml_cpool_status st);

} // namespace cpool_adapter
