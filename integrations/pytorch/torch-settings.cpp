#include "torch-settings.h"

#include <algorithm>
#include <iterator>

namespace gcp_torch {

namespace {

// the module kinds' names, as the options table's values text lists them: "auto | vmm | ..."
std::string kind_names() {
    std::string names;
    for (int k = 0; k < GGML_CPOOL_KIND_COUNT; k++) {
        names += std::string(k == 0 ? "" : " | ") + ggml_cpool_kind_str(ggml_cpool_kind(k));
    }
    return names;
}

} // namespace

ggml_cpool_ctx_params context_params(size_t device_memory) {
    ggml_cpool_ctx_params   p = ggml_cpool_ctx_default_params();
    ggml_cpool_option_value pool; // quiet: a bad value is the module's to say when the context is made
    if (ggml_cpool_option_peek(GGML_CPOOL_OPTION_POOL, &pool) == GGML_CPOOL_STATUS_OK && !pool.set) {
        std::fill(std::begin(p.kind), std::end(p.kind), GGML_CPOOL_KIND_LEGACY);
    }
    if (device_memory > 0) {
        p.vmm_reserve = device_memory;
    }
    ggml_cpool_option_value wait; // unset: 0, as PyTorch raises a refusal at once
    if (ggml_cpool_option_peek(GGML_CPOOL_OPTION_WAIT_MS, &wait) == GGML_CPOOL_STATUS_OK && wait.set) {
        p.wait_ms = wait.milliseconds;
    }
    return p;
}

ggml_cpool_status stats_target(std::string * where) {
    ggml_cpool_option_value stats;
    ggml_cpool_status       st = ggml_cpool_option_read(GGML_CPOOL_OPTION_STATS, &stats);
    *where                     = !stats.on ? "" : stats.path ? stats.path : STATS_STDERR;
    return st;
}

ggml_cpool_status check_settings(std::string * stats_where, refusal * why) {
    ggml_cpool_status st = ggml_cpool_options_check();
    if (st == GGML_CPOOL_STATUS_OK) {
        st = stats_target(stats_where);
    }
    if (st != GGML_CPOOL_STATUS_OK) {
        why->set(refusal::kind::bad_setting, "%s", ggml_cpool_last_error());
        return st;
    }
    ggml_cpool_option_value pool;
    ggml_cpool_kind         kind;
    if (ggml_cpool_option_peek(GGML_CPOOL_OPTION_POOL, &pool) == GGML_CPOOL_STATUS_OK && pool.set &&
        ggml_cpool_kind_from_str(pool.word, &kind) != GGML_CPOOL_STATUS_OK) {
        why->set(refusal::kind::bad_setting,
                 "%s=%s: ggml's own pools, which only the llama.cpp adapter serves; the PyTorch library takes %s",
                 ggml_cpool_option_name(GGML_CPOOL_OPTION_POOL), pool.text, kind_names().c_str());
        return GGML_CPOOL_STATUS_INVALID_ARGUMENT;
    }
    return GGML_CPOOL_STATUS_OK;
}

} // namespace gcp_torch
