// PyTorch's pluggable allocator (integrations/pytorch) on the sim driver: each stream PyTorch
// passes gets a pool of its own, a buffer goes back to its allocation's pool, a free on another
// stream waits for that stream first, a stream beyond the slots is refused (or takes an idle
// slot), a request the device cannot hold is refused in PyTorch's words after the device's other
// pools gave back their cache, the statistics lines, the settings, and bad input.

#include "harness.h"
#include "torch-allocator.h"
#include "torch-settings.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <regex>
#include <thread>
#include <unistd.h>

using namespace harness;
using gcp_torch::refusal;
using gcp_torch::slot_map;
using gcp_torch::torch_allocator;

namespace {

constexpr size_t CAPACITY = 256 * MiB;
constexpr size_t SIZE     = 1 * MiB;
constexpr size_t GiB      = 1024 * MiB;
constexpr int    STREAMS  = slot_map::SLOTS + 1; // one more than a device has slots

// a sim device, its streams, a context for PyTorch and the allocator over it
class TorchFixture {
  protected:
    void open(ggml_cpool_kind kind, int devices = 1) {
        ggml_cpool_sim_params sim = sim_params(CAPACITY, devices);
        ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &sim, &drv_), GGML_CPOOL_STATUS_OK);
        for (void *& s : streams_) {
            ASSERT_EQ(ggml_cpool_driver_stream_create(drv_, 0, &s), GGML_CPOOL_STATUS_OK);
        }
        ggml_cpool_ctx_params p = gcp_torch::context_params();
        p.driver                = drv_;
        std::fill(std::begin(p.kind), std::end(p.kind), kind);
        ASSERT_EQ(ggml_cpool_ctx_create(&p, &ctx_), GGML_CPOOL_STATUS_OK);
        gcp_torch::platform platform;
        platform.default_stream = streams_[0]; // what PyTorch's null stream stands for
        platform.wait_stream    = [this](int device, void * stream) {
            waits_.emplace_back(device, stream);
            if (on_wait_) {
                on_wait_();
            }
            return wait_ok_;
        };
        platform.log    = [this](const char * line) { lines_.emplace_back(line); };
        platform.memory = [this](int device, size_t * free, size_t * total) {
            *total = CAPACITY;
            *free  = CAPACITY - ggml_cpool_driver_used(drv_, device);
            return true;
        };
        alloc_ = std::make_unique<torch_allocator>(ctx_, platform);
    }
    void close() {
        alloc_.reset();
        ggml_cpool_ctx_free(ctx_);
        for (void * s : streams_) {
            EXPECT_EQ(ggml_cpool_driver_stream_destroy(drv_, 0, s), GGML_CPOOL_STATUS_OK);
        }
        EXPECT_EQ(ggml_cpool_driver_outstanding(drv_), 0u) << "driver memory left after the context was freed";
        ggml_cpool_driver_release(drv_);
    }

    // a buffer, or nullptr with the reason in why_
    void * take(void * stream, size_t size = SIZE, int device = 0) {
        why_ = {};
        return alloc_->alloc(size, device, stream, &why_);
    }
    void             give(void * ptr, void * stream, size_t size = SIZE) { alloc_->free(ptr, size, 0, stream); }
    ggml_cpool_stats slot_stats(int slot, int device = 0) {
        ggml_cpool_t pool = nullptr;
        EXPECT_EQ(ggml_cpool_ctx_get_slot_pool(ctx_, device, slot, &pool), GGML_CPOOL_STATUS_OK);
        return stats_of(pool);
    }
    size_t lines_matching(const std::string & pattern) const {
        std::regex re(pattern);
        return size_t(std::count_if(lines_.begin(), lines_.end(), [&](auto & l) { return std::regex_search(l, re); }));
    }

    bool starts_with(const std::string & prefix) const { return std::string(why_.message).rfind(prefix, 0) == 0; }
    bool says(const std::string & part) const { return std::string(why_.message).find(part) != std::string::npos; }

    ggml_cpool_driver_t                 drv_              = nullptr;
    ggml_cpool_ctx_t                    ctx_              = nullptr;
    void *                              streams_[STREAMS] = {};
    std::unique_ptr<torch_allocator>    alloc_;
    std::vector<std::pair<int, void *>> waits_;
    std::function<void()>               on_wait_;
    bool                                wait_ok_ = true;
    std::vector<std::string>            lines_;
    gcp_torch::refusal                  why_;
};

class TorchStreams : public TorchFixture, public testing::TestWithParam<ggml_cpool_kind> {
  protected:
    void SetUp() override { open(GetParam()); }
    void TearDown() override { close(); }
};

class Torch : public TorchFixture, public testing::Test {
  protected:
    void SetUp() override { open(GGML_CPOOL_KIND_LEGACY); }
    void TearDown() override { close(); }
};

TEST_P(TorchStreams, ABufferFreedOnOneStreamIsNotHandedToAnother) {
    void * a = streams_[1], *b = streams_[2];
    void * on_b = take(b);
    ASSERT_NE(on_b, nullptr);
    give(on_b, b);
    void * on_a = take(a);
    ASSERT_NE(on_a, nullptr);
    EXPECT_NE(on_a, on_b) << "B's freed buffer went to A's kernels without a synchronize";
    EXPECT_TRUE(waits_.empty());
    if (GetParam() != GGML_CPOOL_KIND_ASYNC) { // the control: B's own pool hands it back to B
        void * again = take(b);
        EXPECT_EQ(again, on_b);
        give(again, b);
    }
    give(on_a, a);
    EXPECT_EQ(alloc_->stats_lines().size(), 2u) << "one pool per stream";
    EXPECT_EQ(alloc_->live_buffers(), 0u);
}

TEST_P(TorchStreams, BuffersAreAlignedAsPyTorchsOwn) {
    constexpr size_t TORCH_ALIGNMENT = 512, SMALL = 100; // a VMM pool packs blocks of this at 128
    void *           p[4];
    for (void *& q : p) {
        q = take(streams_[0], SMALL);
        ASSERT_NE(q, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % TORCH_ALIGNMENT, 0u) << q;
    }
    for (void * q : p) {
        give(q, streams_[0], SMALL);
    }
    EXPECT_TRUE(lines_.empty());
}

// what PyTorch's own allocator promises: torch.OutOfMemoryError (the library raises this refusal),
// and the process goes on: the pool as it was, the next allocation served
TEST_P(TorchStreams, ARequestLargerThanTheDeviceIsRefusedForWantOfMemoryAndTheNextIsServed) {
    log_capture quiet; // the pool's own line
    void *      held = take(streams_[0]);
    ASSERT_NE(held, nullptr);
    const ggml_cpool_stats before = slot_stats(0);
    EXPECT_EQ(take(streams_[0], 2 * CAPACITY), nullptr);
    EXPECT_EQ(why_.what, refusal::kind::out_of_memory) << why_.message;
    EXPECT_TRUE(
        starts_with("CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 256.00 MiB"))
        << why_.message;
    const ggml_cpool_stats after = slot_stats(0);
    EXPECT_EQ(after.live_bytes, before.live_bytes);
    EXPECT_GE(after.reserved_bytes, after.live_bytes);
    EXPECT_EQ(after.oom_returned, before.oom_returned + 1) << "no other pool to trim: no retry";
    void * next = take(streams_[0]);
    EXPECT_NE(next, nullptr) << why_.message;
    give(next, streams_[0]);
    give(held, streams_[0]);
    EXPECT_EQ(alloc_->live_buffers(), 0u);
}

HARNESS_INSTANTIATE(TorchStreams,
                    testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM,
                                    GGML_CPOOL_KIND_ASYNC),
                    kind_name);

TEST_F(Torch, AFreeOnAnotherStreamWaitsForItThenGoesBackToTheAllocationsPool) {
    void * a = streams_[1], *b = streams_[2];
    void * p = take(a); // a's stream is the first bound: slot 0
    ASSERT_NE(p, nullptr);
    size_t live_during_wait = 0;
    on_wait_                = [&] { live_during_wait = slot_stats(0).live_bytes; };
    give(p, b);
    ASSERT_EQ(waits_.size(), 1u);
    EXPECT_EQ(waits_[0].second, b) << "the freeing stream is the one synchronized";
    EXPECT_GT(live_during_wait, 0u) << "the buffer was reusable before the freeing stream's work was done";
    EXPECT_EQ(slot_stats(0).live_bytes, 0u);
    ASSERT_EQ(alloc_->stats_lines().size(), 1u) << "no pool for the freeing stream";
    EXPECT_NE(alloc_->stats_lines()[0].find("cross_stream_frees=1"), std::string::npos) << alloc_->stats_lines()[0];
    void * again = take(a);
    EXPECT_EQ(again, p) << "it went back to the pool of its allocation's stream";
    give(again, a);
    EXPECT_EQ(waits_.size(), 1u) << "a free on the allocation's own stream waits for nothing";
}

TEST_F(Torch, AFreeOnAStreamThatCannotBeSynchronizedKeepsTheBufferLive) {
    void * p = take(streams_[1]);
    wait_ok_ = false;
    give(p, streams_[2]);
    EXPECT_EQ(alloc_->live_buffers(), 1u);
    EXPECT_GT(slot_stats(0).live_bytes, 0u);
    EXPECT_EQ(lines_matching("could not be synchronized"), 1u);
    give(p, streams_[1]); // its own stream: fine
    EXPECT_EQ(alloc_->live_buffers(), 0u);
}

TEST_F(Torch, TheNullStreamIsTheDefaultStreamBorrowed) {
    const uint64_t streams = ggml_cpool_driver_calls(drv_, GGML_CPOOL_CALL_STREAM);
    void *         p       = take(nullptr);
    ASSERT_NE(p, nullptr);
    void * s = nullptr;
    ASSERT_EQ(ggml_cpool_ctx_stream(ctx_, 0, &s), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(s, streams_[0]) << "slot 0 borrows the default stream's stand-in";
    EXPECT_EQ(ggml_cpool_driver_calls(drv_, GGML_CPOOL_CALL_STREAM), streams) << "no stream of the context's own";
    give(p, streams_[0]); // the same stream, named explicitly
    EXPECT_TRUE(waits_.empty());
    void * again = take(nullptr);
    EXPECT_EQ(again, p);
    give(again, nullptr);
    EXPECT_EQ(alloc_->live_buffers(), 0u);
}

TEST_F(Torch, AStreamBeyondTheSlotsIsRefusedWhileEverySlotIsLive) {
    void * held[slot_map::SLOTS];
    for (int i = 0; i < slot_map::SLOTS; i++) {
        held[i] = take(streams_[i]);
        ASSERT_NE(held[i], nullptr) << "stream " << i;
    }
    void * extra = streams_[slot_map::SLOTS];
    EXPECT_EQ(take(extra), nullptr);
    EXPECT_EQ(why_.what, gcp_torch::refusal::kind::failure);
    EXPECT_NE(std::string(why_.message).find("no stream slot left"), std::string::npos) << why_.message;

    // one stream's buffers all freed: its slot, and pool, move to the new stream after the old
    // stream is synchronized, so its cached buffer is safe to hand out there
    const int idle = 3;
    give(held[idle], streams_[idle]);
    const uint64_t on_idle = ggml_cpool_sim_stream_calls(drv_, 0, streams_[idle]);
    void *         p       = take(extra);
    EXPECT_EQ(p, held[idle]);
    EXPECT_GT(ggml_cpool_sim_stream_calls(drv_, 0, streams_[idle]), on_idle) << "the old stream was synchronized";
    EXPECT_EQ(take(streams_[idle]), nullptr) << "its slot is the new stream's now, and every slot is live";
    give(p, extra);
    for (int i = 0; i < slot_map::SLOTS; i++) {
        if (i != idle) {
            give(held[i], streams_[i]);
        }
    }
    EXPECT_EQ(alloc_->live_buffers(), 0u);
}

TEST_F(Torch, StatisticsLineForEachPool) {
    void * p = take(streams_[0]);
    give(p, streams_[0]);
    p = take(streams_[0]);
    give(p, streams_[0]);
    std::vector<std::string> lines = alloc_->stats_lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_TRUE(
        std::regex_match(lines[0], std::regex("ggml-cuda-pool stats: device=0 slot=0 pool=legacy allocs=2 hits=1 "
                                              "driver_allocs=1 driver_frees=0 live_mib=0\\.00 peak_live_mib=1\\.05 "
                                              "peak_reserved_mib=1\\.05 peak_requested_mib=1\\.00 syncs=[0-9]+ "
                                              "cross_stream_frees=0 streams=1 neighbour_asks=0 "
                                              "neighbour_received_mib=0\\.00 neighbour_ask_ms=0\\.0 neighbour_gives=0 "
                                              "neighbour_given_mib=0\\.00 call_ms=0\\.000000")))
        << lines[0];
}

TEST_F(Torch, TheLineCountsTheTimeInThePoolsCallsWhileTimingIsOn) {
    ggml_cpool_timing_set(1);
    give(take(streams_[0]), streams_[0]);
    ggml_cpool_timing_set(0);
    const std::string timed = alloc_->stats_lines()[0];
    give(take(streams_[0]), streams_[0]);
    const std::string after = alloc_->stats_lines()[0];
    std::smatch       ms;
    ASSERT_TRUE(std::regex_search(timed, ms, std::regex(" call_ms=([0-9.]+)$"))) << timed;
    EXPECT_GT(std::stod(ms[1]), 0.0) << timed;
    EXPECT_EQ(after.substr(after.rfind(" call_ms=")), timed.substr(timed.rfind(" call_ms="))) << "timing off";
}

TEST_F(Torch, BadFreesAreRefusedWithALine) {
    void * p = take(streams_[0]);
    int    x = 0;
    give(&x, streams_[0]);
    EXPECT_EQ(lines_matching("not a live buffer"), 1u);
    give(p, streams_[0], SIZE + 1);
    EXPECT_EQ(lines_matching("kept live"), 1u);
    alloc_->free(p, SIZE, 1, streams_[0]);
    EXPECT_EQ(lines_matching("kept live"), 2u) << "the wrong device";
    EXPECT_EQ(alloc_->live_buffers(), 1u);
    give(p, streams_[0]);
    EXPECT_EQ(alloc_->live_buffers(), 0u);
    give(p, streams_[0]);
    EXPECT_EQ(lines_matching("not a live buffer"), 2u) << "a double free";
}

TEST_F(Torch, ZeroBytesAndBadDevicesGiveNull) {
    log_capture module_lines; // the module's own line for the device it does not have
    EXPECT_EQ(take(streams_[0], 0), nullptr);
    give(nullptr, streams_[0]);
    EXPECT_TRUE(lines_.empty()) << "as PyTorch's own allocator: nothing to say";
    for (int device : { 1, -1, slot_map::DEVICES }) { // the sim has one device
        EXPECT_EQ(take(streams_[0], SIZE, device), nullptr) << device;
        EXPECT_EQ(why_.what, gcp_torch::refusal::kind::failure) << device;
        EXPECT_NE(why_.message[0], '\0') << device;
    }
    EXPECT_TRUE(lines_.empty()) << "a refusal is raised by the library, not logged";
    EXPECT_EQ(alloc_->live_buffers(), 0u);
}

// PyTorch's allocator empties its cache (every stream's, torch.cuda.empty_cache()) and retries
// before it raises; without that, memory another stream's pool caches would refuse this one
TEST_F(Torch, ARefusedRequestIsServedOnceTheDevicesOtherStreamPoolsGaveBackTheirCache) {
    log_capture      quiet;           // the pool's own line, before the retry
    constexpr size_t BIG = 150 * MiB; // two do not fit the device's 256 MiB
    void *           a   = take(streams_[1], BIG);
    ASSERT_NE(a, nullptr);
    give(a, streams_[1], BIG); // cached by stream 1's pool (slot 0)
    ASSERT_GE(slot_stats(0).cached_bytes, BIG);
    void * b = take(streams_[2], BIG);
    ASSERT_NE(b, nullptr) << why_.message;
    EXPECT_EQ(slot_stats(0).reserved_bytes, 0u) << "stream 1's pool gave its cache back";
    const ggml_cpool_stats st = slot_stats(1);
    EXPECT_EQ(st.oom_returned, 1u) << "refused by its pool once, then served by the retry";
    EXPECT_EQ(st.live_bytes + st.cached_bytes, st.reserved_bytes);
    give(b, streams_[2], BIG);
}

TEST_F(Torch, ARefusalAfterTheRetryNamesTheSizeTheDeviceAndThePools) {
    void * held  = take(streams_[0]); // 1 MiB live on stream 0's pool (slot 0)
    void * other = take(streams_[1]);
    give(other, streams_[1]); // 1.05 MiB cached on stream 1's (slot 1)
    const ggml_cpool_stats before = slot_stats(0);
    log_capture            module_lines;
    EXPECT_EQ(take(streams_[0], 300 * MiB), nullptr);
    EXPECT_EQ(why_.what, refusal::kind::out_of_memory);
    // PyTorch's own words first, then the pools'
    const std::string held_text = gcp_torch::format_size(before.live_bytes).text; // 1.05 MiB: the pool's rounding
    const std::string free_text = gcp_torch::format_size(CAPACITY - before.live_bytes).text;
    EXPECT_TRUE(
        starts_with("CUDA out of memory. Tried to allocate 300.00 MiB. GPU 0 has a total capacity of 256.00 MiB "
                    "of which " +
                    free_text + " is free."))
        << why_.message;
    EXPECT_TRUE(says("legacy pool holds " + held_text + ", " + held_text + " of it in use by tensors")) << why_.message;
    EXPECT_TRUE(says("the 1 other stream pool of GPU 0 gave back " + held_text + " when trimmed")) << why_.message;
    const std::vector<std::string> warned = module_lines.lines(GGML_CPOOL_LOG_WARN);
    ASSERT_FALSE(warned.empty());
    EXPECT_TRUE(says("The pool's reason: " + warned.back())) << "the pool's own line, of the retry: " << why_.message;
    EXPECT_EQ(slot_stats(1).reserved_bytes, 0u);
    const ggml_cpool_stats after = slot_stats(0);
    EXPECT_EQ(after.oom_returned, before.oom_returned + 2) << "refused, then refused again by the one retry";
    EXPECT_EQ(after.live_bytes, before.live_bytes);
    EXPECT_EQ(after.live_bytes + after.cached_bytes, after.reserved_bytes);
    EXPECT_EQ(alloc_->live_buffers(), 1u);
    give(held, streams_[0]);
}

TEST_F(Torch, NothingToGiveBackMeansNoRetry) {
    log_capture quiet;
    EXPECT_EQ(take(streams_[0], 300 * MiB), nullptr);
    EXPECT_TRUE(says("no other stream has a pool on GPU 0")) << why_.message;
    EXPECT_EQ(slot_stats(0).oom_returned, 1u);
}

TEST_F(Torch, ARequestPastWhatASizeCanHoldIsRefusedForWantOfMemory) {
    EXPECT_EQ(take(streams_[0], SIZE_MAX), nullptr);
    EXPECT_EQ(why_.what, refusal::kind::out_of_memory);
    EXPECT_TRUE(starts_with("CUDA out of memory. Tried to allocate ")) << why_.message;
}

TEST_F(Torch, ThreadsAllocateAndFreeEachOthersBuffers) {
    constexpr int                    THREADS = 4, ROUNDS = 500;
    std::vector<std::vector<void *>> made(THREADS);
    std::vector<std::thread>         workers;
    for (int t = 0; t < THREADS; t++) {
        workers.emplace_back([&, t] {
            refusal why; // each thread's own: take() keeps the fixture's, which one thread at a time may use
            for (int i = 0; i < ROUNDS; i++) {
                void * p = alloc_->alloc(SIZE / 4 + size_t(i % 7) * 4096, 0, streams_[t], &why);
                give(p, streams_[t], SIZE / 4 + size_t(i % 7) * 4096);
            }
            for (int i = 0; i < 8; i++) {
                made[size_t(t)].push_back(alloc_->alloc(SIZE, 0, streams_[t], &why));
            }
        });
    }
    for (auto & w : workers) {
        w.join();
    }
    workers.clear();
    for (int t = 0; t < THREADS; t++) { // PyTorch frees on whichever thread drops the tensor
        workers.emplace_back([&, t] {
            for (void * p : made[size_t((t + 1) % THREADS)]) {
                give(p, streams_[(t + 1) % THREADS]);
            }
        });
    }
    for (auto & w : workers) {
        w.join();
    }
    EXPECT_EQ(alloc_->live_buffers(), 0u);
    EXPECT_TRUE(lines_.empty());
}

TEST(TorchKind, LegacyUnlessTheEnvironmentNamesOne) {
    clean_env             env;
    ggml_cpool_sim_params sim = sim_params(CAPACITY); // with VMM: the module's own default would pick it
    sim_device            device(sim);
    auto                  kind_for = [&](ggml_cpool_ctx_params p) {
        p.driver             = device.drv;
        ggml_cpool_ctx_t ctx = nullptr;
        EXPECT_EQ(ggml_cpool_ctx_create(&p, &ctx), GGML_CPOOL_STATUS_OK);
        ggml_cpool_kind kind = ggml_cpool_get_kind(pool_of(ctx));
        ggml_cpool_ctx_free(ctx);
        return kind;
    };
    EXPECT_EQ(kind_for(ggml_cpool_ctx_default_params()), GGML_CPOOL_KIND_VMM) << "the module's default";
    EXPECT_EQ(kind_for(gcp_torch::context_params()), GGML_CPOOL_KIND_LEGACY);
    scoped_env vmm("GGML_CUDA_POOL", "vmm");
    EXPECT_EQ(kind_for(gcp_torch::context_params()), GGML_CPOOL_KIND_VMM);
    scoped_env plain("GGML_CUDA_POOL", "PLAIN");
    EXPECT_EQ(kind_for(gcp_torch::context_params()), GGML_CPOOL_KIND_PLAIN);
}

// exported empty, not passed as "" with the variable unset: the module reads it too when the
// context is made, and must take it as the library does (unset: legacy), not refuse it
TEST(TorchKind, AnExportedEmptyPoolIsLegacy) {
    clean_env             env;
    scoped_env            empty("GGML_CUDA_POOL", "");
    ggml_cpool_sim_params sim = sim_params(CAPACITY);
    sim_device            device(sim);
    ggml_cpool_ctx_params p = gcp_torch::context_params();
    p.driver                = device.drv;
    ggml_cpool_ctx_t  ctx   = nullptr;
    log_capture       log;
    ggml_cpool_status st = ggml_cpool_ctx_create(&p, &ctx);
    ASSERT_EQ(st, GGML_CPOOL_STATUS_OK) << "every allocation would return NULL";
    EXPECT_EQ(ggml_cpool_get_kind(pool_of(ctx)), GGML_CPOOL_KIND_LEGACY);
    EXPECT_TRUE(log.lines(GGML_CPOOL_LOG_WARN).empty());
    ggml_cpool_ctx_free(ctx);
}

// another device's pools hold none of this device's memory: they keep their cache
class TorchTwoDevices : public TorchFixture, public testing::Test {
  protected:
    void SetUp() override { open(GGML_CPOOL_KIND_LEGACY, 2); }
    void TearDown() override { close(); }
};

TEST_F(TorchTwoDevices, ARefusalLeavesAnotherDevicesCache) {
    void * on_1 = nullptr;
    ASSERT_EQ(ggml_cpool_driver_stream_create(drv_, 1, &on_1), GGML_CPOOL_STATUS_OK);
    void * p = take(on_1, SIZE, 1);
    ASSERT_NE(p, nullptr) << why_.message;
    alloc_->free(p, SIZE, 1, on_1);
    const size_t cached = slot_stats(0, 1).cached_bytes;
    ASSERT_GT(cached, 0u);
    log_capture quiet;
    EXPECT_EQ(take(streams_[0], 300 * MiB), nullptr);
    EXPECT_EQ(slot_stats(0, 1).cached_bytes, cached);
    EXPECT_TRUE(says("no other stream has a pool on GPU 0")) << why_.message;
    ggml_cpool_ctx_free(ctx_); // before the stream it borrows goes
    ctx_ = nullptr;
    alloc_.reset();
    EXPECT_EQ(ggml_cpool_driver_stream_destroy(drv_, 1, on_1), GGML_CPOOL_STATUS_OK);
}

// a VMM pool can serve no tensor larger than its range: the module's default range (32 GiB) is
// a quarter of an H200, so the library's asks for the device's memory
TEST(TorchKind, AVmmPoolServesATensorAsLargeAsTheDeviceHolds) {
    clean_env        env;
    constexpr size_t DEVICE = 48 * GiB, TENSOR = 40 * GiB; // beyond the module's default range
    sim_device       device(sim_params(DEVICE));
    auto             served = [&](ggml_cpool_ctx_params p) {
        p.driver = device.drv;
        std::fill(std::begin(p.kind), std::end(p.kind), GGML_CPOOL_KIND_VMM);
        ggml_cpool_ctx_t ctx = nullptr;
        EXPECT_EQ(ggml_cpool_ctx_create(&p, &ctx), GGML_CPOOL_STATUS_OK);
        void *            ptr    = nullptr;
        size_t            actual = 0;
        log_capture       quiet;
        ggml_cpool_status st = ggml_cpool_alloc(pool_of(ctx), TENSOR, 0, &ptr, &actual);
        if (st == GGML_CPOOL_STATUS_OK) {
            EXPECT_EQ(ggml_cpool_free(pool_of(ctx), ptr, actual), GGML_CPOOL_STATUS_OK);
        }
        ggml_cpool_ctx_free(ctx);
        return st == GGML_CPOOL_STATUS_OK;
    };
    EXPECT_FALSE(served(gcp_torch::context_params())) << "the control: the module's default range";
    EXPECT_TRUE(served(gcp_torch::context_params(DEVICE)));
}

// what use_ggml_cuda_pool and the first allocation run: a bad setting is refused with the line
// that names it, not later as an allocation that returns NULL
TEST(TorchSettings, ABadSettingIsRefusedWithTheLineThatNamesIt) {
    clean_env   env;
    std::string where;
    auto        refused = [&](const char * name, const char * value) {
        scoped_env  set(name, value);
        log_capture module_lines;
        refusal     why;
        EXPECT_EQ(gcp_torch::check_settings(&where, &why), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << name << "=" << value;
        EXPECT_EQ(why.what, refusal::kind::bad_setting);
        const std::vector<std::string> lines = module_lines.lines(GGML_CPOOL_LOG_WARN);
        // the module's own line where it has one (ggml's pools are a word of the table: the library's line)
        EXPECT_TRUE(lines.empty() || lines.back() == why.message) << why.message;
        return std::string(why.message);
    };
    EXPECT_EQ(refused("GGML_CUDA_POOL", "fastest").rfind("GGML_CUDA_POOL=fastest: not one of its values", 0), 0u);
    EXPECT_EQ(refused("GGML_CUDA_POOL", "ggml"),
              "GGML_CUDA_POOL=ggml: ggml's own pools, which only the llama.cpp adapter serves; the PyTorch library "
              "takes auto | vmm | legacy | plain | async");
    EXPECT_EQ(refused("GGML_CUDA_POOL_STATS", "/nonexistent-dir/stats")
                  .rfind("GGML_CUDA_POOL_STATS=/nonexistent-dir/stats: cannot open it for appending", 0),
              0u);
    EXPECT_EQ(refused("GGML_CUDA_NO_VMM", "maybe").rfind("GGML_CUDA_NO_VMM=maybe", 0), 0u);
    for (const char * fine : { "", "Async", "auto" }) { // empty: unset, the library's legacy
        scoped_env pool("GGML_CUDA_POOL", fine);
        refusal    why;
        EXPECT_EQ(gcp_torch::check_settings(&where, &why), GGML_CPOOL_STATUS_OK) << "GGML_CUDA_POOL=" << fine;
        EXPECT_EQ(why.what, refusal::kind::none);
    }
}

TEST(TorchRefusal, SizesAreWrittenAsPyTorchWritesThem) {
    EXPECT_STREQ(gcp_torch::format_size(512).text, "512 bytes");
    EXPECT_STREQ(gcp_torch::format_size(1024).text, "1024 bytes");
    EXPECT_STREQ(gcp_torch::format_size(1536).text, "1.50 KiB");
    EXPECT_STREQ(gcp_torch::format_size(MiB).text, "1024.00 KiB");
    EXPECT_STREQ(gcp_torch::format_size(20 * MiB).text, "20.00 MiB");
    EXPECT_STREQ(gcp_torch::format_size(200 * GiB).text, "200.00 GiB");
}

TEST(TorchStats, BooleanWordsAreStderrOrNoneAndElseAFileOpenedWhenRead) {
    for (auto [text, want] : { std::pair{ "1", "-" }, std::pair{ "yes", "-" }, std::pair{ "On", "-" },
                               std::pair{ "0", "" }, std::pair{ "NO", "" }, std::pair{ "", "" } }) {
        scoped_env  stats("GGML_CUDA_POOL_STATS", text);
        std::string where = "unread";
        EXPECT_EQ(gcp_torch::stats_target(&where), GGML_CPOOL_STATUS_OK) << text;
        EXPECT_EQ(where, want) << "GGML_CUDA_POOL_STATS=" << text;
    }
    const std::string path = testing::TempDir() + "gcp-torch-stats-" + std::to_string(getpid());
    remove(path.c_str());
    {
        scoped_env  stats("GGML_CUDA_POOL_STATS", path.c_str());
        std::string where;
        EXPECT_EQ(gcp_torch::stats_target(&where), GGML_CPOOL_STATUS_OK);
        EXPECT_EQ(where, path);
        EXPECT_EQ(access(path.c_str(), F_OK), 0) << "opened for appending when read";
    }
    remove(path.c_str());
    scoped_env  stats("GGML_CUDA_POOL_STATS", "/nonexistent-dir/stats");
    log_capture log;
    std::string where;
    EXPECT_EQ(gcp_torch::stats_target(&where), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << "refused now, not at exit";
    EXPECT_EQ(log.count("^GGML_CUDA_POOL_STATS=/nonexistent-dir/stats: cannot open it for appending"), 1u);
    EXPECT_EQ(log.lines().size(), 1u);
}

TEST(TorchSlotMap, NewStreamsTakeUnboundSlotsThenTheLeastRecentlyUsedIdleOne) {
    slot_map map;
    char     streams[slot_map::SLOTS + 2];
    for (int i = 0; i < slot_map::SLOTS; i++) {
        EXPECT_EQ(map.find(0, &streams[i]), -1);
        int s = map.vacant(0);
        EXPECT_EQ(s, i) << "an unbound slot first";
        map.bind(0, s, &streams[i]);
        map.hold(0, s);
    }
    EXPECT_EQ(map.find(0, &streams[5]), 5);
    EXPECT_EQ(map.vacant(0), -1) << "every slot has a live buffer";
    EXPECT_EQ(map.vacant(1), 0) << "devices are apart";
    map.release(0, 6);
    map.release(0, 2);
    EXPECT_EQ(map.vacant(0), 2) << "of the idle slots, the least recently used";
    map.hold(0, 2);
    map.release(0, 2);
    EXPECT_EQ(map.vacant(0), 6);
    map.bind(0, 6, &streams[slot_map::SLOTS]);
    EXPECT_EQ(map.find(0, &streams[6]), -1) << "the old stream lost its slot";
    EXPECT_EQ(map.find(0, &streams[slot_map::SLOTS]), 6);
    EXPECT_EQ(map.at(0, 6).bindings, 2u);
}

} // namespace
