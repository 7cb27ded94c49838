#pragma once
// What capi.cpp and testing/capi-testing.cpp share: the structures behind the handles, the wall no exception crosses.

#include "../context/context.h"
#include "../drivers/factory.h"
#include "../support/log.h"

#include <memory>
#include <new>

struct ggml_cpool_driver {
    gcp::driver_ref ref;
};

struct ggml_cpool_ctx {
    ggml_cpool_driver             driver; // the handle ggml_cpool_ctx_driver lends out
    std::unique_ptr<gcp::context> impl;
};

namespace gcp::capi {

// the status of the exception in flight (a bookkeeping structure's allocation failed), with its line
GCP_COLD inline ggml_cpool_status caught(const char * what) {
    try {
        throw;
    } catch (const std::bad_alloc &) {
        GCP_LOG_ERROR("%s: host out of memory", what);
        return GGML_CPOOL_STATUS_OUT_OF_MEMORY;
    } catch (...) {
        GCP_LOG_ERROR("%s: unexpected internal error", what);
        return GGML_CPOOL_STATUS_DRIVER_ERROR;
    }
}

// runs f, turning any exception into a status
template <typename F> GCP_INLINE ggml_cpool_status walled(const char * what, F && f) {
    try {
        return f();
    } catch (...) {
        return caught(what);
    }
}

inline ggml_cpool_status null_arg(const char * fn, const char * arg) {
    GCP_LOG_ERROR("%s: %s is NULL", fn, arg);
    return GGML_CPOOL_STATUS_INVALID_ARGUMENT;
}

// a driver call by device: a NULL driver or an out-of-range device is refused
template <typename F> ggml_cpool_status driver_call(const char * fn, ggml_cpool_driver_t driver, int device, F && f) {
    if (driver == nullptr) {
        return null_arg(fn, "driver");
    }
    gcp::driver & drv = *driver->ref.drv;
    if (device < 0 || device >= drv.device_count()) {
        GCP_LOG_ERROR("%s: device %d out of range (%d devices)", fn, device, drv.device_count());
        return GGML_CPOOL_STATUS_INVALID_ARGUMENT;
    }
    return walled(fn, [&] { return f(drv); });
}

} // namespace gcp::capi
