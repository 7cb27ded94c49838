// The async kind's cross-device release: a context whose pool on device 1 is destroyed from a
// thread current on device 0 trims and restores device 1. Built into test-unit over the sim
// driver and into test-multigpu over the cuda driver (skipped where one GPU is visible).

#include "async-fixture.h"

#include <thread>

#if defined(GGML_USE_HIP)
#    include "../ggml-cuda/vendors/hip.h"
#elif defined(GGML_CPOOL_HAVE_CUDA)
#    include <cuda_runtime_api.h>
#endif

using namespace harness;

namespace {

class AsyncDevices : public Async {};

TEST_P(AsyncDevices, ReleaseFromAThreadOnAnotherDeviceTrimsTheRightDevice) {
    if (ggml_cpool_driver_device_count(driver_) < 2) {
        GTEST_SKIP() << "needs two devices; this machine has " << ggml_cpool_driver_device_count(driver_);
    }
    uint64_t         initial1 = threshold(1);
    ggml_cpool_ctx_t ctx      = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool     = pool_of(ctx, 1);
    buf              a        = alloc(pool, 24 * MiB);
    release(pool, a);
    ggml_cpool_driver_synchronize(driver_, 1);
    EXPECT_GE(reserved(1), 24 * MiB);
    EXPECT_EQ(threshold(1), MAX_THRESHOLD);
    std::thread destroyer([&] {
#ifdef GGML_CPOOL_HAVE_CUDA
        if (GetParam() == drv::cuda) {
            ASSERT_EQ(cudaSetDevice(0), cudaSuccess); // the destroying thread is current on device 0
        }
#endif
        ggml_cpool_ctx_free(ctx);
    });
    destroyer.join();
    EXPECT_EQ(reserved(1), 0u) << "device 1 trimmed";
    EXPECT_EQ(threshold(1), initial1) << "device 1 restored";
}

HARNESS_INSTANTIATE(AsyncDevices, testing::Values(DRIVER), driver_name);

} // namespace
