// The async kind over the driver of the executable (test-unit: sim, which models the
// stream-ordered pool; test-gpu: cuda): the first async pool on a device raises the release
// threshold (only if lower) and remembers the old value; the last one synchronizes, trims every
// device it raised and restores the old value.

#include "async-fixture.h"

using namespace harness;

namespace {

TEST_P(Async, FreedBlockIsRetainedAcrossASynchronizeThenTrimmedOnRelease) {
    ASSERT_EQ(initial_, 0u) << "the default threshold: every synchronize gives unused memory back";
    ggml_cpool_ctx_t ctx  = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool = pool_of(ctx);
    EXPECT_EQ(threshold(), MAX_THRESHOLD) << "raised on first use";
    buf a = alloc(pool, 32 * MiB);
    release(pool, a);
    ASSERT_EQ(ggml_cpool_driver_synchronize(driver_, 0), GGML_CPOOL_STATUS_OK);
    EXPECT_GE(reserved(), 32 * MiB) << "the freed block stayed in the pool across the synchronize";
    buf b = alloc(pool, 32 * MiB);
    EXPECT_EQ(stats_of(pool).misses, 1u) << "the second allocation took no new memory";
    release(pool, b);
    ggml_cpool_ctx_free(ctx); // the last handle: synchronize, trim, restore
    EXPECT_EQ(reserved(), 0u) << "trimmed on release";
    EXPECT_EQ(threshold(), 0u) << "restored on release";
}

TEST_P(Async, KeptWarmBetweenContexts) {
    ggml_cpool_ctx_t first = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    buf              a     = alloc(pool_of(first), 16 * MiB);
    release(pool_of(first), a);
    ggml_cpool_driver_synchronize(driver_, 0);
    // a second session, while the first is alive: the memory is still there for it
    ggml_cpool_ctx_t second = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    size_t           before = reserved();
    buf              b      = alloc(pool_of(second), 16 * MiB);
    EXPECT_EQ(reserved(), before) << "served from the warm pool";
    release(pool_of(second), b);
    ggml_cpool_ctx_free(second);
    EXPECT_EQ(threshold(), MAX_THRESHOLD) << "one handle is still live";
    ggml_cpool_ctx_free(first);
    EXPECT_EQ(reserved(), 0u);
}

TEST_P(Async, ALiveBlockSurvivesAnotherContextsTrim) {
    ggml_cpool_ctx_t holder = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_ctx_t other  = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    buf              live   = alloc(pool_of(holder), 8 * MiB);
    buf              big    = alloc(pool_of(other), 64 * MiB);
    release(pool_of(other), big);
    size_t before = reserved();
    ASSERT_GE(before, 72 * MiB);
    EXPECT_EQ(ggml_cpool_trim(pool_of(other)), GGML_CPOOL_STATUS_OK);
    size_t after = reserved();
    EXPECT_LT(after, before) << "the unused block went back";
    EXPECT_GE(after, live.size) << "the live block stayed";
    EXPECT_TRUE(fill_and_check(GetParam(), live.ptr, live.size, 0x21));
    release(pool_of(holder), live);
    ggml_cpool_ctx_free(other);
    ggml_cpool_ctx_free(holder);
}

TEST_P(Async, AThresholdAnotherUserSetToTheMaximumIsKept) {
    ASSERT_EQ(ggml_cpool_driver_set_release_threshold(driver_, 0, MAX_THRESHOLD), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    buf              a   = alloc(pool_of(ctx), 4 * MiB);
    release(pool_of(ctx), a);
    ggml_cpool_ctx_free(ctx);
    EXPECT_EQ(threshold(), MAX_THRESHOLD) << "never lowered: another user chose it";
    ASSERT_EQ(ggml_cpool_driver_set_release_threshold(driver_, 0, initial_), GGML_CPOOL_STATUS_OK);
    ggml_cpool_driver_synchronize(driver_, 0);
}

TEST_P(Async, ALowerThresholdIsRaisedThenRestored) {
    const uint64_t user = 1 * MiB;
    ASSERT_EQ(ggml_cpool_driver_set_release_threshold(driver_, 0, user), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx = make_ctx(driver_, GGML_CPOOL_KIND_ASYNC);
    pool_of(ctx);
    EXPECT_EQ(threshold(), MAX_THRESHOLD);
    ggml_cpool_ctx_free(ctx);
    EXPECT_EQ(threshold(), user) << "the user's value is back";
    ASSERT_EQ(ggml_cpool_driver_set_release_threshold(driver_, 0, initial_), GGML_CPOOL_STATUS_OK);
}

TEST_P(Async, AttributeFailureIsLoggedLeavesNoLatchedErrorAndAllocationCarriesOn) {
    ggml_cpool_driver_t fault = nullptr;
    ASSERT_EQ(ggml_cpool_driver_fault_create(driver_, "fail=attr:1", &fault), GGML_CPOOL_STATUS_OK);
    log_capture      log;
    ggml_cpool_ctx_t ctx = make_ctx(fault, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool = pool_of(ctx);
    EXPECT_EQ(log.count("release threshold failed .* the pool stays cold"), 1u);
    EXPECT_FALSE(ggml_cpool_driver_error_latched(fault)) << "cleared, so no later check reports it";
    EXPECT_EQ(threshold(), initial_) << "left as it was";
    buf a = alloc(pool, 2 * MiB);
    EXPECT_TRUE(fill_and_check(GetParam(), a.ptr, a.size, 0x3c));
    release(pool, a);
    ggml_cpool_ctx_free(ctx);
    ggml_cpool_driver_release(fault);
}

TEST_P(Async, StatsStayExactWhenThePoolUsageCannotBeRead) {
    ggml_cpool_driver_t fault = nullptr;
    ASSERT_EQ(ggml_cpool_driver_fault_create(driver_, "", &fault), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx  = make_ctx(fault, GGML_CPOOL_KIND_ASYNC);
    ggml_cpool_t     pool = pool_of(ctx);
    ASSERT_EQ(ggml_cpool_driver_set_faults(fault, "fail=attr:1+"), GGML_CPOOL_STATUS_OK);
    buf a = alloc(pool, 1 * MiB);
    expect_consistent(pool);
    EXPECT_GE(stats_of(pool).reserved_bytes, a.size) << "the device pool holds at least what is live";
    buf b = alloc(pool, 3 * MiB);
    expect_consistent(pool);
    release(pool, a);
    expect_consistent(pool);
    release(pool, b);
    ggml_cpool_driver_set_faults(fault, nullptr);
    ggml_cpool_ctx_free(ctx);
    ggml_cpool_driver_release(fault);
}

HARNESS_INSTANTIATE(Async, testing::Values(DRIVER), driver_name);

} // namespace
