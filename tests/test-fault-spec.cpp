// The fault spec: what a fault driver accepts, what it refuses (one log line, nothing armed),
// and the environment's spec at context creation.

#include "harness.h"

using namespace harness;

namespace {

TEST(FaultSpec, WellFormedSpecsAreAccepted) {
    sim_device device(sim_params(64 * MiB));
    for (const char * spec : { "", "oneshot=2.36MiB", "oneshot=4096", "oneshot=1G", "fail=malloc:3", "fail=any:10+",
                               "fail=map:1;fail=free:2", "prob=0.05;seed=42;on=create;limit=3", "prob=1", ";;",
                               "while=/tmp/window", "while=/tmp/window;fail=malloc:1+;limit=4" }) {
        log_capture         log;
        ggml_cpool_driver_t f = fault_over(device.drv, spec);
        EXPECT_EQ(log.lines(GGML_CPOOL_LOG_ERROR).size(), 0u) << spec;
        ggml_cpool_driver_release(f);
    }
}

TEST(FaultSpec, MalformedSpecsAreRejectedWithOneLineAndNoFaults) {
    sim_device          device(sim_params(64 * MiB));
    ggml_cpool_driver_t inner = device.drv;
    for (const char * spec :
         { "oneshot", "oneshot=2.36XB", "oneshot=-1", "fail=malloc", "fail=nosuch:1", "fail=malloc:0", "fail=malloc:x",
           "prob=2", "prob=abc", "on=flush", "seed=-3", "limit=", "bogus=1", "fail=malloc:3;oops",
           // numbers are plain decimals: no sign, no space, nothing strtod reads besides
           "limit= -1", "fail=malloc: -1", "seed= -5", "limit=+3", "prob= 0.5", "prob=-0", "oneshot= 1MiB",
           "oneshot=-0", "oneshot=0x10", "oneshot=1e3", "prob=nan", "while=" }) {
        log_capture         log;
        ggml_cpool_driver_t f = nullptr;
        EXPECT_EQ(ggml_cpool_driver_fault_create(inner, spec, &f), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << spec;
        EXPECT_EQ(f, nullptr);
        EXPECT_EQ(log.lines().size(), 1u) << spec;
    }
    // re-arming with a malformed spec keeps the faults that were armed, and says so
    ggml_cpool_driver_t f = fault_over(inner, "fail=malloc:1");
    {
        log_capture log;
        EXPECT_EQ(ggml_cpool_driver_set_faults(f, "fail=malloc"), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
        EXPECT_EQ(log.count("cannot read 'fail=malloc' .*; the previous spec stays armed$"), 1u);
        EXPECT_EQ(log.lines().size(), 1u);
    }
    ggml_cpool_ctx_t ctx    = make_ctx(f, GGML_CPOOL_KIND_LEGACY);
    void *           ptr    = nullptr;
    size_t           actual = 0;
    // the first malloc fails; the pool's one retry is served
    EXPECT_EQ(ggml_cpool_alloc(pool_of(ctx), 1 * MiB, 0, &ptr, &actual), GGML_CPOOL_STATUS_OK);
    EXPECT_EQ(ggml_cpool_driver_faults_fired(f), 1u) << "the previous spec fired";
    EXPECT_EQ(ggml_cpool_free(pool_of(ctx), ptr, actual), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_free(ctx);
    EXPECT_EQ(ggml_cpool_driver_set_faults(inner, "fail=malloc:1"), GGML_CPOOL_STATUS_INVALID_ARGUMENT)
        << "the sim driver is no fault driver";
    ggml_cpool_driver_release(f);
}

TEST(FaultSpec, MalformedEnvironmentSpecFailsContextCreation) {
    clean_env   env;
    scoped_env  set("GGML_CUDA_POOL_FAULT", "fail=everything");
    log_capture log;
    auto        cp       = ggml_cpool_ctx_default_params();
    cp.driver_kind       = GGML_CPOOL_DRIVER_SIM;
    ggml_cpool_ctx_t ctx = nullptr;
    EXPECT_EQ(ggml_cpool_ctx_create(&cp, &ctx), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ctx, nullptr);
    EXPECT_EQ(log.count("^GGML_CUDA_POOL_FAULT=fail=everything: cannot read 'fail=everything'; it takes a fault spec"),
              1u);
    EXPECT_EQ(log.lines().size(), 1u);
}

} // namespace
