// cuda_primitives' virtual memory: the driver's cuMem* calls, by entry-point query on CUDA, linked on HIP.

#include "cuda-impl.h"

#if GCP_HAS_VMM

#    include <vector>

namespace gcp::cuda {

namespace {

// the driver's virtual memory calls, each a member of driver_api by its own name, which GCP_LOAD
// loads (clang-format 14 takes its stringizing # for a directive and indents it)
// clang-format off
#    define GCP_VMM_CALLS(X) \
        X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuMemGetAllocationGranularity) X(cuMemAddressReserve) \
        X(cuMemAddressFree) X(cuMemCreate) X(cuMemRelease) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess)
#    if defined(GGML_USE_HIP)
#        define GCP_LOAD(name) ((name = &::name), true) &&
#    else
#        define GCP_LOAD(name) driver_entry(#name, &name) &&
#    endif
// clang-format on

struct driver_api {
#    define GCP_MEMBER(name) decltype(&::name) name = nullptr;
    GCP_VMM_CALLS(GCP_MEMBER)
#    undef GCP_MEMBER

    bool load() { return GCP_VMM_CALLS(GCP_LOAD) true; }
};

// a driver call's status, said where it is a driver error
status checked_cu(CUresult r, const char * what, int device) {
    const status st = r == CUDA_SUCCESS ? OK : r == CUDA_ERROR_OUT_OF_MEMORY ? OUT_OF_MEMORY : DRIVER_ERROR;
    return report(st, what, device, int(r));
}

CUmemAllocationProp props(int device) {
    CUmemAllocationProp prop = {};
    prop.type                = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type       = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id         = device;
    return prop;
}

class cuda_vmm final : public vmm_primitives {
  public:
    cuda_vmm(int count, const driver_api & api) : api_(api) {
        granularity_.assign(size_t(count), 0);
        for (int d = 0; d < count; d++) {
            CUdevice dev       = 0;
            int      supported = 0;
            if (api_.cuDeviceGet(&dev, d) != CUDA_SUCCESS ||
                api_.cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev) !=
                    CUDA_SUCCESS ||
                !supported) {
                continue;
            }
            CUmemAllocationProp prop = props(d);
            size_t              g    = 0;
            if (api_.cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) == CUDA_SUCCESS) {
                granularity_[size_t(d)] = g;
            }
        }
    }

    size_t granularity(int device) const override {
        return device >= 0 && size_t(device) < granularity_.size() ? granularity_[size_t(device)] : 0;
    }

    status reserve(int device, size_t size, uintptr_t * addr) override {
        CUdeviceptr p  = 0;
        status      st = checked_cu(api_.cuMemAddressReserve(&p, size, 0, 0, 0), "cuMemAddressReserve", device);
        if (st == OK) {
            *addr = uintptr_t(p);
        }
        return st;
    }

    status unreserve(int device, uintptr_t addr, size_t size) override {
        return checked_cu(api_.cuMemAddressFree(CUdeviceptr(addr), size), "cuMemAddressFree", device);
    }

    status create(int device, size_t size, vmm_handle * handle) override {
        CUmemAllocationProp          prop = props(device);
        CUmemGenericAllocationHandle h    = 0;
        status                       st   = checked_cu(api_.cuMemCreate(&h, size, &prop, 0), "cuMemCreate", device);
        if (st == OK) {
            *handle = vmm_handle(h);
        }
        return st;
    }

    status release(int device, vmm_handle handle) override {
        return checked_cu(api_.cuMemRelease(CUmemGenericAllocationHandle(handle)), "cuMemRelease", device);
    }

    status map(int device, uintptr_t addr, size_t size, vmm_handle handle) override {
        return checked_cu(api_.cuMemMap(CUdeviceptr(addr), size, 0, CUmemGenericAllocationHandle(handle), 0),
                          "cuMemMap", device);
    }

    status unmap(int device, uintptr_t addr, size_t size) override {
        return checked_cu(api_.cuMemUnmap(CUdeviceptr(addr), size), "cuMemUnmap", device);
    }

    status access(int device, uintptr_t addr, size_t size, int accessor) override {
        CUmemAccessDesc desc = {};
        desc.location.type   = CU_MEM_LOCATION_TYPE_DEVICE;
        desc.location.id     = accessor;
        desc.flags           = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        return checked_cu(api_.cuMemSetAccess(CUdeviceptr(addr), size, &desc, 1), "cuMemSetAccess", device);
    }

  private:
    driver_api          api_;
    std::vector<size_t> granularity_; // 0: no VMM on that device
};

} // namespace

std::unique_ptr<vmm_primitives> make_vmm(int count) {
    driver_api api;
    if (!api.load()) {
        return nullptr;
    }
    return std::make_unique<cuda_vmm>(count, api);
}

} // namespace gcp::cuda

#endif // GCP_HAS_VMM
