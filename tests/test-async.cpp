// The async kind: the stream-ordered pool kept warm. The first async pool on a device raises
// the release threshold (only if lower) and remembers the old value; the last one synchronizes,
// trims every device it raised and restores the old value. Run over the sim driver, which models
// the stream-ordered pool, and over the cuda driver.

#include "harness.h"

#include <thread>
#include <tuple>

#if defined(GGML_USE_HIP)
#    include "../ggml-cuda/vendors/hip.h"
#elif defined(GGML_CPOOL_HAVE_CUDA)
#    include <cuda_runtime_api.h>
#endif

using namespace harness;

namespace {

constexpr uint64_t MAX_THRESHOLD = UINT64_MAX;

class Async : public testing::TestWithParam<drv> {
  protected:
    void SetUp() override {
        std::string why;
        driver_ = open_driver(GetParam(), sim_params(256 * MiB, 2), &why);
        if (driver_ == nullptr) {
            GTEST_SKIP() << why;
        }
        ASSERT_EQ(ggml_cpool_driver_release_threshold(driver_, 0, &initial_), GGML_CPOOL_STATUS_OK);
    }
    void TearDown() override {
        if (driver_) {
            uint64_t t = 0;
            EXPECT_EQ(ggml_cpool_driver_release_threshold(driver_, 0, &t), GGML_CPOOL_STATUS_OK);
            EXPECT_EQ(t, initial_) << "the threshold is back to what it was";
            EXPECT_EQ(ggml_cpool_driver_outstanding(driver_), 0u);
            EXPECT_FALSE(ggml_cpool_driver_error_latched(driver_));
            ggml_cpool_driver_release(driver_);
        }
    }
    size_t reserved(int device = 0) {
        size_t r = 0, u = 0;
        EXPECT_EQ(ggml_cpool_driver_pool_usage(driver_, device, &r, &u), GGML_CPOOL_STATUS_OK);
        return r;
    }
    uint64_t threshold(int device = 0) {
        uint64_t t = 0;
        EXPECT_EQ(ggml_cpool_driver_release_threshold(driver_, device, &t), GGML_CPOOL_STATUS_OK);
        return t;
    }

    ggml_cpool_driver_t driver_  = nullptr;
    uint64_t            initial_ = 0;
};

TEST_P(Async, FreedBlockIsRetainedAcrossASynchronizeThenTrimmedOnRelease) {
    ASSERT_EQ(initial_, 0u) << "the default threshold: every synchronize gives unused memory back";
    ggml_cpool_ctx_t ctx  = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool = pool_of(ctx);
    EXPECT_EQ(threshold(), MAX_THRESHOLD) << "raised on first use";
    buf a = alloc(pool, 32 * MiB);
    release(pool, a);
    ASSERT_EQ(ggml_cpool_driver_synchronize(driver_, 0), GGML_CPOOL_STATUS_OK);
    EXPECT_GE(reserved(), 32 * MiB) << "the freed block stayed in the pool across the synchronize";
    buf b = alloc(pool, 32 * MiB);
    EXPECT_EQ(stats_of(pool).misses, 1u) << "the second allocation took no new memory";
    release(pool, b);
    ggml_cpool_ctx_free(ctx); // the last handle: synchronize, trim, restore
    EXPECT_EQ(reserved(), 0u) << "trimmed on release";
    EXPECT_EQ(threshold(), 0u) << "restored on release";
}

TEST_P(Async, KeptWarmBetweenContexts) {
    ggml_cpool_ctx_t first = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    buf              a     = alloc(pool_of(first), 16 * MiB);
    release(pool_of(first), a);
    ggml_cpool_driver_synchronize(driver_, 0);
    // a second session, while the first is alive: the memory is still there for it
    ggml_cpool_ctx_t second = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    size_t           before = reserved();
    buf              b      = alloc(pool_of(second), 16 * MiB);
    EXPECT_EQ(reserved(), before) << "served from the warm pool";
    release(pool_of(second), b);
    ggml_cpool_ctx_free(second);
    EXPECT_EQ(threshold(), MAX_THRESHOLD) << "one handle is still live";
    ggml_cpool_ctx_free(first);
    EXPECT_EQ(reserved(), 0u);
}

TEST_P(Async, ALiveBlockSurvivesAnotherContextsTrim) {
    ggml_cpool_ctx_t holder = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_ctx_t other  = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    buf              live   = alloc(pool_of(holder), 8 * MiB);
    buf              big    = alloc(pool_of(other), 64 * MiB);
    release(pool_of(other), big);
    size_t before = reserved();
    ASSERT_GE(before, 72 * MiB);
    EXPECT_EQ(ggml_cpool_trim(pool_of(other)), GGML_CPOOL_STATUS_OK);
    size_t after = reserved();
    EXPECT_LT(after, before) << "the unused block went back";
    EXPECT_GE(after, live.size) << "the live block stayed";
    EXPECT_TRUE(fill_and_check(GetParam(), live.ptr, live.size, 0x21));
    release(pool_of(holder), live);
    ggml_cpool_ctx_free(other);
    ggml_cpool_ctx_free(holder);
}

TEST_P(Async, AThresholdAnotherUserSetToTheMaximumIsKept) {
    ASSERT_EQ(ggml_cpool_driver_set_release_threshold(driver_, 0, MAX_THRESHOLD), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    buf              a   = alloc(pool_of(ctx), 4 * MiB);
    release(pool_of(ctx), a);
    ggml_cpool_ctx_free(ctx);
    EXPECT_EQ(threshold(), MAX_THRESHOLD) << "never lowered: another user chose it";
    ASSERT_EQ(ggml_cpool_driver_set_release_threshold(driver_, 0, initial_), GGML_CPOOL_STATUS_OK);
    ggml_cpool_driver_synchronize(driver_, 0);
}

TEST_P(Async, ALowerThresholdIsRaisedThenRestored) {
    const uint64_t user = 1 * MiB;
    ASSERT_EQ(ggml_cpool_driver_set_release_threshold(driver_, 0, user), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    pool_of(ctx);
    EXPECT_EQ(threshold(), MAX_THRESHOLD);
    ggml_cpool_ctx_free(ctx);
    EXPECT_EQ(threshold(), user) << "the user's value is back";
    ASSERT_EQ(ggml_cpool_driver_set_release_threshold(driver_, 0, initial_), GGML_CPOOL_STATUS_OK);
}

TEST_P(Async, AttributeFailureIsLoggedLeavesNoLatchedErrorAndAllocationCarriesOn) {
    ggml_cpool_driver_t fault = nullptr;
    ASSERT_EQ(ggml_cpool_driver_fault_create(driver_, "fail=attr:1", &fault), GGML_CPOOL_STATUS_OK);
    log_capture      log;
    ggml_cpool_ctx_t ctx = make_ctx(fault, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool = pool_of(ctx);
    EXPECT_EQ(log.count("release threshold failed .* the pool stays cold"), 1u);
    EXPECT_FALSE(ggml_cpool_driver_error_latched(fault)) << "cleared, so no later check reports it";
    EXPECT_EQ(threshold(), initial_) << "left as it was";
    buf a = alloc(pool, 2 * MiB);
    EXPECT_TRUE(fill_and_check(GetParam(), a.ptr, a.size, 0x3c));
    release(pool, a);
    ggml_cpool_ctx_free(ctx);
    ggml_cpool_driver_release(fault);
}

TEST_P(Async, StatsStayExactWhenThePoolUsageCannotBeRead) {
    ggml_cpool_driver_t fault = nullptr;
    ASSERT_EQ(ggml_cpool_driver_fault_create(driver_, "", &fault), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx  = make_ctx(fault, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool = pool_of(ctx);
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault, "fail=attr:1+"), GGML_CPOOL_STATUS_OK);
    buf a = alloc(pool, 1 * MiB);
    expect_consistent(pool);
    EXPECT_GE(stats_of(pool).reserved_bytes, a.size) << "the device pool holds at least what is live";
    buf b = alloc(pool, 3 * MiB);
    expect_consistent(pool);
    release(pool, a);
    expect_consistent(pool);
    release(pool, b);
    ggml_cpool_driver_set_faults(fault, nullptr);
    ggml_cpool_ctx_free(ctx);
    ggml_cpool_driver_release(fault);
}

TEST_P(Async, ReleaseFromAThreadOnAnotherDeviceTrimsTheRightDevice) {
    if (ggml_cpool_driver_device_count(driver_) < 2) {
        GTEST_SKIP() << "needs two devices; this machine has " << ggml_cpool_driver_device_count(driver_);
    }
    uint64_t initial1 = threshold(1);
    ggml_cpool_ctx_t ctx = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool = pool_of(ctx, 1);
    buf              a    = alloc(pool, 24 * MiB);
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

// on a device small enough to fill: the sim driver's
TEST(AsyncKind, OutOfMemoryTrimsThePoolAndRetriesOnce) {
    auto                p     = sim_params(64 * MiB);
    ggml_cpool_driver_t small = nullptr;
    ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &small), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t a = make_ctx(small, GGML_CPOOL_KIND_ASYNC), b = make_ctx(small, GGML_CPOOL_KIND_ASYNC);
    buf              x = alloc(pool_of(a), 40 * MiB);
    release(pool_of(a), x); // held warm by the pool, on a's stream
    log_capture log;
    buf         y = alloc(pool_of(b), 40 * MiB); // b's stream cannot reuse it unsynchronized: full
    EXPECT_EQ(stats_of(pool_of(b)).flushes, 1u);
    EXPECT_EQ(log.count("trimming the stream-ordered pool and retrying once"), 1u);
    release(pool_of(b), y);
    ggml_cpool_ctx_free(a);
    ggml_cpool_ctx_free(b);
    EXPECT_EQ(ggml_cpool_driver_outstanding(small), 0u);
    ggml_cpool_driver_release(small);
}

TEST(AsyncKind, AFreeTheDriverRefusesIsKeptAndRetried) {
    auto                p     = sim_params(64 * MiB);
    ggml_cpool_driver_t sim   = nullptr, fault = nullptr;
    ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &sim), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(ggml_cpool_driver_fault_create(sim, "fail=free_async:1", &fault), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx = make_ctx(fault, GGML_CPOOL_KIND_ASYNC);
    buf              a   = alloc(pool_of(ctx), 8 * MiB);
    log_capture      log;
    release(pool_of(ctx), a); // the driver refuses: the pool keeps it
    EXPECT_EQ(log.count("async free of .* failed .*kept, to retry"), 1u);
    expect_consistent(pool_of(ctx));
    ggml_cpool_ctx_free(ctx); // retried on the way out
    EXPECT_EQ(ggml_cpool_driver_outstanding(sim), 0u);
    ggml_cpool_driver_release(fault);
    ggml_cpool_driver_release(sim);
}

TEST(AsyncKind, IsUnsupportedOnHipAndSaysSo) {
    clean_env           env;
    auto                p   = sim_params(64 * MiB, 1, GGML_CPOOL_PLATFORM_HIP);
    ggml_cpool_driver_t drv = nullptr;
    ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &drv), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx  = make_ctx(drv, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool = nullptr;
    log_capture      log;
    EXPECT_EQ(ggml_cpool_ctx_get_pool(ctx, 0, &pool), GGML_CPOOL_STATUS_UNSUPPORTED);
    EXPECT_EQ(log.count("HIP builds compile the stream-ordered pool out"), 1u);
    ggml_cpool_ctx_free(ctx);
    ggml_cpool_driver_release(drv);
}

TEST(AsyncKind, SelectedByTheEnvironment) {
    clean_env  env;
    scoped_env set("GGML_CUDA_POOL", "async");
    auto       cp  = ggml_cpool_ctx_default_params();
    cp.driver_kind = GGML_CPOOL_DRIVER_SIM;
    ggml_cpool_ctx_t ctx = nullptr;
    ASSERT_EQ(ggml_cpool_ctx_create(&cp, &ctx), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(ggml_cpool_get_kind(pool_of(ctx)), GGML_CPOOL_KIND_ASYNC);
    void * stream = nullptr;
    EXPECT_EQ(ggml_cpool_ctx_stream(ctx, 0, &stream), GGML_CPOOL_STATUS_OK);
    EXPECT_NE(stream, nullptr);
    ggml_cpool_ctx_free(ctx);
}

INSTANTIATE_TEST_SUITE_P(Sim, Async, testing::Values(drv::sim), [](auto &) { return std::string("sim"); });
INSTANTIATE_TEST_SUITE_P(Cuda, Async, testing::Values(drv::cuda), [](auto &) { return std::string("cuda"); });

} // namespace
