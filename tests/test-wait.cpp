// The out-of-memory ladder's last rung: a refused allocation waits, up to the context's wait_ms, for
// the device's memory to come back (a co-tenant's spike, a fault window), polling the free memory
// the driver reports; every kind, on the sim driver and through the fault driver's while= window.

#include "harness.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <unistd.h>

using namespace harness;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr size_t   DEVICE    = 256 * MiB;
constexpr size_t   REQUEST   = 24 * MiB;
constexpr uint32_t BUDGET_MS = 3000;
constexpr auto     WINDOW    = std::chrono::milliseconds(200);
constexpr auto     SHORT     = std::chrono::milliseconds(300); // a budget the window outlasts
// how late a served request may come after its window closed, and a refusal after its budget
constexpr auto     SLACK = std::chrono::milliseconds(1500);

long long ms_since(clock_type::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
}

// a fault window (while=FILE) over a sim device, and a context of the kind that waits wait_ms
class Wait : public pool_test<testing::TestWithParam<ggml_cpool_kind>> {
  protected:
    void open(uint32_t wait_ms) {
        open_sim(sim_params(DEVICE));
        window_ = testing::TempDir() + "gcp-wait-window-" + std::to_string(getpid());
        std::remove(window_.c_str());
        top_                    = fault_over(driver_, ("while=" + window_).c_str());
        ggml_cpool_ctx_params p = ctx_params(top_, GetParam());
        p.wait_ms               = wait_ms;
        ASSERT_EQ(ggml_cpool_ctx_create(&p, &ctx_), GGML_CPOOL_STATUS_OK);
        pool_ = pool_of(ctx_);
    }
    void open_window() {
        std::FILE * f = std::fopen(window_.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fclose(f);
    }
    // the window closes after `after`, from another thread, as a co-tenant's spike ends
    std::thread close_window_after(std::chrono::milliseconds after) {
        return std::thread([this, after] {
            std::this_thread::sleep_for(after);
            std::remove(window_.c_str());
        });
    }
    void TearDown() override {
        std::remove(window_.c_str());
        pool_test::TearDown();
    }

    std::string window_;
};

TEST_P(Wait, AWindowThatClosesWithinTheBudgetServesTheRequestWhenItCloses) {
    open(BUDGET_MS);
    open_window();
    std::thread closer = close_window_after(WINDOW);
    const auto  t0     = clock_type::now();
    void *      ptr    = nullptr;
    size_t      actual = 0;
    log_capture log;
    EXPECT_EQ(ggml_cpool_alloc(pool_, REQUEST, 0, &ptr, &actual), GGML_CPOOL_STATUS_OK);
    const long long waited = ms_since(t0);
    closer.join();
    EXPECT_GE(waited, WINDOW.count() - 20) << "served before the window closed";
    EXPECT_LT(waited, (WINDOW + SLACK).count()) << "served long after the window closed";
    const ggml_cpool_stats s = stats_of(pool_);
    EXPECT_EQ(s.waits, 1u);
    EXPECT_EQ(s.waits_served, 1u);
    EXPECT_GE(s.wait_ns, uint64_t(WINDOW.count() - 20) * 1000000);
    EXPECT_EQ(s.oom_returned, 0u);
    EXPECT_EQ(log.count("waits up to 3000 ms for memory \\(0.00 MiB free\\)"), 1u) << "one line as it starts";
    EXPECT_EQ(log.count("served after waiting"), 1u) << "one line as it ends";
    release(pool_, { ptr, actual });
}

TEST_P(Wait, AWindowThatOutlastsTheBudgetFailsWhenTheBudgetIsSpent) {
    open(uint32_t(SHORT.count()));
    open_window();
    const auto  t0     = clock_type::now();
    void *      ptr    = nullptr;
    size_t      actual = 0;
    log_capture log;
    EXPECT_EQ(ggml_cpool_alloc(pool_, REQUEST, 0, &ptr, &actual), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    const long long waited = ms_since(t0);
    EXPECT_GE(waited, SHORT.count() - 20);
    EXPECT_LT(waited, (SHORT + SLACK).count());
    const ggml_cpool_stats s = stats_of(pool_);
    EXPECT_EQ(s.waits, 1u);
    EXPECT_EQ(s.waits_served, 0u);
    EXPECT_EQ(s.oom_returned, 1u);
    EXPECT_EQ(log.count("still refused after waiting"), 1u);
}

TEST_P(Wait, ABudgetOfZeroFailsWithinTheTransientRetries) {
    open(0);
    open_window();
    const auto t0     = clock_type::now();
    void *     ptr    = nullptr;
    size_t     actual = 0;
    EXPECT_EQ(ggml_cpool_alloc(pool_, REQUEST, 0, &ptr, &actual), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
    EXPECT_LT(ms_since(t0), 100) << "the sim driver's transient retries do not pause";
    EXPECT_EQ(stats_of(pool_).waits, 0u);
}

// a co-tenant of the device (raw driver memory) leaves too little, then gives it back
TEST_P(Wait, ACoTenantsMemoryComingBackServesTheRequest) {
    open(BUDGET_MS);
    void * tenant = nullptr;
    ASSERT_EQ(ggml_cpool_driver_malloc(driver_, 0, DEVICE - REQUEST / 2, &tenant), GGML_CPOOL_STATUS_OK);
    std::thread leaves([&] {
        std::this_thread::sleep_for(WINDOW);
        EXPECT_EQ(ggml_cpool_driver_free(driver_, 0, tenant), GGML_CPOOL_STATUS_OK);
    });
    void *      ptr    = nullptr;
    size_t      actual = 0;
    const auto  t0     = clock_type::now();
    EXPECT_EQ(ggml_cpool_alloc(pool_, REQUEST, 0, &ptr, &actual), GGML_CPOOL_STATUS_OK);
    EXPECT_GE(ms_since(t0), WINDOW.count() - 20);
    leaves.join();
    EXPECT_EQ(stats_of(pool_).waits_served, 1u);
    release(pool_, { ptr, actual });
}

// two pools of one context (two stream slots), each on its own thread, wait at once: both are
// served when the window closes
TEST_P(Wait, TwoPoolsOfOneContextWaitingAtOnceAreBothServed) {
    open(BUDGET_MS);
    ggml_cpool_t second = nullptr;
    ASSERT_EQ(ggml_cpool_ctx_get_slot_pool(ctx_, 0, 1, &second), GGML_CPOOL_STATUS_OK);
    open_window();
    std::thread       closer = close_window_after(WINDOW);
    buf               got[2] = {};
    ggml_cpool_status st[2];
    std::thread       other([&] { st[1] = ggml_cpool_alloc(second, REQUEST, 0, &got[1].ptr, &got[1].size); });
    st[0] = ggml_cpool_alloc(pool_, REQUEST, 0, &got[0].ptr, &got[0].size);
    other.join();
    closer.join();
    EXPECT_EQ(st[0], GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(st[1], GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(stats_of(pool_).waits_served + stats_of(second).waits_served, 2u);
    release(pool_, got[0]);
    release(second, got[1]);
}

// a wait inside a graph capture sleeps and retries, and neither synchronizes nor frees (illegal there)
TEST_P(Wait, AWaitInACaptureNeitherSynchronizesNorFrees) {
    open(BUDGET_MS);
    buf cached = alloc(pool_, 4 * MiB); // something cached, which a reclaim would free
    release(pool_, cached);
    void * stream = nullptr;
    ASSERT_EQ(ggml_cpool_ctx_stream(ctx_, 0, &stream), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(ggml_cpool_sim_set_capturing(driver_, 0, stream, 1), GGML_CPOOL_STATUS_OK);
    const uint64_t syncs = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_SYNCHRONIZE) +
                           ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_STREAM_SYNC);
    const uint64_t frees = ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_FREE) +
                           ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_FREE_ASYNC) +
                           ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_VMM_UNMAP);
    open_window();
    std::thread closer = close_window_after(WINDOW);
    void *      ptr    = nullptr;
    size_t      actual = 0;
    EXPECT_EQ(ggml_cpool_alloc(pool_, REQUEST, 0, &ptr, &actual), GGML_CPOOL_STATUS_OK);
    closer.join();
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_SYNCHRONIZE) +
                  ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_STREAM_SYNC),
              syncs);
    EXPECT_EQ(ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_FREE) +
                  ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_FREE_ASYNC) +
                  ggml_cpool_driver_calls(driver_, GGML_CPOOL_CALL_VMM_UNMAP),
              frees);
    EXPECT_EQ(stats_of(pool_).waits_served, 1u);
    ASSERT_EQ(ggml_cpool_sim_set_capturing(driver_, 0, stream, 0), GGML_CPOOL_STATUS_OK);
    release(pool_, { ptr, actual });
}

INSTANTIATE_TEST_SUITE_P(Kinds, Wait,
                         testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM,
                                         GGML_CPOOL_KIND_ASYNC),
                         [](const testing::TestParamInfo<ggml_cpool_kind> & info) {
                             return std::string(ggml_cpool_kind_str(info.param));
                         });

} // namespace
