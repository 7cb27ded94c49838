// Fault injection: each mode over the driver of the executable (test-fault: sim, test-gpu-fault:
// cuda), every recovery path of the pools, and the fault-site sweep (every driver call of an LLM
// workload made to fail in turn, alone and with every later call).

#include "harness.h"
#include "sweep-workload.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <tuple>
#include <vector>

using namespace harness;

namespace {

// each mode over each driver and pool kind
class Faults : public pool_test<testing::TestWithParam<driver_kind>> {
  protected:
    void SetUp() override {
        which_ = std::get<0>(GetParam());
        kind_  = std::get<1>(GetParam());
        if (!open_driver(which_, sim_params(256 * MiB))) {
            return;
        }
        fault_ = fault_over(inner_, "");
        open_ctx(kind_);
        kind_ = ggml_cpool_get_kind(pool_); // AUTO resolved by the environment
    }
    void TearDown() override {
        ggml_cpool_driver_set_faults(fault_, nullptr);
        pool_test::TearDown();
    }
    bool cached_kind() const { return kind_ != GGML_CPOOL_KIND_VMM; }

    drv                   which_ = drv::sim;
    ggml_cpool_kind       kind_  = GGML_CPOOL_KIND_LEGACY;
    ggml_cpool_driver_t & inner_ = driver_; // the driver under test
    ggml_cpool_driver_t & fault_ = top_;    // the fault driver over it, which the contexts use
};

TEST_P(Faults, OneShotAtSizeFailsTheFirstLargeEnoughAllocationOnce) {
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, "oneshot=2.36MiB"), GGML_CPOOL_STATUS_OK);
    log_capture log;
    buf         below = alloc(pool_, 2 * MiB); // too small to fire
    buf         small = alloc(pool_, 1 * MiB);
    release(pool_, small); // something cached to reclaim, within the headroom
    EXPECT_EQ(ggml_cpool_driver_faults_fired(fault_), 0u);
    // 2.36 MiB; the VMM pool's driver allocation is its growth, so ask it for more
    const size_t      size   = cached_kind() ? 2477260 : 5 * MiB;
    void *            p      = nullptr;
    size_t            actual = 0;
    ggml_cpool_status st     = ggml_cpool_alloc(pool_, size, 0, &p, &actual);
    EXPECT_EQ(ggml_cpool_driver_faults_fired(fault_), 1u);
    EXPECT_EQ(log.count("^CUDA pool\\[0\\]: injected one-shot reclaim test at \\d+\\.\\d\\d MiB$"), 1u);
    if (cached_kind()) {
        EXPECT_EQ(log.count("injected one-shot reclaim test at 2\\.48 MiB"), 1u) << "the look-ahead size";
        EXPECT_EQ(st, GGML_CPOOL_STATUS_OK) << "the retry after reclaim succeeds";
        EXPECT_EQ(log.count(kind_ == GGML_CPOOL_KIND_LEGACY ? "retry succeeded after reclaiming" :
                                                              "retry succeeded after freeing"),
                  1u);
    } else {
        // nothing cached to give back: one retry after a synchronize, and one shot only
        EXPECT_EQ(st, GGML_CPOOL_STATUS_OK) << "the VMM pool's retry succeeds";
        EXPECT_EQ(log.count("retrying once after a synchronize"), 1u);
    }
    ggml_cpool_free(pool_, p, actual);
    release(pool_, below);
}

// the allocating call of the pool kind, for fail=<call>:<k> specs
std::string failing(ggml_cpool_kind kind, const std::string & ks) {
    std::string call = kind == GGML_CPOOL_KIND_VMM ? "create" : "malloc", spec;
    for (size_t start = 0; start < ks.size();) {
        size_t end = ks.find(',', start);
        end        = end == std::string::npos ? ks.size() : end;
        spec += (spec.empty() ? "" : ";") + ("fail=" + call + ":") + ks.substr(start, end - start);
        start = end + 1;
    }
    return spec;
}

// the attempts an ordinary request's refusal adds after the recovery: the legacy kinds ask once
// for the request without its look-ahead before the transient retries; the others ask for the
// request's own size from the start
int own_size_attempts(ggml_cpool_kind kind) {
    return kind == GGML_CPOOL_KIND_LEGACY || kind == GGML_CPOOL_KIND_PLAIN ? 1 : 0;
}

// oneshot=<size> waits for a miss after the device's first allocation, so that the recovery it tests
// has memory of the pool's own to work on: the seed's LRU reclaim for the legacy kind
TEST_P(Faults, OneShotWaitsForAnEarlierAllocation) {
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, "oneshot=3MiB"), GGML_CPOOL_STATUS_OK);
    log_capture log;
    buf         large = alloc(pool_, 32 * MiB); // the device's first allocation
    buf         small = alloc(pool_, 1 * MiB);  // below the size
    EXPECT_EQ(ggml_cpool_driver_faults_fired(fault_), 0u);
    release(pool_, small);
    buf second = alloc(pool_, 8 * MiB); // a miss with the small buffer cached (within the headroom)
    EXPECT_EQ(ggml_cpool_driver_faults_fired(fault_), 1u);
    EXPECT_EQ(stats_of(pool_).oom_returned, 0u);
    if (kind_ == GGML_CPOOL_KIND_LEGACY) {
        EXPECT_EQ(log.count("trying LRU-style reclaim"), 1u);
        EXPECT_EQ(log.count("retry succeeded after reclaiming 1\\.05 MiB"), 1u);
    }
    release(pool_, second);
    release(pool_, large);
}

TEST_P(Faults, KthCallOfAKindFails) {
    // the second call, the retry after a synchronize, the request at its own size (legacy kinds)
    // and the three transient retries fail
    const int own = own_size_attempts(kind_);
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, failing(kind_, own ? "2,3,4,5,6,7" : "2,3,4,5,6").c_str()),
              GGML_CPOOL_STATUS_OK);
    buf    a      = alloc(pool_, 4 * MiB);
    void * p      = nullptr;
    size_t actual = 0;
    EXPECT_EQ(ggml_cpool_alloc(pool_, 16 * MiB, 0, &p, &actual), GGML_CPOOL_STATUS_OUT_OF_MEMORY)
        << "nothing cached to reclaim: the status reaches the caller";
    EXPECT_EQ(ggml_cpool_driver_faults_fired(fault_), uint64_t(5 + own));
    buf b = alloc(pool_, 16 * MiB); // the next call goes through
    release(pool_, b);
    release(pool_, a);
}

// three refusals in a row with nothing cached (prob=...;limit=3 in llama.cpp): the retries
// outlast them, and the caller never sees a status
TEST_P(Faults, TransientRefusalsAreOutlastedByTheRetries) {
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, failing(kind_, "1,2,3").c_str()), GGML_CPOOL_STATUS_OK);
    log_capture log;
    buf         a = alloc(pool_, 4 * MiB);
    EXPECT_EQ(ggml_cpool_driver_faults_fired(fault_), 3u);
    EXPECT_EQ(stats_of(pool_).oom_returned, 0u);
    // the legacy kinds' third attempt is the request at its own size
    const std::string served = own_size_attempts(kind_) ? "retry 1 of 3" : "retry 2 of 3";
    EXPECT_EQ(log.count(served + " after a pause and a synchronize succeeded"), 1u);
    EXPECT_TRUE(log.lines(GGML_CPOOL_LOG_WARN).empty()) << "a refusal that passed is no warning";
    release(pool_, a);
}

// a refusal that persists still reaches the caller, promptly: the retries pause 7 ms in all on a
// real device and not at all on the sim
TEST_P(Faults, APersistentRefusalReturnsOutOfMemoryPromptly) {
    constexpr auto PROMPTLY = std::chrono::milliseconds(500);
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, failing(kind_, "1+").c_str()), GGML_CPOOL_STATUS_OK);
    log_capture log;
    void *      p      = nullptr;
    size_t      actual = 0;
    const auto  t0     = std::chrono::steady_clock::now();
    EXPECT_EQ(ggml_cpool_alloc(pool_, 4 * MiB, 0, &p, &actual), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, PROMPTLY);
    EXPECT_EQ(ggml_cpool_driver_faults_fired(fault_), uint64_t(5 + own_size_attempts(kind_)))
        << "the call, the retry after a synchronize, the request at its own size (legacy kinds), three retries";
    EXPECT_EQ(log.lines(GGML_CPOOL_LOG_WARN).size(), 1u) << "one line for the failed allocation";
    expect_consistent(pool_);
}

// a growing request's doubling refused twice, with nothing cached: the request takes its own size
// before the retries that pause (7 ms on a real device)
TEST_P(Faults, ARefusedDoublingGivesWayBeforeTheRetriesThatPause) {
    constexpr size_t SIZE = 16 * MiB;
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, failing(kind_, "1,2").c_str()), GGML_CPOOL_STATUS_OK);
    log_capture log;
    buf         b = alloc(pool_, SIZE, GGML_CPOOL_ALLOC_OVERALLOCATE);
    EXPECT_EQ(ggml_cpool_driver_faults_fired(fault_), 2u);
    EXPECT_GE(b.size, SIZE);
    EXPECT_LT(b.size, 2 * SIZE) << "its own size";
    EXPECT_EQ(log.count("of 3 after a pause"), 0u) << "served before any retry that pauses";
    EXPECT_TRUE(fill_and_check(which_, b.ptr, b.size, 0x2d));
    release(pool_, b);
}

// a fault window (while=<file>), as a server sees it: a graph's allocation fails while the window is
// open, the graph gives back what it held (its compute unwinds), and once the window closes the
// same graph is served again, by the memory the pool kept and the driver
TEST_P(Faults, AFaultWindowFailsTheGraphInsideItAndThePoolServesItAgainAfter) {
    const std::string window = testing::TempDir() + "gcp-fault-window-" + std::to_string(getpid());
    std::remove(window.c_str());
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, ("while=" + window).c_str()), GGML_CPOOL_STATUS_OK);
    const size_t graph[]   = { 1 * MiB, 3 * MiB, 40 * MiB }; // the last one needs memory the pool has not held
    auto         run_graph = [&](bool window_opens) {
        std::vector<buf> held;
        for (size_t size : graph) {
            if (window_opens && size == graph[2]) {
                std::FILE * f = std::fopen(window.c_str(), "w"); // opened mid-graph
                ASSERT_NE(f, nullptr);
                std::fclose(f);
                void *      p      = nullptr;
                size_t      actual = 0;
                log_capture log;
                EXPECT_EQ(ggml_cpool_alloc(pool_, size, 0, &p, &actual), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
                // what the llama.cpp adapter says in its one line: the pool's, naming the request and what was tried
                ASSERT_EQ(log.lines(GGML_CPOOL_LOG_WARN).size(), 1u);
                EXPECT_EQ(std::string(ggml_cpool_last_error()), log.lines(GGML_CPOOL_LOG_WARN).back());
                EXPECT_NE(std::string(ggml_cpool_last_error()).find("MiB failed: "), std::string::npos);
                break;
            }
            held.push_back(alloc(pool_, size));
        }
        for (const buf & b : held) { // the compute unwinds, or completes
            release(pool_, b);
        }
    };
    run_graph(true);
    EXPECT_GE(ggml_cpool_driver_faults_fired(fault_), 1u);
    EXPECT_EQ(stats_of(pool_).oom_returned, 1u);
    EXPECT_EQ(stats_of(pool_).live_bytes, 0u) << "the failed graph's buffers came back";
    expect_consistent(pool_);
    const uint64_t fired = ggml_cpool_driver_faults_fired(fault_);
    std::remove(window.c_str()); // the window closes
    run_graph(false);
    run_graph(false);
    EXPECT_EQ(ggml_cpool_driver_faults_fired(fault_), fired) << "nothing fires once the window is closed";
    EXPECT_EQ(stats_of(pool_).oom_returned, 1u);
    EXPECT_EQ(stats_of(pool_).live_bytes, 0u);
    expect_consistent(pool_);
}

TEST_P(Faults, EveryCallFailingLeavesThePoolUsable) {
    buf a = alloc(pool_, 2 * MiB);
    release(pool_, a);
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, "fail=any:1+"), GGML_CPOOL_STATUS_OK);
    void * p      = nullptr;
    size_t actual = 0;
    EXPECT_NE(ggml_cpool_alloc(pool_, 64 * MiB, 0, &p, &actual), GGML_CPOOL_STATUS_OK);
    EXPECT_NE(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK) << "the driver refuses every free";
    expect_consistent(pool_);
    buf hit = alloc(pool_, 1 * MiB); // still served from what the pool holds
    release(pool_, hit);
    ggml_cpool_driver_set_faults(fault_, nullptr);
    EXPECT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK) << "kept memory is given back once the driver recovers";
    EXPECT_EQ(stats_of(pool_).reserved_bytes, 0u);
    EXPECT_EQ(ggml_cpool_driver_used(inner_, 0), 0u);
}

TEST_P(Faults, ProbabilityFromASeedIsReproducibleAndLimited) {
    auto run = [&](const char * spec) {
        ggml_cpool_ctx_t ctx  = make_ctx(fault_, kind_); // the same start for every run
        ggml_cpool_t     pool = pool_of(ctx);
        EXPECT_EQ(ggml_cpool_driver_set_faults(fault_, spec), GGML_CPOOL_STATUS_OK);
        int errors = 0;
        for (int i = 0; i < 40; i++) {
            void * p      = nullptr;
            size_t actual = 0;
            if (ggml_cpool_alloc(pool, size_t(1 + i % 7) * MiB, 0, &p, &actual) == GGML_CPOOL_STATUS_OK) {
                ggml_cpool_free(pool, p, actual);
                ggml_cpool_trim(pool);
            } else {
                errors++;
            }
        }
        auto result = std::make_pair(ggml_cpool_driver_faults_fired(fault_), errors);
        ggml_cpool_driver_set_faults(fault_, nullptr);
        ggml_cpool_ctx_free(ctx);
        return result;
    };
    auto first  = run("prob=0.3;seed=7");
    auto second = run("prob=0.3;seed=7");
    EXPECT_GT(first.first, 0u);
    EXPECT_EQ(first, second) << "the same seed fires the same faults";
    auto limited = run("prob=0.3;seed=7;limit=2");
    EXPECT_EQ(limited.first, 2u);
}

// kinds that cache whole buffers (legacy, plain) and the VMM pool have failure paths of their own
class CachedFaults : public Faults {};
class VmmFaults : public Faults {};

TEST_P(CachedFaults, SynchronizeFailureBeforeReclaimIsReported) {
    buf a = alloc(pool_, 1 * MiB);
    release(pool_, a);
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, "oneshot=8MiB;fail=stream_sync:1"), GGML_CPOOL_STATUS_OK);
    log_capture log;
    void *      p      = nullptr;
    size_t      actual = 0;
    EXPECT_EQ(ggml_cpool_alloc(pool_, 8 * MiB, 0, &p, &actual), GGML_CPOOL_STATUS_DRIVER_ERROR);
    EXPECT_EQ(log.count("synchronize before reclaim failed"), 1u);
    EXPECT_EQ(stats_of(pool_).cached_bytes, a.size) << "nothing freed while kernels might still run";
}

TEST_P(VmmFaults, FailuresAtEveryStepOfGrowthLeaveNothingBehind) {
    // an out-of-memory growth is retried once: those faults hold for every call of their kind
    for (const char * spec : { "fail=reserve:1", "fail=create:1+", "fail=map:1+", "fail=access:1",
                               "fail=access:1;fail=unmap:1", "fail=map:1+;fail=release:1" }) {
        ggml_cpool_ctx_t ctx  = make_ctx(fault_, GGML_CPOOL_KIND_VMM);
        ggml_cpool_t     pool = pool_of(ctx);
        ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, spec), GGML_CPOOL_STATUS_OK);
        void * p      = nullptr;
        size_t actual = 0;
        EXPECT_NE(ggml_cpool_alloc(pool, 3 * MiB, 0, &p, &actual), GGML_CPOOL_STATUS_OK) << spec;
        ggml_cpool_driver_set_faults(fault_, nullptr);
        buf b = alloc(pool, 3 * MiB); // the next try grows normally
        EXPECT_TRUE(fill_and_check(which_, b.ptr, b.size, 0x44)) << spec;
        release(pool, b);
        expect_consistent(pool);
        ggml_cpool_ctx_free(ctx);
        EXPECT_EQ(ggml_cpool_driver_outstanding(inner_), 0u) << spec;
    }
}

TEST_P(Faults, TrimFailuresKeepMemoryAccountedAndRetry) {
    buf a = alloc(pool_, 6 * MiB);
    release(pool_, a);
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, cached_kind() ? "fail=free:1" : "fail=unmap:1"),
              GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_DRIVER_ERROR);
    expect_consistent(pool_);
    EXPECT_EQ(stats_of(pool_).reserved_bytes, ggml_cpool_driver_used(inner_, 0)) << "nothing lost from the books";
    EXPECT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(ggml_cpool_driver_used(inner_, 0), 0u);
    if (!cached_kind()) {
        ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, "fail=release:1"), GGML_CPOOL_STATUS_OK);
        buf b = alloc(pool_, 6 * MiB);
        release(pool_, b);
        EXPECT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_DRIVER_ERROR) << "unmapped, but the handle is kept";
        EXPECT_GT(ggml_cpool_driver_used(inner_, 0), 0u);
        EXPECT_EQ(stats_of(pool_).reserved_bytes, ggml_cpool_driver_used(inner_, 0)) << "still reserved until released";
        expect_consistent(pool_);
        EXPECT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK) << "released on the retry";
        EXPECT_EQ(ggml_cpool_driver_used(inner_, 0), 0u);
    }
}

TEST_P(VmmFaults, AnUnmapWhoseReleaseFailsMovesTheGenerationAtOnce) {
    buf a = alloc(pool_, 6 * MiB);
    release(pool_, a);
    const uint64_t before = ggml_cpool_generation(pool_);
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, "fail=release:1"), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_DRIVER_ERROR) << "unmapped, the handle kept";
    EXPECT_GT(ggml_cpool_generation(pool_), before) << "the old addresses fault already: graphs must be recaptured";
    EXPECT_EQ(ggml_cpool_ctx_generation(ctx_), ggml_cpool_generation(pool_));
    expect_consistent(pool_);
    ggml_cpool_driver_set_faults(fault_, nullptr);
    EXPECT_EQ(ggml_cpool_trim(pool_), GGML_CPOOL_STATUS_OK) << "released on the retry";
}

TEST_P(Faults, EnvironmentSpecArmsEveryContext) {
    clean_env        env;
    scoped_env       set("GGML_CUDA_POOL_FAULT", "oneshot-any=1MiB");
    ggml_cpool_ctx_t ctx    = make_ctx(inner_, kind_);
    ggml_cpool_t     pool   = pool_of(ctx);
    void *           p      = nullptr;
    size_t           actual = 0;
    log_capture      log;
    EXPECT_EQ(ggml_cpool_alloc(pool, 2 * MiB, 0, &p, &actual), GGML_CPOOL_STATUS_OK)
        << "nothing cached (oneshot-any fires anyway): the pool's one retry is served";
    EXPECT_EQ(ggml_cpool_driver_faults_fired(ggml_cpool_ctx_driver(ctx)), 1u);
    EXPECT_EQ(log.count("injected one-shot reclaim test at 2\\.\\d\\d MiB"), 1u);
    EXPECT_EQ(ggml_cpool_free(pool, p, actual), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_free(ctx);
}

// The sweep, over the shared workload (sweep-workload.h)
constexpr llm_shape SWEEP_MODEL        = { 6, 512, 1408, 512 };
constexpr int       SWEEP_DECODE_STEPS = 16;

sweep::run workload(ggml_cpool_t pool) {
    return sweep::workload(pool, SWEEP_MODEL, SWEEP_DECODE_STEPS);
}

TEST_P(Faults, SweepEveryDriverCallOfAnLlmWorkload) {
    if (which_ == drv::sim) { // a device small enough to need reclaim
        ggml_cpool_ctx_free(ctx_);
        ggml_cpool_driver_release(fault_);
        ggml_cpool_driver_release(inner_);
        auto p = sim_params(sweep::CAPACITY);
        ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &inner_), GGML_CPOOL_STATUS_OK);
        fault_ = fault_over(inner_, "");
        ctx_   = make_ctx(fault_, kind_);
        pool_  = pool_of(ctx_);
    }
    // the clean run counts the calls
    ggml_cpool_ctx_t clean      = make_ctx(fault_, kind_);
    ggml_cpool_t     clean_pool = pool_of(clean); // created (with its stream) before counting, as below
    uint64_t         calls0     = ggml_cpool_driver_calls(fault_, GGML_CPOOL_CALL_COUNT);
    sweep::run       base       = workload(clean_pool);
    const uint64_t   K          = ggml_cpool_driver_calls(fault_, GGML_CPOOL_CALL_COUNT) - calls0;
    ggml_cpool_stats cs         = stats_of(clean_pool);
    ggml_cpool_ctx_free(clean);
    ASSERT_EQ(base.errors, 0);
    ASSERT_TRUE(base.trimmed);
    ASSERT_GT(K, 10u);
    if (which_ == drv::sim && kind_ != GGML_CPOOL_KIND_VMM) {
        EXPECT_GT(cs.lru_reclaims + cs.flushes, 0u) << "the workload exercises reclaim";
    }

    int recovered = 0, errored = 0, runs = 0;
    for (int later = 0; later <= 1; later++) {
        for (uint64_t k = 1; k <= K; k++) {
            char spec[48];
            snprintf(spec, sizeof(spec), "fail=any:%llu%s", (unsigned long long) k, later ? "+" : "");
            ggml_cpool_ctx_t ctx  = make_ctx(fault_, kind_);
            ggml_cpool_t     pool = pool_of(ctx);
            ASSERT_EQ(ggml_cpool_driver_set_faults(fault_, spec), GGML_CPOOL_STATUS_OK);
            sweep::run r = workload(pool);
            ASSERT_GE(ggml_cpool_driver_faults_fired(fault_), 1u) << spec << ": the fault site was reached";
            ASSERT_FALSE(ggml_cpool_driver_error_latched(fault_)) << spec << ": every failure was cleared";
            ggml_cpool_driver_set_faults(fault_, nullptr);
            // invariants after the faulty run
            ggml_cpool_stats s = stats_of(pool);
            ASSERT_EQ(s.live_bytes, 0u) << spec;
            ASSERT_EQ(s.live_bytes + s.cached_bytes, s.reserved_bytes) << spec;
            ASSERT_LE(s.reserved_bytes, ggml_cpool_driver_used(inner_, 0)) << spec;
            // the pool still works and gives everything back
            ASSERT_EQ(llm_forward(pool, SWEEP_MODEL, true, 1, 200), 0) << spec;
            ASSERT_EQ(ggml_cpool_trim(pool), GGML_CPOOL_STATUS_OK) << spec;
            ASSERT_EQ(ggml_cpool_driver_used(inner_, 0), 0u) << spec;
            ggml_cpool_ctx_free(ctx);
            ASSERT_EQ(ggml_cpool_driver_outstanding(inner_), 0u) << spec;
            (r.errors == 0 && r.trimmed ? recovered : errored)++;
            runs++;
        }
    }
    printf("fault sweep [%s, %s]: K=%llu driver calls, %d runs: %d recovered, %d returned an error\n", drv_name(which_),
           ggml_cpool_kind_str(kind_), (unsigned long long) K, runs, recovered, errored);
    RecordProperty("K", int(K));
    RecordProperty("recovered", recovered);
    RecordProperty("errors", errored);
    if (kind_ != GGML_CPOOL_KIND_VMM) {
        EXPECT_GT(recovered, 0) << "some single faults are absorbed by reclaim";
    }
}

const auto CACHED = testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN);
const auto VMM    = testing::Values(GGML_CPOOL_KIND_VMM);

// on the GPU the kind comes from the environment: scripts/gpu-test.sh runs it with and without
// GGML_CUDA_NO_VMM=1
const std::vector<ggml_cpool_kind> FAULT_KINDS =
    DRIVER == drv::cuda ?
        std::vector<ggml_cpool_kind>{ GGML_CPOOL_KIND_AUTO } :
        std::vector<ggml_cpool_kind>{ GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM };

HARNESS_INSTANTIATE(Faults, testing::Combine(testing::Values(DRIVER), testing::ValuesIn(FAULT_KINDS)),
                    driver_kind_name);
HARNESS_INSTANTIATE(CachedFaults, testing::Combine(testing::Values(DRIVER), CACHED), driver_kind_name);
HARNESS_INSTANTIATE(VmmFaults, testing::Combine(testing::Values(DRIVER), VMM), driver_kind_name);

} // namespace
