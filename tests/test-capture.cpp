// Session isolation and CUDA-graph safety on the sim driver: nothing one context does shows up
// in another's pool; no synchronize or free while the context's stream is capturing; the
// generation a graph cache watches; pinned buffers that reclaim and trim leave alone.

#include "harness.h"

using namespace harness;

namespace {

constexpr size_t CAPACITY = 64 * MiB;

class Capture : public pool_test<testing::TestWithParam<ggml_cpool_kind>> {
  protected:
    void SetUp() override {
        open_sim(sim_params(CAPACITY));
        open_ctx(GetParam());
        ASSERT_EQ(ggml_cpool_ctx_stream(ctx_, 0, &stream_), GGML_CPOOL_STATUS_OK);
    }
    void TearDown() override {
        ggml_cpool_sim_set_capturing(drv_, 0, stream_, 0);
        pool_test::TearDown();
    }
    void     capture(bool on) { ASSERT_EQ(ggml_cpool_sim_set_capturing(drv_, 0, stream_, on), GGML_CPOOL_STATUS_OK); }
    uint64_t calls(ggml_cpool_call c) { return ggml_cpool_driver_calls(drv_, c); }
    // calls that are illegal during capture
    uint64_t illegal() {
        return calls(GGML_CPOOL_CALL_SYNCHRONIZE) + calls(GGML_CPOOL_CALL_FREE) + calls(GGML_CPOOL_CALL_STREAM_SYNC) +
               calls(GGML_CPOOL_CALL_VMM_UNMAP) + calls(GGML_CPOOL_CALL_POOL_TRIM);
    }

    ggml_cpool_driver_t & drv_    = driver_; // the sim one
    void *                stream_ = nullptr;
};

TEST_P(Capture, AnAllocationFromOneSessionNeverAppearsInAnothersStats) {
    ggml_cpool_ctx_t other  = make_ctx(drv_, GetParam());
    ggml_cpool_t     theirs = pool_of(other);
    buf              a      = alloc(pool_, 3 * MiB);
    release(pool_, a);
    buf              b = alloc(pool_, 3 * MiB);
    ggml_cpool_stats s = stats_of(theirs);
    EXPECT_EQ(s.allocs, 0u);
    EXPECT_EQ(s.hits + s.misses, 0u);
    EXPECT_EQ(s.live_bytes, 0u);
    EXPECT_EQ(s.peak_live_bytes, 0u);
    if (GetParam() != GGML_CPOOL_KIND_ASYNC) { // the async kind reports the device pool it shares
        EXPECT_EQ(s.reserved_bytes, 0u);
    }
    release(pool_, b);
    ggml_cpool_ctx_free(other);
}

TEST_P(Capture, OutOfMemoryDuringCaptureReturnsAStatusWithoutSynchronizeOrFree) {
    buf filler = alloc(pool_, 36 * MiB); // the device is nearly full
    buf cached = alloc(pool_, 8 * MiB);  // above the filler, so reclaiming it leaves one free range
    release(pool_, cached);
    capture(true);
    uint64_t     before = illegal();
    log_capture  log;
    void *       p      = nullptr;
    size_t       actual = 0;
    // more than is free, but not more than is free once the cached buffer goes (the VMM stack
    // would grow into the last free megabytes, so it is asked for more); the async kind's capture
    // cache cannot take the cached buffer's memory either: its free has not landed, and no
    // synchronize may land it during the capture
    const size_t request = GetParam() == GGML_CPOOL_KIND_VMM ? 30 * MiB : 24 * MiB;
    EXPECT_EQ(ggml_cpool_alloc(pool_, request, 0, &p, &actual), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(illegal(), before) << "no synchronize, free, unmap or trim during capture";
    EXPECT_EQ(log.count("during graph capture"), 1u);
    EXPECT_EQ(log.lines(GGML_CPOOL_LOG_WARN).size(), 1u) << "one line for the failed allocation";
    capture(false);
    if (GetParam() != GGML_CPOOL_KIND_VMM) { // outside capture the pool recovers (the VMM stack has nothing to reclaim)
        buf after = alloc(pool_, request);
        release(pool_, after);
    }
    release(pool_, filler);
}

TEST_P(Capture, TrimDuringCaptureIsRefused) {
    buf a = alloc(pool_, 4 * MiB);
    release(pool_, a);
    capture(true);
    uint64_t    before = illegal();
    log_capture log;
    EXPECT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_UNSUPPORTED);
    EXPECT_EQ(illegal(), before);
    EXPECT_EQ(log.count("trim refused: the context's stream is capturing a graph"), 1u);
    capture(false);
    EXPECT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK);
}

TEST_P(Capture, GenerationMovesOnlyWhenMemoryGoesBack) {
    uint64_t g0 = ggml_cpool_ctx_generation(ctx_);
    for (int i = 0; i < 5; i++) {
        buf a = alloc(pool_, 2 * MiB);
        release(pool_, a);
    }
    EXPECT_EQ(ggml_cpool_ctx_generation(ctx_), g0) << "hits keep the generation: captured graphs stay valid";
    ASSERT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK);
    EXPECT_GT(ggml_cpool_ctx_generation(ctx_), g0) << "memory went back: recapture";
    EXPECT_EQ(ggml_cpool_ctx_generation(ctx_), ggml_cpool_generation(pool_));
}

TEST_P(Capture, PinnedBuffersSurviveTrimUntilTheGraphIsReleased) {
    uint64_t graph = 0;
    ASSERT_EQ(ggml_cpool_ctx_pin_begin(ctx_, &graph), GGML_CPOOL_STATUS_OK);
    buf g = alloc(pool_, ASYNC_UNCACHED); // the graph's scratch (the async kind: not cached)
    ASSERT_EQ(ggml_cpool_ctx_pin_end(ctx_), GGML_CPOOL_STATUS_OK);
    buf free_one = alloc(pool_, ASYNC_UNCACHED);
    release(pool_, free_one);
    const uint64_t async_frees = calls(GGML_CPOOL_CALL_FREE_ASYNC);
    release(pool_, g); // freed after capture: the graph still uses it
    if (GetParam() == GGML_CPOOL_KIND_ASYNC) {
        EXPECT_EQ(calls(GGML_CPOOL_CALL_FREE_ASYNC), async_frees) << "the free waits for the graph";
    }
    ASSERT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(ggml_cpool_driver_synchronize(drv_, 0), GGML_CPOOL_STATUS_OK);
    EXPECT_GE(ggml_cpool_driver_used(drv_, 0), g.size) << "the pinned buffer is still held";
    ASSERT_EQ(ggml_cpool_ctx_pin_release(ctx_, graph), GGML_CPOOL_STATUS_OK);
    if (GetParam() == GGML_CPOOL_KIND_ASYNC) {
        EXPECT_EQ(calls(GGML_CPOOL_CALL_FREE_ASYNC), async_frees + 1) << "freed with the graph";
    }
    ASSERT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK);
    ggml_cpool_driver_synchronize(drv_, 0);
    EXPECT_EQ(ggml_cpool_driver_used(drv_, 0), 0u) << "released with the graph";
}

// reclaim is the cached kinds' (legacy, plain)
class CachedCapture : public Capture {};

TEST_P(CachedCapture, ReclaimTakesOnlyUnpinnedBuffers) {
    uint64_t graph = 0;
    ASSERT_EQ(ggml_cpool_ctx_pin_begin(ctx_, &graph), GGML_CPOOL_STATUS_OK);
    buf g = alloc(pool_, 10 * MiB);
    ASSERT_EQ(ggml_cpool_ctx_pin_end(ctx_), GGML_CPOOL_STATUS_OK);
    buf loose = alloc(pool_, 10 * MiB);
    release(pool_, g);
    release(pool_, loose);
    buf              big = alloc(pool_, 44 * MiB); // needs reclaim: only `loose` may go
    ggml_cpool_stats s   = stats_of(pool_);
    EXPECT_EQ(s.cached_bytes, g.size) << "the pinned buffer stayed cached";
    buf again = alloc(pool_, 10 * MiB);
    EXPECT_EQ(again.ptr, g.ptr) << "and is still served within its own context";
    release(pool_, again);
    release(pool_, big);
    ggml_cpool_ctx_pin_release(ctx_, graph);
}

TEST_P(Capture, PinApiMisuseIsRefused) {
    uint64_t    graph = 0, other = 0;
    log_capture log;
    EXPECT_EQ(ggml_cpool_ctx_pin_end(ctx_), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_ctx_pin_release(ctx_, 42), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(ggml_cpool_ctx_pin_begin(ctx_, &graph), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(ggml_cpool_ctx_pin_begin(ctx_, &other), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_ctx_pin_release(ctx_, graph), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << "still open";
    ASSERT_EQ(ggml_cpool_ctx_pin_end(ctx_), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(ggml_cpool_ctx_pin_release(ctx_, graph), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(ggml_cpool_ctx_pin_release(ctx_, graph), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << "twice";
    EXPECT_EQ(log.lines(GGML_CPOOL_LOG_ERROR).size(), 5u);
}

TEST_P(Capture, DestroyQuarantinesOnlyWhatALiveGraphStillPins) {
    ggml_cpool_ctx_t ctx   = make_ctx(drv_, GetParam());
    ggml_cpool_t     pool  = pool_of(ctx);
    uint64_t         graph = 0;
    ASSERT_EQ(ggml_cpool_ctx_pin_begin(ctx, &graph), GGML_CPOOL_STATUS_OK);
    buf g = alloc(pool, 5 * MiB);
    ASSERT_EQ(ggml_cpool_ctx_pin_end(ctx), GGML_CPOOL_STATUS_OK);
    buf loose = alloc(pool, 9 * MiB);
    release(pool, loose);
    release(pool, g);
    log_capture log;
    ggml_cpool_ctx_free(ctx); // without pin_release: the graph may still replay into g
    size_t bytes = 0, pools = 0;
    ggml_cpool_quarantine_stats(&bytes, &pools);
    EXPECT_EQ(pools, 1u);
    EXPECT_GE(bytes, g.size);
    EXPECT_LT(bytes, g.size + loose.size) << "what no graph pins went back";
    EXPECT_EQ(log.count("kept in quarantine"), 1u) << "said once";
    ggml_cpool_trim(pool_); // the async kind's device pool lets go once nothing uses it
    ggml_cpool_driver_synchronize(drv_, 0);
    EXPECT_GE(ggml_cpool_driver_used(drv_, 0), g.size) << "the pinned buffer is kept, not freed";
    ASSERT_EQ(ggml_cpool_quarantine_release(), GGML_CPOOL_STATUS_OK);
    ggml_cpool_quarantine_stats(&bytes, &pools);
    EXPECT_EQ(pools, 0u);
    ggml_cpool_trim(pool_);
    ggml_cpool_driver_synchronize(drv_, 0);
    EXPECT_EQ(ggml_cpool_driver_used(drv_, 0), 0u) << "released once the consumer says the graphs are gone";
}

TEST_P(CachedCapture, ReclaimSynchronizesTheContextsStreamNotTheDevice) {
    // a device-wide synchronize would break a capture that another context runs on the device
    buf filler = alloc(pool_, 36 * MiB);
    buf cached = alloc(pool_, 8 * MiB);
    release(pool_, cached);
    uint64_t device_syncs = calls(GGML_CPOOL_CALL_SYNCHRONIZE), stream_syncs = calls(GGML_CPOOL_CALL_STREAM_SYNC);
    buf      big = alloc(pool_, 24 * MiB); // reclaims the cached buffer
    EXPECT_EQ(calls(GGML_CPOOL_CALL_SYNCHRONIZE), device_syncs);
    EXPECT_EQ(calls(GGML_CPOOL_CALL_STREAM_SYNC), stream_syncs + 1);
    release(pool_, big);
    release(pool_, filler);
}

TEST(CaptureVmm, APinCoversTheLargestBufferEverHandedOutAtItsAddress) {
    sim_device       device(sim_params(CAPACITY));
    ggml_cpool_ctx_t ctx   = make_ctx(device.drv, GGML_CPOOL_KIND_VMM);
    ggml_cpool_t     pool  = pool_of(ctx);
    uint64_t         first = 0, second = 0;
    ASSERT_EQ(ggml_cpool_ctx_pin_begin(ctx, &first), GGML_CPOOL_STATUS_OK);
    buf a = alloc(pool, 1 * MiB), big = alloc(pool, 40 * MiB); // the first graph's buffers
    ASSERT_EQ(ggml_cpool_ctx_pin_end(ctx), GGML_CPOOL_STATUS_OK);
    release(pool, big);
    release(pool, a);
    ASSERT_EQ(ggml_cpool_ctx_pin_begin(ctx, &second), GGML_CPOOL_STATUS_OK);
    buf b = alloc(pool, 1 * MiB), small = alloc(pool, 1 * MiB); // `small` lands where `big` was
    ASSERT_EQ(ggml_cpool_ctx_pin_end(ctx), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(small.ptr, big.ptr);
    release(pool, small);
    release(pool, b);
    ASSERT_EQ(ggml_cpool_trim(pool), GGML_CPOOL_STATUS_OK);
    EXPECT_GE(stats_of(pool).reserved_bytes, a.size + big.size) << "the first graph's buffer is still mapped";
    EXPECT_TRUE(fill_and_check(drv::sim, big.ptr, big.size, 0x5c));
    ggml_cpool_ctx_pin_release(ctx, first);
    ggml_cpool_ctx_pin_release(ctx, second);
    ggml_cpool_ctx_free(ctx);
}

TEST(CaptureVmm, AFailedGrowthDuringCaptureIsUndoneOnlyAfterIt) {
    sim_device          device(sim_params(CAPACITY));
    ggml_cpool_driver_t fault = nullptr;
    ASSERT_EQ(ggml_cpool_driver_fault_create(device.drv, "", &fault), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx    = make_ctx(fault, GGML_CPOOL_KIND_VMM);
    ggml_cpool_t     pool   = pool_of(ctx);
    void *           stream = nullptr;
    ASSERT_EQ(ggml_cpool_ctx_stream(ctx, 0, &stream), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(ggml_cpool_sim_set_capturing(device.drv, 0, stream, 1), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault, "fail=access:1"), GGML_CPOOL_STATUS_OK);
    uint64_t unmaps = ggml_cpool_driver_calls(device.drv, GGML_CPOOL_CALL_VMM_UNMAP);
    void *   p      = nullptr;
    size_t   actual = 0;
    EXPECT_NE(ggml_cpool_alloc(pool, 3 * MiB, 0, &p, &actual), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(ggml_cpool_driver_calls(device.drv, GGML_CPOOL_CALL_VMM_UNMAP), unmaps) << "no unmap during capture";
    EXPECT_NE(ggml_cpool_alloc(pool, 3 * MiB, 0, &p, &actual), GGML_CPOOL_STATUS_OK)
        << "the leftover mapping blocks growth until the capture ends";
    ASSERT_EQ(ggml_cpool_sim_set_capturing(device.drv, 0, stream, 0), GGML_CPOOL_STATUS_OK);
    buf b = alloc(pool, 3 * MiB); // undone, then grown
    EXPECT_EQ(ggml_cpool_driver_calls(device.drv, GGML_CPOOL_CALL_VMM_UNMAP), unmaps + 1);
    release(pool, b);
    ggml_cpool_ctx_free(ctx);
    ggml_cpool_driver_release(fault);
}

TEST(CaptureAsync, AFreeDuringCaptureWaitsUntilTheCaptureEnds) {
    async_sim s(CAPACITY);
    buf       a = alloc(s.pool, 4 * MiB); // before capture
    ASSERT_EQ(s.capture(true), GGML_CPOOL_STATUS_OK);
    uint64_t frees = s.calls(GGML_CPOOL_CALL_FREE_ASYNC);
    release(s.pool, a);
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_FREE_ASYNC), frees) << "no free into the capture";
    ASSERT_EQ(s.capture(false), GGML_CPOOL_STATUS_OK);
    buf b = alloc(s.pool, 1 * MiB); // after capture: the held free goes out first
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_FREE_ASYNC), frees + 1);
    release(s.pool, b);
}

TEST(CaptureAsync, AReusableBufferIsNotHandedToACapture) {
    async_sim s(CAPACITY);
    buf       eager = alloc(s.pool, 64 * 1024);
    release(s.pool, eager); // in the reuse cache: stream-ordered memory, which no graph may keep
    ASSERT_EQ(s.capture(true), GGML_CPOOL_STATUS_OK);
    buf captured = alloc(s.pool, 64 * 1024);
    EXPECT_NE(captured.ptr, eager.ptr) << "served outside the device pool";
    release(s.pool, captured);
    ASSERT_EQ(s.capture(false), GGML_CPOOL_STATUS_OK);
    buf again = alloc(s.pool, 64 * 1024);
    EXPECT_EQ(again.ptr, eager.ptr) << "after the capture, the reuse cache serves again";
    release(s.pool, again);
}

TEST(CaptureAsync, WhatACaptureHeldBackGoesOutAtTheNextAllocationEvenAHit) {
    async_sim s(CAPACITY);
    release(s.pool, alloc(s.pool, 64 * 1024)); // cached
    buf big = alloc(s.pool, ASYNC_UNCACHED);   // too large to cache
    ASSERT_EQ(s.capture(true), GGML_CPOOL_STATUS_OK);
    release(s.pool, big); // held back: a free now would be captured
    ASSERT_EQ(s.capture(false), GGML_CPOOL_STATUS_OK);
    const uint64_t frees = s.calls(GGML_CPOOL_CALL_FREE_ASYNC);
    buf            hit   = alloc(s.pool, 64 * 1024);
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_FREE_ASYNC), frees + 1);
    release(s.pool, hit);
}

TEST(CaptureAsync, ADeclaredCaptureIsTakenAtItsWordOnTheHitPathAndCheckedWhereItMayFree) {
    async_sim s(CAPACITY);
    buf       eager = alloc(s.pool, 64 * 1024);
    release(s.pool, eager);                                                 // in the reuse cache
    ASSERT_EQ(ggml_cpool_declare_capture(s.pool, 1), GGML_CPOOL_STATUS_OK); // the driver says no capture
    buf declared = alloc(s.pool, 64 * 1024);
    EXPECT_NE(declared.ptr, eager.ptr) << "a declared capture is served outside the device pool";
    release(s.pool, declared);

    ASSERT_EQ(s.capture(true), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(ggml_cpool_declare_capture(s.pool, 0), GGML_CPOOL_STATUS_OK); // the driver says capture
    buf trusted = alloc(s.pool, 64 * 1024);
    EXPECT_EQ(trusted.ptr, eager.ptr) << "the declaration, not a query, decides the hit path";
    release(s.pool, trusted);
    const uint64_t syncs = s.calls(GGML_CPOOL_CALL_STREAM_SYNC) + s.calls(GGML_CPOOL_CALL_POOL_TRIM);
    EXPECT_EQ(ggml_cpool_trim(s.pool), GGML_CPOOL_STATUS_UNSUPPORTED) << "trim still asks the driver";
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_STREAM_SYNC) + s.calls(GGML_CPOOL_CALL_POOL_TRIM), syncs);

    ASSERT_EQ(ggml_cpool_declare_capture(s.pool, -1), GGML_CPOOL_STATUS_OK); // ask again
    buf asked = alloc(s.pool, 64 * 1024);
    EXPECT_NE(asked.ptr, eager.ptr) << "asked, the driver's capture is served outside the device pool";
    release(s.pool, asked);
    ASSERT_EQ(s.capture(false), GGML_CPOOL_STATUS_OK);
}

INSTANTIATE_TEST_SUITE_P(Sim, Capture,
                         testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM,
                                         GGML_CPOOL_KIND_ASYNC),
                         kind_name);
INSTANTIATE_TEST_SUITE_P(Sim, CachedCapture, testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN), kind_name);

} // namespace
