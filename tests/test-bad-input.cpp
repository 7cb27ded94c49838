// Bad input, one case per row of docs/design.md's table: each is answered with a status and exactly
// one log line, and leaves every pool consistent and every byte accounted for.

#include "harness.h"

#include <functional>

using namespace harness;

namespace {

constexpr size_t CAPACITY = 64 * MiB;

// the world a case runs in: a context with a live and a cached buffer on a 2-device sim driver
struct world {
    ggml_cpool_driver_t drv = nullptr;
    ggml_cpool_ctx_t    ctx = nullptr, other = nullptr;
    ggml_cpool_t        pool = nullptr, other_pool = nullptr;
    buf                 live, cached, foreign;
};

struct bad_case {
    const char *                              name;
    ggml_cpool_status                         want;
    std::function<ggml_cpool_status(world &)> run;
};

ggml_cpool_status try_alloc(ggml_cpool_t pool, size_t size, uint32_t flags = 0) {
    void * p = nullptr;
    size_t a = 0;
    return ggml_cpool_alloc(pool, size, flags, &p, &a);
}

ggml_cpool_status ctx_with_env(const char * name, const char * value) {
    scoped_env set(name, value);
    return sim_ctx_status();
}

// clang-format off
const bad_case CASES[] = {
    { "zero size", GGML_CPOOL_STATUS_INVALID_ARGUMENT, [](world & w) { return try_alloc(w.pool, 0); } },
    { "SIZE_MAX", GGML_CPOOL_STATUS_OUT_OF_MEMORY, [](world & w) { return try_alloc(w.pool, SIZE_MAX); } },
    { "unknown alloc flags", GGML_CPOOL_STATUS_INVALID_ARGUMENT, [](world & w) { return try_alloc(w.pool, 64, 0x100); } },
    { "null output pointer", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world & w) { size_t a; return ggml_cpool_alloc(w.pool, 64, 0, nullptr, &a); } },
    { "null pool", GGML_CPOOL_STATUS_INVALID_ARGUMENT, [](world &) { return try_alloc(nullptr, 64); } },
    { "free of a null pointer", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world & w) { return ggml_cpool_free(w.pool, nullptr, 64); } },
    { "free of an unknown pointer", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world & w) { static char host[64]; return ggml_cpool_free(w.pool, host, 64); } },
    { "double free", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world & w) { return ggml_cpool_free(w.pool, w.cached.ptr, w.cached.size); } },
    { "free with a wrong size", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world & w) { return ggml_cpool_free(w.pool, w.live.ptr, w.live.size - 128); } },
    { "free into another context", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world & w) { return ggml_cpool_free(w.pool, w.foreign.ptr, w.foreign.size); } },
    { "capture declared as neither 1, 0 nor -1", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world & w) { return ggml_cpool_declare_capture(w.pool, 2); } },
    { "capture declared for a null pool", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world &) { return ggml_cpool_declare_capture(nullptr, 1); } },
    { "device index past the last", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world & w) { ggml_cpool_t p; return ggml_cpool_ctx_get_pool(w.ctx, 2, &p); } },
    { "negative device index", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world & w) { ggml_cpool_t p; return ggml_cpool_ctx_get_pool(w.ctx, -1, &p); } },
    { "VMM range exhausted", GGML_CPOOL_STATUS_OUT_OF_MEMORY, [](world & w) { return try_alloc(w.other_pool, 48 * MiB); } },
    { "device full", GGML_CPOOL_STATUS_OUT_OF_MEMORY, [](world & w) { return try_alloc(w.pool, 2 * CAPACITY); } },
    { "malformed GGML_CUDA_POOL", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world &) { return ctx_with_env("GGML_CUDA_POOL", "fast"); } },
    { "malformed GGML_CUDA_NO_VMM", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world &) { return ctx_with_env("GGML_CUDA_NO_VMM", "2"); } },
    { "malformed GGML_CUDA_POOL_FAULT", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world &) { return ctx_with_env("GGML_CUDA_POOL_FAULT", "fail=malloc:zero"); } },
    { "malformed fault spec through the API", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world & w) { ggml_cpool_driver_t f; return ggml_cpool_driver_fault_create(w.drv, "prob=7", &f); } },
    { "unknown pool kind", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world & w) {
          auto cp    = ggml_cpool_ctx_default_params();
          cp.driver  = w.drv;
          cp.kind[1] = ggml_cpool_kind(42);
          ggml_cpool_ctx_t ctx;
          return ggml_cpool_ctx_create(&cp, &ctx);
      } },
    { "unknown driver kind", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world &) {
          ggml_cpool_driver_t d;
          return ggml_cpool_driver_create(ggml_cpool_driver_kind(9), nullptr, &d);
      } },
    { "bad sim parameters", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world &) {
          auto p         = sim_params(CAPACITY, GGML_CPOOL_MAX_DEVICES + 1);
          ggml_cpool_driver_t d;
          return ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &d);
      } },
    { "sim granularity whose rounding overflows", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world &) {
          auto p        = sim_params(CAPACITY);
          p.granularity = SIZE_MAX & ~size_t(4095); // a multiple of the page, but a range would round to 0
          ggml_cpool_driver_t d = nullptr;
          ggml_cpool_status   st = ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &d);
          ggml_cpool_driver_release(d);
          return st;
      } },
    { "VMM asked of a device without it", GGML_CPOOL_STATUS_UNSUPPORTED,
      [](world &) {
          auto p          = sim_params(CAPACITY);
          p.vmm_supported = 0;
          ggml_cpool_driver_t d;
          ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &d);
          ggml_cpool_ctx_t ctx = make_ctx(d, GGML_CPOOL_KIND_VMM);
          ggml_cpool_t     pool;
          ggml_cpool_status st = ggml_cpool_ctx_get_pool(ctx, 0, &pool);
          ggml_cpool_ctx_free(ctx);
          ggml_cpool_driver_release(d);
          return st;
      } },
    { "destroy with live buffers", GGML_CPOOL_STATUS_OK,
      [](world & w) {
          ggml_cpool_ctx_t ctx = make_ctx(w.drv, GGML_CPOOL_KIND_LEGACY);
          void *           p;
          size_t           a;
          ggml_cpool_alloc(pool_of(ctx), MiB, 0, &p, &a);
          ggml_cpool_ctx_free(ctx); // says it releases them; the driver gets everything back
          return GGML_CPOOL_STATUS_OK;
      } },
    { "fault controls on a driver without faults", GGML_CPOOL_STATUS_INVALID_ARGUMENT,
      [](world & w) { return ggml_cpool_driver_set_faults(w.drv, "fail=any:1"); } },
};
// clang-format on

void PrintTo(const bad_case & c, std::ostream * os) {
    *os << c.name;
}

class BadInput : public testing::TestWithParam<bad_case> {
  protected:
    void SetUp() override {
        auto p = sim_params(CAPACITY, 2);
        ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &w_.drv), GGML_CPOOL_STATUS_OK);
        w_.ctx        = make_ctx(w_.drv, GGML_CPOOL_KIND_LEGACY);
        w_.other      = make_ctx(w_.drv, GGML_CPOOL_KIND_VMM, 32 * MiB);
        w_.pool       = pool_of(w_.ctx);
        w_.other_pool = pool_of(w_.other);
        w_.live       = alloc(w_.pool, 3 * MiB);
        w_.cached     = alloc(w_.pool, 1 * MiB);
        release(w_.pool, w_.cached);
        w_.foreign = alloc(w_.other_pool, 1 * MiB);
    }
    void TearDown() override {
        release(w_.pool, w_.live);
        release(w_.other_pool, w_.foreign);
        ggml_cpool_ctx_free(w_.ctx);
        ggml_cpool_ctx_free(w_.other);
        EXPECT_EQ(ggml_cpool_driver_outstanding(w_.drv), 0u);
        ggml_cpool_driver_release(w_.drv);
    }
    world w_;
};

TEST_P(BadInput, AnsweredWithAStatusAndOneLogLine) {
    clean_env                env;
    const bad_case &         c      = GetParam();
    ggml_cpool_stats         before = stats_of(w_.pool);
    log_capture              log;
    ggml_cpool_status        st    = c.run(w_);
    std::vector<std::string> lines = log.lines(GGML_CPOOL_LOG_WARN);
    EXPECT_EQ(st, c.want) << ggml_cpool_status_str(st);
    EXPECT_EQ(lines.size(), 1u) << "one clear line, got: " << testing::PrintToString(lines);
    expect_consistent(w_.pool);
    expect_consistent(w_.other_pool);
    ggml_cpool_stats after = stats_of(w_.pool);
    EXPECT_EQ(after.live_bytes, before.live_bytes);
    EXPECT_EQ(after.reserved_bytes, ggml_cpool_driver_used(w_.drv, 0) - stats_of(w_.other_pool).reserved_bytes)
        << "every byte the driver handed out is in one of the pools";
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInput, testing::ValuesIn(CASES), [](const testing::TestParamInfo<bad_case> & info) {
    std::string name;
    for (const char * p = info.param.name; *p; p++) {
        name += isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
    }
    return name;
});

} // namespace
