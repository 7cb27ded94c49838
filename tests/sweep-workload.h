#pragma once
// The workload both failure sweeps run (driver calls in test-fault.cpp, host allocations in
// test-host-alloc.cpp): two requests, each a prompt pass and decode steps whose K/V conversions
// outgrow the last buffers, then a trim as a host under memory pressure would. The device is
// small enough that the legacy pools reclaim even without faults.

#include "../tools/llm-pass.h"
#include "harness.h"

namespace sweep {

constexpr size_t CAPACITY  = 4 * harness::MiB;
constexpr int    PROMPTS[] = { 96, 200 }; // the second request is longer
constexpr int    STRIDE    = 40;          // tokens per decode step, as a speculative decoder's

struct run {
    int  errors;  // statuses returned to the caller
    bool trimmed; // every trim succeeded
};

inline run workload(ggml_cpool_t pool, const llm_shape & model, int decode_steps, const llm_calls & calls = {}) {
    run r{ 0, true };
    for (int prompt : PROMPTS) {
        int ctx = prompt;
        r.errors += llm_forward(pool, model, false, prompt, ctx, calls);
        for (int t = 0; t < decode_steps; t++) {
            ctx += STRIDE;
            r.errors += llm_forward(pool, model, t % 2 == 0, 1, ctx, calls);
        }
        r.trimmed = calls.trim(pool) == GGML_CPOOL_STATUS_OK && r.trimmed;
    }
    return r;
}

} // namespace sweep
