// Randomized stress against an independent shadow model of each pool: every operation's result
// and every statistic must match the model, live buffers never overlap, live + cached ==
// reserved == what the driver handed out, reserved <= capacity. 10^6 operations per pool kind,
// and a multi-threaded variant where each thread owns its context on one shared driver.

#include "harness.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <thread>

using namespace harness;

namespace {

constexpr size_t   OPS            = 1000000;
constexpr size_t   THREAD_OPS     = 100000;
constexpr int      THREADS        = 4;
constexpr size_t   CAPACITY       = size_t(64) << 30; // host pages are never touched: virtual only
constexpr size_t   TRIM_EVERY     = 50000;
constexpr size_t   RECENT         = 8;        // frees favour the most recent buffers, as a graph does
constexpr uint64_t RECENT_SHARE   = 7;        // of 10 frees, one of the RECENT; the rest anywhere
constexpr size_t   MAX_SIZE_LOG   = 23;       // requests up to 8 MiB
constexpr size_t   LIVE_TARGET    = 48;       // live buffers hover around this count
constexpr size_t   TIGHT_CAPACITY = 96 * MiB; // a device that runs out under this traffic

size_t round_up(size_t x, size_t a) {
    return (x + a - 1) / a * a;
}

// what a pool must report, computed without looking at the pool
class model {
  public:
    virtual ~model() = default;
    // the size the pool must return for a request it served at ptr (the VMM model also sets
    // expect_ptr, the address the pool must have returned)
    virtual size_t   alloc(size_t size, bool overallocate, uintptr_t ptr) = 0;
    virtual void     free(uintptr_t ptr, size_t actual)                   = 0;
    virtual void     trim()                                               = 0;
    ggml_cpool_stats s{};

  protected:
    void on_alloc(size_t actual, bool hit) {
        s.allocs++;
        (hit ? s.hits : s.misses)++;
        s.live_bytes += actual;
        s.peak_live_bytes = std::max(s.peak_live_bytes, s.live_bytes);
    }
    void on_driver(size_t bytes, bool take) {
        if (take) {
            s.driver_allocs++;
            s.reserved_bytes += bytes;
            s.peak_reserved_bytes = std::max(s.peak_reserved_bytes, s.reserved_bytes);
        } else {
            s.driver_frees++;
            s.reserved_bytes -= bytes;
            s.generation++;
        }
    }
};

// legacy and plain without out-of-memory: cached buffers by size (best fit, the most recently
// cached of a size first), 256 slots, and the headroom rule: before a miss would make the pool
// hold more than the default headroom above its peak live bytes, least recently cached go back,
// outgrown growing buffers first. Buffers that served a growing request (not larger than its miss)
// and still hold the latest one wait in a reserve for growing requests, which the headroom rule leaves
class legacy_model : public model {
  public:
    size_t alloc(size_t size, bool overallocate, uintptr_t ptr) override {
        if (overallocate) {
            need_ = size;
            for (size_t i = growth_.size(); i-- > 0;) {
                if (growth_[i].first < size) { // outgrown: cached for any request, first to go back
                    cache_[growth_[i].first].push_back(++outgrown_);
                    count_++;
                    growth_.erase(growth_.begin() + std::ptrdiff_t(i));
                }
            }
            auto best = growth_.end();
            for (auto g = growth_.begin(); g != growth_.end(); ++g) {
                if (g->first >= size && (best == growth_.end() || g->first < best->first)) {
                    best = g;
                }
            }
            if (best != growth_.end()) {
                size_t actual = best->first;
                growth_.erase(best);
                s.cached_bytes -= actual;
                growing_out_.insert(ptr);
                on_alloc(actual, true);
                return actual;
            }
        }
        auto         it   = cache_.lower_bound(size);
        const size_t miss = round_up(overallocate ? 2 * size : size + size / 20, 256);
        if (overallocate && (it == cache_.end() || it->first <= miss)) { // not a larger one made for another request
            growing_out_.insert(ptr);
        }
        if (it != cache_.end()) {
            size_t actual = it->first;
            it->second.pop_back();
            if (it->second.empty()) {
                cache_.erase(it);
            }
            count_--;
            s.cached_bytes -= actual;
            on_alloc(actual, true);
            return actual;
        }
        keep_within_headroom(miss);
        on_driver(miss, true);
        on_alloc(miss, false);
        return miss;
    }
    void free(uintptr_t ptr, size_t actual) override {
        s.live_bytes -= actual;
        if (growing_out_.erase(ptr) != 0 && actual >= need_ && growth_.size() < MAX_GROWING) {
            growth_.push_back({ actual, ++clock_ });
            s.cached_bytes += actual;
            return;
        }
        if (count_ + growth_.size() < 256) {
            cache_[actual].push_back(++clock_);
            count_++;
            s.cached_bytes += actual;
        } else {
            on_driver(actual, false);
        }
    }
    void trim() override {
        for (auto & kv : cache_) {
            for (size_t i = 0; i < kv.second.size(); i++) {
                on_driver(kv.first, false);
            }
        }
        for (auto & g : growth_) {
            on_driver(g.first, false);
        }
        cache_.clear();
        growth_.clear();
        count_         = 0;
        s.cached_bytes = 0;
    }

  private:
    void keep_within_headroom(size_t bytes) {
        const size_t peak   = std::max(s.peak_live_bytes, s.live_bytes + bytes);
        const size_t budget = peak + size_t(double(peak) * pct_ / 100.0);
        if (s.reserved_bytes + bytes <= budget) {
            return;
        }
        const size_t excess = s.reserved_bytes + bytes - budget;
        for (size_t freed = 0; freed < excess && count_ > 0;) {
            auto   oldest = cache_.begin();
            size_t at     = 0;
            for (auto it = cache_.begin(); it != cache_.end(); ++it) {
                for (size_t i = 0; i < it->second.size(); i++) {
                    if (it->second[i] < oldest->second[at]) {
                        oldest = it;
                        at     = i;
                    }
                }
            }
            const size_t size = oldest->first;
            oldest->second.erase(oldest->second.begin() + std::ptrdiff_t(at));
            if (oldest->second.empty()) {
                cache_.erase(oldest);
            }
            count_--;
            s.cached_bytes -= size;
            on_driver(size, false);
            freed += size;
        }
    }

    static constexpr size_t                  MAX_GROWING = 8;
    std::map<size_t, std::vector<uint64_t>>  cache_;  // size -> when each was cached, latest last
    std::vector<std::pair<size_t, uint64_t>> growth_; // growth buffers: size, when cached
    std::set<uintptr_t>                      growing_out_;
    size_t                                   need_  = 0; // the latest growing request
    const uint32_t                           pct_   = ggml_cpool_ctx_default_params().headroom_pct;
    size_t                                   count_ = 0;
    uint64_t outgrown_ = 0, clock_ = uint64_t(1) << 62; // outgrown stamps: older than any use
};

// the VMM pool: a stack of blocks over chunks mapped at the granularity; a freed block below the
// top is a hole, merged with freed neighbours, and the smallest hole that holds a request serves
// it (split) before the top
class vmm_model : public model {
  public:
    explicit vmm_model(size_t granularity) : gran_(granularity) {}
    size_t alloc(size_t size, bool overallocate, uintptr_t ptr) override {
        size_t bytes = round_up(overallocate ? 2 * size : size, 128);
        size_t hole  = blocks_.size();
        for (size_t i = 0; i < blocks_.size(); i++) {
            if (blocks_[i].freed && blocks_[i].size >= bytes &&
                (hole == blocks_.size() || blocks_[i].size <= blocks_[hole].size)) { // the last of equal sizes
                hole = i;
            }
        }
        if (hole < blocks_.size()) {
            expect_ptr = base_ + blocks_[hole].offset;
            if (blocks_[hole].size > bytes) {
                blocks_.insert(blocks_.begin() + std::ptrdiff_t(hole) + 1,
                               { blocks_[hole].offset + bytes, blocks_[hole].size - bytes, true });
            }
            blocks_[hole] = { blocks_[hole].offset, bytes, false };
            on_alloc(bytes, true);
            s.cached_bytes = mapped_ - s.live_bytes;
            return bytes;
        }
        bool hit = used_ + bytes <= mapped_;
        if (!hit) {
            size_t grow = round_up(used_ + bytes - mapped_, gran_);
            chunks_.push_back({ mapped_, grow });
            mapped_ += grow;
            on_driver(grow, true);
        }
        if (blocks_.empty() && base_ == 0) {
            base_ = ptr; // the first address is the range's base
        }
        expect_ptr = base_ + used_;
        blocks_.push_back({ used_, bytes, false });
        used_ += bytes;
        on_alloc(bytes, hit);
        s.cached_bytes = mapped_ - s.live_bytes;
        return bytes;
    }
    void free(uintptr_t ptr, size_t actual) override {
        size_t off = ptr - base_;
        size_t i   = 0;
        while (blocks_[i].offset != off) {
            i++;
        }
        blocks_[i].freed = true;
        if (i + 1 < blocks_.size() && blocks_[i + 1].freed) {
            blocks_[i].size += blocks_[i + 1].size;
            blocks_.erase(blocks_.begin() + std::ptrdiff_t(i) + 1);
        }
        if (i > 0 && blocks_[i - 1].freed) {
            blocks_[i - 1].size += blocks_[i].size;
            blocks_.erase(blocks_.begin() + std::ptrdiff_t(i));
        }
        while (!blocks_.empty() && blocks_.back().freed) {
            used_ = blocks_.back().offset;
            blocks_.pop_back();
        }
        s.live_bytes -= actual;
        s.cached_bytes = mapped_ - s.live_bytes;
    }
    void trim() override {
        while (!chunks_.empty() && chunks_.back().first >= used_) {
            on_driver(chunks_.back().second, false);
            mapped_ -= chunks_.back().second;
            chunks_.pop_back();
        }
        s.cached_bytes = mapped_ - s.live_bytes;
    }
    uintptr_t expect_ptr = 0;

  private:
    struct block {
        size_t offset, size;
        bool   freed;
    };
    size_t                                 gran_;
    uintptr_t                              base_ = 0;
    size_t                                 used_ = 0, mapped_ = 0;
    std::vector<block>                     blocks_;
    std::vector<std::pair<size_t, size_t>> chunks_; // offset, size
};

bool same(const ggml_cpool_stats & a, const ggml_cpool_stats & b) {
    return a.live_bytes == b.live_bytes && a.cached_bytes == b.cached_bytes && a.reserved_bytes == b.reserved_bytes &&
           a.peak_live_bytes == b.peak_live_bytes && a.peak_reserved_bytes == b.peak_reserved_bytes &&
           a.allocs == b.allocs && a.hits == b.hits && a.misses == b.misses && a.driver_allocs == b.driver_allocs &&
           a.driver_frees == b.driver_frees && a.generation == b.generation;
}

std::string show(const ggml_cpool_stats & s) {
    char text[256];
    snprintf(text, sizeof(text),
             "live %zu cached %zu reserved %zu allocs %llu hits %llu misses %llu drv %llu/%llu gen %llu", s.live_bytes,
             s.cached_bytes, s.reserved_bytes, (unsigned long long) s.allocs, (unsigned long long) s.hits,
             (unsigned long long) s.misses, (unsigned long long) s.driver_allocs, (unsigned long long) s.driver_frees,
             (unsigned long long) s.generation);
    return text;
}

// runs `ops` random operations on a fresh context of `kind` over `drv`; returns a failure or ""
// shadow: every statistic must equal the model's (a device too large to run out);
// tight: the device runs out, reclaim and OUT_OF_MEMORY are expected, the invariants still hold;
// faults: the driver fails calls too, so an allocation may also answer DRIVER_ERROR and a trim fail
enum class mode { shadow, tight, faults };

std::string stress(ggml_cpool_driver_t drv, ggml_cpool_kind kind, size_t ops, uint64_t seed, bool check_driver,
                   mode how = mode::shadow) {
    ggml_cpool_ctx_t       ctx      = make_ctx(drv, kind, CAPACITY);
    const size_t           capacity = how == mode::shadow ? CAPACITY : TIGHT_CAPACITY;
    ggml_cpool_t           pool     = pool_of(ctx);
    std::unique_ptr<model> m;
    vmm_model *            vm = nullptr;
    if (kind == GGML_CPOOL_KIND_VMM) {
        vm = new vmm_model(ggml_cpool_sim_default_params().granularity);
        m.reset(vm);
    } else {
        m.reset(new legacy_model);
    }
    std::mt19937_64          rng(seed);
    std::vector<buf>         order; // allocation order
    std::map<uintptr_t, buf> live;
    std::string              failure;
    // frees favour the most recent buffers, as a graph's do, and also fall anywhere: every kind
    // reuses what is freed out of order (the VMM pool through its holes)
    for (size_t i = 0; i < ops && failure.empty(); i++) {
        uint64_t r = rng();
        if (i % TRIM_EVERY == TRIM_EVERY - 1) {
            if (ggml_cpool_trim(pool) != GGML_CPOOL_STATUS_OK && how != mode::faults) {
                failure = "trim failed";
            }
            m->trim();
        } else if (order.empty() || r % 100 < (order.size() < LIVE_TARGET ? 60u : 40u)) {
            size_t size = size_t(1) << (rng() % MAX_SIZE_LOG);
            size += rng() % size;
            bool              oa = r % 10 == 0;
            buf               b;
            ggml_cpool_status st =
                ggml_cpool_alloc(pool, size, oa ? GGML_CPOOL_ALLOC_OVERALLOCATE : 0, &b.ptr, &b.size);
            if ((st == GGML_CPOOL_STATUS_OUT_OF_MEMORY && how != mode::shadow) ||
                (st == GGML_CPOOL_STATUS_DRIVER_ERROR && how == mode::faults)) {
                continue;
            }
            if (st != GGML_CPOOL_STATUS_OK) {
                failure = "alloc failed at op " + std::to_string(i) + ": " + show(m->s);
                break;
            }
            auto       addr = reinterpret_cast<uintptr_t>(b.ptr);
            // on a tight device the VMM pool serves a growing request it cannot double at its own
            // size: the model's stack follows
            const bool doubled = oa && !(vm && b.size < 2 * size);
            size_t     want    = m->alloc(size, doubled, addr);
            auto       next    = live.lower_bound(addr);
            if (b.size < size || (how == mode::shadow && b.size != want)) {
                failure = "actual size " + std::to_string(b.size) + ", model " + std::to_string(want);
            } else if (how == mode::shadow && vm && addr != vm->expect_ptr) {
                failure = "address differs from the model's stack";
            } else if ((next != live.end() && addr + b.size > next->first) ||
                       (next != live.begin() && std::prev(next)->first + std::prev(next)->second.size > addr)) {
                failure = "two live buffers overlap";
            }
            live[addr] = b;
            order.push_back(b);
        } else {
            size_t pick = r % 10 < RECENT_SHARE ? order.size() - 1 - rng() % std::min(order.size(), RECENT) :
                                                  rng() % order.size();
            buf    b    = order[pick];
            order.erase(order.begin() + std::ptrdiff_t(pick));
            live.erase(reinterpret_cast<uintptr_t>(b.ptr));
            if (ggml_cpool_free(pool, b.ptr, b.size) != GGML_CPOOL_STATUS_OK) {
                failure = "free failed";
            }
            m->free(reinterpret_cast<uintptr_t>(b.ptr), b.size);
        }
        ggml_cpool_stats s{};
        ggml_cpool_get_stats(pool, &s);
        if (!failure.empty()) {
        } else if (how == mode::shadow && !same(s, m->s)) {
            failure = "stats differ from the model at op " + std::to_string(i) + "\n  pool:  " + show(s) +
                      "\n  model: " + show(m->s);
        } else if (s.live_bytes + s.cached_bytes != s.reserved_bytes || s.reserved_bytes > capacity) {
            failure = "live + cached != reserved, or reserved > capacity";
        } else if (check_driver && s.reserved_bytes != ggml_cpool_driver_used(drv, 0)) {
            failure = "reserved differs from what the driver handed out";
        }
    }
    for (auto & b : order) {
        ggml_cpool_free(pool, b.ptr, b.size);
    }
    if (failure.empty() && how == mode::shadow && m->s.allocs < ops / 3) {
        failure = "only " + std::to_string(m->s.allocs) + " allocations in " + std::to_string(ops) + " operations";
    }
    if (check_driver && how == mode::tight) {
        ggml_cpool_stats s{};
        ggml_cpool_get_stats(pool, &s);
        printf("stress [%s, %zu MiB device]: %zu operations, %llu allocations, %llu OUT_OF_MEMORY, %llu LRU "
               "reclaims, %llu flushes\n",
               ggml_cpool_kind_str(kind), capacity / MiB, ops, (unsigned long long) s.allocs,
               (unsigned long long) s.oom_returned, (unsigned long long) s.lru_reclaims,
               (unsigned long long) s.flushes);
        if (failure.empty() && s.oom_returned + s.lru_reclaims + s.flushes == 0) {
            failure = "the tight device never ran out: the test lost its point";
        }
    } else if (check_driver) {
        printf("stress [%s]: %zu operations, %llu allocations (%llu hits), %llu driver allocations\n",
               ggml_cpool_kind_str(kind), ops, (unsigned long long) m->s.allocs, (unsigned long long) m->s.hits,
               (unsigned long long) m->s.driver_allocs);
    }
    ggml_cpool_ctx_free(ctx);
    return failure;
}

class Stress : public testing::TestWithParam<ggml_cpool_kind> {};

TEST_P(Stress, MillionOperationsMatchTheShadowModel) {
    sim_device device(sim_params(CAPACITY));
    EXPECT_EQ(stress(device.drv, GetParam(), OPS, 42, true), "");
    RecordProperty("operations", int(OPS));
}

TEST_P(Stress, MillionOperationsOnATightDeviceKeepTheInvariants) {
    sim_device device(sim_params(TIGHT_CAPACITY));
    EXPECT_EQ(stress(device.drv, GetParam(), OPS, 7, true, mode::tight), "");
}

TEST_P(Stress, ThreadsEachWithTheirOwnContextShareOneDriver) {
    sim_device               device(sim_params(CAPACITY));
    ggml_cpool_driver_t      drv = device.drv;
    std::vector<std::string> failures(THREADS);
    std::vector<std::thread> threads;
    for (int t = 0; t < THREADS; t++) {
        threads.emplace_back([&, t] { failures[size_t(t)] = stress(drv, GetParam(), THREAD_OPS, 100 + t, false); });
    }
    for (auto & t : threads) {
        t.join();
    }
    for (int t = 0; t < THREADS; t++) {
        EXPECT_EQ(failures[size_t(t)], "") << "thread " << t;
    }
    EXPECT_EQ(ggml_cpool_driver_used(drv, 0), 0u);
}

// the async kind shares the device's stream-ordered pool, so only the invariants are checked:
// with pool-usage reads failing now and then, its reserved bytes still cover what is live
TEST(StressAsync, ThreadsOverOneFaultInjectingDriverKeepTheInvariants) {
    sim_device          device(sim_params(TIGHT_CAPACITY));
    ggml_cpool_driver_t fault = nullptr;
    ASSERT_EQ(ggml_cpool_driver_fault_create(device.drv, "prob=0.5;on=attr;seed=11", &fault), GGML_CPOOL_STATUS_OK);
    std::vector<std::string> failures(THREADS);
    std::vector<std::thread> threads;
    for (int t = 0; t < THREADS; t++) {
        threads.emplace_back([&, t] {
            failures[size_t(t)] = stress(fault, GGML_CPOOL_KIND_ASYNC, THREAD_OPS, 200 + t, false, mode::faults);
        });
    }
    for (auto & t : threads) {
        t.join();
    }
    for (int t = 0; t < THREADS; t++) {
        EXPECT_EQ(failures[size_t(t)], "") << "thread " << t;
    }
    EXPECT_GT(ggml_cpool_driver_faults_fired(fault), 0u);
    ggml_cpool_driver_release(fault);
}

INSTANTIATE_TEST_SUITE_P(Sim, Stress,
                         testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM),
                         kind_name);

} // namespace
