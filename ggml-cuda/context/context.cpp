#include "context.h"

#include "../pools/async.h"
#include "../pools/legacy.h"
#include "../pools/vmm.h"
#include "../support/env.h"
#include "../support/log.h"
#include "quarantine.h"

#include <algorithm>

namespace gcp {

namespace {

// a pool of a settled kind (not AUTO) on a device that has what it needs (VMM, a stream-ordered pool)
std::unique_ptr<pool> make_pool(ggml_cpool_kind kind, const std::shared_ptr<driver> & drv, int device, stream_t stream,
                                const ggml_cpool_ctx_params & params) {
    std::unique_ptr<pool> p;
    switch (kind) {
        case GGML_CPOOL_KIND_VMM:
            p = std::make_unique<pool_vmm>(*drv, device, stream, params.vmm_reserve, params.vmm_peer_access != 0);
            break;
        case GGML_CPOOL_KIND_ASYNC:
            p = std::make_unique<pool_async>(drv, device, stream, params.headroom_pct);
            break;
        default:
            // the plain kind is the legacy pool without the LRU step
            p = std::make_unique<pool_legacy>(*drv, device, kind, stream,
                                              pool_legacy::options{ kind == GGML_CPOOL_KIND_LEGACY,
                                                                    params.headroom_pct });
    }
    p->set_wait_ms(params.wait_ms);
    return p;
}

} // namespace

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
    status                   st = env_flag(GGML_CPOOL_OPTION_NO_VMM, &b->no_vmm_);
    if (st == OK) {
        st = env_pool_kind(&b->env_kind_);
    }
    if (st == OK) {
        st = neighbours::wanted(params.neighbours, &b->neighbours_);
    }
    if (st != OK) {
        return st;
    }
#ifdef GGML_CUDA_NO_VMM
    b->no_vmm_ = true;
#endif
    *out = std::move(b);
    return OK;
}

context::~context() {
    slots_.release([this](std::unique_ptr<pool> p) {
        neighbours::leave(p->seat()); // first: the responder gives from it no more
        // the consumer's kernels may still use the pool's buffers: they finish before memory goes back
        const char * why = nullptr;
        if (p->synchronize() != OK) {
            why = "its stream could not be synchronized (kernels may still use its memory)";
        } else if (p->has_pins()) {
            p->trim(); // what no graph uses goes back; the pinned buffers stay
            why = "a captured graph still pins some of its buffers";
        }
        if (why != nullptr) {
            p->detach_stream(); // the consumer may destroy its stream once the context is gone
            quarantine::instance().admit(std::move(p), drv_, why);
        }
    });
}

uint64_t context::generation() const {
    uint64_t g = 0;
    slots_.each_pool([&](const pool & p) { g += p.stats().generation; });
    return g;
}

status context::pin_begin(uint64_t * graph) {
    if (pinning_ != 0) {
        GCP_LOG_ERROR("context: pin_begin while graph %llu is still open (call pin_end first)",
                      (unsigned long long) pinning_);
        return INVALID_ARGUMENT;
    }
    graphs_.push_back(next_graph_); // may throw: nothing changed yet
    pinning_ = next_graph_++;
    *graph   = pinning_;
    slots_.each_pool([&](pool & p) { p.pin_begin(*graph); });
    return OK;
}

status context::pin_end() {
    if (pinning_ == 0) {
        GCP_LOG_ERROR("context: pin_end without pin_begin");
        return INVALID_ARGUMENT;
    }
    pinning_ = 0;
    slots_.each_pool([](pool & p) { p.pin_begin(0); });
    return OK;
}

status context::pin_release(uint64_t graph) {
    auto it = std::find(graphs_.begin(), graphs_.end(), graph);
    if (it == graphs_.end() || graph == pinning_) {
        GCP_LOG_ERROR("context: pin_release of graph %llu, which is %s", (unsigned long long) graph,
                      graph == pinning_ && graph != 0 ? "still open" : "not pinned here");
        return INVALID_ARGUMENT;
    }
    graphs_.erase(it);
    slots_.each_pool([&](pool & p) { p.pin_release(graph); });
    return OK;
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
        if (pinning_ != 0) {
            p->pin_begin(pinning_);
        }
        if (neighbours_) {
            neighbours::enlist(p->seat(), *drv_, device); // UNSUPPORTED: it works alone
        }
        GCP_LOG_DEBUG("%s: %s pool created for stream slot %d", p->name(), kind_name(kind), slot);
    }
    *out = p.get();
    return OK;
}

} // namespace gcp
