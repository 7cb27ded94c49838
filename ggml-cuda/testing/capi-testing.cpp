// The C ABI of ggml-cuda-pool-testing.h: the sim driver, leak checks, counters, the pool of a device, faults.

#include "ggml-cuda-pool-testing.h"
#include "../api/capi.h"
#include "../drivers/fault.h"
#include "sim.h"

using namespace gcp::capi;

extern "C" {

ggml_cpool_sim_params ggml_cpool_sim_default_params(void) {
    return gcp::sim_primitives::defaults();
}

size_t ggml_cpool_driver_outstanding(ggml_cpool_driver_t driver) {
    return driver ? driver->ref.drv->outstanding() : 0;
}

size_t ggml_cpool_driver_used(ggml_cpool_driver_t driver, int device) {
    return driver ? driver->ref.drv->used(device) : 0;
}

uint64_t ggml_cpool_driver_calls(ggml_cpool_driver_t driver, ggml_cpool_call call) {
    if (driver == nullptr || call < 0 || call > GGML_CPOOL_CALL_COUNT) {
        return 0;
    }
    return call == GGML_CPOOL_CALL_COUNT ? driver->ref.drv->calls() : driver->ref.drv->calls(gcp::call(call));
}

ggml_cpool_status ggml_cpool_driver_release_threshold(ggml_cpool_driver_t driver, int device, uint64_t * threshold) {
    if (threshold == nullptr) {
        return null_arg(__func__, "threshold");
    }
    return driver_call(__func__, driver, device, [&](gcp::driver & d) {
        return d.pool_attr(device, gcp::mempool_attr::release_threshold, threshold);
    });
}

ggml_cpool_status ggml_cpool_driver_set_release_threshold(ggml_cpool_driver_t driver, int device, uint64_t threshold) {
    return driver_call(__func__, driver, device, [&](gcp::driver & d) {
        return d.pool_set_attr(device, gcp::mempool_attr::release_threshold, threshold);
    });
}

ggml_cpool_status ggml_cpool_driver_pool_usage(ggml_cpool_driver_t driver, int device, size_t * reserved,
                                               size_t * used) {
    if (reserved == nullptr || used == nullptr) {
        return null_arg(__func__, reserved ? "used" : "reserved");
    }
    return driver_call(__func__, driver, device, [&](gcp::driver & d) { return d.pool_usage(device, reserved, used); });
}

ggml_cpool_status ggml_cpool_driver_synchronize(ggml_cpool_driver_t driver, int device) {
    return driver_call(__func__, driver, device, [&](gcp::driver & d) { return d.synchronize(device); });
}

ggml_cpool_status ggml_cpool_driver_malloc(ggml_cpool_driver_t driver, int device, size_t size, void ** ptr) {
    if (ptr == nullptr) {
        return null_arg(__func__, "ptr");
    }
    *ptr = nullptr;
    return driver_call(__func__, driver, device, [&](gcp::driver & d) { return d.malloc(device, size, ptr); });
}

ggml_cpool_status ggml_cpool_driver_free(ggml_cpool_driver_t driver, int device, void * ptr) {
    return driver_call(__func__, driver, device, [&](gcp::driver & d) { return d.free(device, ptr); });
}

int ggml_cpool_driver_error_latched(ggml_cpool_driver_t driver) {
    return driver && driver->ref.drv->error_latched() ? 1 : 0;
}

ggml_cpool_status ggml_cpool_driver_fault_create(ggml_cpool_driver_t inner, const char * spec,
                                                 ggml_cpool_driver_t * out) {
    if (inner == nullptr || out == nullptr) {
        return null_arg(__func__, inner ? "out" : "inner");
    }
    *out = nullptr;
    return walled(__func__, [&] {
        gcp::fault_spec   parsed;
        ggml_cpool_status st = gcp::parse_fault_spec(spec, &parsed);
        if (st == GGML_CPOOL_STATUS_OK) {
            *out = new ggml_cpool_driver{ gcp::make_fault_driver(inner->ref, parsed) };
        }
        return st;
    });
}

ggml_cpool_status ggml_cpool_driver_set_faults(ggml_cpool_driver_t fault, const char * spec) {
    gcp::fault_driver * f = fault ? fault->ref.fault : nullptr;
    if (f == nullptr) {
        GCP_LOG_ERROR("%s: not a fault-injecting driver", __func__);
        return GGML_CPOOL_STATUS_INVALID_ARGUMENT;
    }
    return walled(__func__, [&] {
        gcp::fault_spec   parsed;
        ggml_cpool_status st = gcp::parse_fault_spec(spec, &parsed, "the previous spec stays armed");
        if (st == GGML_CPOOL_STATUS_OK) {
            f->arm(parsed);
        }
        return st;
    });
}

uint64_t ggml_cpool_driver_faults_fired(ggml_cpool_driver_t fault) {
    return fault && fault->ref.fault ? fault->ref.fault->fired() : 0;
}

uint64_t ggml_cpool_sim_stream_calls(ggml_cpool_driver_t driver, int device, void * stream) {
    return driver && driver->ref.sim ? driver->ref.sim->stream_calls(device, stream) : 0;
}

ggml_cpool_status ggml_cpool_sim_set_capturing(ggml_cpool_driver_t driver, int device, void * stream, int capturing) {
    gcp::sim_primitives * sim = driver ? driver->ref.sim : nullptr;
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

} // extern "C"
