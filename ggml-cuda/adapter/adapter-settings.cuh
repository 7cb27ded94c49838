#pragma once
// The adapter's run-time settings, read once by the module's reader (one rule for every option).

#include "ggml-cuda-pool.h"

#include <cstdio>
#include <string>
#include <vector>

namespace cpool_adapter {

enum class owner { module, ggml, ggml_legacy }; // whose pools serve a backend context

struct choice { // the pools one backend context gets
    std::string     name  = "auto";
    owner           pools = owner::module;
    ggml_cpool_kind kind  = GGML_CPOOL_KIND_AUTO; // a module kind; AUTO: the module's environment decides
};

// a co-tenant's spikes and fault windows measured beside llama-server lasted 0.3 to 3.6 s (docs/llama-cpp.md)
constexpr uint32_t DEFAULT_WAIT_MS = 5000;

struct settings {
    choice              pools;  // GGML_CUDA_POOL
    std::vector<choice> rotate; // GGML_CUDA_POOL_ROTATE: backend context k takes rotate[(k - 1) % size]
    bool                kv_in_pool = false;
    bool                kv_growing = true; // pool-1x: the conversions asked for as plain requests, no OVERALLOCATE
    bool                captures_declared = false; // GGML_CUDA_POOL_CAPTURES=declared
    std::string         stats;                     // empty: none; "-": stderr; else the file
    FILE *              stats_out = nullptr;       // stderr, or the file opened for appending
    // GGML_CUDA_POOL_ON_OOM=error: an allocation refused inside a compute fails the compute, not the process
    bool                oom_fails_compute = true;
    // GGML_CUDA_POOL_WAIT_MS: how long a refused allocation waits for memory, outlasting a co-tenant's spike
    uint32_t            wait_ms = DEFAULT_WAIT_MS;
};

// read at the first call: a bad value, or GGML_CUDA_POOL_ROTATE with GGML_CUDA_POOL, ends the run with one line
const settings & config();

// the module's lines through ggml's logger from now on (once): from the settings' reading on
void route_module_log();

} // namespace cpool_adapter
