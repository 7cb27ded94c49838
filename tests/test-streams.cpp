// Consumer streams on the sim driver: a context borrows the streams the consumer launches its
// kernels on, one pool per (device, slot); each pool synchronizes, checks capture and orders its
// stream-ordered calls on its slot's stream; a borrowed stream is never destroyed; destroying a
// context waits for every stream first, and what cannot be given back safely is quarantined.

#include "harness.h"

using namespace harness;

namespace {

constexpr size_t CAPACITY = 64 * MiB;

class Streams : public pool_test<testing::TestWithParam<ggml_cpool_kind>> {
  protected:
    void SetUp() override {
        open_sim(sim_params(CAPACITY));
        for (void *& s : consumer_) {
            ASSERT_EQ(ggml_cpool_driver_stream_create(drv_, 0, &s), GGML_CPOOL_STATUS_OK);
        }
    }
    void TearDown() override {
        for (void * s : consumer_) {
            EXPECT_EQ(ggml_cpool_driver_stream_destroy(drv_, 0, s), GGML_CPOOL_STATUS_OK)
                << "the consumer's stream is still the consumer's to destroy";
        }
        pool_test::TearDown();
    }
    // a context of the kind under test that borrows consumer_[0] for slot 0 from its creation
    ggml_cpool_ctx_t borrowing_ctx(ggml_cpool_driver_t drv) {
        ggml_cpool_ctx_params p = ggml_cpool_ctx_default_params();
        p.driver                = drv;
        p.kind[0]               = GetParam();
        p.streams[0][0]         = consumer_[0];
        ggml_cpool_ctx_t ctx    = nullptr;
        EXPECT_EQ(ggml_cpool_ctx_create(&p, &ctx), GGML_CPOOL_STATUS_OK);
        return ctx;
    }
    uint64_t on(int i) { return ggml_cpool_sim_stream_calls(drv_, 0, consumer_[i]); }

    void capture(int i, bool on) {
        ASSERT_EQ(ggml_cpool_sim_set_capturing(drv_, 0, consumer_[i], on), GGML_CPOOL_STATUS_OK);
    }

    ggml_cpool_driver_t & drv_         = driver_; // the sim one
    void *                consumer_[2] = {};
};

TEST_P(Streams, ThePoolWatchesTheBorrowedStreamForCapture) {
    ggml_cpool_ctx_t ctx  = borrowing_ctx(drv_);
    ggml_cpool_t     pool = pool_of(ctx);
    void *           s    = nullptr;
    ASSERT_EQ(ggml_cpool_ctx_stream(ctx, 0, &s), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(s, consumer_[0]);
    buf a = alloc(pool, 2 * MiB);
    release(pool, a);
    capture(0, true);
    EXPECT_EQ(ggml_cpool_trim(pool), GGML_CPOOL_STATUS_UNSUPPORTED) << "the consumer is capturing on its stream";
    capture(0, false);
    EXPECT_EQ(ggml_cpool_trim(pool), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_free(ctx);
}

TEST_P(Streams, SetLaterTheStreamIsWhereThePoolSynchronizes) {
    ggml_cpool_ctx_t ctx = make_ctx(drv_, GetParam());
    ASSERT_EQ(ggml_cpool_ctx_set_stream(ctx, 0, 0, consumer_[0]), GGML_CPOOL_STATUS_OK);
    ggml_cpool_t pool   = pool_of(ctx);
    uint64_t     before = on(0);
    buf          a      = alloc(pool, 2 * MiB);
    release(pool, a);
    ASSERT_EQ(ggml_cpool_trim(pool), GGML_CPOOL_STATUS_OK); // waits for the kernels before memory goes back
    if (GetParam() == GGML_CPOOL_KIND_ASYNC) {
        EXPECT_GE(on(0), before + 3) << "malloc_async, free_async and the synchronize, all on the consumer's stream";
    }
    const uint64_t streams = ggml_cpool_driver_calls(drv_, GGML_CPOOL_CALL_STREAM);
    before                 = on(0);
    ggml_cpool_ctx_free(ctx);
    EXPECT_GT(on(0), before) << "destroying the context waited for the borrowed stream";
    EXPECT_EQ(ggml_cpool_driver_calls(drv_, GGML_CPOOL_CALL_STREAM), streams) << "and never destroyed it";
}

TEST_P(Streams, EachSlotHasItsOwnPoolOnItsOwnStream) {
    ggml_cpool_ctx_t ctx = make_ctx(drv_, GetParam());
    ASSERT_EQ(ggml_cpool_ctx_set_stream(ctx, 0, 1, consumer_[1]), GGML_CPOOL_STATUS_OK);
    ggml_cpool_t zero = pool_of(ctx), one = nullptr;
    ASSERT_EQ(ggml_cpool_ctx_get_slot_pool(ctx, 0, 1, &one), GGML_CPOOL_STATUS_OK);
    ASSERT_NE(zero, one);
    buf a = alloc(zero, 3 * MiB);
    release(zero, a); // cached in slot 0's pool, its kernels queued on slot 0's stream
    const uint64_t before = on(1);
    buf            b      = alloc(one, 3 * MiB);
    EXPECT_NE(b.ptr, a.ptr) << "slot 1 is never handed what slot 0 freed without a synchronize";
    if (GetParam() == GGML_CPOOL_KIND_ASYNC) {
        EXPECT_GT(on(1), before) << "slot 1's allocation is ordered on slot 1's stream";
    }
    release(one, b);
    ggml_cpool_ctx_free(ctx);
}

TEST_P(Streams, SwitchingStreamsWaitsForThePreviousOne) {
    ggml_cpool_ctx_t ctx  = borrowing_ctx(drv_);
    ggml_cpool_t     pool = pool_of(ctx);
    buf              a    = alloc(pool, 2 * MiB);
    release(pool, a);
    capture(0, true);
    EXPECT_EQ(ggml_cpool_ctx_set_stream(ctx, 0, 0, consumer_[1]), GGML_CPOOL_STATUS_UNSUPPORTED)
        << "no synchronize while the old stream captures";
    capture(0, false);
    const uint64_t before = on(0);
    ASSERT_EQ(ggml_cpool_ctx_set_stream(ctx, 0, 0, consumer_[1]), GGML_CPOOL_STATUS_OK);
    EXPECT_GT(on(0), before) << "the old stream was synchronized before the pool moved";
    capture(1, true);
    EXPECT_EQ(ggml_cpool_trim(pool), GGML_CPOOL_STATUS_UNSUPPORTED) << "the pool now watches the new stream";
    capture(1, false);
    ASSERT_EQ(ggml_cpool_ctx_set_stream(ctx, 0, 0, nullptr), GGML_CPOOL_STATUS_OK); // back to a stream of its own
    void * own = nullptr;
    ASSERT_EQ(ggml_cpool_ctx_stream(ctx, 0, &own), GGML_CPOOL_STATUS_OK);
    EXPECT_NE(own, consumer_[0]);
    EXPECT_NE(own, consumer_[1]);
    ggml_cpool_ctx_free(ctx);
}

TEST_P(Streams, AStreamThatCannotBeSynchronizedAtDestructionQuarantinesThePool) {
    ggml_cpool_driver_t fault = nullptr;
    ASSERT_EQ(ggml_cpool_driver_fault_create(drv_, "", &fault), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx  = borrowing_ctx(fault);
    ggml_cpool_t     pool = pool_of(ctx);
    buf              a    = alloc(pool, ASYNC_UNCACHED);
    release(pool, a);
    const size_t held = GetParam() == GGML_CPOOL_KIND_ASYNC ? 0 : stats_of(pool).reserved_bytes;
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault, "fail=stream_sync:1+"), GGML_CPOOL_STATUS_OK);
    log_capture log;
    ggml_cpool_ctx_free(ctx); // kernels may still run on its memory: nothing is freed
    EXPECT_EQ(log.count("could not be synchronized.*kept in quarantine"), 1u);
    size_t bytes = 0, pools = 0;
    ggml_cpool_quarantine_stats(&bytes, &pools);
    EXPECT_EQ(pools, 1u);
    EXPECT_EQ(bytes, held); // the async kind's freed block is the device pool's, not the context's
    EXPECT_GT(ggml_cpool_driver_outstanding(drv_), 0u);
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault, ""), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(ggml_cpool_quarantine_release(), GGML_CPOOL_STATUS_OK);
    ggml_cpool_quarantine_stats(&bytes, &pools);
    EXPECT_EQ(pools, 0u);
    ggml_cpool_driver_release(fault);
    ggml_cpool_driver_synchronize(drv_, 0);
    if (GetParam() == GGML_CPOOL_KIND_ASYNC) { // the warm record trimmed the device pool with the last async pool
        EXPECT_EQ(ggml_cpool_driver_used(drv_, 0), 0u);
    }
}

TEST_P(Streams, APoolIsNotCreatedWithoutItsStream) {
    ggml_cpool_driver_t fault = nullptr;
    ASSERT_EQ(ggml_cpool_driver_fault_create(drv_, "fail=stream:1", &fault), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx  = make_ctx(fault, GetParam());
    ggml_cpool_t     pool = nullptr;
    EXPECT_EQ(ggml_cpool_ctx_get_pool(ctx, 0, &pool), GGML_CPOOL_STATUS_DRIVER_ERROR);
    EXPECT_EQ(pool, nullptr);
    ASSERT_EQ(ggml_cpool_ctx_get_pool(ctx, 0, &pool), GGML_CPOOL_STATUS_OK) << "a retry creates both";
    void * s = nullptr;
    ASSERT_EQ(ggml_cpool_ctx_stream(ctx, 0, &s), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(ggml_cpool_sim_set_capturing(drv_, 0, s, 1), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(ggml_cpool_trim(pool), GGML_CPOOL_STATUS_UNSUPPORTED) << "the pool watches the stream made for it";
    ASSERT_EQ(ggml_cpool_sim_set_capturing(drv_, 0, s, 0), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_free(ctx);
    ggml_cpool_driver_release(fault);
}

TEST_P(Streams, BadSlotsAndStreamsAreRefused) {
    ggml_cpool_ctx_t ctx  = make_ctx(drv_, GetParam());
    ggml_cpool_t     pool = nullptr;
    log_capture      log;
    EXPECT_EQ(ggml_cpool_ctx_get_slot_pool(ctx, 0, GGML_CPOOL_MAX_STREAMS, &pool), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_ctx_get_slot_pool(ctx, 0, -1, &pool), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_ctx_set_stream(ctx, 1, 0, consumer_[0]), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_ctx_set_stream(nullptr, 0, 0, consumer_[0]), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(log.lines(GGML_CPOOL_LOG_ERROR).size(), 4u) << "one line each";
    ggml_cpool_ctx_free(ctx);

    ggml_cpool_ctx_params p = ggml_cpool_ctx_default_params();
    p.driver                = drv_;
    p.streams[1][0]         = consumer_[0]; // the sim device has one device
    ggml_cpool_ctx_t bad    = nullptr;
    EXPECT_EQ(ggml_cpool_ctx_create(&p, &bad), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(bad, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Sim, Streams,
                         testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM,
                                         GGML_CPOOL_KIND_ASYNC),
                         kind_name);

// the async kind under capture: a stream-ordered allocation there would be a memory node of the
// graph, which cudaGraphExecUpdate refuses to update; the capture is served from buffers the pool
// holds outside any graph instead
TEST(StreamsAsync, ACaptureIsServedOutsideTheGraph) {
    async_sim    s(CAPACITY);
    ggml_cpool_t pool     = s.pool;
    buf          before   = alloc(pool, 1 * MiB); // allocated outside the capture, from the device pool
    size_t       reserved = 0, used = 0;
    ASSERT_EQ(ggml_cpool_driver_pool_usage(s.device.drv, 0, &reserved, &used), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(s.capture(true), GGML_CPOOL_STATUS_OK);
    const uint64_t async_allocs = s.calls(GGML_CPOOL_CALL_MALLOC_ASYNC);
    const uint64_t async_frees  = s.calls(GGML_CPOOL_CALL_FREE_ASYNC);
    const uint64_t mallocs = s.calls(GGML_CPOOL_CALL_MALLOC), frees = s.calls(GGML_CPOOL_CALL_FREE);
    buf            g = alloc(pool, 4 * MiB);
    EXPECT_TRUE(fill_and_check(drv::sim, g.ptr, g.size, 0x3d));
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_MALLOC_ASYNC), async_allocs) << "no memory node in the graph";
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_MALLOC), mallocs + 1) << "a buffer of the pool's own, outside the graph";
    size_t reserved_now = 0;
    ASSERT_EQ(ggml_cpool_driver_pool_usage(s.device.drv, 0, &reserved_now, &used), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(reserved_now, reserved) << "not the device pool's memory";
    ggml_cpool_ctx_t other  = make_ctx(s.device.drv, GGML_CPOOL_KIND_ASYNC);
    buf              theirs = alloc(pool_of(other), 4 * MiB);
    EXPECT_NE(theirs.ptr, g.ptr) << "another session is never handed a graph's memory";
    release(pool, g);
    buf again = alloc(pool, 3 * MiB); // later in the same capture: the stream's order makes reuse safe
    EXPECT_EQ(again.ptr, g.ptr) << "the capture cache serves the next allocation of the capture";
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_MALLOC), mallocs + 1);
    release(pool, again);
    release(pool, before);
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_FREE_ASYNC), async_frees) << "nothing is freed into the capture";
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_FREE), frees) << "the graph keeps using its buffer";
    expect_consistent(pool);
    ASSERT_EQ(s.capture(false), GGML_CPOOL_STATUS_OK);
    const uint64_t async_now = s.calls(GGML_CPOOL_CALL_MALLOC_ASYNC);
    buf            eager     = alloc(pool, 2 * MiB); // outside a capture: the device pool, as before
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_MALLOC_ASYNC), async_now + 1);
    EXPECT_NE(eager.ptr, g.ptr) << "the capture's buffers stay the graphs'";
    release(pool, eager);
    const uint64_t generation = ggml_cpool_generation(pool);
    ASSERT_EQ(ggml_cpool_trim(pool), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_FREE), frees + 1) << "trim gives the capture cache back";
    EXPECT_GT(s.calls(GGML_CPOOL_CALL_FREE_ASYNC), async_frees) << "and the held free goes out after the capture";
    EXPECT_GT(ggml_cpool_generation(pool), generation) << "the graphs that used it are captured again";
    expect_consistent(pool);
    release(pool_of(other), theirs);
    ggml_cpool_ctx_free(other);
}

TEST(StreamsAsync, TheCaptureCacheServesTheNextCaptureAndGoesWithTheContext) {
    async_sim s(CAPACITY); // at its end, the device checks that nothing is left
    ASSERT_EQ(s.capture(true), GGML_CPOOL_STATUS_OK);
    buf g = alloc(s.pool, 2 * MiB);
    ASSERT_EQ(s.capture(false), GGML_CPOOL_STATUS_OK);
    const uint64_t frees = s.calls(GGML_CPOOL_CALL_FREE) + s.calls(GGML_CPOOL_CALL_FREE_ASYNC);
    release(s.pool, g); // freed after its capture: kept for the graph and the next capture
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_FREE) + s.calls(GGML_CPOOL_CALL_FREE_ASYNC), frees);
    EXPECT_EQ(stats_of(s.pool).cached_bytes, g.size);
    ASSERT_EQ(s.capture(true), GGML_CPOOL_STATUS_OK);
    const uint64_t hits = stats_of(s.pool).hits;
    buf            h    = alloc(s.pool, 2 * MiB);
    EXPECT_EQ(h.ptr, g.ptr);
    EXPECT_EQ(stats_of(s.pool).hits, hits + 1);
    release(s.pool, h);
    ASSERT_EQ(s.capture(false), GGML_CPOOL_STATUS_OK);
    expect_consistent(s.pool);
}

// the device pool is every context's: another context can make it grow while this one gives its
// capture cache back, so the reserved figure need not fall; the graphs must be captured again
TEST(StreamsAsync, GivingTheCaptureCacheBackMovesTheGenerationWhileTheDevicePoolGrows) {
    async_sim s(CAPACITY);
    ASSERT_EQ(s.capture(true), GGML_CPOOL_STATUS_OK);
    buf g = alloc(s.pool, 2 * MiB);
    release(s.pool, g); // kept for the graph that captured it
    ASSERT_EQ(s.capture(false), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t other  = make_ctx(s.device.drv, GGML_CPOOL_KIND_ASYNC);
    buf              theirs = alloc(pool_of(other), 8 * MiB); // the device pool grows by more than g
    const uint64_t   frees  = s.calls(GGML_CPOOL_CALL_FREE);
    const uint64_t   before = ggml_cpool_generation(s.pool);
    ASSERT_EQ(ggml_cpool_trim(s.pool), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(s.calls(GGML_CPOOL_CALL_FREE), frees + 1) << "trim gives the capture cache back";
    EXPECT_GT(ggml_cpool_generation(s.pool), before) << "the graph's buffer is gone: it must be captured again";
    expect_consistent(s.pool);
    release(pool_of(other), theirs);
    ggml_cpool_ctx_free(other);
}

TEST(StreamsLog, TheLastErrorIsTheThreadsLastWarningOrErrorLine) {
    sim_device       device(sim_params(CAPACITY));
    ggml_cpool_ctx_t ctx  = make_ctx(device.drv, GGML_CPOOL_KIND_LEGACY);
    ggml_cpool_t     pool = pool_of(ctx);
    void *           p    = nullptr;
    size_t           got  = 0;
    log_capture      log;
    EXPECT_EQ(ggml_cpool_alloc(pool, 2 * CAPACITY, 0, &p, &got), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    ASSERT_FALSE(log.lines(GGML_CPOOL_LOG_WARN).empty());
    EXPECT_EQ(std::string(ggml_cpool_last_error()), log.lines(GGML_CPOOL_LOG_WARN).back());
    ggml_cpool_ctx_free(ctx);
}

TEST(StreamsLog, TheThresholdIsTheEnvironmentsLevel) {
    {
        scoped_env level("GGML_CUDA_POOL_LOG", nullptr);
        EXPECT_EQ(ggml_cpool_log_threshold(), GGML_CPOOL_LOG_WARN);
    }
    scoped_env level("GGML_CUDA_POOL_LOG", "debug");
    EXPECT_EQ(ggml_cpool_log_threshold(), GGML_CPOOL_LOG_DEBUG);
}

} // namespace
