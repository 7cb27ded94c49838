#pragma once
// What cuda.cpp, cuda-vmm.cpp and cuda-async.cpp share: the runtime (CUDA, or HIP through
// vendors/hip.h), the capabilities this build has, a runtime call's status, the device a call runs on.

#include "primitives.h"
#include "../support/log.h"

#if defined(GGML_USE_HIP)
#    include "../vendors/hip.h"
#    define GCP_PLATFORM  GGML_CPOOL_PLATFORM_HIP
#    define GCP_HAS_ASYNC 0 // no stream-ordered pool in the compatibility header
#    ifdef GGML_HIP_VMM
#        define GCP_HAS_VMM 1
#    else
#        define GCP_HAS_VMM 0
#    endif
#else
#    include <cuda.h>
#    include <cuda_runtime_api.h>
#    define GCP_PLATFORM  GGML_CPOOL_PLATFORM_CUDA
#    define GCP_HAS_ASYNC 1
#    define GCP_HAS_VMM   1
#endif

#include <memory>

namespace gcp::cuda {

// OK, OUT_OF_MEMORY or DRIVER_ERROR; a failure's sticky error is cleared, not left to a later launch check
status        from_cuda(cudaError_t e);
// st, said in a line where it is a driver error (an out-of-memory is the pool's to say)
status        report(status st, const char * what, int device, int code);
// a runtime call's status, said where it is a driver error
inline status checked(cudaError_t e, const char * what, int device) {
    return report(from_cuda(e), what, device, int(e));
}

// runs f with `device` current, then puts the caller's back: no pool call moves the host program's device
template <typename F> status on_device(int device, F && f) {
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess) {
        (void) cudaGetLastError();
        prev = -1;
    }
    if (prev != device) {
        cudaError_t e = cudaSetDevice(device);
        if (e != cudaSuccess) {
            return checked(e, "cudaSetDevice", device);
        }
    }
    status st = f();
    if (prev != device && prev >= 0) {
        cudaError_t e = cudaSetDevice(prev);
        if (e != cudaSuccess) {
            (void) cudaGetLastError();
            GCP_LOG_ERROR("%s: putting the caller's device %d back failed with driver error %d",
                          pool_label(GCP_PLATFORM, device).c_str(), prev, int(e));
        }
    }
    return st;
}

#if !defined(GGML_USE_HIP)
// ABI version asked of every driver entry point: the calls reached this way have not changed since
constexpr unsigned DRIVER_ABI = 12000;

// a driver call by the runtime's entry-point query (nothing links libcuda); false, *fn untouched, where it lacks it
template <typename F> bool driver_entry(const char * symbol, F * fn) {
    cudaDriverEntryPointQueryResult result = cudaDriverEntryPointSymbolNotFound;
    void *                          p      = nullptr;
    if (cudaGetDriverEntryPointByVersion(symbol, &p, DRIVER_ABI, cudaEnableDefault, &result) != cudaSuccess ||
        result != cudaDriverEntryPointSuccess) {
        (void) cudaGetLastError();
        return false;
    }
    *fn = reinterpret_cast<F>(p);
    return true;
}
#endif

#if GCP_HAS_VMM
// nullptr where the runtime lacks the VMM calls; granularity(device) is 0 on a device without VMM
std::unique_ptr<vmm_primitives> make_vmm(int count);
#endif

#if GCP_HAS_ASYNC
// the devices' default stream-ordered pools
std::unique_ptr<mempool_primitives> make_mempool();
#endif

} // namespace gcp::cuda
