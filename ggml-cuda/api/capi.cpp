// The consumer's C ABI (ggml-cuda-pool.h), the options table's included: argument checks and the wall
// that no exception crosses. The calls of ggml-cuda-pool-testing.h are in capi-testing.cpp.

#include "capi.h"
#include "../context/quarantine.h"
#include "../pools/async.h"
#include "../pools/legacy.h"
#include "../pools/vmm.h"
#include "../support/env.h"
#include "../trace/trace.h"

namespace {

using namespace gcp::capi;

namespace trace = gcp::trace;
using trace_op  = gcp::trace_format::op;

gcp::pool * as_pool(ggml_cpool_t p) {
    return reinterpret_cast<gcp::pool *>(p);
}

// f(the pool as its kind's class): the kind's alloc and free are then called by name, not through the vtable
template <typename F> GCP_INLINE ggml_cpool_status as_kind(ggml_cpool_t p, F && f) {
    gcp::pool * pool = as_pool(p);
    switch (pool->kind()) {
        case GGML_CPOOL_KIND_VMM:
            return f(static_cast<gcp::pool_vmm &>(*pool));
        case GGML_CPOOL_KIND_ASYNC:
            return f(static_cast<gcp::pool_async &>(*pool));
        default:
            return f(static_cast<gcp::pool_legacy &>(*pool)); // legacy and plain
    }
}

// runs a context's call behind the wall; while a trace records, hands what it did to `record`
// (pool calls are observed by trace::observe instead)
template <typename F, typename R>
ggml_cpool_status ctx_call(const char * fn, ggml_cpool_ctx_t ctx, trace_op o, F && run, R && record) {
    if (!trace::recording()) {
        return walled(fn, run);
    }
    std::shared_ptr<gcp::driver> drv  = ctx->driver.ref.drv; // ctx_free destroys the context
    const uint64_t               drv0 = drv->calls();
    const uint64_t               t0   = trace::now_ns();
    ggml_cpool_status            st   = walled(fn, run);
    trace::call                  c{ o, st, t0, trace::now_ns() - t0, drv->calls() - drv0 };
    record(c);
    return st;
}

// a pool call while tracing or timing is on, out of line so that the usual calls stay short; `run` calls
// the kind by name, as the usual calls do, so that timing measures them
template <typename F>
GCP_COLD ggml_cpool_status observed(const char * fn, gcp::pool & p, trace_op o, uint64_t size, uint64_t flags,
                                    void * const * ptr, const size_t * actual, F run) {
    return trace::observe(p, o, size, flags, ptr, actual, [&] { return walled(fn, run); });
}

// an option past the table is refused with a line, as any bad argument is
bool known(const char * fn, ggml_cpool_option option) {
    const int o = gcp::raw_enum(option);
    if (o < 0 || o >= GGML_CPOOL_OPTION_COUNT) {
        GCP_LOG_ERROR("%s: unknown option %d", fn, o);
        return false;
    }
    return true;
}

ggml_cpool_status read_row(const char * fn, ggml_cpool_option option, ggml_cpool_option_value * value,
                           gcp::reading how) {
    if (value == nullptr) {
        return null_arg(fn, "value");
    }
    *value = {};
    if (!known(fn, option)) {
        return GGML_CPOOL_STATUS_INVALID_ARGUMENT;
    }
    return walled(fn, [&] { return gcp::read_option(option, value, how); });
}

} // namespace

extern "C" {

ggml_cpool_status ggml_cpool_driver_create(ggml_cpool_driver_kind kind, const ggml_cpool_sim_params * sim,
                                           ggml_cpool_driver_t * out) {
    if (out == nullptr) {
        return null_arg(__func__, "out");
    }
    *out = nullptr;
    return walled(__func__, [&] {
        gcp::driver_ref   ref;
        ggml_cpool_status st = gcp::make_driver(gcp::raw_enum(kind), sim, &ref);
        if (st == GGML_CPOOL_STATUS_OK) {
            *out = new ggml_cpool_driver{ std::move(ref) };
        }
        return st;
    });
}

void ggml_cpool_driver_release(ggml_cpool_driver_t driver) {
    delete driver;
}

int ggml_cpool_driver_device_count(ggml_cpool_driver_t driver) {
    return driver ? driver->ref.drv->device_count() : 0;
}

ggml_cpool_ctx_params ggml_cpool_ctx_default_params(void) {
    static_assert(GGML_CPOOL_DRIVER_CUDA == 0 && GGML_CPOOL_KIND_AUTO == 0, "zero is the default");
    ggml_cpool_ctx_params p = {}; // the CUDA driver, AUTO kinds, no peer access, streams or wait
    p.vmm_reserve           = gcp::DEFAULT_VMM_RESERVE;
    p.headroom_pct          = gcp::DEFAULT_HEADROOM_PCT;
    p.neighbours            = 1;
    return p;
}

ggml_cpool_status ggml_cpool_ctx_create(const ggml_cpool_ctx_params * params, ggml_cpool_ctx_t * out) {
    if (out == nullptr) {
        return null_arg(__func__, "out");
    }
    *out                     = nullptr;
    ggml_cpool_status env_st = walled(__func__, [] { return trace::init_from_env(); });
    if (env_st != GGML_CPOOL_STATUS_OK) {
        return env_st;
    }
    const uint64_t    t0 = trace::recording() ? trace::now_ns() : 0;
    ggml_cpool_status st = walled(__func__, [&] {
        ggml_cpool_ctx_params p   = params ? *params : ggml_cpool_ctx_default_params();
        gcp::driver_ref       ref = p.driver ? p.driver->ref : gcp::driver_ref{};
        // a bad variable is named before a driver is made: on a machine without a device it is still the reason
        ggml_cpool_status     st = gcp::check_options(gcp::reading::check);
        if (st == GGML_CPOOL_STATUS_OK && !p.driver) {
            st = gcp::make_driver(gcp::raw_enum(p.driver_kind), p.sim, &ref);
        }
        std::unique_ptr<gcp::context> b;
        if (st == GGML_CPOOL_STATUS_OK) {
            st = gcp::apply_env_faults(&ref);
        }
        if (st == GGML_CPOOL_STATUS_OK) {
            st = gcp::context::create(p, ref.drv, &b);
        }
        if (st == GGML_CPOOL_STATUS_OK) {
            *out = new ggml_cpool_ctx{ { std::move(ref) }, std::move(b) };
        }
        return st;
    });
    if (trace::recording()) {
        trace::record(*out, { trace_op::ctx_create, st, t0, trace::now_ns() - t0, 0 });
    }
    return st;
}

void ggml_cpool_ctx_free(ggml_cpool_ctx_t ctx) {
    if (ctx == nullptr) {
        return;
    }
    auto run = [&] {
        delete ctx;
        return GGML_CPOOL_STATUS_OK;
    };
    const uint64_t id = trace::recording() ? trace::context_id(ctx) : 0; // its name in the trace, once it is gone
    ctx_call(__func__, ctx, trace_op::ctx_free, run, [&](trace::call & c) { trace::record_ctx_free(id, c); });
}

ggml_cpool_status ggml_cpool_ctx_get_slot_pool(ggml_cpool_ctx_t ctx, int device, int slot, ggml_cpool_t * out) {
    if (ctx == nullptr || out == nullptr) {
        return null_arg(__func__, ctx ? "out" : "ctx");
    }
    *out     = nullptr;
    auto run = [&] {
        gcp::pool *       p  = nullptr;
        ggml_cpool_status st = ctx->impl->get_pool(device, slot, &p);
        *out                 = reinterpret_cast<ggml_cpool_t>(p);
        return st;
    };
    return ctx_call(__func__, ctx, trace_op::get_pool, run,
                    [&](trace::call & c) { trace::record_get_pool(ctx, device, slot, as_pool(*out), c); });
}

ggml_cpool_status ggml_cpool_ctx_get_pool(ggml_cpool_ctx_t ctx, int device, ggml_cpool_t * out) {
    return ggml_cpool_ctx_get_slot_pool(ctx, device, 0, out);
}

ggml_cpool_status ggml_cpool_ctx_set_stream(ggml_cpool_ctx_t ctx, int device, int slot, void * stream) {
    if (ctx == nullptr) {
        return null_arg(__func__, "ctx");
    }
    return walled(__func__, [&] { return ctx->impl->set_stream(device, slot, stream); });
}

ggml_cpool_status ggml_cpool_ctx_stream(ggml_cpool_ctx_t ctx, int device, void ** stream) {
    if (ctx == nullptr || stream == nullptr) {
        return null_arg(__func__, ctx ? "stream" : "ctx");
    }
    *stream = nullptr;
    return walled(__func__, [&] { return ctx->impl->stream(device, 0, stream); });
}

ggml_cpool_status ggml_cpool_driver_stream_create(ggml_cpool_driver_t driver, int device, void ** stream) {
    if (stream == nullptr) {
        return null_arg(__func__, "stream");
    }
    *stream = nullptr;
    return driver_call(__func__, driver, device, [&](gcp::driver & d) { return d.stream_create(device, stream); });
}

ggml_cpool_status ggml_cpool_driver_stream_destroy(ggml_cpool_driver_t driver, int device, void * stream) {
    return driver_call(__func__, driver, device, [&](gcp::driver & d) { return d.stream_destroy(device, stream); });
}

void ggml_cpool_quarantine_stats(size_t * bytes, size_t * pools) {
    gcp::quarantine::instance().totals(bytes, pools);
}

ggml_cpool_status ggml_cpool_quarantine_release(void) {
    return walled(__func__, [] { return gcp::quarantine::instance().release(); });
}

uint64_t ggml_cpool_ctx_generation(ggml_cpool_ctx_t ctx) {
    return ctx ? ctx->impl->generation() : 0;
}

ggml_cpool_status ggml_cpool_ctx_pin_begin(ggml_cpool_ctx_t ctx, uint64_t * graph) {
    if (ctx == nullptr || graph == nullptr) {
        return null_arg(__func__, ctx ? "graph" : "ctx");
    }
    auto run = [&] { return ctx->impl->pin_begin(graph); };
    return ctx_call(__func__, ctx, trace_op::pin_begin, run, [&](trace::call & c) {
        c.actual = c.st == GGML_CPOOL_STATUS_OK ? *graph : trace::NO;
        trace::record(ctx, c);
    });
}

ggml_cpool_status ggml_cpool_ctx_pin_end(ggml_cpool_ctx_t ctx) {
    if (ctx == nullptr) {
        return null_arg(__func__, "ctx");
    }
    auto run = [&] { return ctx->impl->pin_end(); };
    return ctx_call(__func__, ctx, trace_op::pin_end, run, [&](trace::call & c) { trace::record(ctx, c); });
}

ggml_cpool_status ggml_cpool_ctx_pin_release(ggml_cpool_ctx_t ctx, uint64_t graph) {
    if (ctx == nullptr) {
        return null_arg(__func__, "ctx");
    }
    auto run = [&] { return ctx->impl->pin_release(graph); };
    return ctx_call(__func__, ctx, trace_op::pin_release, run, [&](trace::call & c) {
        c.size = graph;
        trace::record(ctx, c);
    });
}

ggml_cpool_driver_t ggml_cpool_ctx_driver(ggml_cpool_ctx_t ctx) {
    return ctx ? &ctx->driver : nullptr;
}

ggml_cpool_status ggml_cpool_alloc(ggml_cpool_t pool, size_t size, uint32_t flags, void ** ptr, size_t * actual_size) {
    if (pool == nullptr) {
        return null_arg(__func__, "pool");
    }
    auto run = [=]() GCP_ALWAYS { // a hit runs pool::alloc and its kind's do_alloc called by name (as_kind)
        return as_kind(pool, [&](auto & p) {
            return p.template alloc<std::decay_t<decltype(p)>>(size, flags, ptr, actual_size);
        });
    };
    if (as_pool(pool)->observed()) {
        return observed(__func__, *as_pool(pool), trace_op::alloc, size, flags, ptr, actual_size, run);
    }
    return walled(__func__, run);
}

ggml_cpool_status ggml_cpool_alloc_growing(ggml_cpool_t pool, size_t size, size_t limit, void ** ptr,
                                           size_t * actual_size) {
    if (pool == nullptr) {
        return null_arg(__func__, "pool");
    }
    const uint32_t flags = GGML_CPOOL_ALLOC_OVERALLOCATE;
    if (as_pool(pool)->observed()) { // recorded as a growing request (the trace keeps no limit)
        return observed("ggml_cpool_alloc", *as_pool(pool), trace_op::alloc, size, flags, ptr, actual_size,
                        [&] { return as_pool(pool)->alloc(size, flags, ptr, actual_size, limit); });
    }
    return walled(__func__, [&] { return as_pool(pool)->alloc(size, flags, ptr, actual_size, limit); });
}

ggml_cpool_status ggml_cpool_free(ggml_cpool_t pool, void * ptr, size_t actual_size) {
    if (pool == nullptr) {
        return null_arg(__func__, "pool");
    }
    auto run = [=]() GCP_ALWAYS {
        return as_kind(pool, [&](auto & p) { return p.template free<std::decay_t<decltype(p)>>(ptr, actual_size); });
    };
    if (as_pool(pool)->observed()) {
        void * traced = ptr; // read through a pointer: a copy, so that a hit keeps ptr off the stack
        return observed(__func__, *as_pool(pool), trace_op::free, actual_size, trace::NO, &traced, nullptr, run);
    }
    return walled(__func__, run);
}

ggml_cpool_status ggml_cpool_declare_capture(ggml_cpool_t pool, int capturing) {
    if (pool == nullptr) {
        return null_arg(__func__, "pool");
    }
    if (capturing < -1 || capturing > 1) {
        GCP_LOG_ERROR("%s: capturing must be 1, 0 or -1 (ask the driver), not %d", __func__, capturing);
        return GGML_CPOOL_STATUS_INVALID_ARGUMENT;
    }
    as_pool(pool)->declare_capture(capturing);
    return GGML_CPOOL_STATUS_OK;
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
    if (as_pool(pool)->observed()) {
        return observed(__func__, *as_pool(pool), trace_op::trim, trace::NO, trace::NO, nullptr, nullptr,
                        [&] { return as_pool(pool)->trim(); });
    }
    return walled(__func__, [&] { return as_pool(pool)->trim(); });
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

ggml_cpool_status ggml_cpool_trace_start(const char * path) {
    return walled(__func__, [&] { return trace::start(path); });
}

ggml_cpool_status ggml_cpool_trace_stop(void) {
    return walled(__func__, [] { return trace::stop(); });
}

void ggml_cpool_timing_set(int on) {
    trace::set_timing(on != 0);
}

void ggml_cpool_log_set(ggml_cpool_log_callback callback, void * user_data) {
    gcp::log_set(callback, user_data);
}

ggml_cpool_log_level ggml_cpool_log_threshold(void) {
    return gcp::log_threshold();
}

const char * ggml_cpool_last_error(void) {
    return gcp::last_error();
}

const char * ggml_cpool_status_str(ggml_cpool_status status) {
    return gcp::status_name(status);
}

const char * ggml_cpool_kind_str(ggml_cpool_kind kind) {
    return gcp::kind_name(kind);
}

ggml_cpool_status ggml_cpool_kind_from_str(const char * name, ggml_cpool_kind * kind) {
    if (name == nullptr || kind == nullptr) {
        return null_arg(__func__, name ? "kind" : "name");
    }
    return gcp::kind_from_name(name, kind) ? GGML_CPOOL_STATUS_OK : GGML_CPOOL_STATUS_INVALID_ARGUMENT;
}

ggml_cpool_status ggml_cpool_option_read(ggml_cpool_option option, ggml_cpool_option_value * value) {
    return read_row(__func__, option, value, gcp::reading::report);
}

ggml_cpool_status ggml_cpool_option_peek(ggml_cpool_option option, ggml_cpool_option_value * value) {
    return read_row(__func__, option, value, gcp::reading::quiet);
}

const char * ggml_cpool_option_entry(ggml_cpool_option option, const char * text, int index) {
    return known(__func__, option) ? gcp::option_entry(option, text, index) : nullptr;
}

ggml_cpool_status ggml_cpool_options_check(void) {
    return walled(__func__, [] { return gcp::check_options(); });
}

} // extern "C"
