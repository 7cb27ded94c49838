// The contexts (adapter-context.cuh), one per ggml backend context, and the entry points the patch calls.

#include "ggml-cuda-pool-adapter.cuh"

#include "adapter-context.cuh"
#include "adapter-settings.cuh"
#include "adapter-stats.cuh"
#include "common.cuh"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <mutex>
#include <utility>

namespace cpool_adapter {

namespace {

// the module's lines go through ggml's logger, at the module's own threshold
void forward_log(ggml_cpool_log_level level, const char * text, void * /*user_data*/) {
    static constexpr ggml_log_level TO_GGML[] = { GGML_LOG_LEVEL_DEBUG, GGML_LOG_LEVEL_INFO, GGML_LOG_LEVEL_WARN,
                                                  GGML_LOG_LEVEL_ERROR }; // by ggml_cpool_log_level, 0 to 3
    if (level >= ggml_cpool_log_threshold()) {
        ggml_log_internal(TO_GGML[level], "%s", text);
    }
}

std::shared_ptr<ggml_cuda_cpool_context> open_context() {
    route_module_log();
    static std::atomic<uint64_t> contexts{ 0 };
    const settings &             c       = config();
    auto                         context = std::make_shared<ggml_cuda_cpool_context>();
    context->id                          = ++contexts;
    const choice & pick                  = c.rotate.empty() ? c.pools : c.rotate[(context->id - 1) % c.rotate.size()];
    context->config                      = pick.name;
    context->pools                       = pick.pools;
    if (pick.pools != owner::module) {
        return context;
    }
    ggml_cpool_ctx_params params = ggml_cpool_ctx_default_params();       // the cuda driver; kinds from the environment
    std::fill(std::begin(params.kind), std::end(params.kind), pick.kind); // AUTO leaves them there
    params.wait_ms       = c.wait_ms;
    ggml_cpool_status st = ggml_cpool_ctx_create(&params, &context->ctx);
    if (st != GGML_CPOOL_STATUS_OK) {
        fail(ggml_cuda_get_device(), "creating the pool context", st);
    }
    return context;
}

} // namespace

void route_module_log() {
    static std::once_flag logger;
    std::call_once(logger, [] { ggml_cpool_log_set(forward_log, nullptr); });
}

ggml_cuda_cpool_context & context_of(ggml_backend_cuda_context & ctx) {
    if (!ctx.cpool_context) {
        ctx.cpool_context = open_context();
    }
    return *ctx.cpool_context;
}

void declare_capture(ggml_cuda_cpool_context & context, int device, bool open) {
    context.capture_open = open;
    ggml_cpool_t pool    = device >= 0 && device < GGML_CPOOL_MAX_DEVICES ? context.first_stream_pool[device] : nullptr;
    if (config().captures_declared && pool != nullptr) {
        (void) ggml_cpool_declare_capture(pool, open ? 1 : 0); // a pool and 1 or 0: never refused
    }
}

} // namespace cpool_adapter

ggml_cuda_cpool_context::~ggml_cuda_cpool_context() {
    cpool_adapter::report_graphs(id, graph_events, config.c_str());
    ggml_cpool_ctx_free(ctx);
}

bool ggml_cuda_cpool_kv_f16_in_pool() {
    return cpool_adapter::config().kv_in_pool;
}

void ggml_cuda_cpool_graph_note(ggml_backend_cuda_context & ctx, ggml_cuda_cpool_graph_event event) {
    ggml_cuda_cpool_context & s = cpool_adapter::context_of(ctx);
    s.graph_events[event]++;
    // ggml notes CAPTURE just before capturing the first stream, and every other note with no capture open
    cpool_adapter::declare_capture(s, ctx.device, event == GGML_CUDA_CPOOL_GRAPH_CAPTURE);
}

bool ggml_cuda_cpool_capture_abandoned(ggml_backend_cuda_context & ctx) {
    return std::exchange(cpool_adapter::context_of(ctx).capture_abandoned, false);
}

uint64_t ggml_cuda_cpool_generation(const ggml_backend_cuda_context & ctx) {
    // ggml's own pools never give memory back while the context lives: their generation stays 0
    return ctx.cpool_context && ctx.cpool_context->ctx ? ggml_cpool_ctx_generation(ctx.cpool_context->ctx) : 0;
}
