// What a miss takes when the device cannot give what it asks for: a growing request's doubling
// (OVERALLOCATE, or up to its limit) and a request's 5% look-ahead give way before the request
// fails, so a request that fits at its own size is served. Every kind, on the sim driver, whose
// capacity decides what fits; each case returned OUT_OF_MEMORY before the fallback.

#include "harness.h"

using namespace harness;

namespace {

constexpr size_t ROUNDING = 256; // the legacy kinds' rounding of a miss

size_t round_up(size_t x, size_t a) {
    return (x + a - 1) / a * a;
}

bool legacy_kind(ggml_cpool_kind kind) {
    return kind == GGML_CPOOL_KIND_LEGACY || kind == GGML_CPOOL_KIND_PLAIN;
}

// a growing request of SIZE fits on a device of CAPACITY at its own size (and with the legacy
// kinds' look-ahead), not at twice it nor at LIMIT
constexpr size_t CAPACITY = 40 * MiB;
constexpr size_t SIZE     = 24 * MiB;
constexpr size_t LIMIT    = 44 * MiB;

class Fallback : public pool_test<testing::TestWithParam<ggml_cpool_kind>> {
  protected:
    void SetUp() override {
        open_sim(sim_params(CAPACITY));
        open_ctx(GetParam());
    }

    // the request is served, below what a miss asks for, in memory that works
    void expect_own_size(ggml_cpool_status st, void * p, size_t actual, size_t asked) {
        ASSERT_EQ(st, GGML_CPOOL_STATUS_OK) << "fits at its own size";
        EXPECT_GE(actual, SIZE);
        EXPECT_LT(actual, asked);
        if (legacy_kind(GetParam())) {
            EXPECT_EQ(actual, round_up(SIZE + SIZE / 20, ROUNDING)) << "its own size with the look-ahead";
        }
        EXPECT_TRUE(fill_and_check(drv::sim, p, actual, 0x3c));
        EXPECT_EQ(stats_of(pool_).oom_returned, 0u);
        EXPECT_EQ(ggml_cpool_free(pool_, p, actual), GGML_CPOOL_STATUS_OK);
        expect_consistent(pool_);
    }
};

TEST_P(Fallback, AGrowingRequestThatFitsOnlyAtItsOwnSizeIsServed) {
    log_capture       log;
    void *            p      = nullptr;
    size_t            actual = 0;
    ggml_cpool_status st     = ggml_cpool_alloc(pool_, SIZE, GGML_CPOOL_ALLOC_OVERALLOCATE, &p, &actual);
    expect_own_size(st, p, actual, 2 * SIZE);
    EXPECT_EQ(log.count("alloc of 48\\.00 MiB failed; took \\d+\\.\\d\\d MiB instead, for a request of 24\\.00 MiB"),
              1u);
    EXPECT_TRUE(log.lines(GGML_CPOOL_LOG_WARN).empty()) << "a request served is no warning";
}

TEST_P(Fallback, AGrowingRequestThatFitsOnlyBelowItsLimitIsServed) {
    void *            p      = nullptr;
    size_t            actual = 0;
    ggml_cpool_status st     = ggml_cpool_alloc_growing(pool_, SIZE, LIMIT, &p, &actual);
    expect_own_size(st, p, actual, LIMIT);
}

// no synchronize and no free is legal while the stream captures, so nothing can make room for
// the doubling: the request takes its own size at once
TEST_P(Fallback, DuringACaptureAGrowingRequestTakesItsOwnSize) {
    void * stream = nullptr;
    ASSERT_EQ(ggml_cpool_ctx_stream(ctx_, 0, &stream), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(ggml_cpool_sim_set_capturing(driver_, 0, stream, 1), GGML_CPOOL_STATUS_OK);
    const uint64_t    syncs  = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_STREAM_SYNC);
    void *            p      = nullptr;
    size_t            actual = 0;
    ggml_cpool_status st     = ggml_cpool_alloc(pool_, SIZE, GGML_CPOOL_ALLOC_OVERALLOCATE, &p, &actual);
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_STREAM_SYNC), syncs) << "nothing illegal in a capture";
    ASSERT_EQ(ggml_cpool_sim_set_capturing(driver_, 0, stream, 0), GGML_CPOOL_STATUS_OK);
    expect_own_size(st, p, actual, 2 * SIZE);
}

// the negative control: what does not fit even at its own size still returns OUT_OF_MEMORY,
// with one line, and leaves the pool usable
TEST_P(Fallback, ARequestTooLargeEvenAtItsOwnSizeStillFails) {
    log_capture log;
    void *      p      = nullptr;
    size_t      actual = 0;
    EXPECT_EQ(ggml_cpool_alloc(pool_, CAPACITY + MiB, GGML_CPOOL_ALLOC_OVERALLOCATE, &p, &actual),
              GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(log.lines(GGML_CPOOL_LOG_WARN).size(), 1u) << "one line for the failed allocation";
    buf b = alloc(pool_, SIZE);
    release(pool_, b);
}

INSTANTIATE_TEST_SUITE_P(Kinds, Fallback,
                         testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM,
                                         GGML_CPOOL_KIND_ASYNC),
                         kind_name);

// The legacy kinds: the look-ahead gives way too, and the order says what each is worth. A
// doubling or a look-ahead that fits once the cache went back is taken after the recovery (the
// misses it spares cost more than the reclaim); only a request that no recovery could serve at
// the size a miss asks for takes less.
class LegacyFallback : public pool_test<testing::TestWithParam<ggml_cpool_kind>> {
  protected:
    void open(size_t capacity) {
        open_sim(sim_params(capacity));
        open_ctx(GetParam());
    }
    // one buffer of `size` cached
    void     cache(size_t size) { release(pool_, alloc(pool_, size)); }
    // the recoveries so far: an LRU reclaim (legacy) or a flush (plain)
    uint64_t recoveries() {
        ggml_cpool_stats s = stats_of(pool_);
        return s.lru_reclaims + s.flushes;
    }
};

TEST_P(LegacyFallback, ARequestThatFitsOnlyWithoutItsLookAheadIsServed) {
    constexpr size_t R = 39 * MiB; // 40.95 MiB with the look-ahead
    open(40 * MiB);
    buf b = alloc(pool_, R);
    EXPECT_EQ(b.size, R) << "exactly the request";
    EXPECT_TRUE(fill_and_check(drv::sim, b.ptr, b.size, 0x5e));
    release(pool_, b);
}

TEST_P(LegacyFallback, TheLookAheadIsWorthAReclaim) {
    constexpr size_t R = 39 * MiB;
    open(41 * MiB);
    cache(MiB); // 1.05 MiB: with it cached, only the request without its look-ahead fits
    buf b = alloc(pool_, R);
    EXPECT_EQ(b.size, round_up(R + R / 20, ROUNDING)) << "the look-ahead, once the cached buffer went back";
    EXPECT_EQ(recoveries(), 1u);
    release(pool_, b);
}

TEST_P(LegacyFallback, TheDoublingIsWorthAReclaim) {
    constexpr size_t G = 18 * MiB;
    open(CAPACITY);
    cache(8 * MiB); // 8.4 MiB cached: the doubling of G fits only once it went back
    buf b = alloc(pool_, G, GGML_CPOOL_ALLOC_OVERALLOCATE);
    EXPECT_EQ(b.size, 2 * G) << "twice the request, after the recovery";
    EXPECT_EQ(recoveries(), 1u);
    release(pool_, b);
}

INSTANTIATE_TEST_SUITE_P(Kinds, LegacyFallback, testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN),
                         kind_name);

} // namespace
