// Rules every pool kind keeps, written once and run for each kind over the sim driver and
// again over the cuda driver (skipped with the reason where no GPU is visible).

#include "harness.h"

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

using namespace harness;

namespace {

constexpr size_t SIM_CAPACITY = 1024 * MiB;

class PoolRules : public pool_test<testing::TestWithParam<driver_kind>> {
  protected:
    void SetUp() override {
        which_ = std::get<0>(GetParam());
        kind_  = std::get<1>(GetParam());
        if (!open_driver(which_, sim_params(SIM_CAPACITY))) {
            return;
        }
        open_ctx(kind_);
        ASSERT_NE(pool_, nullptr);
        ASSERT_EQ(ggml_cpool_get_kind(pool_), kind_);
    }

    drv             which_ = drv::sim;
    ggml_cpool_kind kind_  = GGML_CPOOL_KIND_LEGACY;
};

TEST_P(PoolRules, ActualCoversRequestAndMemoryIsUsable) {
    for (size_t size : { size_t(1), size_t(255), size_t(256), size_t(4097), MiB + 3, 10 * MiB }) {
        buf b = alloc(pool_, size);
        EXPECT_GE(b.size, size);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(b.ptr) % 128, 0u) << "every buffer is at least 128-byte aligned";
        EXPECT_TRUE(fill_and_check(which_, b.ptr, size, 0x5a));
        release(pool_, b);
        expect_consistent(pool_);
    }
}

TEST_P(PoolRules, FreedBufferIsServedAgainWithoutTheDriver) {
    buf a = alloc(pool_, 3 * MiB);
    release(pool_, a);
    ggml_cpool_stats before = stats_of(pool_);
    EXPECT_GT(before.cached_bytes, 0u) << "the freed buffer is retained";
    buf              b     = alloc(pool_, 3 * MiB);
    ggml_cpool_stats after = stats_of(pool_);
    EXPECT_EQ(b.ptr, a.ptr);
    EXPECT_EQ(after.hits, before.hits + 1);
    EXPECT_EQ(after.driver_allocs, before.driver_allocs);
    EXPECT_EQ(after.generation, before.generation);
    release(pool_, b);
}

TEST_P(PoolRules, LivePlusCachedIsReservedAtEveryStep) {
    std::vector<buf> held;
    for (size_t i = 1; i <= 12; i++) {
        held.push_back(alloc(pool_, i * 300 * 1024));
        expect_consistent(pool_);
        if (i % 3 == 0) {
            release(pool_, held[i / 2]);
            held[i / 2] = alloc(pool_, i * 100 * 1024);
            expect_consistent(pool_);
        }
    }
    for (auto & b : held) {
        release(pool_, b);
        expect_consistent(pool_);
    }
    ggml_cpool_stats s = stats_of(pool_);
    EXPECT_EQ(s.live_bytes, 0u);
    EXPECT_EQ(s.cached_bytes, s.reserved_bytes);
}

TEST_P(PoolRules, OverallocateGivesTwiceTheRequest) {
    buf b = alloc(pool_, 5 * MiB + 7, GGML_CPOOL_ALLOC_OVERALLOCATE);
    EXPECT_GE(b.size, 2 * (5 * MiB + 7));
    EXPECT_TRUE(fill_and_check(which_, b.ptr, b.size, 0x11)) << "the headroom is usable too";
    release(pool_, b);
}

TEST_P(PoolRules, AGrowingRequestTakesNoMoreThanItsLimit) {
    constexpr size_t SIZE = 5 * MiB, LIMIT = 7 * MiB;
    void *           p      = nullptr;
    size_t           actual = 0;
    ASSERT_EQ(ggml_cpool_alloc_growing(pool_, SIZE, LIMIT, &p, &actual), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(actual, LIMIT) << "twice the request would pass what the buffer can ever need";
    EXPECT_TRUE(fill_and_check(which_, p, actual, 0x12));
    EXPECT_EQ(ggml_cpool_free(pool_, p, actual), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK); // the next request misses
    ASSERT_EQ(ggml_cpool_alloc_growing(pool_, SIZE, SIZE / 2, &p, &actual), GGML_CPOOL_STATUS_OK);
    EXPECT_GE(actual, SIZE) << "a limit below the request still gives the request";
    EXPECT_LT(actual, 2 * SIZE);
    EXPECT_EQ(ggml_cpool_free(pool_, p, actual), GGML_CPOOL_STATUS_OK);
}

TEST_P(PoolRules, StatsCountAllocsHitsAndMisses) {
    buf a = alloc(pool_, 1 * MiB);
    buf b = alloc(pool_, 1 * MiB);
    release(pool_, a);
    buf              c = alloc(pool_, 1 * MiB); // a hit on either pool kind
    ggml_cpool_stats s = stats_of(pool_);
    EXPECT_EQ(s.allocs, 3u);
    EXPECT_EQ(s.hits + s.misses, 3u);
    EXPECT_GE(s.hits, 1u);
    EXPECT_EQ(s.live_bytes, b.size + c.size);
    EXPECT_EQ(s.peak_live_bytes, a.size + b.size);
    release(pool_, b);
    release(pool_, c);
}

TEST_P(PoolRules, TwoContextsNeverShareAPointer) {
    ggml_cpool_ctx_t other      = make_ctx(driver_, kind_);
    ggml_cpool_t     other_pool = pool_of(other);
    buf              mine       = alloc(pool_, 2 * MiB);
    release(pool_, mine); // cached in this context
    buf theirs = alloc(other_pool, 2 * MiB);
    EXPECT_NE(theirs.ptr, mine.ptr) << "memory freed by one context was handed to another";
    EXPECT_EQ(stats_of(other_pool).hits, 0u);
    if (kind_ != GGML_CPOOL_KIND_ASYNC) { // the async kind's cache is the device's, shared by design
        EXPECT_EQ(stats_of(pool_).cached_bytes, mine.size) << "the other context's allocation did not touch this cache";
    }
    // a free into the wrong context is refused and changes nothing
    {
        log_capture log;
        EXPECT_EQ(ggml_cpool_free(pool_, theirs.ptr, theirs.size), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
        EXPECT_EQ(log.count("not a live buffer of this pool"), 1u);
    }
    release(other_pool, theirs);
    ggml_cpool_ctx_free(other);
}

// pools that own their cache (legacy, plain, vmm): the async kind shares the device's pool with
// every other async context by design, so what it frees outlives the context (test-async.cpp)
class OwnedPoolRules : public PoolRules {};

TEST_P(OwnedPoolRules, DestroyReleasesLiveAndCachedMemory) {
    ggml_cpool_ctx_t ctx  = make_ctx(driver_, kind_);
    ggml_cpool_t     pool = pool_of(ctx);
    size_t           base = ggml_cpool_driver_outstanding(driver_);
    buf              a    = alloc(pool, 1 * MiB);
    buf              b    = alloc(pool, 4 * MiB);
    alloc(pool, 2 * MiB); // left live on purpose, two sizes: released one by one as the record names them
    alloc(pool, 3 * MiB);
    release(pool, a);
    release(pool, b);
    EXPECT_GT(ggml_cpool_driver_outstanding(driver_), base);
    log_capture log;
    ggml_cpool_ctx_free(ctx);
    EXPECT_EQ(ggml_cpool_driver_outstanding(driver_), base);
    EXPECT_EQ(log.count("destroyed with 2 live buffers"), 1u);
}

TEST_P(PoolRules, TrimReturnsCachedMemoryAndMovesTheGeneration) {
    buf keep = alloc(pool_, 1 * MiB);
    buf drop = alloc(pool_, 64 * MiB); // larger than the chunks a stream-ordered pool maps at once
    release(pool_, drop);
    ggml_cpool_stats before = stats_of(pool_);
    ASSERT_GT(before.cached_bytes, 0u);
    EXPECT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK);
    ggml_cpool_stats after = stats_of(pool_);
    EXPECT_GT(after.generation, before.generation);
    EXPECT_EQ(ggml_cpool_generation(pool_), after.generation);
    EXPECT_LT(after.reserved_bytes, before.reserved_bytes);
    EXPECT_GE(after.reserved_bytes, keep.size) << "live memory stays";
    EXPECT_TRUE(fill_and_check(which_, keep.ptr, keep.size, 0x33));
    release(pool_, keep);
    EXPECT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(stats_of(pool_).reserved_bytes, 0u);
}

TEST_P(PoolRules, SteadyStateNeverCallsTheDriver) {
    // one decode step's scratch pattern, repeated: after the first step everything is a hit
    const size_t sizes[] = { 4 * MiB, 512 * 1024, 16 * MiB, 64 * 1024, 2 * MiB };
    auto         step    = [&] {
        std::vector<buf> bufs;
        for (size_t s : sizes) {
            bufs.push_back(alloc(pool_, s));
        }
        for (auto it = bufs.rbegin(); it != bufs.rend(); ++it) {
            release(pool_, *it);
        }
    };
    step();
    ggml_cpool_stats warm = stats_of(pool_);
    for (int i = 0; i < 50; i++) {
        step();
    }
    ggml_cpool_stats s = stats_of(pool_);
    EXPECT_EQ(s.driver_allocs, warm.driver_allocs);
    EXPECT_EQ(s.driver_frees, warm.driver_frees);
    EXPECT_EQ(s.generation, warm.generation);
    EXPECT_EQ(s.hits - warm.hits, 50u * 5);
}

TEST_P(PoolRules, BadFreesAreRefusedAndChangeNothing) {
    buf              a      = alloc(pool_, 1 * MiB);
    ggml_cpool_stats before = stats_of(pool_);
    int              local  = 0;
    log_capture      log;
    EXPECT_EQ(ggml_cpool_free(pool_, a.ptr, a.size + 256), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_free(pool_, &local, 4), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_free(pool_, nullptr, 0), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_free(pool_, static_cast<char *>(a.ptr) + 128, a.size - 128),
              GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    ggml_cpool_stats after = stats_of(pool_);
    EXPECT_EQ(after.live_bytes, before.live_bytes);
    EXPECT_EQ(after.cached_bytes, before.cached_bytes);
    release(pool_, a);
    EXPECT_EQ(ggml_cpool_free(pool_, a.ptr, a.size), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << "double free";
    EXPECT_EQ(log.lines(GGML_CPOOL_LOG_ERROR).size(), 5u) << "one line per refused call";
}

TEST_P(PoolRules, BadRequestsAreRefused) {
    log_capture log;
    void *      p      = nullptr;
    size_t      actual = 0;
    EXPECT_EQ(ggml_cpool_alloc(pool_, 0, 0, &p, &actual), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_alloc(pool_, 16, 0, nullptr, &actual), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_alloc(pool_, 16, 0x80, &p, &actual), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_alloc(pool_, SIZE_MAX, 0, &p, &actual), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(ggml_cpool_alloc(pool_, SIZE_MAX / 2, GGML_CPOOL_ALLOC_OVERALLOCATE, &p, &actual),
              GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(log.lines(GGML_CPOOL_LOG_ERROR).size(), 5u);
    EXPECT_EQ(stats_of(pool_).live_bytes, 0u);
    buf b = alloc(pool_, 1 * MiB); // still serves
    release(pool_, b);
}

TEST_P(PoolRules, OutOfOrderFreesKeepBuffersApart) {
    buf a = alloc(pool_, 1 * MiB);
    buf b = alloc(pool_, 2 * MiB);
    buf c = alloc(pool_, 1 * MiB);
    release(pool_, a); // not the most recent: out of order for a stack
    buf  d       = alloc(pool_, 512 * 1024);
    auto overlap = [](const buf & x, const buf & y) {
        auto xs = reinterpret_cast<uintptr_t>(x.ptr), ys = reinterpret_cast<uintptr_t>(y.ptr);
        return xs < ys + y.size && ys < xs + x.size;
    };
    EXPECT_FALSE(overlap(d, b));
    EXPECT_FALSE(overlap(d, c));
    release(pool_, c);
    release(pool_, b);
    release(pool_, d);
    expect_consistent(pool_);
    EXPECT_EQ(stats_of(pool_).live_bytes, 0u);
}

TEST_P(PoolRules, RandomOperationsKeepEveryInvariant) {
    // scratch-like traffic: frees mostly among the most recent buffers, as a graph releases them
    constexpr size_t         RECENT = 8;
    std::mt19937             rng(1234);
    std::vector<buf>         order; // allocation order
    std::map<uintptr_t, buf> live;  // by address: the neighbours tell an overlap
    const int                steps = which_ == drv::sim ? 3000 : 600;
    for (int i = 0; i < steps; i++) {
        if (std::uniform_int_distribution<>(0, 1)(rng) == 0 || order.empty()) {
            size_t size = size_t(1) << std::uniform_int_distribution<>(8, 22)(rng);
            size += std::uniform_int_distribution<size_t>(0, size)(rng);
            buf b = alloc(pool_, size);
            ASSERT_GE(b.size, size);
            auto addr = reinterpret_cast<uintptr_t>(b.ptr);
            auto next = live.lower_bound(addr);
            ASSERT_TRUE(next == live.end() || addr + b.size <= next->first) << "overlaps the next live buffer";
            ASSERT_TRUE(next == live.begin() || std::prev(next)->first + std::prev(next)->second.size <= addr)
                << "overlaps the previous live buffer";
            live[addr] = b;
            order.push_back(b);
        } else {
            size_t back = std::uniform_int_distribution<size_t>(0, std::min(order.size(), RECENT) - 1)(rng);
            auto   it   = order.end() - 1 - std::ptrdiff_t(back);
            release(pool_, *it);
            live.erase(reinterpret_cast<uintptr_t>(it->ptr));
            order.erase(it);
        }
        size_t shadow = 0;
        for (auto & kv : live) {
            shadow += kv.second.size;
        }
        ggml_cpool_stats s = stats_of(pool_);
        ASSERT_EQ(s.live_bytes, shadow);
        ASSERT_EQ(s.live_bytes + s.cached_bytes, s.reserved_bytes);
    }
    for (auto & b : order) {
        release(pool_, b);
    }
}

const auto OWNED = testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM);
const auto ALL =
    testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM, GGML_CPOOL_KIND_ASYNC);

HARNESS_INSTANTIATE(PoolRules, testing::Combine(testing::Values(DRIVER), ALL), driver_kind_name);
HARNESS_INSTANTIATE(OwnedPoolRules, testing::Combine(testing::Values(DRIVER), OWNED), driver_kind_name);

} // namespace
