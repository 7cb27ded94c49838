#include "driver-cuda.h"

#include "log.h"

#if defined(GGML_USE_HIP)
#    include "vendors/hip.h"
#    define GCP_PLATFORM GGML_CPOOL_PLATFORM_HIP
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

#include <mutex>
#include <unordered_map>
#include <vector>

namespace gcp {

namespace {

#if GCP_HAS_VMM
// the VMM calls: reached through the runtime's entry-point query on CUDA, so nothing links
// libcuda; linked directly on HIP
struct driver_api {
    decltype(&::cuDeviceGet)                    device_get                = nullptr;
    decltype(&::cuDeviceGetAttribute)           device_get_attribute      = nullptr;
    decltype(&::cuMemGetAllocationGranularity)  mem_get_granularity       = nullptr;
    decltype(&::cuMemAddressReserve)            mem_address_reserve       = nullptr;
    decltype(&::cuMemAddressFree)               mem_address_free          = nullptr;
    decltype(&::cuMemCreate)                    mem_create                = nullptr;
    decltype(&::cuMemRelease)                   mem_release               = nullptr;
    decltype(&::cuMemMap)                       mem_map                   = nullptr;
    decltype(&::cuMemUnmap)                     mem_unmap                 = nullptr;
    decltype(&::cuMemSetAccess)                 mem_set_access            = nullptr;

#    if defined(GGML_USE_HIP)
    template <typename F> bool get(const char *, F direct, F * fn) {
        *fn = direct;
        return true;
    }
#        define GCP_ENTRY(name) #name, &::name
#    else
    // ABI version asked of every driver entry point: these calls have not changed since
    static constexpr unsigned DRIVER_ABI = 12000;

    template <typename F> bool get(const char * symbol, F * fn) {
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
#        define GCP_ENTRY(name) #name
#    endif

    bool load() {
        return get(GCP_ENTRY(cuDeviceGet), &device_get) && get(GCP_ENTRY(cuDeviceGetAttribute), &device_get_attribute) &&
               get(GCP_ENTRY(cuMemGetAllocationGranularity), &mem_get_granularity) &&
               get(GCP_ENTRY(cuMemAddressReserve), &mem_address_reserve) &&
               get(GCP_ENTRY(cuMemAddressFree), &mem_address_free) && get(GCP_ENTRY(cuMemCreate), &mem_create) &&
               get(GCP_ENTRY(cuMemRelease), &mem_release) && get(GCP_ENTRY(cuMemMap), &mem_map) &&
               get(GCP_ENTRY(cuMemUnmap), &mem_unmap) && get(GCP_ENTRY(cuMemSetAccess), &mem_set_access);
    }
};
#else
struct driver_api { // VMM compiled out
    bool load() { return false; }
};
#endif

status from_cuda(cudaError_t e) {
    if (e == cudaSuccess) {
        return OK;
    }
    (void) cudaGetLastError(); // a sticky error would otherwise surface at the next unrelated launch check
    return e == cudaErrorMemoryAllocation ? OUT_OF_MEMORY : DRIVER_ERROR;
}

#if GCP_HAS_VMM
status from_cu(CUresult r) {
    return r == CUDA_SUCCESS ? OK : r == CUDA_ERROR_OUT_OF_MEMORY ? OUT_OF_MEMORY : DRIVER_ERROR;
}
#endif

status report(status st, const char * what, int device, int code) {
    if (st == DRIVER_ERROR) {
        GCP_LOG_ERROR("%s: %s failed with driver error %d", pool_label(GCP_PLATFORM, device).c_str(), what, code);
    }
    return st;
}

// runs a call with `device` current and puts the caller's device back, so no pool call moves
// the host program's current device
template <typename F> status on_device(int device, F && f) {
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess) {
        (void) cudaGetLastError();
        prev = -1;
    }
    if (prev != device) {
        cudaError_t e = cudaSetDevice(device);
        if (e != cudaSuccess) {
            return report(from_cuda(e), "cudaSetDevice", device, int(e));
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

class cuda_driver final : public driver {
  public:
    cuda_driver(int count, driver_api api, bool have_vmm) : count_(count), api_(api) {
        vmm_.assign(size_t(count), false);
        async_.assign(size_t(count), false);
        granularity_.assign(size_t(count), 0);
#if GCP_HAS_ASYNC
        for (int d = 0; d < count; d++) {
            int pools = 0;
            async_[size_t(d)] =
                cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, d) == cudaSuccess && pools != 0;
        }
        (void) cudaGetLastError();
#endif
#if GCP_HAS_VMM
        for (int d = 0; have_vmm && d < count; d++) {
            CUdevice dev       = 0;
            int      supported = 0;
            if (api_.device_get(&dev, d) != CUDA_SUCCESS ||
                api_.device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev) !=
                    CUDA_SUCCESS ||
                !supported) {
                continue;
            }
            CUmemAllocationProp prop = props(d);
            size_t              g    = 0;
            if (api_.mem_get_granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) == CUDA_SUCCESS && g > 0) {
                vmm_[size_t(d)]         = true;
                granularity_[size_t(d)] = g;
            }
        }
#else
        (void) have_vmm;
#endif
    }

    ggml_cpool_platform platform() const override { return GCP_PLATFORM; }
    int                 device_count() const override { return count_; }
    bool                error_latched() const override {
        return driver::error_latched() || cudaPeekAtLastError() != cudaSuccess;
    }
    // every cuda driver sees the same devices
    const void * identity() const override {
        static const char devices = 0;
        return &devices;
    }
    bool async_supported(int device) const override { return valid(device) && async_[size_t(device)]; }
    bool can_access_peer(int device, int peer) const override {
        int can = 0;
        if (!valid(device) || !valid(peer) || device == peer ||
            cudaDeviceCanAccessPeer(&can, peer, device) != cudaSuccess) {
            (void) cudaGetLastError();
            return false;
        }
        return can != 0;
    }
    status stream_capturing(int device, stream_t stream, bool * capturing) override {
        cudaStreamCaptureStatus s = cudaStreamCaptureStatusNone;
        cudaError_t             e = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &s);
        *capturing                = s != cudaStreamCaptureStatusNone; // an invalidated capture still forbids
        return report(from_cuda(e), "cudaStreamIsCapturing", device, int(e));
    }
    bool   vmm_supported(int device) const override { return valid(device) && vmm_[size_t(device)]; }
    size_t vmm_granularity(int device) const override { return valid(device) ? granularity_[size_t(device)] : 0; }

    size_t outstanding() const override {
        std::lock_guard<std::mutex> lock(mutex_);
        return allocs_.size() + handles_.size() + ranges_.size() + async_allocs_.size();
    }

    size_t used(int device) const override {
        std::lock_guard<std::mutex> lock(mutex_);
        size_t                      n = 0;
        for (auto & a : allocs_) {
            n += a.second.device == device ? a.second.size : 0;
        }
        for (auto * map : { &handles_, &async_allocs_ }) {
            for (auto & h : *map) {
                n += h.second.device == device ? h.second.size : 0;
            }
        }
        return n;
    }

  protected:
    void do_clear_error() override { (void) cudaGetLastError(); }

    status do_malloc(int device, size_t size, void ** ptr) override {
        status st = on_device(device, [&] {
            cudaError_t e = cudaMalloc(ptr, size);
            return e == cudaErrorMemoryAllocation ? from_cuda(e) : report(from_cuda(e), "cudaMalloc", device, int(e));
        });
        if (st == OK) {
            track(allocs_, reinterpret_cast<uintptr_t>(*ptr), device, size);
        }
        return st;
    }

    status do_free(int device, void * ptr) override {
        status st = on_device(device, [&] {
            cudaError_t e = cudaFree(ptr);
            return report(from_cuda(e), "cudaFree", device, int(e));
        });
        if (st == OK) {
            untrack(allocs_, reinterpret_cast<uintptr_t>(ptr));
        }
        return st;
    }

    status do_synchronize(int device) override {
        return on_device(device, [&] {
            cudaError_t e = cudaDeviceSynchronize();
            return report(from_cuda(e), "cudaDeviceSynchronize", device, int(e));
        });
    }

#if GCP_HAS_VMM
    status do_vmm_reserve(int device, size_t size, uintptr_t * addr) override {
        CUdeviceptr p  = 0;
        CUresult    r  = api_.mem_address_reserve(&p, size, 0, 0, 0);
        status      st = report(from_cu(r), "cuMemAddressReserve", device, int(r));
        if (st == OK) {
            *addr = uintptr_t(p);
            track(ranges_, *addr, device, 0);
        }
        return st;
    }

    status do_vmm_unreserve(int device, uintptr_t addr, size_t size) override {
        CUresult r  = api_.mem_address_free(CUdeviceptr(addr), size);
        status   st = report(from_cu(r), "cuMemAddressFree", device, int(r));
        if (st == OK) {
            untrack(ranges_, addr);
        }
        return st;
    }

    status do_vmm_create(int device, size_t size, vmm_handle * handle) override {
        CUmemAllocationProp          prop = props(device);
        CUmemGenericAllocationHandle h    = 0;
        CUresult                     r    = api_.mem_create(&h, size, &prop, 0);
        status                       st   = r == CUDA_ERROR_OUT_OF_MEMORY ? OUT_OF_MEMORY :
                                                                           report(from_cu(r), "cuMemCreate", device, int(r));
        if (st == OK) {
            *handle = vmm_handle(h);
            track(handles_, uintptr_t(h), device, size);
        }
        return st;
    }

    status do_vmm_release(int device, vmm_handle handle) override {
        CUresult r  = api_.mem_release(CUmemGenericAllocationHandle(handle));
        status   st = report(from_cu(r), "cuMemRelease", device, int(r));
        if (st == OK) {
            untrack(handles_, uintptr_t(handle));
        }
        return st;
    }

    status do_vmm_map(int device, uintptr_t addr, size_t size, vmm_handle handle) override {
        CUresult r = api_.mem_map(CUdeviceptr(addr), size, 0, CUmemGenericAllocationHandle(handle), 0);
        return r == CUDA_ERROR_OUT_OF_MEMORY ? OUT_OF_MEMORY : report(from_cu(r), "cuMemMap", device, int(r));
    }

    status do_vmm_unmap(int device, uintptr_t addr, size_t size) override {
        CUresult r = api_.mem_unmap(CUdeviceptr(addr), size);
        return report(from_cu(r), "cuMemUnmap", device, int(r));
    }

    status do_vmm_access(int device, uintptr_t addr, size_t size, int accessor) override {
        CUmemAccessDesc access = {};
        access.location.type   = CU_MEM_LOCATION_TYPE_DEVICE;
        access.location.id     = accessor;
        access.flags           = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        CUresult r             = api_.mem_set_access(CUdeviceptr(addr), size, &access, 1);
        return report(from_cu(r), "cuMemSetAccess", device, int(r));
    }
#else
    // VMM compiled out: vmm_supported() is false, so no pool calls these
    status do_vmm_reserve(int, size_t, uintptr_t *) override { return UNSUPPORTED; }
    status do_vmm_unreserve(int, uintptr_t, size_t) override { return UNSUPPORTED; }
    status do_vmm_create(int, size_t, vmm_handle *) override { return UNSUPPORTED; }
    status do_vmm_release(int, vmm_handle) override { return UNSUPPORTED; }
    status do_vmm_map(int, uintptr_t, size_t, vmm_handle) override { return UNSUPPORTED; }
    status do_vmm_unmap(int, uintptr_t, size_t) override { return UNSUPPORTED; }
    status do_vmm_access(int, uintptr_t, size_t, int) override { return UNSUPPORTED; }
#endif

    status do_stream_create(int device, stream_t * stream) override {
        return on_device(device, [&] {
            cudaStream_t s = nullptr;
            cudaError_t  e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
            *stream        = s;
            return report(from_cuda(e), "cudaStreamCreate", device, int(e));
        });
    }

    status do_stream_destroy(int device, stream_t stream) override {
        return on_device(device, [&] {
            cudaError_t e = cudaStreamDestroy(static_cast<cudaStream_t>(stream));
            return report(from_cuda(e), "cudaStreamDestroy", device, int(e));
        });
    }

#if GCP_HAS_ASYNC
    status do_malloc_async(int device, size_t size, stream_t stream, void ** ptr) override {
        status st = on_device(device, [&] {
            cudaError_t e = cudaMallocAsync(ptr, size, static_cast<cudaStream_t>(stream));
            return e == cudaErrorMemoryAllocation ? from_cuda(e) : report(from_cuda(e), "cudaMallocAsync", device, int(e));
        });
        if (st == OK) {
            track(async_allocs_, reinterpret_cast<uintptr_t>(*ptr), device, size);
        }
        return st;
    }

    status do_free_async(int device, void * ptr, stream_t stream) override {
        status st = on_device(device, [&] {
            cudaError_t e = cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream));
            return report(from_cuda(e), "cudaFreeAsync", device, int(e));
        });
        if (st == OK) {
            untrack(async_allocs_, reinterpret_cast<uintptr_t>(ptr));
        }
        return st;
    }
#endif

    status do_stream_synchronize(int device, stream_t stream) override {
        return on_device(device, [&] {
            cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
            return report(from_cuda(e), "cudaStreamSynchronize", device, int(e));
        });
    }

#if GCP_HAS_ASYNC
    // runs f on the device's default stream-ordered pool
    template <typename F> status with_pool(int device, const char * what, F && f) {
        cudaMemPool_t pool = nullptr;
        cudaError_t   e    = cudaDeviceGetDefaultMemPool(&pool, device);
        if (e == cudaSuccess) {
            e = f(pool);
        }
        return report(from_cuda(e), what, device, int(e));
    }

    status do_pool_threshold(int device, uint64_t * threshold) override {
        return with_pool(device, "cudaMemPoolGetAttribute", [&](cudaMemPool_t pool) {
            return cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, threshold);
        });
    }

    status do_pool_set_threshold(int device, uint64_t threshold) override {
        return with_pool(device, "cudaMemPoolSetAttribute", [&](cudaMemPool_t pool) {
            return cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
        });
    }

    status do_pool_reuse(int device, uint32_t * policies) override {
        return with_pool(device, "cudaMemPoolGetAttribute", [&](cudaMemPool_t pool) {
            int         opportunistic = 0, internal = 0;
            cudaError_t e = cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &opportunistic);
            if (e == cudaSuccess) {
                e = cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &internal);
            }
            *policies = (opportunistic ? REUSE_OPPORTUNISTIC : 0) | (internal ? REUSE_INTERNAL_DEPENDENCIES : 0);
            return e;
        });
    }

    status do_pool_set_reuse(int device, uint32_t policies) override {
        return with_pool(device, "cudaMemPoolSetAttribute", [&](cudaMemPool_t pool) {
            int         opportunistic = (policies & REUSE_OPPORTUNISTIC) ? 1 : 0;
            int         internal      = (policies & REUSE_INTERNAL_DEPENDENCIES) ? 1 : 0;
            cudaError_t e = cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &opportunistic);
            if (e == cudaSuccess) {
                e = cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &internal);
            }
            return e;
        });
    }

    status do_pool_usage(int device, size_t * reserved, size_t * used) override {
        return with_pool(device, "cudaMemPoolGetAttribute", [&](cudaMemPool_t pool) {
            uint64_t    r = 0, u = 0;
            cudaError_t e = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &r);
            if (e == cudaSuccess) {
                e = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &u);
            }
            *reserved = size_t(r);
            *used     = size_t(u);
            return e;
        });
    }

    status do_pool_trim(int device, size_t keep) override {
        return with_pool(device, "cudaMemPoolTrimTo", [&](cudaMemPool_t pool) { return cudaMemPoolTrimTo(pool, keep); });
    }
#else
    // the async kind is compiled out: async_supported() is false, so no pool calls these
    status do_malloc_async(int, size_t, stream_t, void **) override { return UNSUPPORTED; }
    status do_free_async(int, void *, stream_t) override { return UNSUPPORTED; }
    status do_pool_threshold(int, uint64_t *) override { return UNSUPPORTED; }
    status do_pool_set_threshold(int, uint64_t) override { return UNSUPPORTED; }
    status do_pool_reuse(int, uint32_t *) override { return UNSUPPORTED; }
    status do_pool_set_reuse(int, uint32_t) override { return UNSUPPORTED; }
    status do_pool_usage(int, size_t *, size_t *) override { return UNSUPPORTED; }
    status do_pool_trim(int, size_t) override { return UNSUPPORTED; }
#endif

  private:
    struct piece {
        int    device;
        size_t size;
    };

    bool valid(int device) const { return device >= 0 && device < count_; }

#if GCP_HAS_VMM
    static CUmemAllocationProp props(int device) {
        CUmemAllocationProp prop = {};
        prop.type                = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type       = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id         = device;
        return prop;
    }
#endif

    // what this driver handed out, for outstanding() and used(); without room to record it the
    // memory is still handed out, only the leak check loses sight of it
    void track(std::unordered_map<uintptr_t, piece> & map, uintptr_t key, int device, size_t size) noexcept {
        log_hold                    hold; // the line goes out once the lock is released
        std::lock_guard<std::mutex> lock(mutex_);
        try {
            map[key] = { device, size };
        } catch (...) {
            GCP_LOG_ERROR("%s: no host memory to record an allocation for the leak check", pool_label(GCP_PLATFORM, device).c_str());
        }
    }
    void untrack(std::unordered_map<uintptr_t, piece> & map, uintptr_t key) {
        std::lock_guard<std::mutex> lock(mutex_);
        map.erase(key);
    }

    int                           count_;
    [[maybe_unused]] driver_api   api_; // the VMM calls (none where VMM is compiled out)
    std::vector<bool>             vmm_, async_;
    std::vector<size_t>           granularity_;
    mutable std::mutex            mutex_;
    std::unordered_map<uintptr_t, piece> allocs_, handles_, ranges_, async_allocs_;
};

} // namespace

status make_cuda_driver(std::shared_ptr<driver> * out) {
    int         count = 0;
    cudaError_t e     = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        (void) cudaGetLastError();
        GCP_LOG_INFO("cuda driver: no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "count is 0");
        return UNSUPPORTED;
    }
    driver_api api;
    bool       have_vmm = api.load();
    if (!have_vmm) {
        GCP_LOG_INFO("cuda driver: virtual memory entry points unavailable; VMM pools disabled");
    }
    *out = std::make_shared<cuda_driver>(count, api, have_vmm);
    return OK;
}

} // namespace gcp
