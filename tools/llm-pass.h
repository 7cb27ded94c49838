#pragma once
// The scratch-allocation pattern of one LLM forward pass, as a ggml CUDA backend makes it: per
// layer the normalized input, dequantized weights (prompt batches only, for cuBLAS), the
// flash-attention K/V f16 conversions (they grow with the context), the attention output, then
// the feed-forward state. Shared by the demo, the fault sweep and the trace tests.

#include "ggml-cuda-pool.h"

#include <vector>

// the pool calls a workload makes: the C API, or a test's wrappers around it
struct llm_calls {
    ggml_cpool_status (*alloc)(ggml_cpool_t, size_t, uint32_t, void **, size_t *) = ggml_cpool_alloc;
    ggml_cpool_status (*free)(ggml_cpool_t, void *, size_t)                       = ggml_cpool_free;
    ggml_cpool_status (*trim)(ggml_cpool_t)                                       = ggml_cpool_trim;
};

struct llm_shape {
    int    layers;
    size_t embd;    // hidden width
    size_t ff;      // feed-forward width
    size_t kv_embd; // K/V width (embd / group size under grouped-query attention)
};

// one pass over `batch` new tokens with `ctx` tokens in the cache, over any allocator:
// get(size, flags, &ptr, &actual) says whether it served the request, put(ptr, actual) takes a
// buffer back. Returns how many allocations failed (the rest of that layer's group is then
// skipped, as a backend would abort the graph)
template <typename Get, typename Put>
int llm_forward_over(Get && get_buffer, Put && put_buffer, const llm_shape & m, bool overallocate, int batch, int ctx) {
    constexpr size_t F16 = 2, F32 = 4;
    struct scratch {
        void * ptr;
        size_t size;
    };
    std::vector<scratch> held;
    int                  errors = 0;
    auto                 get    = [&](size_t size, uint32_t flags) {
        scratch s{};
        if (!get_buffer(size, flags, &s.ptr, &s.size)) {
            errors++;
            return false;
        }
        held.push_back(s);
        return true;
    };
    auto put_all = [&] {
        for (auto it = held.rbegin(); it != held.rend(); ++it) {
            put_buffer(it->ptr, it->size);
        }
        held.clear();
    };
    const uint32_t grow = overallocate ? GGML_CPOOL_ALLOC_OVERALLOCATE : 0;
    for (int l = 0; l < m.layers; l++) {
        bool ok = get(size_t(batch) * m.embd * F32, 0);
        ok      = ok && (batch == 1 || get(m.embd * m.embd * F16, 0));
        ok      = ok && get(size_t(ctx) * m.kv_embd * F16, grow);
        ok      = ok && get(size_t(ctx) * m.kv_embd * F16, grow);
        ok      = ok && get(size_t(batch) * m.embd * F32, 0);
        put_all();
        ok = get(size_t(batch) * m.ff * F32, 0);
        ok = ok && (batch == 1 || get(m.embd * m.ff * F16, 0));
        put_all();
    }
    return errors;
}

// the same pass over a pool of this module
inline int llm_forward(ggml_cpool_t pool, const llm_shape & m, bool overallocate, int batch, int ctx,
                       const llm_calls & calls = {}) {
    return llm_forward_over(
        [&](size_t size, uint32_t flags, void ** ptr, size_t * actual) {
            return calls.alloc(pool, size, flags, ptr, actual) == GGML_CPOOL_STATUS_OK;
        },
        [&](void * ptr, size_t actual) { calls.free(pool, ptr, actual); }, m, overallocate, batch, ctx);
}

// the passes of one session: the prompt in batches of `ubatch` tokens, then `tokens` decode
// steps, each with the context grown by what came before. pass(batch, ctx) returns how many of its
// allocations failed; with `stop_at_failure` the session ends after the first pass with one (a
// workload the memory cannot hold fails every pass after it). Returns how many failed in all
template <typename Pass>
int llm_passes(Pass && pass, int prompt, int ubatch, int tokens, bool stop_at_failure = false) {
    int errors  = 0;
    int ctx_len = 0;
    for (int done = 0; done < prompt && !(stop_at_failure && errors > 0); done += ubatch) {
        const int batch = prompt - done < ubatch ? prompt - done : ubatch;
        ctx_len += batch;
        errors += pass(batch, ctx_len);
    }
    for (int t = 0; t < tokens && !(stop_at_failure && errors > 0); t++) {
        errors += pass(1, ++ctx_len);
    }
    return errors;
}

// one session over a pool of this module; returns how many allocations failed
inline int llm_session(ggml_cpool_t pool, const llm_shape & m, bool overallocate, int prompt, int ubatch, int tokens) {
    return llm_passes([&](int batch, int ctx) { return llm_forward(pool, m, overallocate, batch, ctx); }, prompt,
                      ubatch, tokens);
}
