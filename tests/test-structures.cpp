// The pools' structures against plain standard-library models, over random operations: the legacy
// pool's best fit through the C API on the sim driver (the smallest cached buffer within the waste
// bound, the newest of a size).

#include "../ggml-cuda/pools/legacy.h"
#include "harness.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

using namespace harness;

namespace {

constexpr int      OPS  = 200000;
constexpr uint64_t SEED = 12345;

TEST(Headroom, TheBudgetIsPeakPlusThePercentAndSaturates) {
    EXPECT_EQ(gcp::headroom_budget(400, 25), 500u);
    EXPECT_EQ(gcp::headroom_budget(400, 0), 400u);
    EXPECT_EQ(gcp::headroom_budget(size_t(1) << 40, 100), size_t(1) << 41);
    EXPECT_EQ(gcp::headroom_budget(400, GGML_CPOOL_HEADROOM_UNLIMITED), SIZE_MAX) << "no bound";
    // a percent short of unlimited over a large peak: past SIZE_MAX, so no bound, not a wrap
    EXPECT_EQ(gcp::headroom_budget(SIZE_MAX / 4, GGML_CPOOL_HEADROOM_UNLIMITED - 1), SIZE_MAX);
}

using legacy = gcp::pool_legacy;

// the legacy pool as a model keeps it: cached buffers with the tick of their free, the buffers out
class best_fit_model {
  public:
    struct cached {
        size_t   size;
        void *   ptr;
        uint64_t freed_at;
    };

    // the buffer a request of n takes (nullptr: a miss)
    const cached * take(size_t n) const {
        const cached * best = nullptr;
        for (const cached & c : cached_) {
            if (c.size >= n && c.size <= n + std::max(n, legacy::WASTE_SLACK) &&
                (best == nullptr || c.size < best->size || (c.size == best->size && c.freed_at > best->freed_at))) {
                best = &c;
            }
        }
        return best;
    }
    // what a miss of n takes: 5% more where it outgrew a buffer by at most that, else at most 2 MiB more
    size_t miss(size_t n) const {
        bool grew = false;
        for (const cached & c : cached_) {
            grew = grew || (c.size < n && n <= c.size + c.size / legacy::LOOK_AHEAD_DIVISOR);
        }
        for (const auto & [ptr, size] : out_) {
            grew = grew || (size < n && n <= size + size / legacy::LOOK_AHEAD_DIVISOR);
        }
        const size_t ahead = n / legacy::LOOK_AHEAD_DIVISOR;
        return gcp::round_up(n + (grew ? ahead : std::min(ahead, 2 * MiB)), legacy::ROUNDING);
    }
    void lend(void * ptr, size_t size) {
        auto it = std::find_if(cached_.begin(), cached_.end(), [&](const cached & c) { return c.ptr == ptr; });
        if (it != cached_.end()) {
            cached_.erase(it);
        }
        out_[ptr] = size;
    }
    // false: the cache is full and the buffer goes back to the driver
    bool put(void * ptr) {
        const size_t size = out_.at(ptr);
        out_.erase(ptr);
        if (cached_.size() >= legacy::MAX_CACHED_BUFFERS) {
            return false;
        }
        cached_.push_back({ size, ptr, ++clock_ });
        return true;
    }
    size_t bytes() const {
        size_t n = 0;
        for (const cached & c : cached_) {
            n += c.size;
        }
        return n;
    }
    const std::map<void *, size_t> & out() const { return out_; }

  private:
    std::vector<cached>      cached_;
    std::map<void *, size_t> out_;
    uint64_t                 clock_ = 0;
};

// random requests over `sizes` (each a little below one of them), frees of random live buffers,
// every hit the model's buffer, every miss a driver allocation of the model's size
void check_best_fit(ggml_cpool_kind kind, const std::vector<size_t> & sizes, size_t max_live) {
    sim_device       dev(sim_params(size_t(1) << 44));
    ggml_cpool_ctx_t ctx  = make_ctx_with_headroom(dev.drv, kind, GGML_CPOOL_HEADROOM_UNLIMITED);
    ggml_cpool_t     pool = pool_of(ctx);
    best_fit_model   model;
    std::mt19937_64  rng(SEED);
    uint64_t         driver_allocs = 0, driver_frees = 0;
    for (int op = 0; op < OPS / 4; op++) {
        if (model.out().size() < max_live && (model.out().empty() || rng() % 2 == 0)) {
            const size_t                   base = sizes[rng() % sizes.size()];
            const size_t                   n    = base - rng() % (base / 16 + 1);
            const best_fit_model::cached * hit  = model.take(n);
            void *                         ptr  = nullptr;
            size_t                         got  = 0;
            ASSERT_EQ(ggml_cpool_alloc(pool, n, 0, &ptr, &got), GGML_CPOOL_STATUS_OK);
            if (hit != nullptr) {
                ASSERT_EQ(ptr, hit->ptr) << "op " << op
                                         << ": the smallest cached buffer within the bound, newest first";
                ASSERT_EQ(got, hit->size);
            } else {
                ASSERT_EQ(got, model.miss(n)) << "op " << op << ": a miss";
                driver_allocs++;
            }
            model.lend(ptr, got);
        } else {
            auto         it   = std::next(model.out().begin(), long(rng() % model.out().size()));
            void *       ptr  = it->first;
            const size_t size = it->second;
            ASSERT_EQ(ggml_cpool_free(pool, ptr, size + legacy::ROUNDING), GGML_CPOOL_STATUS_INVALID_ARGUMENT)
                << "a wrong size is refused";
            ASSERT_EQ(ggml_cpool_free(pool, ptr, size), GGML_CPOOL_STATUS_OK);
            driver_frees += model.put(ptr) ? 0 : 1;
        }
        if (op % 1000 == 0) {
            ggml_cpool_stats s{};
            ASSERT_EQ(ggml_cpool_get_stats(pool, &s), GGML_CPOOL_STATUS_OK);
            ASSERT_EQ(s.driver_allocs, driver_allocs);
            ASSERT_EQ(s.driver_frees, driver_frees);
            ASSERT_EQ(s.cached_bytes, model.bytes());
        }
    }
    ggml_cpool_ctx_free(ctx);
}

// sizes from 4 KiB to 64 MiB, log-uniform, and a few far larger, which the waste bound keeps from
// the small requests
std::vector<size_t> mixed_sizes(size_t count) {
    std::vector<size_t> sizes;
    std::mt19937_64     rng(SEED);
    for (size_t i = 0; i < count; i++) {
        sizes.push_back(size_t(4096.0 * std::pow(2.0, double(rng() % 1400) / 100.0)));
    }
    for (size_t large : { 256 * MiB, 1024 * MiB, 3000 * MiB }) {
        sizes.push_back(large);
    }
    return sizes;
}

TEST(LegacyBestFit, MatchesAnOrderedModelWithFewSizes) {
    check_best_fit(GGML_CPOOL_KIND_LEGACY, mixed_sizes(6), 4);
}

TEST(LegacyBestFit, MatchesAnOrderedModelWithManySizesPastTheCachesBound) {
    // live buffers pile up, then come back: more than the cache holds
    check_best_fit(GGML_CPOOL_KIND_PLAIN, mixed_sizes(400), 300);
}

} // namespace
