#include "harness.h"

#include <cstring>

#if defined(GGML_USE_HIP)
#    include "../ggml-cuda/vendors/hip.h"
// the harness's own calls, which the module does not make
#    define cudaMemcpy             hipMemcpy
#    define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#    define cudaMemset             hipMemset
#elif defined(GGML_CPOOL_HAVE_CUDA)
#    include <cuda_runtime_api.h>
#endif

namespace harness {

ggml_cpool_driver_t make_cuda_driver(std::string * why_not) {
#ifdef GGML_CPOOL_HAVE_CUDA
    int         count = 0;
    cudaError_t e     = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        (void) cudaGetLastError();
        *why_not = std::string("no CUDA device: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
        return nullptr;
    }
    ggml_cpool_driver_t d  = nullptr;
    ggml_cpool_status   st = ggml_cpool_driver_create(GGML_CPOOL_DRIVER_CUDA, nullptr, &d);
    if (st != GGML_CPOOL_STATUS_OK) {
        *why_not = std::string("cuda driver unavailable: ") + ggml_cpool_status_str(st);
        return nullptr;
    }
    return d;
#else
    *why_not = "built without CUDA (GGML_CUDA=OFF)";
    return nullptr;
#endif
}

ggml_cpool_driver_t open_driver(drv which, const ggml_cpool_sim_params & sim, std::string * why_not) {
    if (which == drv::cuda) {
        return make_cuda_driver(why_not);
    }
    ggml_cpool_driver_t d = nullptr;
    if (ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &sim, &d) != GGML_CPOOL_STATUS_OK) {
        *why_not = "the sim driver refused its parameters";
    }
    return d;
}

bool fill_and_check(drv d, void * ptr, size_t size, unsigned char pattern) {
    std::vector<unsigned char> host(size, 0);
    if (d == drv::sim) {
        memset(ptr, pattern, size);
        memcpy(host.data(), ptr, size);
    } else {
#ifdef GGML_CPOOL_HAVE_CUDA
        // the buffer may come from a stream-ordered pool on another stream: let that work land
        if (cudaDeviceSynchronize() != cudaSuccess || cudaMemset(ptr, pattern, size) != cudaSuccess ||
            cudaMemcpy(host.data(), ptr, size, cudaMemcpyDeviceToHost) != cudaSuccess) {
            (void) cudaGetLastError();
            return false;
        }
#else
        return false;
#endif
    }
    for (unsigned char c : host) {
        if (c != pattern) {
            return false;
        }
    }
    return true;
}

} // namespace harness
