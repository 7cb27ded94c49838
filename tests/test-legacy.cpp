// The legacy pool's own rules, on the sim driver whose first-fit device memory fragments like a
// real one: best fit, look-ahead rounding, OVERALLOCATE, LRU reclaim, full flush, OUT_OF_MEMORY.

#include "harness.h"

#include <algorithm>

using namespace harness;

namespace {

constexpr size_t ROUNDING = 256;

size_t round_up(size_t x, size_t a) {
    return (x + a - 1) / a * a;
}

constexpr size_t GiB = size_t(1) << 30;

// what a miss takes from the driver where the request outgrew no buffer: 5% look-ahead, at most 2
// MiB, rounded to 256 bytes
size_t look_ahead(size_t size) {
    return round_up(size + std::min(size / 20, 2 * MiB), ROUNDING);
}

class Legacy : public pool_test<> {
  protected:
    void open(size_t capacity, ggml_cpool_kind kind = GGML_CPOOL_KIND_LEGACY) {
        open_sim(sim_params(capacity));
        open_ctx(kind);
    }
    // the same without the headroom rule, which gives cached buffers back before a miss
    void open_unbounded(size_t capacity) {
        open_sim(sim_params(capacity));
        ctx_  = make_ctx_with_headroom(driver_, GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_HEADROOM_UNLIMITED);
        pool_ = pool_of(ctx_);
    }

    // Device memory laid out as a0 l0 a1 l1 ... a5 l5 b, then a small free tail: the a's and b
    // cached (b most recently used), the l's live between them so no two a's are adjacent.
    // Every piece takes look_ahead(U) bytes; the tail is TAIL bytes.
    static constexpr size_t U    = 2 * MiB;
    static constexpr size_t TAIL = 1 * MiB;
    static constexpr int    N    = 6;

    void fragment() {
        open(look_ahead(U) * (2 * N + 1) + TAIL, kind_);
        std::vector<buf> a;
        for (int i = 0; i < N; i++) {
            a.push_back(alloc(pool_, U));
            live_.push_back(alloc(pool_, U));
        }
        buf b = alloc(pool_, U);
        for (auto & x : a) {
            release(pool_, x);
        }
        release(pool_, b);
        b_ = b;
    }

    ggml_cpool_kind  kind_ = GGML_CPOOL_KIND_LEGACY;
    std::vector<buf> live_;
    buf              b_;
};

TEST_F(Legacy, BestFitTakesTheSmallestBufferThatHolds) {
    open(256 * MiB);
    buf big = alloc(pool_, 8 * MiB), small = alloc(pool_, 2 * MiB), mid = alloc(pool_, 4 * MiB);
    release(pool_, big);
    release(pool_, small);
    release(pool_, mid);
    buf got = alloc(pool_, 3 * MiB);
    EXPECT_EQ(got.ptr, mid.ptr) << "4 MiB is the best fit for 3 MiB, not 8 MiB";
    EXPECT_EQ(got.size, mid.size) << "a hit hands out the whole cached buffer";
    buf tiny = alloc(pool_, 1);
    EXPECT_EQ(tiny.ptr, small.ptr);
    release(pool_, got);
    release(pool_, tiny);
}

// a cached buffer serves a request of n bytes only up to the waste bound, n + max(n, 1 GiB): the
// scratch of any step reuses what a larger step left, a tensor of its own is not lent to a small one
TEST_F(Legacy, BestFitStopsAtTheWasteBound) {
    open_unbounded(8 * GiB);
    buf cached = alloc(pool_, 3 * GiB); // and its 2 MiB look-ahead
    release(pool_, cached);
    const size_t least = cached.size / 2; // the smallest request the bound lets it serve
    buf          below = alloc(pool_, least - 1);
    EXPECT_NE(below.ptr, cached.ptr) << "more than the request again wasted: a miss";
    buf at = alloc(pool_, least);
    EXPECT_EQ(at.ptr, cached.ptr) << "the request again wasted: a hit";
    release(pool_, at);
    release(pool_, below);
    ggml_cpool_trim(pool_);
    buf step = alloc(pool_, 900 * MiB); // a large step's scratch
    release(pool_, step);
    buf small = alloc(pool_, 1); // a one-token step's: it wastes less than 1 GiB, a hit
    EXPECT_EQ(small.ptr, step.ptr);
    release(pool_, small);
}

TEST_F(Legacy, MissAllocatesFivePercentAtMostTwoMiBMoreRoundedTo256) {
    open(256 * MiB);
    for (size_t size : { size_t(1), size_t(1000), size_t(4096), size_t(1000000), 3 * MiB + 1, 100 * MiB }) {
        buf b = alloc(pool_, size);
        EXPECT_EQ(b.size, look_ahead(size)) << "size " << size;
        EXPECT_EQ(b.size % ROUNDING, 0u);
        release(pool_, b);
        ggml_cpool_trim(pool_); // the next size must miss
    }
    // the look-ahead lets a slightly larger request hit
    buf a = alloc(pool_, 1000000);
    release(pool_, a);
    buf b = alloc(pool_, 1040000);
    EXPECT_EQ(b.ptr, a.ptr);
    release(pool_, b);
}

// a request that outgrew a buffer the pool holds by at most 5% is growing: its miss looks 5% ahead
// whatever its size, as ggml's does, so that the next steps of the growth hit
TEST_F(Legacy, AMissThatOutgrewABufferLooksFivePercentAhead) {
    open(1024 * MiB);
    buf first = alloc(pool_, 100 * MiB);
    EXPECT_EQ(first.size, 102 * MiB) << "nothing smaller held: 2 MiB ahead";
    buf grown = alloc(pool_, 104 * MiB); // 2% past the first buffer
    EXPECT_EQ(grown.size, round_up(104 * MiB + 104 * MiB / 20, ROUNDING));
    release(pool_, grown);
    release(pool_, first);
}

TEST_F(Legacy, OverallocateMissAllocatesExactlyTwice) {
    open(256 * MiB);
    buf b = alloc(pool_, 1000, GGML_CPOOL_ALLOC_OVERALLOCATE);
    EXPECT_EQ(b.size, round_up(2000, ROUNDING));
    buf c = alloc(pool_, 3 * MiB, GGML_CPOOL_ALLOC_OVERALLOCATE);
    EXPECT_EQ(c.size, 6 * MiB);
    release(pool_, c);
    // a growing K/V conversion buffer: the next, larger request still hits
    buf d = alloc(pool_, 5 * MiB, GGML_CPOOL_ALLOC_OVERALLOCATE);
    EXPECT_EQ(d.ptr, c.ptr);
    release(pool_, b);
    release(pool_, d);
}

TEST_F(Legacy, LruReclaimFreesOldestFirstAndStopsAtThreeTimesTheRequest) {
    constexpr size_t U = 4 * MiB, N = 8;
    const size_t     u = look_ahead(U);
    // N cached buffers fill the device but for a gap smaller than the request below
    open(N * u + 6 * MiB);
    std::vector<buf> bufs;
    for (size_t i = 0; i < N; i++) {
        bufs.push_back(alloc(pool_, U));
    }
    // freed in a shuffled order: last use, not allocation order, decides the age
    const size_t free_order[] = { 3, 6, 1, 7, 4, 2, 5, 0 };
    for (size_t i : free_order) {
        release(pool_, bufs[i]);
    }
    const size_t R = 7 * MiB, r = look_ahead(R); // 3r needs ceil(3r / u) = 6 buffers
    ASSERT_EQ((3 * r + u - 1) / u, 6u);
    log_capture      log;
    buf              big = alloc(pool_, R);
    ggml_cpool_stats s   = stats_of(pool_);
    EXPECT_EQ(s.lru_reclaims, 1u);
    EXPECT_EQ(s.lru_reclaimed_bytes, 6 * u);
    EXPECT_EQ(s.flushes, 0u);
    EXPECT_EQ(s.cached_bytes, 2 * u) << "reclaim stopped once 3x the request was freed";
    // the survivors are the two most recently used: 5 and 0
    buf                 x = alloc(pool_, U), y = alloc(pool_, U);
    std::vector<void *> kept = { x.ptr, y.ptr };
    std::sort(kept.begin(), kept.end());
    std::vector<void *> want = { bufs[5].ptr, bufs[0].ptr };
    std::sort(want.begin(), want.end());
    EXPECT_EQ(kept, want);
    EXPECT_EQ(stats_of(pool_).hits, 2u);
    // the log lines, in the documented shape
    char line1[160], line2[96];
    snprintf(line1, sizeof(line1),
             "CUDA pool[0]: alloc of %.2f MiB failed, trying LRU-style reclaim (target %.2f MiB) from %.2f MiB cached",
             double(r) / MiB, 3.0 * double(r) / MiB, double(N * u) / MiB);
    snprintf(line2, sizeof(line2), "CUDA pool[0]: retry succeeded after reclaiming %.2f MiB", double(6 * u) / MiB);
    auto lines = log.lines();
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0], line1);
    EXPECT_EQ(lines[1], line2);
    release(pool_, big);
    release(pool_, x);
    release(pool_, y);
}

TEST_F(Legacy, FullFlushWhenLruReclaimIsNotEnough) {
    fragment();
    // 2.5 MiB fits nowhere but in b + tail; LRU frees a0..a3 (3x the request) whose gaps are
    // each too small, so the pool must flush b as well
    log_capture      log;
    buf              x = alloc(pool_, 5 * MiB / 2);
    ggml_cpool_stats s = stats_of(pool_);
    EXPECT_EQ(s.lru_reclaims, 1u);
    EXPECT_EQ(s.lru_reclaimed_bytes, 4 * look_ahead(U));
    EXPECT_EQ(s.flushes, 1u);
    EXPECT_EQ(s.cached_bytes, 0u);
    EXPECT_EQ(x.ptr != nullptr, true);
    EXPECT_EQ(log.count("trying LRU-style reclaim"), 1u);
    EXPECT_EQ(log.count("freeing all .* cached and retrying once"), 1u);
    EXPECT_EQ(log.count("retry succeeded after freeing"), 1u);
    release(pool_, x);
    for (auto & l : live_) {
        release(pool_, l);
    }
}

TEST_F(Legacy, PlainKindFlushesWithoutTheLruStep) {
    kind_ = GGML_CPOOL_KIND_PLAIN;
    fragment();
    log_capture      log;
    buf              x = alloc(pool_, 5 * MiB / 2);
    ggml_cpool_stats s = stats_of(pool_);
    EXPECT_EQ(s.lru_reclaims, 0u);
    EXPECT_EQ(s.flushes, 1u);
    EXPECT_EQ(log.count("LRU"), 0u);
    release(pool_, x);
    for (auto & l : live_) {
        release(pool_, l);
    }
}

TEST_F(Legacy, OutOfMemoryWhenBothFailThenSmallerRequestsStillServed) {
    fragment();
    log_capture log;
    void *      p      = nullptr;
    size_t      actual = 0;
    EXPECT_EQ(ggml_cpool_alloc(pool_, 4 * MiB, 0, &p, &actual), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(p, nullptr);
    ggml_cpool_stats s = stats_of(pool_);
    EXPECT_EQ(s.oom_returned, 1u);
    EXPECT_EQ(s.lru_reclaims, 1u);
    EXPECT_EQ(s.flushes, 1u);
    EXPECT_EQ(log.count("failed: out of memory after freeing everything cached .*3 retries after a pause"), 1u);
    EXPECT_EQ(log.lines(GGML_CPOOL_LOG_WARN).size(), 1u) << "one line for the failed allocation";
    expect_consistent(pool_);
    buf small = alloc(pool_, 1 * MiB);
    EXPECT_TRUE(fill_and_check(drv::sim, small.ptr, small.size, 0x7e));
    release(pool_, small);
    for (auto & l : live_) {
        release(pool_, l);
    }
}

TEST_F(Legacy, OutOfMemoryWithNothingCachedRetriesThenFails) {
    open(8 * MiB);
    buf            a      = alloc(pool_, 6 * MiB);
    void *         p      = nullptr;
    size_t         actual = 0;
    log_capture    log;
    const uint64_t mallocs = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_MALLOC);
    EXPECT_EQ(ggml_cpool_alloc(pool_, 4 * MiB, 0, &p, &actual), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_MALLOC) - mallocs, 6u)
        << "the call, one retry after a synchronize, the request without its look-ahead and three transient retries";
    EXPECT_EQ(log.count("failed with nothing cached .*; retrying once"), 1u);
    EXPECT_EQ(log.count("out of memory with nothing cached"), 1u);
    EXPECT_EQ(log.lines(GGML_CPOOL_LOG_WARN).size(), 1u) << "one line for the failed allocation";
    EXPECT_EQ(stats_of(pool_).flushes, 0u);
    release(pool_, a);
}

// a failure that has passed by the time the stream is synchronized (another stream's frees
// landed): the retry serves the request
TEST_F(Legacy, AFailureThatPassesIsServedByTheRetry) {
    open(64 * MiB);
    ggml_cpool_driver_t fault = nullptr;
    ASSERT_EQ(ggml_cpool_driver_fault_create(driver_, "fail=malloc:1", &fault), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx  = make_ctx(fault, GGML_CPOOL_KIND_LEGACY);
    ggml_cpool_t     pool = pool_of(ctx);
    log_capture      log;
    buf              a = alloc(pool, 4 * MiB);
    EXPECT_EQ(log.count("retry succeeded"), 1u);
    EXPECT_EQ(ggml_cpool_driver_faults_fired(fault), 1u);
    EXPECT_EQ(stats_of(pool).oom_returned, 0u);
    release(pool, a);
    ggml_cpool_ctx_free(ctx);
    ggml_cpool_driver_release(fault);
}

TEST_F(Legacy, CacheHoldsAtMost256BuffersAndReturnsTheRest) {
    open(1024 * MiB);
    std::vector<buf> bufs;
    for (int i = 0; i < 257; i++) {
        bufs.push_back(alloc(pool_, 4096));
    }
    for (auto & b : bufs) {
        release(pool_, b);
    }
    ggml_cpool_stats s = stats_of(pool_);
    EXPECT_EQ(s.cached_bytes, 256 * look_ahead(4096));
    EXPECT_EQ(s.driver_frees, 1u);
    EXPECT_EQ(s.generation, 1u);
}

// a growing request that best fit serves from an ordinary buffer larger than its own miss would
// take (2x the request) leaves that buffer ordinary once freed: the request it was made for finds
// it again, rather than missing while it waits in the growth buffers for growing requests only
TEST_F(Legacy, AGrowingRequestLeavesALargerOrdinaryBufferOrdinary) {
    open(256 * MiB);
    buf weights = alloc(pool_, 24 * MiB); // 25.2 MiB: more than the growing request's miss, within the waste bound
    release(pool_, weights);
    buf kv = alloc(pool_, 12 * MiB, GGML_CPOOL_ALLOC_OVERALLOCATE); // the only cached buffer: a hit
    EXPECT_EQ(kv.ptr, weights.ptr);
    release(pool_, kv);
    buf again = alloc(pool_, 24 * MiB);
    EXPECT_EQ(again.ptr, weights.ptr) << "the ordinary request missed its own buffer";
    EXPECT_EQ(stats_of(pool_).driver_allocs, 1u);
    release(pool_, again);
    buf grown = alloc(pool_, 13 * MiB, GGML_CPOOL_ALLOC_OVERALLOCATE); // still served, from the ordinary cache
    EXPECT_EQ(grown.ptr, weights.ptr);
    release(pool_, grown);
}

// a growth buffer serves an ordinary request the driver refused: the driver was asked, so a miss
TEST_F(Legacy, ARefusalServedByAGrowthBufferIsAMiss) {
    open(64 * MiB);
    release(pool_, alloc(pool_, 10 * MiB, GGML_CPOOL_ALLOC_OVERALLOCATE)); // a 20 MiB growth buffer
    buf              weights = alloc(pool_, 40 * MiB);                     // 42 MiB: 2 MiB stay free
    const auto       before  = stats_of(pool_);
    log_capture      log;
    buf              scratch = alloc(pool_, 4 * MiB);
    ggml_cpool_stats after   = stats_of(pool_);
    EXPECT_EQ(scratch.size, 20 * MiB) << "the growth buffer served it";
    EXPECT_EQ(log.count("served from a cached 20\\.00 MiB growth buffer instead"), 1u);
    EXPECT_EQ(after.misses, before.misses + 1);
    EXPECT_EQ(after.hits, before.hits);
    EXPECT_EQ(after.driver_allocs, before.driver_allocs);
    release(pool_, scratch);
    release(pool_, weights);
}

// another tenant of the device (raw driver allocations, outside every pool): its memory is what
// makes the pool run out
TEST(LegacyCoTenant, ATenantsMemoryMakesThePoolReclaim) {
    sim_device       device(sim_params(64 * MiB));
    ggml_cpool_ctx_t ctx    = make_ctx_with_headroom(device.drv, GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_HEADROOM_UNLIMITED);
    ggml_cpool_t     pool   = pool_of(ctx);
    void *           tenant = nullptr, *refused = nullptr;
    ASSERT_EQ(ggml_cpool_driver_malloc(device.drv, 0, 30 * MiB, &tenant), GGML_CPOOL_STATUS_OK);
    buf a = alloc(pool, 16 * MiB); // placed after the tenant: 17.2 MiB stay free behind it
    release(pool, a);
    EXPECT_EQ(ggml_cpool_driver_malloc(device.drv, 0, 20 * MiB, &refused), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(refused, nullptr);
    EXPECT_EQ(ggml_cpool_driver_used(device.drv, 0), 30 * MiB + a.size);
    buf b = alloc(pool, 20 * MiB); // 21 MiB do not fit in 17.2: the cached buffer goes back
    EXPECT_EQ(stats_of(pool).lru_reclaims, 1u);
    EXPECT_EQ(stats_of(pool).cached_bytes, 0u);
    release(pool, b);
    EXPECT_EQ(ggml_cpool_driver_free(device.drv, 0, tenant), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(ggml_cpool_driver_free(device.drv, 0, tenant), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << "freed twice";
    ggml_cpool_ctx_free(ctx);
}

TEST_F(Legacy, ReclaimMovesTheGenerationAndPeakTracksReserved) {
    fragment();
    uint64_t before = ggml_cpool_generation(pool_);
    buf      x      = alloc(pool_, 5 * MiB / 2);
    EXPECT_GT(ggml_cpool_generation(pool_), before) << "memory went back to the driver: graphs must recapture";
    ggml_cpool_stats s = stats_of(pool_);
    EXPECT_EQ(s.peak_reserved_bytes, look_ahead(U) * (2 * N + 1));
    release(pool_, x);
    for (auto & l : live_) {
        release(pool_, l);
    }
}

// PyTorch's out-of-memory loop (tests/torch-oom.py, check (c)) on an 80 GB device: the start-up's
// tensors, a 40 GiB tensor freed, then 1 GiB chunks until the device refuses one, half of them
// freed, 16 steps of half a chunk each. PyTorch's allocator takes each chunk at its size: the pool
// fills the device to within 2% of the chunks the driver alone fits, and serves every step
class TorchLoop : public testing::TestWithParam<ggml_cpool_kind> {};

TEST_P(TorchLoop, ChunksFillTheDeviceAsTheDriverAloneDoes) {
    constexpr size_t DEVICE = 78 * GiB + 64 * MiB, LARGE = 40 * GiB, CHUNK = GiB, STEPS = 16;
    sim_device       device(sim_params(DEVICE));
    std::vector<buf> held;
    for (buf c; ggml_cpool_driver_malloc(device.drv, 0, CHUNK, &c.ptr) == GGML_CPOOL_STATUS_OK;) {
        held.push_back(c);
    }
    const size_t native = held.size();
    for (const buf & c : held) {
        ggml_cpool_driver_free(device.drv, 0, c.ptr);
    }
    held.clear();
    ggml_cpool_ctx_t ctx  = make_ctx(device.drv, GetParam(), DEVICE); // vmm: a range of the device's size
    ggml_cpool_t     pool = pool_of(ctx);
    for (size_t size : { 1 * MiB, 64 * MiB, 64 * MiB, 512 * MiB, 8 * MiB, 8 * MiB, LARGE }) {
        held.push_back(alloc(pool, size));
        if (size == 8 * MiB || size == LARGE) { // a step's product, then the 40 GiB tensor: freed
            for (const buf & b : held) {
                release(pool, b);
            }
            held.clear();
        }
    }
    for (buf c; ggml_cpool_alloc(pool, CHUNK, 0, &c.ptr, &c.size) == GGML_CPOOL_STATUS_OK;) {
        held.push_back(c);
    }
    EXPECT_GE(held.size() * 100, native * 98) << held.size() << " chunks where the driver alone fits " << native;
    for (size_t i = held.size() / 2; i < held.size(); i++) {
        release(pool, held[i]);
    }
    held.resize(held.size() / 2);
    for (size_t step = 0; step < STEPS; step++) {
        held.push_back(alloc(pool, CHUNK / 2));
        release(pool, alloc(pool, 8 * MiB));
    }
    for (const buf & b : held) {
        release(pool, b);
    }
    EXPECT_EQ(stats_of(pool).live_bytes, 0u);
    ggml_cpool_ctx_free(ctx);
}

INSTANTIATE_TEST_SUITE_P(Kinds, TorchLoop,
                         testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM),
                         kind_name);

} // namespace
