#include "context.h"

#include "../support/env.h"
#include "../support/log.h"
#include "pool-factory.h"
#include "quarantine.h"

namespace gcp {

#ifdef GGML_CUDA_NO_VMM
constexpr bool NO_VMM_BUILD = true;
#else
constexpr bool NO_VMM_BUILD = false;
#endif

context::context(const ggml_cpool_ctx_params & params, std::shared_ptr<driver> drv) :
    params_(params),
    drv_(std::move(drv)),
    slots_(*drv_, params) {
    if (params_.vmm_reserve == 0) {
        params_.vmm_reserve = DEFAULT_VMM_RESERVE;
    }
}

status context::create(const ggml_cpool_ctx_params & params, std::shared_ptr<driver> drv,
                       std::unique_ptr<context> * out) {
    for (const ggml_cpool_kind & kind : params.kind) {
        int k = raw_enum(kind);
        if (k < GGML_CPOOL_KIND_AUTO || k >= GGML_CPOOL_KIND_COUNT) {
            GCP_LOG_ERROR("context: unknown pool kind %d", k);
            return INVALID_ARGUMENT;
        }
    }
    for (int d = drv->device_count(); d < GGML_CPOOL_MAX_DEVICES; d++) {
        for (void * s : params.streams[d]) {
            if (s != nullptr) {
                GCP_LOG_ERROR("context: a stream given for device %d, past the last (%d devices)", d,
                              drv->device_count());
                return INVALID_ARGUMENT;
            }
        }
    }
    std::unique_ptr<context> b(new context(params, std::move(drv)));
    b->no_vmm_ = NO_VMM_BUILD;
    status st  = env_flag(GGML_CPOOL_OPTION_NO_VMM, &b->no_vmm_);
    if (st == OK) {
        st = env_pool_kind(&b->env_kind_);
    }
    // every other row too, whoever reads it later (the logger, the llama.cpp adapter, the PyTorch
    // library): a value no row takes is refused wherever the module is created
    if (st == OK) {
        st = check_options(reading::check);
    }
    if (st != OK) {
        return st;
    }
    b->no_vmm_ = b->no_vmm_ || NO_VMM_BUILD;
    *out       = std::move(b);
    return OK;
}

context::~context() {
    slots_.release([this](std::unique_ptr<pool> p) { retire(std::move(p)); });
}

void context::retire(std::unique_ptr<pool> p) {
    // the consumer's kernels may still use the pool's buffers: they finish before memory goes back
    const char * why = nullptr;
    status       st  = p->synchronize();
    if (st != OK) {
        drv_->clear_error();
        why = "its stream could not be synchronized (kernels may still use its memory)";
    } else if (p->has_pins()) {
        p->trim(); // what no graph uses goes back; the pinned buffers stay
        why = "a captured graph still pins some of its buffers";
    }
    if (why == nullptr) {
        p.reset();
        return;
    }
    p->detach_stream(); // the consumer may destroy its stream once the context is gone
    quarantine::instance().admit(std::move(p), drv_, why);
}

uint64_t context::generation() const {
    uint64_t g = 0;
    slots_.each_pool([&](const pool & p) { g += p.stats().generation; });
    return g;
}

status context::pin_begin(uint64_t * graph) {
    status st = pins_.begin(graph);
    if (st == OK) {
        slots_.each_pool([&](pool & p) { p.pin_begin(*graph); });
    }
    return st;
}

status context::pin_end() {
    status st = pins_.end();
    if (st == OK) {
        slots_.each_pool([](pool & p) { p.pin_end(); });
    }
    return st;
}

status context::pin_release(uint64_t graph) {
    status st = pins_.release(graph);
    if (st == OK) {
        slots_.each_pool([&](pool & p) { p.pin_release(graph); });
    }
    return st;
}

status context::resolve_kind(int device, ggml_cpool_kind * kind) {
    ggml_cpool_kind k = params_.kind[device];
    if (k == GGML_CPOOL_KIND_AUTO) {
        k = env_kind_;
    }
    if (k == GGML_CPOOL_KIND_AUTO) {
        k = (!no_vmm_ && drv_->vmm_supported(device)) ? GGML_CPOOL_KIND_VMM : GGML_CPOOL_KIND_LEGACY;
    }
    if (k == GGML_CPOOL_KIND_ASYNC && !drv_->async_supported(device)) {
        GCP_LOG_ERROR("%s: async pool asked for, but %s", pool_label(drv_->platform(), device).c_str(),
                      drv_->platform() == GGML_CPOOL_PLATFORM_HIP ? "HIP builds compile the stream-ordered pool out" :
                                                                    "the device has no stream-ordered memory pool");
        return UNSUPPORTED;
    }
    if (k == GGML_CPOOL_KIND_VMM && !drv_->vmm_supported(device)) {
        GCP_LOG_ERROR("%s: VMM pool asked for, but the device does not support virtual memory management",
                      pool_label(drv_->platform(), device).c_str());
        return UNSUPPORTED;
    }
    // multi-GPU guard: partial reclaim is unvalidated on multi-GPU ROCm (ROCm/rocm-systems#4817)
    if (k == GGML_CPOOL_KIND_LEGACY && drv_->platform() == GGML_CPOOL_PLATFORM_HIP && drv_->device_count() > 1) {
        if (!guard_logged_) {
            GCP_LOG_INFO("HIP pool: %d devices visible; out-of-memory recovery flushes the whole cache instead of "
                         "LRU reclaim (partial reclaim unvalidated on multi-GPU ROCm, ROCm/rocm-systems#4817)",
                         drv_->device_count());
            guard_logged_ = true;
        }
        k = GGML_CPOOL_KIND_PLAIN;
    }
    *kind = k;
    return OK;
}

status context::get_pool(int device, int slot, pool ** out) {
    if (!slots_.valid(device, slot)) {
        return INVALID_ARGUMENT;
    }
    std::unique_ptr<pool> & p = slots_.pool_of(device, slot);
    if (!p) {
        ggml_cpool_kind kind;
        stream_t        s  = nullptr;
        status          st = resolve_kind(device, &kind);
        if (st == OK) {
            st = slots_.stream(device, slot, &s); // the pool synchronizes, detects capture and orders its calls on it
        }
        if (st != OK) {
            return st;
        }
        p = make_pool(kind, drv_, device, s, params_);
        if (pins_.open() != 0) {
            p->pin_begin(pins_.open());
        }
        GCP_LOG_DEBUG("%s: %s pool created for stream slot %d", p->name(), kind_name(kind), slot);
    }
    *out = p.get();
    return OK;
}

} // namespace gcp
