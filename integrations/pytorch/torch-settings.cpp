#include "torch-settings.h"

#include <algorithm>
#include <iterator>

namespace gcp_torch {

ggml_cpool_ctx_params context_params(size_t device_memory) {
    ggml_cpool_ctx_params   p = ggml_cpool_ctx_default_params();
    ggml_cpool_option_value pool; // quiet: a bad value is the module's to say when the context is made
    if (ggml_cpool_option_peek(GGML_CPOOL_OPTION_POOL, &pool) == GGML_CPOOL_STATUS_OK && !pool.set) {
        std::fill(std::begin(p.kind), std::end(p.kind), GGML_CPOOL_KIND_LEGACY);
    }
    if (device_memory > 0) {
        p.vmm_reserve = device_memory;
    }
    return p;
}

ggml_cpool_status stats_target(std::string * where) {
    ggml_cpool_option_value stats;
    ggml_cpool_status       st = ggml_cpool_option_read(GGML_CPOOL_OPTION_STATS, &stats);
    *where                     = !stats.on ? "" : stats.path ? stats.path : STATS_STDERR;
    return st;
}

} // namespace gcp_torch
