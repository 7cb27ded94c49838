// The pools' inner structures against plain standard-library models, over random operations:
// the live set (pointer -> size, open addressing), the legacy pool's size bins (best fit) and the
// small list its bins keep their buffers in.

#include "../ggml-cuda/pools/live-set.h"
#include "../ggml-cuda/pools/pool.h"
#include "../ggml-cuda/pools/size-bins.h"
#include "../ggml-cuda/pools/small-list.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

namespace {

constexpr int      OPS  = 200000;
constexpr uint64_t SEED = 12345;

void * fake_ptr(uint64_t i) {
    return reinterpret_cast<void *>(uintptr_t(0x7f0000000000ull + i * 256));
}

TEST(LiveSet, MatchesAHashMapOverRandomInsertsAndErases) {
    gcp::live_set                      set;
    std::unordered_map<void *, size_t> model;
    std::mt19937_64                    rng(SEED);
    for (int op = 0; op < OPS; op++) {
        void * p = fake_ptr(rng() % 4096);
        if (rng() % 2 == 0 && model.count(p) == 0) {
            set.reserve(model.size() + 1);
            size_t size = 1 + rng() % 1000;
            set.insert(p, size);
            model[p] = size;
        } else {
            EXPECT_EQ(set.erase(p), model.erase(p) == 1);
        }
        if (op % 1000 == 0) {
            ASSERT_EQ(set.size(), model.size());
            for (auto & kv : model) {
                const size_t * s = set.find(kv.first);
                ASSERT_NE(s, nullptr);
                ASSERT_EQ(*s, kv.second);
            }
            size_t seen = 0;
            set.for_each([&](const void * ptr, size_t size) {
                seen++;
                EXPECT_EQ(model.at(const_cast<void *>(ptr)), size);
            });
            EXPECT_EQ(seen, model.size());
        }
    }
    EXPECT_EQ(set.find(fake_ptr(5000)), nullptr);
}

TEST(LiveSet, NullIsNeverFoundNorErased) {
    gcp::live_set set;
    set.reserve(1);
    set.insert(fake_ptr(1), 64);
    EXPECT_EQ(set.find(nullptr), nullptr) << "an empty slot is not a buffer";
    EXPECT_FALSE(set.erase(nullptr));
    EXPECT_EQ(set.size(), 1u);
}

// a small list of up to 2 elements inline, and its copy in a vector, agree through random growth,
// pushes, pops, order-keeping erases and moves, from inline to the heap and back to empty
TEST(SmallList, MatchesAVectorThroughGrowthErasesAndMoves) {
    using list = gcp::small_list<uint64_t, 2>;
    std::vector<list>                  lists(4);
    std::vector<std::vector<uint64_t>> models(lists.size());
    std::mt19937_64                    rng(SEED);
    for (int op = 0; op < OPS / 10; op++) {
        const size_t            i = rng() % lists.size();
        list &                  l = lists[i];
        std::vector<uint64_t> & m = models[i];
        switch (rng() % 6) {
            case 0:
            case 1: // a push, within the room reserve() makes (a bin's pattern)
                l.reserve(m.size() + 1);
                l.push_back(rng());
                m.push_back(l.back());
                break;
            case 2:
                if (!m.empty()) {
                    l.pop_back();
                    m.pop_back();
                }
                break;
            case 3:
                if (!m.empty()) {
                    const size_t at = rng() % m.size();
                    l.erase(at);
                    m.erase(m.begin() + long(at));
                }
                break;
            case 4: { // moved, inline or on the heap, over another list, whose elements go
                const size_t j = (i + 1 + rng() % (lists.size() - 1)) % lists.size();
                list         moved(std::move(l));
                ASSERT_TRUE(l.empty()) << "a moved-from list is empty";
                lists[j]  = std::move(moved);
                models[j] = m;
                m.clear();
                ASSERT_EQ(std::vector<uint64_t>(lists[j].begin(), lists[j].end()), models[j]);
                break;
            }
            default: // emptied
                while (!m.empty()) {
                    l.pop_back();
                    m.pop_back();
                }
        }
        ASSERT_EQ(std::vector<uint64_t>(l.begin(), l.end()), m) << "after op " << op;
    }
}

TEST(Headroom, TheBudgetIsPeakPlusThePercentAndSaturates) {
    EXPECT_EQ(gcp::headroom_budget(400, 25), 500u);
    EXPECT_EQ(gcp::headroom_budget(400, 0), 400u);
    EXPECT_EQ(gcp::headroom_budget(size_t(1) << 40, 100), size_t(1) << 41);
    EXPECT_EQ(gcp::headroom_budget(400, GGML_CPOOL_HEADROOM_UNLIMITED), SIZE_MAX) << "no bound";
    // a percent short of unlimited over a large peak: past SIZE_MAX, so no bound, not a wrap
    EXPECT_EQ(gcp::headroom_budget(SIZE_MAX / 4, GGML_CPOOL_HEADROOM_UNLIMITED - 1), SIZE_MAX);
}

// how often each operation comes, out of their sum
struct op_mix {
    uint64_t allocs, frees, removals;
};

// a buffer handed out, and whether a growing request holds it
struct out_buffer {
    void * ptr;
    size_t size;
    bool   growing;
};

// random takes, puts and removals over buffers of the given sizes, checked against an ordered model;
// a random half of the buffers handed out are held by growing requests, which each free must see
void check_best_fit(const std::vector<size_t> & sizes, op_mix mix) {
    gcp::size_bins                bins;
    std::multimap<size_t, void *> model; // cached: size -> ptr
    std::map<void *, uint64_t>    stamp; // a cached buffer's
    std::vector<out_buffer>       out;   // handed out
    std::mt19937_64               rng(SEED);
    uint64_t                      next = 0, clock = 0;
    for (int op = 0; op < OPS; op++) {
        const uint64_t pick = rng() % (mix.allocs + mix.frees + mix.removals);
        switch (pick < mix.allocs ? 0 : pick < mix.allocs + mix.frees ? 1 : 2) {
            case 0: { // alloc: best fit, else a fresh buffer of a size near the request
                size_t                 want = sizes[rng() % sizes.size()] - rng() % 200;
                gcp::size_bins::buffer b{};
                auto                   fit = model.lower_bound(want);
                bool                   hit = bins.take(want, &b);
                ASSERT_EQ(hit, fit != model.end());
                if (hit) {
                    ASSERT_EQ(b.size, fit->first) << "the smallest cached size at or above the request";
                    auto     range  = model.equal_range(b.size);
                    uint64_t newest = 0;
                    for (auto it = range.first; it != range.second; ++it) {
                        newest = std::max(newest, stamp[it->second]);
                    }
                    ASSERT_EQ(b.last_use, newest) << "the newest of its size";
                    ASSERT_EQ(stamp[b.ptr], newest);
                    auto e = std::find_if(range.first, range.second, [&](auto & kv) { return kv.second == b.ptr; });
                    ASSERT_NE(e, range.second);
                    model.erase(e);
                    const bool growing = rng() % 2 == 0;
                    if (growing) {
                        bins.hold_for_growth(b);
                    }
                    out.push_back({ b.ptr, b.size, growing });
                } else {
                    size_t     size    = sizes[rng() % sizes.size()];
                    const bool growing = rng() % 2 == 0;
                    bins.reserve(size);
                    bins.lend(fake_ptr(next), size, growing);
                    out.push_back({ fake_ptr(next++), size, growing });
                }
                break;
            }
            case 1: // free into the cache
                if (!out.empty()) {
                    size_t i = rng() % out.size();
                    ASSERT_FALSE(bins.find_out(out[i].ptr, out[i].size + 1).found()) << "a wrong size";
                    ASSERT_EQ(bins.size_out(out[i].ptr), out[i].size);
                    auto at = bins.find_out(out[i].ptr, out[i].size);
                    ASSERT_TRUE(at.found());
                    ASSERT_EQ(at.growing, out[i].growing) << "whether a growing request held it";
                    bins.put(at, ++clock);
                    ASSERT_FALSE(bins.find_out(out[i].ptr, out[i].size).found()) << "cached, no longer out";
                    model.insert({ out[i].size, out[i].ptr });
                    stamp[out[i].ptr] = clock;
                    out[i]            = out.back();
                    out.pop_back();
                }
                break;
            default: // a cached buffer goes to the driver, or one that was out does
                if (!model.empty() && rng() % 2 == 0) {
                    auto it = std::next(model.begin(), long(rng() % model.size()));
                    ASSERT_TRUE(bins.remove(it->second, it->first));
                    model.erase(it);
                } else if (!out.empty()) {
                    size_t i = rng() % out.size();
                    bins.forget(bins.find_out(out[i].ptr, out[i].size));
                    out[i] = out.back();
                    out.pop_back();
                }
        }
        if (op % 1000 == 0) {
            ASSERT_EQ(bins.count(), model.size());
            size_t bytes = 0;
            for (auto & kv : model) {
                bytes += kv.first;
            }
            ASSERT_EQ(bins.bytes(), bytes);
            std::map<void *, size_t> recorded, handed;
            for (const out_buffer & o : out) {
                handed[o.ptr] = o.size;
            }
            bins.for_each_out([&](void * p, size_t s) { recorded[p] = s; });
            ASSERT_EQ(recorded, handed) << "the bins record exactly the buffers out";
        }
    }
}

TEST(SizeBins, BestFitMatchesAnOrderedModelWithFewSizes) { // lower() counts
    check_best_fit({ 256, 512, 768, 4096, 65536, 1 << 20, 3 << 20, 8 << 20 }, { 1, 2, 1 });
}

TEST(SizeBins, BestFitMatchesAnOrderedModelWithManySizes) { // lower() searches
    std::vector<size_t> sizes;
    for (size_t size = 4096; sizes.size() < 96; size += size / 8 / 256 * 256 + 256) {
        sizes.push_back(size);
    }
    // more allocs than frees: buffers pile up out of the cache, so every size keeps its bin
    check_best_fit(sizes, { 4, 3, 1 });
}

// buffers of one size, each lent and put back at the given stamp, in this order
void put_back_at(gcp::size_bins & bins, size_t size, const std::vector<std::pair<uint64_t, uint64_t>> & ptr_stamps) {
    for (auto [p, at] : ptr_stamps) {
        bins.reserve(size);
        bins.lend(fake_ptr(p), size);
    }
    for (auto [p, at] : ptr_stamps) {
        bins.put(bins.find_out(fake_ptr(p), size), at);
    }
}

TEST(SizeBins, OfOneSizeTheNewestComesFirstWhereverItWaits) {
    // 1 and 2 take the two slots; 3 goes to the bin, the slots being fresh; 4, long after, takes
    // the place of the stalest slot, 1, whose buffer joins the bin below 3, which came back later
    constexpr size_t       SIZE = 4096;
    gcp::size_bins         bins;
    gcp::size_bins::buffer b{};
    put_back_at(bins, SIZE, { { 1, 10 }, { 2, 20 }, { 3, 30 }, { 4, 1000 } });
    EXPECT_EQ(bins.count(), 4u);
    EXPECT_EQ(bins.bytes(), 4 * SIZE);
    for (uint64_t want : { 4, 3, 2, 1 }) {
        ASSERT_TRUE(bins.take(SIZE, &b));
        EXPECT_EQ(b.ptr, fake_ptr(want)) << "the newest cached first";
    }
    EXPECT_FALSE(bins.take(SIZE, &b));
}

TEST(SizeBins, ABufferOneBinServesTimeAfterTimeTakesASlotFromTwoFreshOnes) {
    // 1 and 2, large, take the slots, fresh; 3 and 4, small, wait in their bins. Small requests
    // are the bins' (3 or 4 is their best fit): two sizes by turns leave the slots as they are;
    // one size over and over, after a run, gives 3 the older slot's place, and the next request
    // of its size is a slot's, its free back on the hit line
    constexpr size_t       LARGE = 1 << 20, LARGER = 2 << 20, SMALL = 8192, OTHER = 16384;
    gcp::size_bins         bins;
    gcp::size_bins::buffer b{};
    uint64_t               clock = 1;
    put_back_at(bins, LARGE, { { 1, clock++ } });
    put_back_at(bins, LARGER, { { 2, clock++ } });
    put_back_at(bins, SMALL, { { 3, clock++ } });
    put_back_at(bins, OTHER, { { 4, clock++ } });
    // a take and its free; whether the free came back to a slot
    auto pair = [&](size_t want) {
        EXPECT_TRUE(bins.take(want, &b));
        if (bins.put_slotted(b.ptr, b.size, ++clock)) {
            return true;
        }
        bins.put(bins.find_out(b.ptr, b.size), clock);
        return false;
    };
    EXPECT_TRUE(pair(LARGE - 100));
    EXPECT_TRUE(pair(LARGER - 100));
    for (int i = 0; i < 32; i++) { // a tick a pair here: no slot goes stale in this test
        EXPECT_FALSE(pair(i % 2 == 0 ? SMALL - 100 : OTHER - 100)) << "a mix keeps the slots' buffers";
    }
    EXPECT_TRUE(pair(LARGE - 100));
    EXPECT_TRUE(pair(LARGER - 100));
    int pairs = 1;
    while (!pair(SMALL - 100) && pairs < 64) {
        pairs++;
    }
    EXPECT_GT(pairs, 1) << "one take the bins serve leaves the slots as they are";
    EXPECT_LT(pairs, 64) << "the bins served every small request";
    EXPECT_EQ(b.ptr, fake_ptr(3));
    ASSERT_TRUE(bins.take(LARGE - 100, &b));
    EXPECT_EQ(b.ptr, fake_ptr(1)) << "the buffer that left its slot is in its bin, still the best fit";
    EXPECT_EQ(bins.count(), 3u);
}

TEST(SizeBins, AnOutgrownBufferTakesNoFreshSlotAfterARun) {
    // 1 and 2 in the slots, fresh; 3 in its bin; 5 out. Three takes from 3's bin make a run; 5
    // then comes back stamped below the slots (as note_growth stamps an outgrown buffer, to go
    // first) and waits in its bin: a run's place is for a buffer newer than the slot's
    constexpr size_t       LARGE = 1 << 20, LARGER = 2 << 20, SMALL = 8192, MID = 65536;
    gcp::size_bins         bins;
    gcp::size_bins::buffer b{};
    put_back_at(bins, LARGE, { { 1, 10 } });
    put_back_at(bins, LARGER, { { 2, 11 } });
    put_back_at(bins, SMALL, { { 3, 12 } });
    bins.reserve(MID);
    bins.lend(fake_ptr(5), MID);
    uint64_t clock = 20;
    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(bins.take(SMALL - 100, &b));
        ASSERT_EQ(b.ptr, fake_ptr(3));
        if (i < 2) {
            bins.put(bins.find_out(b.ptr, b.size), ++clock);
        }
    }
    bins.put(bins.find_out(fake_ptr(5), MID), 1);
    ASSERT_TRUE(bins.take(MID - 100, &b));
    EXPECT_EQ(b.ptr, fake_ptr(5));
    EXPECT_FALSE(bins.put_slotted(fake_ptr(5), MID, ++clock)) << "it waited in its bin, not in a slot";
}

TEST(SizeBins, ABufferBackInItsSlotIsCachedNotOut) {
    gcp::size_bins         bins;
    gcp::size_bins::buffer b{};
    put_back_at(bins, 8192, { { 1, 1 } });
    ASSERT_TRUE(bins.take(100, &b));
    EXPECT_EQ(bins.size_out(fake_ptr(1)), 8192u);
    EXPECT_FALSE(bins.put_slotted(fake_ptr(1), 4096, 2)) << "a wrong size";
    EXPECT_TRUE(bins.put_slotted(fake_ptr(1), 8192, 2));
    EXPECT_FALSE(bins.put_slotted(fake_ptr(1), 8192, 3)) << "freed twice";
    EXPECT_FALSE(bins.find_out(fake_ptr(1), 8192).found());
    EXPECT_EQ(bins.size_out(fake_ptr(1)), gcp::size_bins::NONE);
    EXPECT_FALSE(bins.put_slotted(nullptr, 0, 4)) << "an empty slot";
    EXPECT_TRUE(bins.remove(fake_ptr(1), 8192));
    EXPECT_EQ(bins.count(), 0u);
    EXPECT_FALSE(bins.take(100, &b));
}

TEST(SizeBins, AnUnreservedSizeLeavesNoBin) {
    gcp::size_bins         bins;
    gcp::size_bins::buffer b{};
    bins.reserve(1024);
    bins.unreserve(1024); // the driver allocation failed
    EXPECT_FALSE(bins.take(1, &b));
    bins.reserve(2048);
    bins.lend(fake_ptr(1), 2048);
    bins.put(bins.find_out(fake_ptr(1), 2048), 1);
    EXPECT_FALSE(bins.remove(fake_ptr(2), 2048));
    EXPECT_TRUE(bins.take(1024, &b));
    EXPECT_EQ(b.ptr, fake_ptr(1));
}

} // namespace
