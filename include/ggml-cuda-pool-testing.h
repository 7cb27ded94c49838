#pragma once

// ggml-cuda-pool for tests and tools: the sim driver's parameters and capture stand-in, fault
// injection, per-call counters, leak checks and the device's stream-ordered pool as the async
// kind uses it. The same library and C ABI as ggml-cuda-pool.h, which a consumer needs alone.

#include "ggml-cuda-pool.h"
#include "ggml-cuda-pool-calls.h" // the platforms and the driver-call table

#ifdef __cplusplus
extern "C" {
#endif

// the sim driver (GGML_CPOOL_DRIVER_SIM): host memory that behaves like a device, on the platform
// and with the capabilities these parameters give it
// clang-format off
struct ggml_cpool_sim_params {
    size_t                   capacity;     // device memory per device, bytes
    int                      device_count;
    enum ggml_cpool_platform platform;
    size_t                   granularity;  // VMM mapping granularity, bytes
    int                      vmm_supported;
    int                      async_supported; // a stream-ordered pool per device
    // optional: a name (letters, digits, '-', '_'); the sim drivers of every process of this user that
    // give it share its devices: their capacity and use (in shared memory, as on a real device) and
    // their UUIDs, so that the processes are neighbours (docs/neighbours.md). NULL or "": this driver's own
    const char *             shared;
};

// the sim driver (GGML_CPOOL_DRIVER_SIM): its parameters start from these
GGML_CPOOL_API struct ggml_cpool_sim_params ggml_cpool_sim_default_params(void);
// the sim driver's stand-in for cudaStreamBeginCapture/EndCapture (UNSUPPORTED on other drivers)
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_sim_set_capturing(ggml_cpool_driver_t driver, int device, void * stream, int capturing);
// the sim driver's count of stream-ordered calls on a stream: allocations, frees, synchronizes (0 on other drivers)
GGML_CPOOL_API uint64_t                     ggml_cpool_sim_stream_calls (ggml_cpool_driver_t driver, int device, void * stream);

// allocations, physical VMM handles and reservations the driver still holds (leak checks)
GGML_CPOOL_API size_t                       ggml_cpool_driver_outstanding  (ggml_cpool_driver_t driver);
// device bytes the driver handed out through this module and has not yet taken back
GGML_CPOOL_API size_t                       ggml_cpool_driver_used         (ggml_cpool_driver_t driver, int device);
// calls made through this driver handle (GGML_CPOOL_CALL_COUNT: all kinds together)
GGML_CPOOL_API uint64_t                     ggml_cpool_driver_calls        (ggml_cpool_driver_t driver, enum ggml_cpool_call call);
// device memory straight from the driver, outside every pool: another tenant of the device, or a
// probe of the largest block that still fits (a failure is not left latched)
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_driver_malloc       (ggml_cpool_driver_t driver, int device, size_t size, void ** ptr);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_driver_free         (ggml_cpool_driver_t driver, int device, void * ptr);
// whether the driver holds an error a later unrelated call would report (CUDA's sticky last error)
GGML_CPOOL_API int                          ggml_cpool_driver_error_latched(ggml_cpool_driver_t driver);

// the device's stream-ordered pool, as the async kind uses it
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_driver_release_threshold    (ggml_cpool_driver_t driver, int device, uint64_t * threshold);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_driver_set_release_threshold(ggml_cpool_driver_t driver, int device, uint64_t threshold);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_driver_pool_usage           (ggml_cpool_driver_t driver, int device, size_t * reserved, size_t * used);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_driver_synchronize          (ggml_cpool_driver_t driver, int device);

// fault injection: a driver that forwards to `inner` and fails the calls `spec` names
// (docs/fault-injection.md); set_faults re-arms it, NULL or "" disarms it
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_driver_fault_create(ggml_cpool_driver_t inner, const char * spec, ggml_cpool_driver_t * out);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_driver_set_faults  (ggml_cpool_driver_t fault, const char * spec);
GGML_CPOOL_API uint64_t                     ggml_cpool_driver_faults_fired(ggml_cpool_driver_t fault);
// clang-format on

#ifdef __cplusplus
}
#endif
