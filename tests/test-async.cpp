// The async kind over the driver of the executable (test-unit: sim, which models the
// stream-ordered pool; test-gpu: cuda): the first async pool on a device raises the release
// threshold (only if lower) and remembers the old value; the last one synchronizes, trims every
// device it raised and restores the old value.

#include "async-fixture.h"

#include <cmath>
#include <thread>
#include <vector>

using namespace harness;

namespace {

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
    EXPECT_EQ(stats_of(pool).driver_allocs, 1u) << "the second allocation took no new memory";
    EXPECT_EQ(stats_of(pool).misses, 2u) << "each asked the driver: a miss, though the device pool served it";
    release(pool, b);
    ggml_cpool_ctx_free(ctx); // the last handle: synchronize, trim, restore
    EXPECT_EQ(reserved(), 0u) << "trimmed on release";
    EXPECT_EQ(threshold(), 0u) << "restored on release";
}

TEST_P(Async, KeptWarmBetweenContexts) {
    ggml_cpool_ctx_t first = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    buf              a     = alloc(pool_of(first), ASYNC_UNCACHED);
    release(pool_of(first), a);
    ggml_cpool_driver_synchronize(driver_, 0);
    // a second session, while the first is alive: the memory is still there for it
    ggml_cpool_ctx_t second = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    size_t           before = reserved();
    buf              b      = alloc(pool_of(second), ASYNC_UNCACHED);
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
    ggml_cpool_ctx_t ctx  = make_ctx(fault, GGML_CPOOL_KIND_ASYNC);
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

// a thread that made no CUDA call has no current context (PyTorch's backward thread): the capture
// check still answers, so the allocation is stream-ordered, not a capture's cudaMalloc
TEST_P(Async, AThreadWithNoCurrentContextAllocatesOutsideAnyCapture) {
    ggml_cpool_ctx_t ctx = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    log_capture      log;
    std::thread([&] {
        buf a = alloc(pool_of(ctx), ASYNC_UNCACHED);
        release(pool_of(ctx), a);
    }).join();
    EXPECT_EQ(log.count("failed"), 0u);
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_MALLOC), 0u) << "served as in a capture";
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_MALLOC_ASYNC), 1u);
    ggml_cpool_ctx_free(ctx);
}

// a graph's evaluation: the same few scratch sizes, layer after layer. The headroom rule is off:
// the sim's pool hands out whole blocks (CUDA's carves them from 32 MiB chunks), so under a budget
// it would give back and take again a block for each size, with or without the reuse cache
TEST_P(Async, RepeatedSmallScratchIsHandedOutAgainWithoutDriverCalls) {
    const size_t     scratch[] = { 9 * KiB, 36 * KiB, 9 * KiB, 144 * KiB, 36 * KiB };
    ggml_cpool_ctx_t ctx       = make_ctx_with_headroom(driver_, GGML_CPOOL_KIND_ASYNC, GGML_CPOOL_HEADROOM_UNLIMITED);
    ASSERT_NE(ctx, nullptr);
    ggml_cpool_t pool  = pool_of(ctx);
    auto         layer = [&] {
        for (size_t size : scratch) {
            release(pool, alloc(pool, size));
        }
    };
    layer(); // the first layers meet each size
    layer();
    const uint64_t before = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_COUNT);
    for (int i = 0; i < 32; i++) {
        layer();
    }
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_COUNT), before) << "every pair served again";
    expect_consistent(pool);
    ggml_cpool_ctx_free(ctx);
}

// a K/V conversion buffer growing 5% a step with OVERALLOCATE: the doubled buffer serves the next
// steps from the reuse cache, as a legacy pool's does, until the growth outruns it (the headroom
// rule off, as above)
TEST_P(Async, AGrowingRequestIsServedByTheDoubledBufferItGotBefore) {
    constexpr int    STEPS = 100;
    ggml_cpool_ctx_t ctx   = make_ctx_with_headroom(driver_, GGML_CPOOL_KIND_ASYNC, GGML_CPOOL_HEADROOM_UNLIMITED);
    ASSERT_NE(ctx, nullptr);
    ggml_cpool_t pool   = pool_of(ctx);
    uint64_t     misses = 0;
    double       size   = 4 * KiB;
    for (int i = 0; i < STEPS; i++, size *= 1.05) {
        const uint64_t before = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_MALLOC_ASYNC);
        buf            kv     = alloc(pool, size_t(size), GGML_CPOOL_ALLOC_OVERALLOCATE);
        misses += ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_MALLOC_ASYNC) - before;
        release(pool, kv);
        // the step's other scratch (the sim's pool, with no room beyond its blocks, makes a miss of
        // the growing request give it back too, so it misses after each)
        release(pool, alloc(pool, 3 * KiB));
    }
    const double growth = size / (4 * KiB) / 1.05;
    EXPECT_LE(misses, uint64_t(std::log2(growth)) + 2) << "misses of a buffer grown " << growth << "x";
    ggml_cpool_ctx_free(ctx);
}

// small scratch beside a transient too large to cache: the transient's own free makes room for
// it again, so its miss must not give the cached scratch back (default headroom)
TEST_P(Async, ATransientBesideCachedScratchLeavesTheScratchCached) {
    constexpr int    LAYERS = 20;
    ggml_cpool_ctx_t ctx    = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool   = pool_of(ctx);
    auto             layer  = [&] {
        for (size_t size : { 64 * KiB, 256 * KiB, ASYNC_UNCACHED }) {
            release(pool, alloc(pool, size));
        }
    };
    layer();
    layer();
    const uint64_t before = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_MALLOC_ASYNC);
    const uint64_t reads  = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_POOL_ATTR);
    for (int i = 0; i < LAYERS; i++) {
        layer();
    }
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_MALLOC_ASYNC) - before, uint64_t(LAYERS))
        << "the transient's allocation alone, once a layer";
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_POOL_ATTR) - reads, uint64_t(LAYERS))
        << "one read of the device pool's usage a layer, after the transient's allocation";
    ggml_cpool_ctx_free(ctx);
}

// what this context last read of the device pool is stale once another context frees: a fresh
// read must decide before the cache goes back
TEST_P(Async, AnotherContextsFreeDoesNotEmptyTheReuseCache) {
    ggml_cpool_ctx_t mine = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC), other = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    buf              big = alloc(pool_of(other), ASYNC_UNCACHED);
    release(pool_of(mine), alloc(pool_of(mine), 64 * KiB)); // read with `big` in use, then cached
    release(pool_of(other), big);
    ASSERT_EQ(ggml_cpool_driver_synchronize(driver_, 0), GGML_CPOOL_STATUS_OK); // any stream may reuse it now
    const uint64_t frees = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_FREE_ASYNC);
    buf            mid   = alloc(pool_of(mine), 1 * MiB);
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_FREE_ASYNC), frees) << "the 64 KiB stayed cached";
    release(pool_of(mine), mid);
    ggml_cpool_ctx_free(other);
    ggml_cpool_ctx_free(mine);
}

TEST_P(Async, ALargeBufferGoesStraightBackToTheStreamOrderedPool) {
    ggml_cpool_ctx_t ctx   = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool  = pool_of(ctx);
    buf              big   = alloc(pool, ASYNC_UNCACHED);
    const uint64_t   frees = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_FREE_ASYNC);
    release(pool, big);
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_FREE_ASYNC), frees + 1);
    ggml_cpool_ctx_free(ctx);
}

TEST_P(Async, TheReuseCacheKeepsItsBoundsOfBuffersAndBytes) {
    ggml_cpool_ctx_t ctx  = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool = pool_of(ctx);
    std::vector<buf> held;
    for (size_t i = 0; i <= reuse_cache::MAX_BUFFERS; i++) { // distinct sizes, none serving another
        held.push_back(alloc(pool, size_t(64 + 16 * i) * KiB));
    }
    uint64_t frees = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_FREE_ASYNC);
    for (const buf & b : held) {
        release(pool, b);
    }
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_FREE_ASYNC), frees + 1) << "the oldest went";
    const uint64_t mallocs = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_MALLOC_ASYNC);
    release(pool, alloc(pool, held[0].size));
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_MALLOC_ASYNC), mallocs + 1) << "not in the cache";
    held.clear();
    for (size_t i = 0; i <= reuse_cache::MAX_BYTES / reuse_cache::MAX_BUFFER; i++) { // one more than fits
        held.push_back(alloc(pool, reuse_cache::MAX_BUFFER));
    }
    frees = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_FREE_ASYNC);
    for (const buf & b : held) {
        release(pool, b);
    }
    EXPECT_GE(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_FREE_ASYNC), frees + 1) << "MAX_BYTES kept at most";
    expect_consistent(pool);
    ggml_cpool_ctx_free(ctx);
}

TEST_P(Async, TheReuseCacheGoesBackBeforeTheDevicePoolWouldGrow) {
    ggml_cpool_ctx_t ctx  = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool = pool_of(ctx);
    release(pool, alloc(pool, 1 * MiB)); // cached, in use as far as the device pool knows
    const size_t before = reserved();
    buf          other  = alloc(pool, 800 * KiB); // too small for the cached one
    EXPECT_EQ(reserved(), before) << "the cached buffer's memory served it";
    release(pool, other);
    ggml_cpool_ctx_free(ctx);
}

TEST_P(Async, TrimGivesBackWhatTheReuseCacheHolds) {
    ggml_cpool_ctx_t ctx  = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool = pool_of(ctx);
    release(pool, alloc(pool, 256 * KiB));
    ASSERT_EQ(ggml_cpool_trim(pool), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(reserved(), 0u) << "nothing stays in use by a cache";
    ggml_cpool_ctx_free(ctx);
}

// The CUDA driver gives a cudaMalloc that finds the device full the unused memory of the
// stream-ordered pool whose frees have landed (measured on an H200), so another kind's buffers,
// and the async kind's capture cache, reach memory the warm pool holds: the sim does the same
TEST_P(Async, ACudaMallocOnAFullDeviceTakesWhatTheStreamOrderedPoolHoldsUnused) {
    constexpr size_t UNUSED = 64 * MiB;
    ggml_cpool_ctx_t async  = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    release(pool_of(async), alloc(pool_of(async), UNUSED));
    ASSERT_EQ(ggml_cpool_driver_synchronize(driver_, 0), GGML_CPOOL_STATUS_OK); // the free lands
    ASSERT_GE(reserved(), UNUSED) << "kept warm";
    ggml_cpool_ctx_t plain = make_ctx(driver_, GGML_CPOOL_KIND_PLAIN); // one cudaMalloc a buffer
    ggml_cpool_t     pool  = pool_of(plain);
    std::vector<buf> taken; // every free byte, halving down to the driver's 2 MiB page
    for (size_t block = 1024 * MiB; block >= 2 * MiB;) {
        buf b;
        if (ggml_cpool_alloc(pool, block, 0, &b.ptr, &b.size) == GGML_CPOOL_STATUS_OK) {
            taken.push_back(b);
        } else {
            block /= 2;
        }
    }
    EXPECT_LT(reserved(), UNUSED) << "the driver handed the unused memory to cudaMalloc";
    for (const buf & b : taken) {
        release(pool, b);
    }
    ggml_cpool_ctx_free(plain);
    ggml_cpool_ctx_free(async);
}

HARNESS_INSTANTIATE(Async, testing::Values(DRIVER), driver_name);

} // namespace
