// Every status a C program can meet says why, as the header promises: under the default logger
// (no callback, GGML_CUDA_POOL_LOG unset) the reason reaches stderr, and ggml_cpool_last_error()
// holds that same line. Context and driver creation included, on a machine without a device too.

#include "harness.h"

#include <functional>

using namespace harness;

namespace {

constexpr size_t CAPACITY = 64 * MiB;

struct failure_case {
    const char *                       name;
    ggml_cpool_status                  want;
    const char *                       says; // a part of the line that names the reason
    std::function<ggml_cpool_status()> run;
};

// a context on the cuda driver, as the README's snippet makes it, with no device visible: the
// variables are read at the runtime's first call, which in this test's process is this one
ggml_cpool_status cuda_ctx_without_device() {
    scoped_env              cuda("CUDA_VISIBLE_DEVICES", "");
    scoped_env              hip("HIP_VISIBLE_DEVICES", "");
    ggml_cpool_ctx_params   p   = ggml_cpool_ctx_default_params();
    ggml_cpool_ctx_t        ctx = nullptr;
    const ggml_cpool_status st  = ggml_cpool_ctx_create(&p, &ctx);
    ggml_cpool_ctx_free(ctx);
    return st;
}

ggml_cpool_status cuda_ctx_with_env(const char * name, const char * value) {
    scoped_env set(name, value);
    return cuda_ctx_without_device();
}

ggml_cpool_status alloc_past_the_device() {
    auto                    p = sim_params(CAPACITY);
    sim_device              dev(p);
    ggml_cpool_ctx_t        ctx    = make_ctx(dev.drv, GGML_CPOOL_KIND_LEGACY);
    void *                  ptr    = nullptr;
    size_t                  actual = 0;
    const ggml_cpool_status st     = ggml_cpool_alloc(pool_of(ctx), 2 * CAPACITY, 0, &ptr, &actual);
    ggml_cpool_ctx_free(ctx);
    return st;
}

ggml_cpool_status pool_without_its_stream() {
    auto                p = sim_params(CAPACITY);
    sim_device          dev(p);
    ggml_cpool_driver_t fault = nullptr;
    EXPECT_EQ(ggml_cpool_driver_fault_create(dev.drv, "fail=stream:1", &fault), GGML_CPOOL_STATUS_OK);
    ggml_cpool_ctx_t        ctx  = make_ctx(fault, GGML_CPOOL_KIND_LEGACY);
    ggml_cpool_t            pool = nullptr;
    const ggml_cpool_status st   = ggml_cpool_ctx_get_pool(ctx, 0, &pool);
    ggml_cpool_ctx_free(ctx);
    ggml_cpool_driver_release(fault);
    return st;
}

// clang-format off
const failure_case CASES[] = {
    { "no device", GGML_CPOOL_STATUS_UNSUPPORTED, "GGML_CPOOL_DRIVER_SIM", cuda_ctx_without_device },
    { "bad kind without a device", GGML_CPOOL_STATUS_INVALID_ARGUMENT, "GGML_CUDA_POOL=bogus",
      [] { return cuda_ctx_with_env("GGML_CUDA_POOL", "bogus"); } },
    { "bad log level without a device", GGML_CPOOL_STATUS_INVALID_ARGUMENT, "GGML_CUDA_POOL_LOG=loud",
      [] { return cuda_ctx_with_env("GGML_CUDA_POOL_LOG", "loud"); } },
    { "unknown driver kind", GGML_CPOOL_STATUS_INVALID_ARGUMENT, "driver kind",
      [] { ggml_cpool_driver_t d = nullptr; return ggml_cpool_driver_create(ggml_cpool_driver_kind(9), nullptr, &d); } },
    { "out of memory", GGML_CPOOL_STATUS_OUT_OF_MEMORY, "MiB", alloc_past_the_device },
    { "driver error", GGML_CPOOL_STATUS_DRIVER_ERROR, "stream", pool_without_its_stream },
};
// clang-format on

void PrintTo(const failure_case & c, std::ostream * os) {
    *os << c.name;
}

// the last line of `text`, without its newline
std::string last_line(std::string text) {
    while (!text.empty() && text.back() == '\n') {
        text.pop_back();
    }
    const size_t nl = text.rfind('\n');
    return nl == std::string::npos ? text : text.substr(nl + 1);
}

class FailureLine : public testing::TestWithParam<failure_case> {};

TEST_P(FailureLine, ReachesStderrAtTheDefaultLevelAndLastError) {
    clean_env    env;
    scoped_env   level("GGML_CUDA_POOL_LOG", nullptr);
    const auto & c = GetParam();
    ggml_cpool_log_set(nullptr, nullptr); // the default logger, as a C program has it
    testing::internal::CaptureStderr();
    (void) ggml_cpool_alloc(nullptr, 1, 0, nullptr, nullptr); // an earlier line the case must replace
    const std::string earlier = ggml_cpool_last_error();
    (void) testing::internal::GetCapturedStderr();
    testing::internal::CaptureStderr();
    const ggml_cpool_status st  = c.run();
    const std::string       err = testing::internal::GetCapturedStderr();
    if (st == GGML_CPOOL_STATUS_OK && c.want == GGML_CPOOL_STATUS_UNSUPPORTED) {
        GTEST_SKIP() << "a device is visible to this process (its runtime started before the case)";
    }
    EXPECT_EQ(st, c.want) << ggml_cpool_status_str(st);
    EXPECT_NE(err.find(c.says), std::string::npos) << "stderr at the default level names the reason: '" << err << "'";
    EXPECT_NE(std::string(ggml_cpool_last_error()), earlier) << "last_error holds this failure's line";
    EXPECT_EQ(std::string(ggml_cpool_last_error()), last_line(err)) << "last_error is the line stderr showed last";
}

INSTANTIATE_TEST_SUITE_P(Cases, FailureLine, testing::ValuesIn(CASES),
                         [](const testing::TestParamInfo<failure_case> & info) {
                             std::string name;
                             for (const char * p = info.param.name; *p; p++) {
                                 name += isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
                             }
                             return name;
                         });

} // namespace
