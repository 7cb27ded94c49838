// The configurations a trace is replayed against: one table, a row each (docs/trace-and-replay.md),
// and the lookups pool-replay makes in it.

#include "replay.h"

namespace replay {

namespace {

constexpr uint32_t OVERALLOCATE = GGML_CPOOL_ALLOC_OVERALLOCATE;

// the rule the pools had before the headroom: every cached buffer is kept
void keep_every_buffer(ggml_cpool_ctx_params * p) {
    p->headroom_pct = GGML_CPOOL_HEADROOM_UNLIMITED;
}

const std::vector<config> CONFIGS = {
    { "recorded", GGML_CPOOL_KIND_AUTO, 0, nullptr, "the trace's own numbers, as the traced run saw them" },
    { "legacy", GGML_CPOOL_KIND_LEGACY, 0, nullptr, "legacy pool, requests as traced" },
    { "plain", GGML_CPOOL_KIND_PLAIN, 0, nullptr, "plain pool (flush instead of LRU reclaim), requests as traced" },
    { "vmm", GGML_CPOOL_KIND_VMM, 0, nullptr, "VMM pool, requests as traced" },
    { "async", GGML_CPOOL_KIND_ASYNC, 0, nullptr, "stream-ordered pool kept warm, requests as traced" },
    { "legacy-1x", GGML_CPOOL_KIND_LEGACY, OVERALLOCATE, nullptr, "legacy pool without OVERALLOCATE (ggml's rule)" },
    { "plain-1x", GGML_CPOOL_KIND_PLAIN, OVERALLOCATE, nullptr, "plain pool without OVERALLOCATE" },
    { "vmm-1x", GGML_CPOOL_KIND_VMM, OVERALLOCATE, nullptr, "VMM pool without OVERALLOCATE (ggml's rule)" },
    { "legacy-keep", GGML_CPOOL_KIND_LEGACY, 0, keep_every_buffer, "legacy pool without the headroom rule" },
    { "legacy-1x-keep", GGML_CPOOL_KIND_LEGACY, OVERALLOCATE, keep_every_buffer,
      "legacy pool without the headroom rule or OVERALLOCATE (ggml's pool)" },
    { "async-keep", GGML_CPOOL_KIND_ASYNC, 0, keep_every_buffer, "stream-ordered pool without the headroom rule" },
};

} // namespace

const std::vector<config> & configurations() {
    return CONFIGS;
}

const config * find_config(const std::string & name) {
    for (const config & c : CONFIGS) {
        if (name == c.name) {
            return &c;
        }
    }
    return nullptr;
}

std::vector<const config *> default_configs() {
    std::vector<const config *> out;
    for (const char * name : { "recorded", "legacy", "plain", "vmm", "async" }) {
        out.push_back(find_config(name));
    }
    return out;
}

} // namespace replay
