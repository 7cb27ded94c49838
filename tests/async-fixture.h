#pragma once
// The async suites' fixture: a driver of two devices (sim, or the cuda driver where the
// executable runs over it), whose release threshold on device 0 is back to its first value at
// the end, with nothing outstanding and nothing latched.

#include "harness.h"

namespace harness {

constexpr uint64_t MAX_THRESHOLD = UINT64_MAX;

class Async : public testing::TestWithParam<drv> {
  protected:
    void SetUp() override {
        std::string why;
        driver_ = open_driver(GetParam(), sim_params(256 * MiB, 2), &why);
        if (driver_ == nullptr) {
            GTEST_SKIP() << why;
        }
        ASSERT_EQ(ggml_cpool_driver_release_threshold(driver_, 0, &initial_), GGML_CPOOL_STATUS_OK);
    }
    void TearDown() override {
        if (driver_) {
            uint64_t t = 0;
            EXPECT_EQ(ggml_cpool_driver_release_threshold(driver_, 0, &t), GGML_CPOOL_STATUS_OK);
            EXPECT_EQ(t, initial_) << "the threshold is back to what it was";
            EXPECT_EQ(ggml_cpool_driver_outstanding(driver_), 0u);
            EXPECT_FALSE(ggml_cpool_driver_error_latched(driver_));
            ggml_cpool_driver_release(driver_);
        }
    }
    size_t reserved(int device = 0) {
        size_t r = 0, u = 0;
        EXPECT_EQ(ggml_cpool_driver_pool_usage(driver_, device, &r, &u), GGML_CPOOL_STATUS_OK);
        return r;
    }
    uint64_t threshold(int device = 0) {
        uint64_t t = 0;
        EXPECT_EQ(ggml_cpool_driver_release_threshold(driver_, device, &t), GGML_CPOOL_STATUS_OK);
        return t;
    }

    ggml_cpool_driver_t driver_  = nullptr;
    uint64_t            initial_ = 0;
};

} // namespace harness
