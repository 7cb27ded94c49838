// The backend context: pool kind per device (parameters, GGML_CUDA_POOL, GGML_CUDA_NO_VMM), the
// HIP multi-GPU guard, lazy per-device pools, release of every device, and the C ABI's checks.

#include "harness.h"

#include <chrono>
#include <future>
#include <memory>
#include <thread>

using namespace harness;

namespace {

struct sim_ctx {
    explicit sim_ctx(ggml_cpool_sim_params p, ggml_cpool_kind kind = GGML_CPOOL_KIND_AUTO) {
        ggml_cpool_ctx_params cp = ggml_cpool_ctx_default_params();
        cp.driver_kind           = GGML_CPOOL_DRIVER_SIM;
        cp.sim                   = &p; // read at creation
        for (auto & k : cp.kind) {
            k = kind;
        }
        st = ggml_cpool_ctx_create(&cp, &ctx);
    }
    ~sim_ctx() { ggml_cpool_ctx_free(ctx); }
    ggml_cpool_kind kind(int device = 0) {
        ggml_cpool_t pool = nullptr;
        return ggml_cpool_ctx_get_pool(ctx, device, &pool) == GGML_CPOOL_STATUS_OK ? ggml_cpool_get_kind(pool) :
                                                                                     GGML_CPOOL_KIND_AUTO;
    }
    ggml_cpool_ctx_t  ctx = nullptr;
    ggml_cpool_status st;
};

TEST(Backend, AutoPicksVmmWhereSupported) {
    clean_env env;
    EXPECT_EQ(sim_ctx(sim_params(64 * MiB)).kind(), GGML_CPOOL_KIND_VMM);
}

TEST(Backend, AutoPicksLegacyWithoutVmmSupport) {
    clean_env env;
    auto      p     = sim_params(64 * MiB);
    p.vmm_supported = 0;
    EXPECT_EQ(sim_ctx(p).kind(), GGML_CPOOL_KIND_LEGACY);
}

TEST(Backend, NoVmmEnvironmentSwitchesVmmOff) {
    clean_env  env;
    scoped_env off("GGML_CUDA_NO_VMM", "1");
    EXPECT_EQ(sim_ctx(sim_params(64 * MiB)).kind(), GGML_CPOOL_KIND_LEGACY);
    scoped_env on("GGML_CUDA_NO_VMM", "0");
    EXPECT_EQ(sim_ctx(sim_params(64 * MiB)).kind(), GGML_CPOOL_KIND_VMM);
}

TEST(Backend, PoolEnvironmentOverridesTheDefault) {
    clean_env env;
    for (auto [value, kind] :
         { std::pair{ "plain", GGML_CPOOL_KIND_PLAIN }, std::pair{ "legacy", GGML_CPOOL_KIND_LEGACY },
           std::pair{ "VMM", GGML_CPOOL_KIND_VMM } }) {
        scoped_env set("GGML_CUDA_POOL", value);
        EXPECT_EQ(sim_ctx(sim_params(64 * MiB)).kind(), kind) << value;
    }
    scoped_env both("GGML_CUDA_NO_VMM", "1");
    scoped_env vmm("GGML_CUDA_POOL", "vmm");
    EXPECT_EQ(sim_ctx(sim_params(64 * MiB)).kind(), GGML_CPOOL_KIND_VMM) << "an explicit pool kind beats NO_VMM";
}

TEST(Backend, ExplicitKindBeatsTheEnvironment) {
    clean_env  env;
    scoped_env set("GGML_CUDA_POOL", "plain");
    EXPECT_EQ(sim_ctx(sim_params(64 * MiB), GGML_CPOOL_KIND_LEGACY).kind(), GGML_CPOOL_KIND_LEGACY);
}

TEST(Backend, MalformedEnvironmentIsRefusedWithOneLine) {
    clean_env env;
    for (auto [name, value] : { std::pair{ "GGML_CUDA_POOL", "fastest" }, std::pair{ "GGML_CUDA_NO_VMM", "maybe" } }) {
        scoped_env  set(name, value);
        log_capture log;
        sim_ctx     c(sim_params(64 * MiB));
        EXPECT_EQ(c.st, GGML_CPOOL_STATUS_INVALID_ARGUMENT) << name;
        EXPECT_EQ(c.ctx, nullptr);
        EXPECT_EQ(log.count(name), 1u);
    }
    scoped_env  set("GGML_CUDA_POOL", "fastest");
    log_capture log;
    sim_ctx     c(sim_params(64 * MiB));
    EXPECT_EQ(log.count(
                  "^GGML_CUDA_POOL=fastest: not one of its values; it takes auto \\| vmm \\| legacy \\| plain \\| "
                  "async \\| ggml \\| ggml-legacy \\(ggml's own pools: the llama.cpp adapter only\\)$"),
              1u);
}

TEST(Backend, HipWithTwoDevicesUsesThePlainPoolAndSaysWhyOnce) {
    clean_env   env;
    log_capture log;
    sim_ctx     c(sim_params(64 * MiB, 2, GGML_CPOOL_PLATFORM_HIP), GGML_CPOOL_KIND_LEGACY);
    EXPECT_EQ(c.kind(0), GGML_CPOOL_KIND_PLAIN);
    EXPECT_EQ(c.kind(1), GGML_CPOOL_KIND_PLAIN);
    EXPECT_EQ(log.count("ROCm/rocm-systems#4817"), 1u);
}

TEST(Backend, HipWithOneDeviceKeepsLruReclaim) {
    clean_env   env;
    log_capture log;
    sim_ctx     c(sim_params(64 * MiB, 1, GGML_CPOOL_PLATFORM_HIP), GGML_CPOOL_KIND_LEGACY);
    EXPECT_EQ(c.kind(), GGML_CPOOL_KIND_LEGACY);
    EXPECT_EQ(log.count("rocm"), 0u);
}

TEST(Backend, CudaWithTwoDevicesKeepsLruReclaim) {
    clean_env env;
    sim_ctx   c(sim_params(64 * MiB, 2, GGML_CPOOL_PLATFORM_CUDA), GGML_CPOOL_KIND_LEGACY);
    EXPECT_EQ(c.kind(0), GGML_CPOOL_KIND_LEGACY);
    EXPECT_EQ(c.kind(1), GGML_CPOOL_KIND_LEGACY);
}

TEST(Backend, HipGuardLogLinesUseTheHipPrefix) {
    clean_env    env;
    auto         p = sim_params(8 * MiB, 1, GGML_CPOOL_PLATFORM_HIP);
    sim_ctx      c(p, GGML_CPOOL_KIND_LEGACY);
    ggml_cpool_t pool = pool_of(c.ctx);
    // 4 MiB stay live and 1 MiB cached, within the headroom: a 3 MiB miss fails until LRU frees it
    buf          a = alloc(pool, 4 * MiB);
    buf          b = alloc(pool, 1 * MiB);
    release(pool, b);
    log_capture log;
    buf         big = alloc(pool, 3 * MiB);
    EXPECT_EQ(log.count("^HIP pool\\[0\\]: alloc of .* trying LRU-style reclaim"), 1u);
    release(pool, big);
    release(pool, a);
}

TEST(Backend, PoolsAreCreatedLazilyOnePerDevice) {
    clean_env           env;
    ggml_cpool_driver_t drv = nullptr;
    auto                p   = sim_params(64 * MiB, 3);
    ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &drv), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx = make_ctx(drv, GGML_CPOOL_KIND_LEGACY);
    ggml_cpool_t     p0 = pool_of(ctx, 0), p2 = pool_of(ctx, 2);
    EXPECT_NE(p0, p2);
    EXPECT_EQ(pool_of(ctx, 0), p0) << "the same pool on every call";
    EXPECT_EQ(ggml_cpool_get_device(p2), 2);
    EXPECT_EQ(ggml_cpool_driver_outstanding(drv), 0u) << "no driver memory before an allocation";
    ggml_cpool_ctx_free(ctx);
    ggml_cpool_driver_release(drv);
}

TEST(Backend, DestroyReleasesEveryDevice) {
    clean_env           env;
    ggml_cpool_driver_t drv = nullptr;
    auto                p   = sim_params(64 * MiB, 2);
    ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &drv), GGML_CPOOL_STATUS_OK);
    for (ggml_cpool_kind kind : { GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_VMM }) {
        ggml_cpool_ctx_t ctx = make_ctx(drv, kind);
        for (int d = 0; d < 2; d++) {
            ggml_cpool_t pool = pool_of(ctx, d);
            buf          a    = alloc(pool, 3 * MiB);
            alloc(pool, 1 * MiB); // left live
            release(pool, a);
        }
        EXPECT_GT(ggml_cpool_driver_outstanding(drv), 0u);
        ggml_cpool_ctx_free(ctx);
        EXPECT_EQ(ggml_cpool_driver_outstanding(drv), 0u) << ggml_cpool_kind_str(kind);
    }
    ggml_cpool_driver_release(drv);
}

TEST(Backend, ContextKeepsASharedDriverAlive) {
    clean_env           env;
    ggml_cpool_driver_t drv = nullptr;
    auto                p   = sim_params(64 * MiB);
    ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &drv), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t ctx = make_ctx(drv, GGML_CPOOL_KIND_LEGACY);
    ggml_cpool_driver_release(drv); // the context still holds it
    ggml_cpool_t pool = pool_of(ctx);
    buf          a    = alloc(pool, 1 * MiB);
    EXPECT_EQ(ggml_cpool_driver_outstanding(ggml_cpool_ctx_driver(ctx)), 1u);
    release(pool, a);
    ggml_cpool_ctx_free(ctx);
}

TEST(Backend, BadDeviceIndexIsRefused) {
    clean_env    env;
    sim_ctx      c(sim_params(64 * MiB, 2));
    ggml_cpool_t pool = nullptr;
    log_capture  log;
    EXPECT_EQ(ggml_cpool_ctx_get_pool(c.ctx, 2, &pool), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_ctx_get_pool(c.ctx, -1, &pool), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(log.count("out of range"), 2u);
}

TEST(Backend, BadSimParametersAreRefused) {
    ggml_cpool_driver_t drv = nullptr;
    log_capture         log;
    auto                p = sim_params(64 * MiB, 0);
    EXPECT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &drv), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    p = sim_params(0);
    EXPECT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &drv), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    p             = sim_params(64 * MiB);
    p.granularity = 1000;
    EXPECT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &drv), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(drv, nullptr);
    EXPECT_EQ(log.count("sim driver: bad parameters"), 3u);
}

TEST(Backend, NullHandlesAreRefusedNotDereferenced) {
    ggml_cpool_stats s{};
    void *           p      = nullptr;
    size_t           actual = 0;
    log_capture      log;
    EXPECT_EQ(ggml_cpool_alloc(nullptr, 16, 0, &p, &actual), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_free(nullptr, p, 16), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_get_stats(nullptr, &s), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_trim(nullptr), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_ctx_get_pool(nullptr, 0, nullptr), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_ctx_create(nullptr, nullptr), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_generation(nullptr), 0u);
    ggml_cpool_ctx_free(nullptr);
    ggml_cpool_driver_release(nullptr);
    EXPECT_EQ(log.lines(GGML_CPOOL_LOG_ERROR).size(), 6u);
}

TEST(Backend, StatusAndKindNames) {
    EXPECT_STREQ(ggml_cpool_status_str(GGML_CPOOL_STATUS_OUT_OF_MEMORY), "OUT_OF_MEMORY");
    EXPECT_STREQ(ggml_cpool_status_str(ggml_cpool_status(99)), "UNKNOWN_STATUS");
    EXPECT_STREQ(ggml_cpool_kind_str(GGML_CPOOL_KIND_PLAIN), "plain");
}

TEST(Backend, KindFromItsName) {
    log_capture log;
    for (int k = 0; k < GGML_CPOOL_KIND_COUNT; k++) {
        ggml_cpool_kind kind = GGML_CPOOL_KIND_COUNT;
        EXPECT_EQ(ggml_cpool_kind_from_str(ggml_cpool_kind_str(ggml_cpool_kind(k)), &kind), GGML_CPOOL_STATUS_OK);
        EXPECT_EQ(kind, k) << ggml_cpool_kind_str(ggml_cpool_kind(k));
    }
    ggml_cpool_kind kind = GGML_CPOOL_KIND_COUNT;
    EXPECT_EQ(ggml_cpool_kind_from_str("VMM", &kind), GGML_CPOOL_STATUS_OK) << "any case, as GGML_CUDA_POOL";
    EXPECT_EQ(kind, GGML_CPOOL_KIND_VMM);
    for (const char * other : { "ggml", "", "vmm,legacy", "unknown" }) {
        EXPECT_EQ(ggml_cpool_kind_from_str(other, &kind), GGML_CPOOL_STATUS_INVALID_ARGUMENT) << other;
        EXPECT_EQ(kind, GGML_CPOOL_KIND_VMM) << "untouched by '" << other << "'";
    }
    EXPECT_TRUE(log.lines().empty()) << "a name that is no kind is the caller's to report";
    EXPECT_EQ(ggml_cpool_kind_from_str(nullptr, &kind), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_kind_from_str("vmm", nullptr), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(log.lines(GGML_CPOOL_LOG_ERROR).size(), 2u);
}

TEST(Backend, DefaultLoggerHonoursTheLevel) {
    clean_env  env;
    scoped_env level("GGML_CUDA_POOL_LOG", "error");
    testing::internal::CaptureStderr();
    {
        sim_ctx c(sim_params(64 * MiB, 1, GGML_CPOOL_PLATFORM_HIP), GGML_CPOOL_KIND_LEGACY);
        c.kind(); // DEBUG "pool created": filtered
        ggml_cpool_t pool = nullptr;
        ggml_cpool_ctx_get_pool(c.ctx, 5, &pool); // ERROR: printed
    }
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.find("pool created"), std::string::npos);
    EXPECT_NE(err.find("device 5 out of range"), std::string::npos);
}

// a log callback that calls back into the library: each line asks the fault driver for its
// count, logs a line of its own and opens an async pool (the warm record's lock)
struct reentrant {
    ggml_cpool_driver_t sim = nullptr, fault = nullptr;
    int                 depth = 0, lines = 0;
};

void call_back(ggml_cpool_log_level, const char *, void * user) {
    auto * r = static_cast<reentrant *>(user);
    r->lines++;
    if (r->depth++ == 0) {
        (void) ggml_cpool_driver_faults_fired(r->fault);
        (void) ggml_cpool_free(nullptr, nullptr, 0); // logs
        ggml_cpool_ctx_t ctx  = make_ctx(r->sim, GGML_CPOOL_KIND_ASYNC);
        ggml_cpool_t     pool = nullptr;
        (void) ggml_cpool_ctx_get_pool(ctx, 0, &pool);
        ggml_cpool_ctx_free(ctx);
    }
    r->depth--;
}

TEST(Backend, ALogCallbackMayCallBackIntoTheLibrary) {
    constexpr auto DEADLINE = std::chrono::seconds(30); // a deadlock, not a slow machine
    // on a deadlock the thread stays blocked: what it uses is left to it
    auto           r = std::make_shared<reentrant>();
    auto           p = sim_params(64 * MiB);
    ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &r->sim), GGML_CPOOL_STATUS_OK);
    ASSERT_EQ(ggml_cpool_driver_fault_create(r->sim, "fail=malloc:1+;fail=attr:1", &r->fault), GGML_CPOOL_STATUS_OK);
    std::promise<void> done;
    std::future<void>  finished = done.get_future();
    std::thread        session([r, &done] {
        ggml_cpool_log_set(call_back, r.get());
        ggml_cpool_ctx_t legacy = make_ctx(r->fault, GGML_CPOOL_KIND_LEGACY);
        void *           ptr    = nullptr;
        size_t           actual = 0;
        // an injected fault, logged by the fault driver, then the pool's own line
        EXPECT_EQ(ggml_cpool_alloc(pool_of(legacy), 1 * MiB, 0, &ptr, &actual), GGML_CPOOL_STATUS_OUT_OF_MEMORY);
        ggml_cpool_ctx_t async = make_ctx(r->fault, GGML_CPOOL_KIND_ASYNC);
        pool_of(async); // a failed attribute read, logged by the warm record
        ggml_cpool_ctx_free(async);
        ggml_cpool_ctx_free(legacy);
        ggml_cpool_log_set(nullptr, nullptr);
        done.set_value();
    });
    if (finished.wait_for(DEADLINE) != std::future_status::ready) {
        session.detach();
        FAIL() << "deadlocked: the library held a lock while a log callback called back into it";
    }
    session.join();
    EXPECT_GE(r->lines, 3);
    ggml_cpool_driver_release(r->fault);
    EXPECT_EQ(ggml_cpool_driver_outstanding(r->sim), 0u);
    ggml_cpool_driver_release(r->sim);
}

} // namespace
