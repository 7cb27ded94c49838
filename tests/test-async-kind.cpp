// The async kind's selection and its paths that need a device the sim driver shapes: full,
// a one-shot fault, refusing a free, HIP.

#include "harness.h"

using namespace harness;

namespace {

// on a device small enough to fill: the sim driver's
TEST(AsyncKind, OutOfMemoryTrimsThePoolAndRetriesOnce) {
    sim_device       small(sim_params(64 * MiB));
    ggml_cpool_ctx_t a = make_ctx(small.drv, GGML_CPOOL_KIND_ASYNC), b = make_ctx(small.drv, GGML_CPOOL_KIND_ASYNC);
    buf              x = alloc(pool_of(a), 40 * MiB);
    release(pool_of(a), x); // held warm by the pool, on a's stream
    log_capture log;
    buf         y = alloc(pool_of(b), 40 * MiB); // b's stream cannot reuse it unsynchronized: full
    EXPECT_EQ(stats_of(pool_of(b)).flushes, 1u);
    EXPECT_EQ(log.count("trimming the stream-ordered pool and retrying once"), 1u);
    release(pool_of(b), y);
    ggml_cpool_ctx_free(a);
    ggml_cpool_ctx_free(b);
}

// oneshot=<size> waits for an allocation after the device's first, here with that one's memory
// unused in the warm device pool
TEST(AsyncKind, OneShotWaitsForAnEarlierAllocation) {
    sim_device          sim(sim_params(64 * MiB));
    ggml_cpool_driver_t fault = fault_over(sim.drv, "oneshot=1MiB");
    ggml_cpool_ctx_t    ctx   = make_ctx(fault, GGML_CPOOL_KIND_ASYNC);
    buf                 first = alloc(pool_of(ctx), 8 * MiB); // nothing held yet
    EXPECT_EQ(ggml_cpool_driver_faults_fired(fault), 0u);
    release(pool_of(ctx), first); // unused now, and kept by the warm device pool
    log_capture log;
    buf         second = alloc(pool_of(ctx), 4 * MiB);
    EXPECT_EQ(ggml_cpool_driver_faults_fired(fault), 1u);
    EXPECT_EQ(stats_of(pool_of(ctx)).flushes, 1u) << "the trim and retry it exists to test";
    EXPECT_EQ(log.count("trimming the stream-ordered pool and retrying once"), 1u);
    release(pool_of(ctx), second);
    ggml_cpool_ctx_free(ctx);
    ggml_cpool_driver_release(fault);
}

TEST(AsyncKind, AFreeTheDriverRefusesIsKeptAndRetried) {
    sim_device          sim(sim_params(64 * MiB));
    ggml_cpool_driver_t fault = fault_over(sim.drv, "fail=free_async:1");
    ggml_cpool_ctx_t    ctx   = make_ctx(fault, GGML_CPOOL_KIND_ASYNC);
    buf                 a     = alloc(pool_of(ctx), ASYNC_UNCACHED);
    log_capture         log;
    release(pool_of(ctx), a); // the driver refuses: the pool keeps it
    EXPECT_EQ(log.count("async free of .* failed .*kept, to retry"), 1u);
    expect_consistent(pool_of(ctx));
    ggml_cpool_ctx_free(ctx); // retried on the way out: the sim device checks nothing is left
    ggml_cpool_driver_release(fault);
}

TEST(AsyncKind, IsUnsupportedOnHipAndSaysSo) {
    clean_env        env;
    sim_device       hip(sim_params(64 * MiB, 1, GGML_CPOOL_PLATFORM_HIP));
    ggml_cpool_ctx_t ctx  = make_ctx(hip.drv, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool = nullptr;
    log_capture      log;
    EXPECT_EQ(ggml_cpool_ctx_get_pool(ctx, 0, &pool), GGML_CPOOL_STATUS_UNSUPPORTED);
    EXPECT_EQ(log.count("HIP builds compile the stream-ordered pool out"), 1u);
    ggml_cpool_ctx_free(ctx);
}

TEST(AsyncKind, SelectedByTheEnvironment) {
    clean_env  env;
    scoped_env set("GGML_CUDA_POOL", "async");
    auto       cp        = ggml_cpool_ctx_default_params();
    cp.driver_kind       = GGML_CPOOL_DRIVER_SIM;
    ggml_cpool_ctx_t ctx = nullptr;
    ASSERT_EQ(ggml_cpool_ctx_create(&cp, &ctx), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(ggml_cpool_get_kind(pool_of(ctx)), GGML_CPOOL_KIND_ASYNC);
    void * stream = nullptr;
    EXPECT_EQ(ggml_cpool_ctx_stream(ctx, 0, &stream), GGML_CPOOL_STATUS_OK);
    EXPECT_NE(stream, nullptr);
    ggml_cpool_ctx_free(ctx);
}

} // namespace
