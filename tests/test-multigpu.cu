// Several GPUs: one context with pools on two devices. Each device's allocations land in that
// device's memory; a VMM pool asked for peer access maps its memory for the other device, which
// a kernel on device 1 then reads; destroying the context from a thread current on the other
// device releases both. Skipped, with the reason, where fewer than two GPUs are visible.

#include "cuda-check.h"
#include "harness.h"

#include <cuda_runtime_api.h>

#include <thread>
#include <vector>

using namespace harness;

namespace {

constexpr int THREADS = 256;

__global__ void copy_scaled(const float * src, float * dst, int n, float scale) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        dst[i] = src[i] * scale;
    }
}

class MultiGpu : public testing::TestWithParam<ggml_cpool_kind> {
  protected:
    void SetUp() override {
        std::string why;
        drv_ = make_cuda_driver(&why);
        if (drv_ == nullptr) {
            GTEST_SKIP() << why;
        }
        if (ggml_cpool_driver_device_count(drv_) < 2) {
            GTEST_SKIP() << "needs two devices; this machine has " << ggml_cpool_driver_device_count(drv_);
        }
    }
    void TearDown() override {
        if (drv_) {
            EXPECT_EQ(ggml_cpool_driver_outstanding(drv_), 0u);
            ggml_cpool_driver_release(drv_);
        }
    }
    ggml_cpool_ctx_t make(bool peer) {
        auto cp            = ggml_cpool_ctx_default_params();
        cp.driver          = drv_;
        cp.vmm_peer_access = peer;
        for (auto & k : cp.kind) {
            k = GetParam();
        }
        ggml_cpool_ctx_t ctx = nullptr;
        EXPECT_EQ(ggml_cpool_ctx_create(&cp, &ctx), GGML_CPOOL_STATUS_OK);
        return ctx;
    }
    ggml_cpool_driver_t drv_ = nullptr;
};

TEST_P(MultiGpu, EachDevicesAllocationsLandInItsMemory) {
    ggml_cpool_ctx_t ctx = make(false);
    for (int d = 0; d < 2; d++) {
        buf                   b = alloc(pool_of(ctx, d), 8 << 20);
        cudaPointerAttributes attr{};
        CHECK_CUDA(cudaPointerGetAttributes(&attr, b.ptr));
        EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
        EXPECT_EQ(attr.device, d) << ggml_cpool_kind_str(GetParam()) << " pool of device " << d;
        CHECK_CUDA(cudaSetDevice(d));
        EXPECT_TRUE(fill_and_check(drv::cuda, b.ptr, b.size, uint8_t(0x10 + d)));
        release(pool_of(ctx, d), b);
    }
    ggml_cpool_ctx_free(ctx);
}

TEST_P(MultiGpu, DestroyFromAThreadOnTheOtherDeviceReleasesBoth) {
    ggml_cpool_ctx_t ctx = make(false);
    for (int d = 0; d < 2; d++) {
        buf cached = alloc(pool_of(ctx, d), 16 << 20);
        alloc(pool_of(ctx, d), 4 << 20); // left live
        release(pool_of(ctx, d), cached);
    }
    int         current = -1;
    std::thread destroyer([&] {
        ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
        ggml_cpool_ctx_free(ctx);
        cudaGetDevice(&current);
    });
    destroyer.join();
    EXPECT_EQ(current, 1) << "the pools did not move the thread's current device";
    EXPECT_EQ(ggml_cpool_driver_used(drv_, 0), 0u);
    EXPECT_EQ(ggml_cpool_driver_used(drv_, 1), 0u);
}

class MultiGpuVmm : public MultiGpu {};

TEST_P(MultiGpuVmm, PeerAccessLetsAKernelOnDeviceOneReadDeviceZerosBuffer) {
    int can = 0;
    CHECK_CUDA(cudaDeviceCanAccessPeer(&can, 1, 0));
    if (!can) {
        GTEST_SKIP() << "device 1 cannot reach device 0's memory on this machine";
    }
    ggml_cpool_ctx_t   ctx = make(true);
    const int          n   = 1 << 20;
    buf                src = alloc(pool_of(ctx, 0), n * sizeof(float));
    std::vector<float> host(n);
    for (int i = 0; i < n; i++) {
        host[i] = float(i % 977) - 300.0f;
    }
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaMemcpy(src.ptr, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    buf dst = alloc(pool_of(ctx, 1), n * sizeof(float));
    CHECK_CUDA(cudaSetDevice(1));
    copy_scaled<<<(n + THREADS - 1) / THREADS, THREADS>>>(static_cast<const float *>(src.ptr),
                                                          static_cast<float *>(dst.ptr), n, 3.0f);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<float> out(n);
    CHECK_CUDA(cudaMemcpy(out.data(), dst.ptr, n * sizeof(float), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        wrong += out[i] != 3.0f * host[i];
    }
    EXPECT_EQ(wrong, 0) << "device 1 read device 0's pool buffer through the peer mapping";
    release(pool_of(ctx, 0), src);
    release(pool_of(ctx, 1), dst);
    ggml_cpool_ctx_free(ctx);
}

INSTANTIATE_TEST_SUITE_P(Cuda, MultiGpu,
                         testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_VMM, GGML_CPOOL_KIND_ASYNC),
                         kind_name);
INSTANTIATE_TEST_SUITE_P(Cuda, MultiGpuVmm, testing::Values(GGML_CPOOL_KIND_VMM), kind_name);

} // namespace
