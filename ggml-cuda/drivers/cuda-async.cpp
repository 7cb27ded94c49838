// cuda_primitives' stream-ordered pool: each device's default memory pool and its attributes (not on HIP).

#include "cuda-impl.h"

#if GCP_HAS_ASYNC

namespace gcp::cuda {

namespace {

// the reuse policies and the pool attribute behind each
constexpr struct {
    uint64_t        bit;
    cudaMemPoolAttr attr;
} REUSE[] = {
    { REUSE_OPPORTUNISTIC, cudaMemPoolReuseAllowOpportunistic },
    { REUSE_INTERNAL_DEPENDENCIES, cudaMemPoolReuseAllowInternalDependencies },
};

// the attribute behind a 64-bit value (reuse_policies has one per policy: REUSE)
cudaMemPoolAttr value_attr(mempool_attr attr) {
    return attr == mempool_attr::reserved ? cudaMemPoolAttrReservedMemCurrent :
           attr == mempool_attr::used     ? cudaMemPoolAttrUsedMemCurrent :
                                            cudaMemPoolAttrReleaseThreshold;
}

class cuda_mempool final : public mempool_primitives {
  public:
    status malloc_async(int device, size_t size, stream_t stream, void ** ptr) override {
        return on_device(device, [&] {
            return checked(cudaMallocAsync(ptr, size, static_cast<cudaStream_t>(stream)), "cudaMallocAsync", device);
        });
    }

    status free_async(int device, void * ptr, stream_t stream) override {
        return on_device(device, [&] {
            return checked(cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream)), "cudaFreeAsync", device);
        });
    }

    status get_attr(int device, mempool_attr attr, uint64_t * value) override {
        return with_pool(device, "cudaMemPoolGetAttribute", [&](cudaMemPool_t pool) {
            if (attr != mempool_attr::reuse_policies) {
                return cudaMemPoolGetAttribute(pool, value_attr(attr), value);
            }
            cudaError_t e = cudaSuccess;
            *value        = 0;
            for (auto & r : REUSE) {
                int on = 0;
                e      = e == cudaSuccess ? cudaMemPoolGetAttribute(pool, r.attr, &on) : e;
                *value |= on ? r.bit : 0;
            }
            return e;
        });
    }

    status set_attr(int device, mempool_attr attr, uint64_t value) override {
        return with_pool(device, "cudaMemPoolSetAttribute", [&](cudaMemPool_t pool) {
            if (attr == mempool_attr::release_threshold) {
                return cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &value);
            }
            cudaError_t e = cudaSuccess; // reuse_policies, the other attribute that is set
            for (auto & r : REUSE) {
                int on = (value & r.bit) ? 1 : 0;
                e      = e == cudaSuccess ? cudaMemPoolSetAttribute(pool, r.attr, &on) : e;
            }
            return e;
        });
    }

    status trim(int device, size_t keep) override {
        return with_pool(device, "cudaMemPoolTrimTo",
                         [&](cudaMemPool_t pool) { return cudaMemPoolTrimTo(pool, keep); });
    }

  private:
    // runs f on the device's default stream-ordered pool
    template <typename F> static status with_pool(int device, const char * what, F && f) {
        cudaMemPool_t pool = nullptr;
        cudaError_t   e    = cudaDeviceGetDefaultMemPool(&pool, device);
        if (e == cudaSuccess) {
            e = f(pool);
        }
        return checked(e, what, device);
    }
};

} // namespace

std::unique_ptr<mempool_primitives> make_mempool() {
    return std::make_unique<cuda_mempool>();
}

} // namespace gcp::cuda

#endif // GCP_HAS_ASYNC
