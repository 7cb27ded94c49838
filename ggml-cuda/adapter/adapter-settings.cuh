#pragma once
// The adapter's run-time settings, read once from the environment: whose pools serve each backend
// context (GGML_CUDA_POOL, or GGML_CUDA_POOL_ROTATE's configurations in turn), where the
// flash-attention K/V f16 conversions live (GGML_CUDA_POOL_KV_F16) and where the statistics lines
// go (GGML_CUDA_POOL_STATS).

#include "ggml-cuda-pool.h"

#include <string>
#include <vector>

namespace cpool_adapter {

enum class owner { module, ggml, ggml_legacy }; // whose pools serve a backend context

// the pools one backend context gets
struct choice {
    std::string     name  = "auto";
    owner           pools = owner::module;
    ggml_cpool_kind kind  = GGML_CPOOL_KIND_AUTO; // a module kind; AUTO: the module's environment decides
};

struct settings {
    choice              pools;  // GGML_CUDA_POOL
    std::vector<choice> rotate; // GGML_CUDA_POOL_ROTATE: backend context k takes rotate[(k - 1) % size]
    bool                kv_in_pool = false;
    bool                kv_growing = true; // pool-1x: the conversions asked for as plain requests, no OVERALLOCATE
    std::string         stats;             // empty: none; "-": stderr; else a file to append to
    // GGML_CUDA_POOL_ON_OOM=error: an allocation refused inside a compute fails the compute, not the process
    bool                oom_fails_compute = true;
};

// where GGML_CUDA_POOL_STATS sends the lines ("": none, "-": stderr, else a file), from the environment now
std::string stats_target();

// the settings, read at the first call; a rotation entry that names no configuration, or
// GGML_CUDA_POOL_ROTATE set together with GGML_CUDA_POOL, ends the process
const settings & config();

} // namespace cpool_adapter
