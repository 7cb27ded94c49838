// The C ABI: argument checks and the wall that no exception crosses.

#include "backend.h"
#include "driver-fault.h"
#include "driver-sim.h"
#include "log.h"

#include <new>

struct ggml_cpool_driver {
    std::shared_ptr<gcp::driver> impl;
};

struct ggml_cpool_ctx {
    ggml_cpool_driver              driver; // the handle ggml_cpool_ctx_driver lends out
    std::unique_ptr<gcp::backend>  impl;
};

namespace {

gcp::pool * as_pool(ggml_cpool_t p) { return reinterpret_cast<gcp::pool *>(p); }

// runs f, turning any exception (allocation failure of a bookkeeping structure) into a status
template <typename F> ggml_cpool_status guarded(const char * what, F && f) {
    try {
        return f();
    } catch (const std::bad_alloc &) {
        GCP_LOG_ERROR("%s: host out of memory", what);
        return GGML_CPOOL_STATUS_OUT_OF_MEMORY;
    } catch (...) {
        GCP_LOG_ERROR("%s: unexpected internal error", what);
        return GGML_CPOOL_STATUS_DRIVER_ERROR;
    }
}

ggml_cpool_status null_arg(const char * fn, const char * arg) {
    GCP_LOG_ERROR("%s: %s is NULL", fn, arg);
    return GGML_CPOOL_STATUS_INVALID_ARGUMENT;
}

// a driver call by device: a NULL driver or an out-of-range device is refused, and a failure is
// cleared (it is the return value's to report)
template <typename F> ggml_cpool_status driver_call(const char * fn, ggml_cpool_driver_t driver, int device, F && f) {
    if (driver == nullptr) {
        return null_arg(fn, "driver");
    }
    if (device < 0 || device >= driver->impl->device_count()) {
        GCP_LOG_ERROR("%s: device %d out of range (%d devices)", fn, device, driver->impl->device_count());
        return GGML_CPOOL_STATUS_INVALID_ARGUMENT;
    }
    return guarded(fn, [&] {
        ggml_cpool_status st = f(*driver->impl);
        if (st != GGML_CPOOL_STATUS_OK) {
            driver->impl->clear_error();
        }
        return st;
    });
}

} // namespace

extern "C" {

ggml_cpool_sim_params ggml_cpool_sim_default_params(void) {
    ggml_cpool_sim_params p = {};
    p.capacity              = 8 * gcp::GiB;
    p.device_count          = 1;
    p.platform              = GGML_CPOOL_PLATFORM_CUDA;
    p.granularity           = 2 * gcp::MiB; // the CUDA driver's recommended granularity
    p.vmm_supported         = 1;
    p.async_supported       = 1;
    return p;
}

ggml_cpool_status ggml_cpool_driver_create(ggml_cpool_driver_kind kind, const ggml_cpool_sim_params * sim,
                                           ggml_cpool_driver_t * out) {
    if (out == nullptr) {
        return null_arg(__func__, "out");
    }
    *out = nullptr;
    return guarded(__func__, [&] {
        ggml_cpool_sim_params        p = sim ? *sim : ggml_cpool_sim_default_params();
        std::shared_ptr<gcp::driver> drv;
        ggml_cpool_status            st = gcp::make_driver(gcp::raw_enum(kind), p, &drv);
        if (st == GGML_CPOOL_STATUS_OK) {
            *out = new ggml_cpool_driver{ std::move(drv) };
        }
        return st;
    });
}

void ggml_cpool_driver_release(ggml_cpool_driver_t driver) {
    delete driver;
}

int ggml_cpool_driver_device_count(ggml_cpool_driver_t driver) {
    return driver ? driver->impl->device_count() : 0;
}

size_t ggml_cpool_driver_outstanding(ggml_cpool_driver_t driver) {
    return driver ? driver->impl->outstanding() : 0;
}

size_t ggml_cpool_driver_used(ggml_cpool_driver_t driver, int device) {
    return driver ? driver->impl->used(device) : 0;
}

uint64_t ggml_cpool_driver_calls(ggml_cpool_driver_t driver, ggml_cpool_call call) {
    if (driver == nullptr || call < 0 || call > GGML_CPOOL_CALL_COUNT) {
        return 0;
    }
    return call == GGML_CPOOL_CALL_COUNT ? driver->impl->calls() : driver->impl->calls(gcp::call(call));
}

ggml_cpool_status ggml_cpool_driver_release_threshold(ggml_cpool_driver_t driver, int device, uint64_t * threshold) {
    if (threshold == nullptr) {
        return null_arg(__func__, "threshold");
    }
    return driver_call(__func__, driver, device, [&](gcp::driver & d) { return d.pool_threshold(device, threshold); });
}

ggml_cpool_status ggml_cpool_driver_set_release_threshold(ggml_cpool_driver_t driver, int device, uint64_t threshold) {
    return driver_call(__func__, driver, device,
                       [&](gcp::driver & d) { return d.pool_set_threshold(device, threshold); });
}

ggml_cpool_status ggml_cpool_driver_pool_usage(ggml_cpool_driver_t driver, int device, size_t * reserved, size_t * used) {
    if (reserved == nullptr || used == nullptr) {
        return null_arg(__func__, reserved ? "used" : "reserved");
    }
    return driver_call(__func__, driver, device, [&](gcp::driver & d) { return d.pool_usage(device, reserved, used); });
}

ggml_cpool_status ggml_cpool_driver_synchronize(ggml_cpool_driver_t driver, int device) {
    return driver_call(__func__, driver, device, [&](gcp::driver & d) { return d.synchronize(device); });
}

int ggml_cpool_driver_error_latched(ggml_cpool_driver_t driver) {
    return driver && driver->impl->error_latched() ? 1 : 0;
}

ggml_cpool_status ggml_cpool_driver_fault_create(ggml_cpool_driver_t inner, const char * spec,
                                                 ggml_cpool_driver_t * out) {
    if (inner == nullptr || out == nullptr) {
        return null_arg(__func__, inner ? "out" : "inner");
    }
    *out = nullptr;
    return guarded(__func__, [&] {
        gcp::fault_spec   parsed;
        ggml_cpool_status st = gcp::parse_fault_spec(spec, &parsed);
        if (st == GGML_CPOOL_STATUS_OK) {
            *out = new ggml_cpool_driver{ std::make_shared<gcp::fault_driver>(inner->impl, parsed) };
        }
        return st;
    });
}

static gcp::fault_driver * as_fault(ggml_cpool_driver_t driver) {
    return driver ? dynamic_cast<gcp::fault_driver *>(driver->impl.get()) : nullptr;
}

ggml_cpool_status ggml_cpool_driver_set_faults(ggml_cpool_driver_t fault, const char * spec) {
    gcp::fault_driver * f = as_fault(fault);
    if (f == nullptr) {
        GCP_LOG_ERROR("%s: not a fault-injecting driver", __func__);
        return GGML_CPOOL_STATUS_INVALID_ARGUMENT;
    }
    return guarded(__func__, [&] {
        gcp::fault_spec   parsed;
        ggml_cpool_status st = gcp::parse_fault_spec(spec, &parsed, "fault spec", "the previous spec stays armed");
        if (st == GGML_CPOOL_STATUS_OK) {
            f->arm(parsed);
        }
        return st;
    });
}

uint64_t ggml_cpool_driver_faults_fired(ggml_cpool_driver_t fault) {
    gcp::fault_driver * f = as_fault(fault);
    return f ? f->fired() : 0;
}

ggml_cpool_ctx_params ggml_cpool_ctx_default_params(void) {
    ggml_cpool_ctx_params p = {};
    p.driver_kind           = GGML_CPOOL_DRIVER_CUDA;
    p.sim                   = ggml_cpool_sim_default_params();
    p.driver                = nullptr;
    for (ggml_cpool_kind & k : p.kind) {
        k = GGML_CPOOL_KIND_AUTO;
    }
    p.vmm_reserve     = gcp::DEFAULT_VMM_RESERVE;
    p.vmm_peer_access = 0;
    return p;
}

ggml_cpool_status ggml_cpool_ctx_create(const ggml_cpool_ctx_params * params, ggml_cpool_ctx_t * out) {
    if (out == nullptr) {
        return null_arg(__func__, "out");
    }
    *out = nullptr;
    return guarded(__func__, [&] {
        ggml_cpool_ctx_params        p = params ? *params : ggml_cpool_ctx_default_params();
        std::shared_ptr<gcp::driver> drv;
        ggml_cpool_status            st = GGML_CPOOL_STATUS_OK;
        if (p.driver != nullptr) {
            drv = p.driver->impl;
        } else {
            st = gcp::make_driver(gcp::raw_enum(p.driver_kind), p.sim, &drv);
        }
        std::unique_ptr<gcp::backend> b;
        if (st == GGML_CPOOL_STATUS_OK) {
            st = gcp::apply_env_faults(&drv);
        }
        if (st == GGML_CPOOL_STATUS_OK) {
            st = gcp::backend::create(p, drv, &b);
        }
        if (st == GGML_CPOOL_STATUS_OK) {
            *out = new ggml_cpool_ctx{ { std::move(drv) }, std::move(b) };
        }
        return st;
    });
}

void ggml_cpool_ctx_free(ggml_cpool_ctx_t ctx) {
    guarded(__func__, [&] {
        delete ctx;
        return GGML_CPOOL_STATUS_OK;
    });
}

ggml_cpool_status ggml_cpool_ctx_get_pool(ggml_cpool_ctx_t ctx, int device, ggml_cpool_t * out) {
    if (ctx == nullptr || out == nullptr) {
        return null_arg(__func__, ctx ? "out" : "ctx");
    }
    *out = nullptr;
    return guarded(__func__, [&] {
        gcp::pool *       p  = nullptr;
        ggml_cpool_status st = ctx->impl->get_pool(device, &p);
        *out                 = reinterpret_cast<ggml_cpool_t>(p);
        return st;
    });
}

ggml_cpool_status ggml_cpool_ctx_stream(ggml_cpool_ctx_t ctx, int device, void ** stream) {
    if (ctx == nullptr || stream == nullptr) {
        return null_arg(__func__, ctx ? "stream" : "ctx");
    }
    *stream = nullptr;
    return guarded(__func__, [&] { return ctx->impl->stream(device, stream); });
}

uint64_t ggml_cpool_ctx_generation(ggml_cpool_ctx_t ctx) {
    return ctx ? ctx->impl->generation() : 0;
}

ggml_cpool_status ggml_cpool_ctx_pin_begin(ggml_cpool_ctx_t ctx, uint64_t * graph) {
    if (ctx == nullptr || graph == nullptr) {
        return null_arg(__func__, ctx ? "graph" : "ctx");
    }
    return guarded(__func__, [&] { return ctx->impl->pin_begin(graph); });
}

ggml_cpool_status ggml_cpool_ctx_pin_end(ggml_cpool_ctx_t ctx) {
    if (ctx == nullptr) {
        return null_arg(__func__, "ctx");
    }
    return ctx->impl->pin_end();
}

ggml_cpool_status ggml_cpool_ctx_pin_release(ggml_cpool_ctx_t ctx, uint64_t graph) {
    if (ctx == nullptr) {
        return null_arg(__func__, "ctx");
    }
    return guarded(__func__, [&] { return ctx->impl->pin_release(graph); });
}

ggml_cpool_status ggml_cpool_sim_set_capturing(ggml_cpool_driver_t driver, int device, void * stream, int capturing) {
    auto * sim = driver ? dynamic_cast<gcp::sim_driver *>(driver->impl.get()) : nullptr;
    if (sim == nullptr) {
        GCP_LOG_ERROR("%s: not a sim driver", __func__);
        return GGML_CPOOL_STATUS_UNSUPPORTED;
    }
    ggml_cpool_status st = sim->set_capturing(device, stream, capturing != 0);
    if (st != GGML_CPOOL_STATUS_OK) {
        GCP_LOG_ERROR("%s: unknown device %d or stream %p", __func__, device, stream);
    }
    return st;
}

ggml_cpool_driver_t ggml_cpool_ctx_driver(ggml_cpool_ctx_t ctx) {
    return ctx ? &ctx->driver : nullptr;
}

ggml_cpool_status ggml_cpool_alloc(ggml_cpool_t pool, size_t size, uint32_t flags, void ** ptr, size_t * actual_size) {
    if (pool == nullptr) {
        return null_arg(__func__, "pool");
    }
    return guarded(__func__, [&] { return as_pool(pool)->alloc(size, flags, ptr, actual_size); });
}

ggml_cpool_status ggml_cpool_free(ggml_cpool_t pool, void * ptr, size_t actual_size) {
    if (pool == nullptr) {
        return null_arg(__func__, "pool");
    }
    return guarded(__func__, [&] { return as_pool(pool)->free(ptr, actual_size); });
}

ggml_cpool_status ggml_cpool_get_stats(ggml_cpool_t pool, ggml_cpool_stats * out) {
    if (pool == nullptr || out == nullptr) {
        return null_arg(__func__, pool ? "out" : "pool");
    }
    *out = as_pool(pool)->stats();
    return GGML_CPOOL_STATUS_OK;
}

ggml_cpool_status ggml_cpool_trim(ggml_cpool_t pool) {
    if (pool == nullptr) {
        return null_arg(__func__, "pool");
    }
    return guarded(__func__, [&] { return as_pool(pool)->trim(); });
}

uint64_t ggml_cpool_generation(ggml_cpool_t pool) {
    return pool ? as_pool(pool)->stats().generation : 0;
}

ggml_cpool_kind ggml_cpool_get_kind(ggml_cpool_t pool) {
    return pool ? as_pool(pool)->kind() : GGML_CPOOL_KIND_AUTO;
}

int ggml_cpool_get_device(ggml_cpool_t pool) {
    return pool ? as_pool(pool)->device() : -1;
}

void ggml_cpool_log_set(ggml_cpool_log_callback callback, void * user_data) {
    gcp::log_set(callback, user_data);
}

const char * ggml_cpool_status_str(ggml_cpool_status status) {
    switch (status) {
        case GGML_CPOOL_STATUS_OK:               return "OK";
        case GGML_CPOOL_STATUS_OUT_OF_MEMORY:    return "OUT_OF_MEMORY";
        case GGML_CPOOL_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
        case GGML_CPOOL_STATUS_DRIVER_ERROR:     return "DRIVER_ERROR";
        case GGML_CPOOL_STATUS_UNSUPPORTED:      return "UNSUPPORTED";
    }
    return "UNKNOWN_STATUS";
}

const char * ggml_cpool_kind_str(ggml_cpool_kind kind) {
    switch (kind) {
        case GGML_CPOOL_KIND_AUTO:   return "auto";
        case GGML_CPOOL_KIND_VMM:    return "vmm";
        case GGML_CPOOL_KIND_LEGACY: return "legacy";
        case GGML_CPOOL_KIND_PLAIN:  return "plain";
        case GGML_CPOOL_KIND_ASYNC:  return "async";
    }
    return "unknown";
}

} // extern "C"
