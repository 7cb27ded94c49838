// cuda_primitives: device memory, streams and capabilities (virtual memory in cuda-vmm.cpp, the
// stream-ordered pool in cuda-async.cpp).

#include "cuda-impl.h"
#include "factory.h"
#include "../support/log.h"

#include <vector>

namespace gcp {

namespace cuda {

status from_cuda(cudaError_t e) {
    if (e == cudaSuccess) {
        return OK;
    }
    (void) cudaGetLastError();
    return e == cudaErrorMemoryAllocation ? OUT_OF_MEMORY : DRIVER_ERROR;
}

status report(status st, const char * what, int device, int code) {
    if (st == DRIVER_ERROR) {
        GCP_LOG_ERROR("%s: %s failed with driver error %d", pool_label(GCP_PLATFORM, device).c_str(), what, code);
    }
    return st;
}

} // namespace cuda

namespace {

using namespace cuda;

class cuda_primitives final : public device_primitives {
  public:
    explicit cuda_primitives(int count) : count_(count) {
#if !defined(GGML_USE_HIP)
        driver_entry("cuStreamIsCapturing", &is_capturing_); // the runtime's call where the driver lacks it
#endif
#if GCP_HAS_VMM
        vmm_ = make_vmm(count);
#endif
        if (vmm_ == nullptr) {
            GCP_LOG_INFO("cuda driver: virtual memory entry points unavailable; VMM pools disabled");
        }
#if GCP_HAS_ASYNC
        mempool_ = make_mempool();
        for (int d = 0; d < count; d++) {
            int pools = 0;
            has_mempool_.push_back(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, d) == cudaSuccess &&
                                   pools != 0);
        }
        (void) cudaGetLastError();
#endif
    }

    ggml_cpool_platform platform() const override {
        return GCP_PLATFORM;
    }
    int device_count() const override {
        return count_;
    }

    status malloc(int device, size_t size, void ** ptr) override {
        return on_device(device, [&] { return checked(cudaMalloc(ptr, size), "cudaMalloc", device); });
    }

    status free(int device, void * ptr) override {
        return on_device(device, [&] { return checked(cudaFree(ptr), "cudaFree", device); });
    }

    status synchronize(int device) override {
        return on_device(device, [&] { return checked(cudaDeviceSynchronize(), "cudaDeviceSynchronize", device); });
    }

    status stream_create(int device, stream_t * stream) override {
        return on_device(device, [&] {
            cudaStream_t s = nullptr;
            cudaError_t  e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
            *stream        = s;
            return checked(e, "cudaStreamCreate", device);
        });
    }

    status stream_destroy(int device, stream_t stream) override {
        return on_device(device, [&] {
            return checked(cudaStreamDestroy(static_cast<cudaStream_t>(stream)), "cudaStreamDestroy", device);
        });
    }

    status stream_synchronize(int device, stream_t stream) override {
        return on_device(device, [&] {
            return checked(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize", device);
        });
    }

    // the async pool asks at every allocation: the driver's call costs about a third of the runtime's
    status stream_capturing(int device, stream_t stream, bool * capturing) override {
#if !defined(GGML_USE_HIP)
        if (is_capturing_ != nullptr) {
            CUstreamCaptureStatus s = CU_STREAM_CAPTURE_STATUS_NONE;
            CUresult              r = is_capturing_(static_cast<CUstream>(stream), &s);
            *capturing              = s != CU_STREAM_CAPTURE_STATUS_NONE; // an invalidated capture still forbids
            // a thread with no current context (PyTorch's backward thread): the runtime's call makes one current
            if (r != CUDA_ERROR_INVALID_CONTEXT) {
                return r == CUDA_SUCCESS ? OK : report(DRIVER_ERROR, "cuStreamIsCapturing", device, int(r));
            }
        }
#endif
        return on_device(device, [&] {
            cudaStreamCaptureStatus s = cudaStreamCaptureStatusNone;
            cudaError_t             e = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &s);
            *capturing                = s != cudaStreamCaptureStatusNone;
            return checked(e, "cudaStreamIsCapturing", device);
        });
    }

    bool can_access_peer(int device, int peer) const override {
        int can = 0;
        if (!valid(device) || !valid(peer) || device == peer ||
            cudaDeviceCanAccessPeer(&can, peer, device) != cudaSuccess) {
            (void) cudaGetLastError();
            return false;
        }
        return can != 0;
    }

    vmm_primitives * vmm(int device) override {
        return vmm_ != nullptr && vmm_->granularity(device) != 0 ? vmm_.get() : nullptr;
    }
    mempool_primitives * mempool(int device) override {
        return mempool_ != nullptr && valid(device) && has_mempool_[size_t(device)] ? mempool_.get() : nullptr;
    }

    bool error_latched() const override {
        return cudaPeekAtLastError() != cudaSuccess;
    }
    status free_memory(int device, size_t * free) override {
        size_t total = 0;
        return on_device(device, [&] { return checked(cudaMemGetInfo(free, &total), "cudaMemGetInfo", device); });
    }
    // the first pause (the pool doubles it at each retry): long enough for queued frees on other
    // streams to land, short enough to refuse within milliseconds
    uint32_t transient_pause_us() const override {
        return 1000;
    }
#if !defined(GGML_USE_HIP) // HIP: none here (the base's UNSUPPORTED)
    // the UUID, which CUDA_VISIBLE_DEVICES does not renumber (a MIG instance has its own)
    status uuid(int device, device_uuid * out) const override {
        cudaDeviceProp prop = {};
        static_assert(sizeof(prop.uuid) == sizeof(out->bytes), "cudaUUID_t is 16 bytes");
        status st = valid(device) ? checked(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties", device) :
                                    INVALID_ARGUMENT;
        memcpy(out->bytes, &prop.uuid, sizeof(out->bytes));
        return st;
    }
#endif
    // every cuda_primitives sees the same devices
    const void * identity() const override {
        static const char devices = 0;
        return &devices;
    }

  private:
    bool valid(int device) const {
        return device >= 0 && device < count_;
    }

    int                                 count_;
    std::unique_ptr<vmm_primitives>     vmm_;     // none where this build or runtime lacks VMM
    std::unique_ptr<mempool_primitives> mempool_; // none where this build lacks stream-ordered pools
    std::vector<bool>                   has_mempool_;
#if !defined(GGML_USE_HIP)
    decltype(&::cuStreamIsCapturing) is_capturing_ = nullptr;
#endif
};

} // namespace

status make_cuda_primitives(std::shared_ptr<device_primitives> * out) {
    int         count = 0;
    cudaError_t e     = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        (void) cudaGetLastError();
        // an error, not a note: a C program whose context creation fails has only this line to say why
        GCP_LOG_ERROR("cuda driver: no CUDA device (%s); without a GPU, the sim driver serves (GGML_CPOOL_DRIVER_SIM)",
                      e != cudaSuccess ? cudaGetErrorString(e) : "count is 0");
        return UNSUPPORTED;
    }
    *out = std::make_shared<cuda_primitives>(count);
    return OK;
}

} // namespace gcp
