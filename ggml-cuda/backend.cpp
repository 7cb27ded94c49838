#include "backend.h"

#include "driver-fault.h"
#include "driver-sim.h"
#include "env.h"
#include "log.h"
#include "pool-async.h"
#include "pool-legacy.h"
#include "pool-vmm.h"
#include "quarantine.h"

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
    for (int d = 0; d < GGML_CPOOL_MAX_DEVICES; d++) {
        for (int s = 0; s < GGML_CPOOL_MAX_STREAMS; s++) {
            slots_[size_t(d)][size_t(s)].stream   = params_.streams[d][s];
            slots_[size_t(d)][size_t(s)].borrowed = params_.streams[d][s] != nullptr;
        }
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
    for (int d = drv->device_count(); d < GGML_CPOOL_MAX_DEVICES; d++) {
        for (void * s : params.streams[d]) {
            if (s != nullptr) {
                GCP_LOG_ERROR("context: a stream given for device %d, past the last (%d devices)", d,
                              drv->device_count());
                return INVALID_ARGUMENT;
            }
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
    for (int d = 0; d < GGML_CPOOL_MAX_DEVICES; d++) {
        for (slot & s : slots_[size_t(d)]) {
            if (s.instance) {
                retire(std::move(s.instance));
            }
            if (s.stream != nullptr && !s.borrowed) {
                destroy_own_stream(d, s.stream);
            }
        }
    }
}

void backend::retire(std::unique_ptr<pool> p) {
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

void backend::destroy_own_stream(int device, stream_t stream) {
    if (drv_->stream_destroy(device, stream) != OK) {
        drv_->clear_error();
        GCP_LOG_ERROR("%s pool[%d]: destroying the context's stream failed", platform_name(drv_->platform()), device);
    }
}

uint64_t backend::generation() const {
    uint64_t g = 0;
    each_pool([&](const pool & p) { g += p.stats().generation; });
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
    each_pool([&](pool & p) { p.pin_begin(pinning_); });
    *graph = pinning_;
    return OK;
}

status backend::pin_end() {
    if (pinning_ == 0) {
        GCP_LOG_ERROR("context: pin_end without pin_begin");
        return INVALID_ARGUMENT;
    }
    each_pool([](pool & p) { p.pin_end(); });
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
    each_pool([&](pool & p) { p.pin_release(graph); });
    return OK;
}

bool backend::valid_slot(int device, int slot) const {
    if (device < 0 || device >= drv_->device_count() || device >= GGML_CPOOL_MAX_DEVICES) {
        GCP_LOG_ERROR("context: device %d out of range (%d devices)", device, drv_->device_count());
        return false;
    }
    if (slot < 0 || slot >= GGML_CPOOL_MAX_STREAMS) {
        GCP_LOG_ERROR("context: stream slot %d out of range (0..%d)", slot, GGML_CPOOL_MAX_STREAMS - 1);
        return false;
    }
    return true;
}

status backend::stream(int device, int slot, stream_t * out) {
    if (!valid_slot(device, slot)) {
        return INVALID_ARGUMENT;
    }
    struct slot & s = slots_[size_t(device)][size_t(slot)];
    if (s.stream == nullptr) {
        stream_t own = nullptr;
        status   st  = drv_->stream_create(device, &own);
        if (st != OK) {
            drv_->clear_error();
            GCP_LOG_ERROR("%s pool[%d]: creating a stream for slot %d failed (%s)", platform_name(drv_->platform()),
                          device, slot, ggml_cpool_status_str(st));
            return st;
        }
        s.stream   = own;
        s.borrowed = false;
    }
    *out = s.stream;
    return OK;
}

status backend::set_stream(int device, int slot, stream_t stream) {
    if (!valid_slot(device, slot)) {
        return INVALID_ARGUMENT;
    }
    struct slot & s = slots_[size_t(device)][size_t(slot)];
    if (stream == nullptr ? !s.borrowed : stream == s.stream) {
        return OK;
    }
    stream_t next = stream;
    if (next == nullptr && s.instance) { // the pool needs a stream to move to: one of the context's own
        status st = drv_->stream_create(device, &next);
        if (st != OK) {
            drv_->clear_error();
            GCP_LOG_ERROR("%s pool[%d]: creating a stream for slot %d failed (%s)", platform_name(drv_->platform()),
                          device, slot, ggml_cpool_status_str(st));
            return st;
        }
    }
    if (s.instance) {
        status st = s.instance->set_stream(next);
        if (st != OK) {
            if (stream == nullptr) {
                destroy_own_stream(device, next);
            }
            return st;
        }
    }
    if (s.stream != nullptr && !s.borrowed) {
        destroy_own_stream(device, s.stream);
    }
    s.stream   = next; // nullptr without a pool: created when one is needed
    s.borrowed = stream != nullptr;
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

status backend::get_pool(int device, int slot, pool ** out) {
    if (!valid_slot(device, slot)) {
        return INVALID_ARGUMENT;
    }
    std::unique_ptr<pool> & p = slots_[size_t(device)][size_t(slot)].instance;
    if (!p) {
        ggml_cpool_kind kind;
        stream_t        s  = nullptr;
        status          st = resolve_kind(device, &kind);
        if (st == OK) {
            st = stream(device, slot, &s); // the pool synchronizes, detects capture and orders its calls on it
        }
        if (st != OK) {
            return st;
        }
        if (kind == GGML_CPOOL_KIND_VMM) {
            p.reset(new pool_vmm(*drv_, device, s, params_.vmm_reserve, params_.vmm_peer_access != 0));
        } else if (kind == GGML_CPOOL_KIND_ASYNC) {
            p.reset(new pool_async(drv_, device, s, params_.headroom_pct));
        } else {
            p.reset(new pool_legacy(*drv_, device, kind, s,
                                    pool_legacy::options{ kind == GGML_CPOOL_KIND_LEGACY, params_.headroom_pct }));
        }
        if (pinning_ != 0) {
            p->pin_begin(pinning_);
        }
        GCP_LOG_DEBUG("%s: %s pool created for stream slot %d", p->name(), ggml_cpool_kind_str(kind), slot);
    }
    *out = p.get();
    return OK;
}

} // namespace gcp
