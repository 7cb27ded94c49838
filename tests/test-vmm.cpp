// The VMM pool's own rules on the sim driver: growth by granularity, the stack, out-of-order
// frees, trim, and every failure (range exhausted, device full) leaving the pool usable.

#include "harness.h"

#include <vector>

using namespace harness;

namespace {

constexpr size_t GRAN = 2 * MiB; // the sim's default granularity, as CUDA recommends

class Vmm : public pool_test<> {
  protected:
    void open(size_t capacity, size_t reserve) {
        open_sim(sim_params(capacity));
        open_ctx(GGML_CPOOL_KIND_VMM, reserve);
    }
};

TEST_F(Vmm, NothingIsReservedBeforeTheFirstAllocation) {
    open(256 * MiB, 64 * MiB);
    EXPECT_EQ(ggml_cpool_driver_outstanding(driver_), 0u);
    buf a = alloc(pool_, 100);
    EXPECT_EQ(ggml_cpool_driver_outstanding(driver_), 3u) << "one range, one physical handle, one mapping";
    release(pool_, a);
}

// a doubling the driver refuses, then served at 1x from memory already mapped: the driver was
// asked, so a miss
TEST_F(Vmm, ARefusedDoublingServedFromMappedMemoryIsAMiss) {
    open(16 * MiB, 64 * MiB);
    release(pool_, alloc(pool_, 10 * MiB)); // 10 MiB mapped, none used
    void * tenant = nullptr;
    ASSERT_EQ(ggml_cpool_driver_malloc(driver_, 0, 6 * MiB, &tenant), GGML_CPOOL_STATUS_OK); // the device is full
    const auto       before = stats_of(pool_);
    buf              kv     = alloc(pool_, 8 * MiB, GGML_CPOOL_ALLOC_OVERALLOCATE);
    ggml_cpool_stats after  = stats_of(pool_);
    EXPECT_EQ(kv.size, 8 * MiB) << "its own size, the doubling refused";
    EXPECT_EQ(after.misses, before.misses + 1);
    EXPECT_EQ(after.hits, before.hits);
    EXPECT_EQ(after.driver_allocs, before.driver_allocs);
    release(pool_, kv);
    EXPECT_EQ(ggml_cpool_driver_free(driver_, 0, tenant), GGML_CPOOL_STATUS_OK);
}

TEST_F(Vmm, GrowsByGranularity) {
    open(256 * MiB, 64 * MiB);
    buf a = alloc(pool_, 100);
    EXPECT_EQ(a.size, 128u) << "128-byte alignment";
    EXPECT_EQ(stats_of(pool_).reserved_bytes, GRAN);
    buf              b = alloc(pool_, GRAN - 256); // still inside the first granule
    ggml_cpool_stats s = stats_of(pool_);
    EXPECT_EQ(s.reserved_bytes, GRAN);
    EXPECT_EQ(s.driver_allocs, 1u);
    EXPECT_EQ(s.hits, 1u);
    EXPECT_EQ(static_cast<char *>(b.ptr), static_cast<char *>(a.ptr) + a.size) << "addresses in order";
    buf c = alloc(pool_, 3 * MiB); // needs 3 MiB more than mapped - 128 - (GRAN-256): two granules
    s     = stats_of(pool_);
    EXPECT_EQ(s.reserved_bytes, 3 * GRAN);
    EXPECT_EQ(s.driver_allocs, 2u);
    EXPECT_TRUE(fill_and_check(drv::sim, c.ptr, c.size, 0x42)) << "the grown range is mapped and writable";
    release(pool_, c);
    release(pool_, b);
    release(pool_, a);
}

TEST_F(Vmm, RangeExhaustionReturnsOutOfMemoryAndThePoolStaysUsable) {
    open(256 * MiB, 8 * MiB);
    buf         a = alloc(pool_, 6 * MiB);
    log_capture log;
    void *      p      = nullptr;
    size_t      actual = 0;
    EXPECT_EQ(ggml_cpool_alloc(pool_, 4 * MiB, 0, &p, &actual), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(log.count("exceeds the virtual range"), 1u);
    EXPECT_EQ(stats_of(pool_).oom_returned, 1u);
    buf b = alloc(pool_, 1 * MiB);
    EXPECT_TRUE(fill_and_check(drv::sim, b.ptr, b.size, 1));
    release(pool_, b);
    release(pool_, a);
    buf c = alloc(pool_, 8 * MiB); // the whole range once the stack is empty
    release(pool_, c);
}

TEST_F(Vmm, DeviceFullReturnsOutOfMemoryAndThePoolStaysUsable) {
    open(8 * MiB, 64 * MiB);
    buf            a = alloc(pool_, 6 * MiB);
    log_capture    log;
    void *         p       = nullptr;
    size_t         actual  = 0;
    const uint64_t creates = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_VMM_CREATE);
    EXPECT_EQ(ggml_cpool_alloc(pool_, 4 * MiB, 0, &p, &actual), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    // nothing is cached to give back: one retry after a synchronize, the transient retries, then
    // the error, in one warning line (the attempts' own lines are debug)
    EXPECT_EQ(log.count("growth by .* failed; retrying once after a synchronize"), 1u);
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_VMM_CREATE) - creates, 5u)
        << "the call, the retry after a synchronize and three transient retries";
    ASSERT_EQ(log.lines(GGML_CPOOL_LOG_WARN).size(), 1u);
    EXPECT_EQ(log.count("alloc of 4\\.00 MiB failed: growing by 4\\.00 MiB is refused, out of memory"), 1u)
        << log.lines(GGML_CPOOL_LOG_WARN)[0];
    expect_consistent(pool_);
    buf b = alloc(pool_, 2 * MiB); // the last free granule
    EXPECT_EQ(stats_of(pool_).reserved_bytes, 8 * MiB);
    EXPECT_TRUE(fill_and_check(drv::sim, b.ptr, b.size, 2));
    release(pool_, b);
    release(pool_, a);
}

TEST_F(Vmm, OutOfOrderFreeLeavesAHoleThatIsReusedAndTheTopUnwinds) {
    open(256 * MiB, 64 * MiB);
    buf a = alloc(pool_, 1 * MiB), b = alloc(pool_, 1 * MiB), c = alloc(pool_, 1 * MiB);
    release(pool_, b); // under c: a hole
    buf d = alloc(pool_, 1 * MiB);
    EXPECT_EQ(d.ptr, b.ptr) << "the hole serves before the top";
    buf top = alloc(pool_, 1 * MiB);
    EXPECT_EQ(static_cast<char *>(top.ptr), static_cast<char *>(c.ptr) + c.size) << "no hole left: the top";
    release(pool_, top);
    release(pool_, d);
    release(pool_, c); // unwinds c and the hole d left
    buf e = alloc(pool_, 1 * MiB);
    EXPECT_EQ(e.ptr, b.ptr);
    release(pool_, e);
    release(pool_, a);
    EXPECT_EQ(stats_of(pool_).live_bytes, 0u);
}

// a hit pushes on the top as far as the mapped memory reaches, while the block list's room runs
// out and is made again under it; a hole below the top stops the hits until it is gone, and the
// top unwinds through it
TEST_F(Vmm, ADeepNestIsServedFromTheMappedMemoryAsTheListGrowsAndUnwindsThroughAHole) {
    open(256 * MiB, 64 * MiB);
    constexpr size_t DEPTH = 200, SIZE = 4096; // 800 KiB: one granule
    std::vector<buf> nest;
    for (size_t i = 0; i < DEPTH; i++) {
        nest.push_back(alloc(pool_, SIZE));
        if (i > 0) {
            ASSERT_EQ(static_cast<char *>(nest[i].ptr), static_cast<char *>(nest[i - 1].ptr) + SIZE) << i;
        }
    }
    ggml_cpool_stats s = stats_of(pool_);
    EXPECT_EQ(s.driver_allocs, 1u) << "one granule serves the nest";
    EXPECT_EQ(s.allocs, DEPTH);
    EXPECT_EQ(s.hits, DEPTH - 1) << "every request after the first is a hit, however often the list grew";
    release(pool_, nest[DEPTH / 2]); // a hole below the top
    buf in_hole = alloc(pool_, SIZE);
    EXPECT_EQ(in_hole.ptr, nest[DEPTH / 2].ptr) << "the hole serves before the top";
    release(pool_, in_hole);
    for (size_t i = DEPTH; i-- > 0;) {
        if (i != DEPTH / 2) {
            release(pool_, nest[i]);
        }
    }
    s = stats_of(pool_);
    EXPECT_EQ(s.live_bytes, 0u);
    EXPECT_EQ(s.allocs, DEPTH + 1);
    EXPECT_EQ(s.hits, DEPTH);
    buf again = alloc(pool_, SIZE);
    EXPECT_EQ(again.ptr, nest[0].ptr) << "the top unwound through the hole to the range's start";
    release(pool_, again);
}

// the block list is the pool's record of live buffers: a free must name a live block's start
// and size, below the top as on it, and a refused one changes nothing
TEST_F(Vmm, FreesOfHolesMergedBlocksAndWrongSizesBelowTheTopAreRefused) {
    open(256 * MiB, 64 * MiB);
    buf a = alloc(pool_, 1 * MiB), b = alloc(pool_, 1 * MiB), c = alloc(pool_, 1 * MiB), top = alloc(pool_, 1 * MiB);
    release(pool_, b);
    release(pool_, c); // merged into b's hole: its address starts no block now
    log_capture            log;
    const ggml_cpool_stats before = stats_of(pool_);
    EXPECT_EQ(ggml_cpool_free(pool_, b.ptr, b.size), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << "a hole";
    EXPECT_EQ(ggml_cpool_free(pool_, c.ptr, c.size), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << "merged into a hole";
    EXPECT_EQ(ggml_cpool_free(pool_, a.ptr, a.size * 2), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << "below the top";
    EXPECT_EQ(ggml_cpool_free(pool_, top.ptr, top.size - 128), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << "the top";
    EXPECT_EQ(ggml_cpool_free(pool_, static_cast<char *>(top.ptr) + top.size, 128), GGML_CPOOL_STATUS_INVALID_ARGUMENT)
        << "past the top";
    EXPECT_EQ(log.lines(GGML_CPOOL_LOG_ERROR).size(), 5u) << "one line per refused call";
    const ggml_cpool_stats after = stats_of(pool_);
    EXPECT_EQ(after.live_bytes, before.live_bytes);
    EXPECT_EQ(after.cached_bytes, before.cached_bytes);
    release(pool_, top); // unwinds the hole too
    buf again = alloc(pool_, 1 * MiB);
    EXPECT_EQ(again.ptr, b.ptr) << "the top came down to a's end";
    release(pool_, again);
    release(pool_, a);
    EXPECT_EQ(stats_of(pool_).live_bytes, 0u);
}

TEST_F(Vmm, AHoleIsSplitAndFreedNeighboursMerge) {
    open(256 * MiB, 64 * MiB);
    buf a = alloc(pool_, 1 * MiB), b = alloc(pool_, 1 * MiB), c = alloc(pool_, 1 * MiB), keep = alloc(pool_, 1 * MiB);
    release(pool_, a);
    release(pool_, c);
    release(pool_, b); // joins a and c: one hole of 3 MiB under keep
    const uint64_t misses = stats_of(pool_).misses;
    buf            big    = alloc(pool_, 3 * MiB);
    EXPECT_EQ(big.ptr, a.ptr) << "the merged hole holds it";
    release(pool_, big);
    buf small = alloc(pool_, 512 * 1024), rest = alloc(pool_, 2 * MiB);
    EXPECT_EQ(small.ptr, a.ptr);
    EXPECT_EQ(static_cast<char *>(rest.ptr), static_cast<char *>(a.ptr) + small.size) << "the split's rest";
    EXPECT_EQ(stats_of(pool_).misses, misses) << "every one a hit";
    EXPECT_TRUE(fill_and_check(drv::sim, rest.ptr, rest.size, 5));
    EXPECT_TRUE(fill_and_check(drv::sim, keep.ptr, keep.size, 6));
    release(pool_, rest);
    release(pool_, small);
    release(pool_, keep);
    EXPECT_EQ(stats_of(pool_).live_bytes, 0u);
}

// PyTorch's decode: each step a layer's temporaries are allocated, then its grown K/V, which
// outlives them, and the previous K/V goes. Without holes reused the stack grows every step.
TEST_F(Vmm, FreesOutOfOrderHoldNoMoreThanHalfAgainTheirPeakLive) {
    constexpr int    LAYERS = 16, STEPS = 256;
    constexpr size_t KV_STEP = 64 * 1024, SCRATCH = 1 * MiB;
    open(size_t(8) << 30, size_t(4) << 30);
    std::vector<buf> kv(LAYERS);
    for (int step = 1; step <= STEPS; step++) {
        for (int l = 0; l < LAYERS; l++) {
            buf scratch = alloc(pool_, SCRATCH);
            buf grown   = alloc(pool_, size_t(step) * KV_STEP);
            release(pool_, scratch);
            if (kv[size_t(l)].ptr != nullptr) {
                release(pool_, kv[size_t(l)]);
            }
            kv[size_t(l)] = grown;
        }
    }
    const ggml_cpool_stats s = stats_of(pool_);
    EXPECT_LE(double(s.peak_reserved_bytes), 1.5 * double(s.peak_live_bytes) + double(GRAN))
        << "peak reserved " << s.peak_reserved_bytes / MiB << " MiB for " << s.peak_live_bytes / MiB << " MiB live";
    for (buf & b : kv) {
        release(pool_, b);
    }
}

TEST_F(Vmm, TrimUnmapsAboveTheTopAndUnmappedMemoryTraps) {
    open(256 * MiB, 64 * MiB);
    buf keep = alloc(pool_, 1 * MiB);
    buf drop = alloc(pool_, 10 * MiB);
    release(pool_, drop);
    ggml_cpool_stats before = stats_of(pool_);
    EXPECT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK);
    ggml_cpool_stats after = stats_of(pool_);
    EXPECT_EQ(after.reserved_bytes, GRAN);
    EXPECT_EQ(after.generation, before.generation + 1);
    EXPECT_TRUE(fill_and_check(drv::sim, keep.ptr, keep.size, 9));
    volatile char * stale = static_cast<char *>(drop.ptr) + GRAN;
    EXPECT_DEATH(*stale = 1, "") << "memory the pool unmapped is no longer accessible";
    buf again = alloc(pool_, 10 * MiB); // maps again
    EXPECT_TRUE(fill_and_check(drv::sim, again.ptr, again.size, 3));
    release(pool_, again);
    release(pool_, keep);
}

TEST_F(Vmm, PeerAccessIsGrantedOnlyWhenAsked) {
    auto p = sim_params(256 * MiB, 2);
    ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &driver_), GGML_CPOOL_STATUS_OK);
    for (int peer : { 0, 1 }) {
        auto cp              = ggml_cpool_ctx_default_params();
        cp.driver            = driver_;
        cp.kind[0]           = GGML_CPOOL_KIND_VMM;
        cp.vmm_peer_access   = peer;
        ggml_cpool_ctx_t ctx = nullptr;
        ASSERT_EQ(ggml_cpool_ctx_create(&cp, &ctx), GGML_CPOOL_STATUS_OK);
        uint64_t before = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_VMM_ACCESS);
        buf      a      = alloc(pool_of(ctx), 5 * MiB);
        EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_VMM_ACCESS) - before, peer ? 2u : 1u)
            << "the device itself" << (peer ? ", and its peer" : " only");
        release(pool_of(ctx), a);
        ggml_cpool_ctx_free(ctx);
    }
}

TEST_F(Vmm, UnsupportedDeviceRefusesAnExplicitVmmPool) {
    auto p          = sim_params(64 * MiB);
    p.vmm_supported = 0;
    ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &driver_), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx  = make_ctx(driver_, GGML_CPOOL_KIND_VMM);
    ggml_cpool_t     pool = nullptr;
    log_capture      log;
    EXPECT_EQ(ggml_cpool_ctx_get_pool(ctx, 0, &pool), GGML_CPOOL_STATUS_UNSUPPORTED);
    EXPECT_EQ(pool, nullptr);
    EXPECT_EQ(log.count("does not support virtual memory management"), 1u);
    ggml_cpool_ctx_free(ctx);
}

} // namespace
