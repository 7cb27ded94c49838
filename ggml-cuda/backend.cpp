#include "backend.h"

#include "driver-fault.h"
#include "driver-sim.h"
#include "env.h"
#include "log.h"
#include "pool-async.h"
#include "pool-legacy.h"
#include "pool-vmm.h"

#ifdef GGML_CPOOL_HAVE_CUDA
#    include "driver-cuda.h"
#endif

#include <algorithm>
#include <cstdlib>

namespace gcp {

#ifdef GGML_CUDA_NO_VMM
constexpr bool NO_VMM_BUILD = true;
#else
constexpr bool NO_VMM_BUILD = false;
#endif

// mprotect works on whole host pages
constexpr size_t SIM_PAGE = 4096;

static status check_sim_params(const ggml_cpool_sim_params & sim) {
    // a granularity above the largest request would overflow the rounding of a VMM range
    if (sim.device_count < 1 || sim.device_count > GGML_CPOOL_MAX_DEVICES || sim.capacity == 0 ||
        sim.granularity == 0 || sim.granularity % SIM_PAGE != 0 || sim.granularity > MAX_REQUEST ||
        (raw_enum(sim.platform) != GGML_CPOOL_PLATFORM_CUDA && raw_enum(sim.platform) != GGML_CPOOL_PLATFORM_HIP)) {
        GCP_LOG_ERROR("sim driver: bad parameters (devices %d of 1..%d, capacity %zu, granularity %zu: a multiple "
                      "of %zu up to %zu, platform %d)",
                      sim.device_count, GGML_CPOOL_MAX_DEVICES, sim.capacity, sim.granularity, SIM_PAGE, MAX_REQUEST,
                      raw_enum(sim.platform));
        return INVALID_ARGUMENT;
    }
    return OK;
}

status make_driver(int kind, const ggml_cpool_sim_params & sim, std::shared_ptr<driver> * out) {
    if (kind == GGML_CPOOL_DRIVER_SIM) {
        status st = check_sim_params(sim);
        if (st == OK) {
            *out = std::make_shared<sim_driver>(sim);
        }
        return st;
    }
    if (kind == GGML_CPOOL_DRIVER_CUDA) {
#ifdef GGML_CPOOL_HAVE_CUDA
        return make_cuda_driver(out);
#else
        GCP_LOG_ERROR("cuda driver: this build has no CUDA support (configure with GGML_CUDA=ON)");
        return UNSUPPORTED;
#endif
    }
    GCP_LOG_ERROR("unknown driver kind %d", kind);
    return INVALID_ARGUMENT;
}

status apply_env_faults(std::shared_ptr<driver> * drv) {
    const char * text = getenv(ENV_FAULT);
    if (text == nullptr || *text == '\0') {
        return OK;
    }
    fault_spec spec;
    status     st = parse_fault_spec(text, &spec, ENV_FAULT, "no context created");
    if (st != OK) {
        return st;
    }
    GCP_LOG_INFO("%s=%s: fault injection armed", ENV_FAULT, text);
    *drv = std::make_shared<fault_driver>(*drv, spec);
    return OK;
}

backend::backend(const ggml_cpool_ctx_params & params, std::shared_ptr<driver> drv) :
    params_(params),
    drv_(std::move(drv)) {
    if (params_.vmm_reserve == 0) {
        params_.vmm_reserve = DEFAULT_VMM_RESERVE;
    }
}

status backend::create(const ggml_cpool_ctx_params & params, std::shared_ptr<driver> drv,
                       std::unique_ptr<backend> * out) {
    for (const ggml_cpool_kind & kind : params.kind) {
        int k = raw_enum(kind);
        if (k < GGML_CPOOL_KIND_AUTO || k > GGML_CPOOL_KIND_ASYNC) {
            GCP_LOG_ERROR("context: unknown pool kind %d", k);
            return INVALID_ARGUMENT;
        }
    }
    std::unique_ptr<backend> b(new backend(params, std::move(drv)));
    b->no_vmm_ = NO_VMM_BUILD;
    status st  = env_no_vmm(&b->no_vmm_);
    if (st == OK) {
        st = env_pool_kind(&b->env_kind_);
    }
    if (st != OK) {
        return st;
    }
    b->no_vmm_ = b->no_vmm_ || NO_VMM_BUILD;
    *out       = std::move(b);
    return OK;
}

backend::~backend() {
    for (auto & p : pools_) {
        p.reset();
    }
    for (int d = 0; d < GGML_CPOOL_MAX_DEVICES; d++) {
        if (streams_[size_t(d)] != nullptr && drv_->stream_destroy(d, streams_[size_t(d)]) != OK) {
            drv_->clear_error();
            GCP_LOG_ERROR("%s pool[%d]: destroying the context's stream failed", platform_name(drv_->platform()), d);
        }
    }
}

uint64_t backend::generation() const {
    uint64_t g = 0;
    for (auto & p : pools_) {
        g += p ? p->stats().generation : 0;
    }
    return g;
}

status backend::pin_begin(uint64_t * graph) {
    if (pinning_ != 0) {
        GCP_LOG_ERROR("context: pin_begin while graph %llu is still open (call pin_end first)",
                      (unsigned long long) pinning_);
        return INVALID_ARGUMENT;
    }
    graphs_.push_back(next_graph_); // may throw: nothing changed yet
    pinning_ = next_graph_++;
    for (auto & p : pools_) {
        if (p) {
            p->pin_begin(pinning_);
        }
    }
    *graph = pinning_;
    return OK;
}

status backend::pin_end() {
    if (pinning_ == 0) {
        GCP_LOG_ERROR("context: pin_end without pin_begin");
        return INVALID_ARGUMENT;
    }
    for (auto & p : pools_) {
        if (p) {
            p->pin_end();
        }
    }
    pinning_ = 0;
    return OK;
}

status backend::pin_release(uint64_t graph) {
    auto it = std::find(graphs_.begin(), graphs_.end(), graph);
    if (it == graphs_.end() || graph == pinning_) {
        GCP_LOG_ERROR("context: pin_release of graph %llu, which is %s", (unsigned long long) graph,
                      graph == pinning_ && graph != 0 ? "still open" : "not pinned here");
        return INVALID_ARGUMENT;
    }
    graphs_.erase(it);
    for (auto & p : pools_) {
        if (p) {
            p->pin_release(graph);
        }
    }
    return OK;
}

bool backend::valid_device(int device) const {
    if (device < 0 || device >= drv_->device_count() || device >= GGML_CPOOL_MAX_DEVICES) {
        GCP_LOG_ERROR("context: device %d out of range (%d devices)", device, drv_->device_count());
        return false;
    }
    return true;
}

status backend::stream(int device, stream_t * out) {
    if (!valid_device(device)) {
        return INVALID_ARGUMENT;
    }
    stream_t & s = streams_[size_t(device)];
    if (s == nullptr) {
        status st = drv_->stream_create(device, &s);
        if (st != OK) {
            drv_->clear_error();
            s = nullptr;
            GCP_LOG_ERROR("%s pool[%d]: creating the context's stream failed (%s)", platform_name(drv_->platform()),
                          device, ggml_cpool_status_str(st));
            return st;
        }
    }
    *out = s;
    return OK;
}

status backend::resolve_kind(int device, ggml_cpool_kind * kind) {
    ggml_cpool_kind k = params_.kind[device];
    if (k == GGML_CPOOL_KIND_AUTO) {
        k = env_kind_;
    }
    if (k == GGML_CPOOL_KIND_AUTO) {
        k = (!no_vmm_ && drv_->vmm_supported(device)) ? GGML_CPOOL_KIND_VMM : GGML_CPOOL_KIND_LEGACY;
    }
    if (k == GGML_CPOOL_KIND_ASYNC && !drv_->async_supported(device)) {
        GCP_LOG_ERROR("%s pool[%d]: async pool asked for, but %s", platform_name(drv_->platform()), device,
                      drv_->platform() == GGML_CPOOL_PLATFORM_HIP ?
                          "HIP builds compile the stream-ordered pool out" :
                          "the device has no stream-ordered memory pool");
        return UNSUPPORTED;
    }
    if (k == GGML_CPOOL_KIND_VMM && !drv_->vmm_supported(device)) {
        GCP_LOG_ERROR("%s pool[%d]: VMM pool asked for, but the device does not support virtual memory management",
                      platform_name(drv_->platform()), device);
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

status backend::get_pool(int device, pool ** out) {
    if (!valid_device(device)) {
        return INVALID_ARGUMENT;
    }
    std::unique_ptr<pool> & p = pools_[size_t(device)];
    if (!p) {
        ggml_cpool_kind kind;
        status          st = resolve_kind(device, &kind);
        // the context's stream, where consumers capture graphs: every pool watches it for
        // capture, so no pool goes without it
        stream_t s = nullptr;
        if (st == OK) {
            st = stream(device, &s);
        }
        if (st != OK) {
            return st;
        }
        if (kind == GGML_CPOOL_KIND_VMM) {
            p.reset(new pool_vmm(*drv_, device, params_.vmm_reserve, params_.vmm_peer_access != 0));
        } else if (kind == GGML_CPOOL_KIND_ASYNC) {
            p.reset(new pool_async(drv_, device, s));
        } else {
            p.reset(new pool_legacy(*drv_, device, kind));
        }
        p->set_stream(s);
        if (pinning_ != 0) {
            p->pin_begin(pinning_);
        }
        GCP_LOG_DEBUG("%s: %s pool created", p->name(), ggml_cpool_kind_str(kind));
    }
    *out = p.get();
    return OK;
}

} // namespace gcp
