#pragma once
// What the suites share: log capture, scoped environment variables, drivers of either kind
// (the cuda one reports why it is unavailable, so its tests skip with that reason), and the
// invariants every pool keeps.

#include "../ggml-cuda/pools/reuse-cache.h"
#include "ggml-cuda-pool-testing.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

namespace harness {

constexpr size_t KiB = size_t(1) << 10;
constexpr size_t MiB = size_t(1) << 20;
// the async pool's reuse cache: its bounds, and a buffer too large for it, which goes straight
// back to the device's stream-ordered pool when freed
using reuse_cache               = gcp::reuse_cache;
constexpr size_t ASYNC_UNCACHED = reuse_cache::MAX_BUFFER + MiB;

// collects every log line while alive
class log_capture {
  public:
    log_capture() { ggml_cpool_log_set(&log_capture::on_line, this); }
    ~log_capture() { ggml_cpool_log_set(nullptr, nullptr); }

    std::vector<std::string> lines(ggml_cpool_log_level min = GGML_CPOOL_LOG_DEBUG) const {
        std::lock_guard<std::mutex> lock(mutex_);
        std::vector<std::string>    out;
        for (auto & l : lines_) {
            if (l.first >= min) {
                out.push_back(l.second);
            }
        }
        return out;
    }
    // lines matching the regular expression
    size_t count(const std::string & pattern) const {
        std::regex re(pattern);
        size_t     n = 0;
        for (auto & l : lines()) {
            n += std::regex_search(l, re);
        }
        return n;
    }

  private:
    static void on_line(ggml_cpool_log_level level, const char * text, void * self) {
        auto *                      c = static_cast<log_capture *>(self);
        std::lock_guard<std::mutex> lock(c->mutex_);
        std::string                 s(text);
        if (!s.empty() && s.back() == '\n') {
            s.pop_back();
        }
        c->lines_.emplace_back(level, s);
    }
    mutable std::mutex                                        mutex_;
    std::vector<std::pair<ggml_cpool_log_level, std::string>> lines_;
};

// sets (or unsets, with nullptr) an environment variable for one scope
class scoped_env {
  public:
    scoped_env(const char * name, const char * value) : name_(name) {
        const char * old = getenv(name);
        had_             = old != nullptr;
        old_             = had_ ? old : "";
        if (value) {
            setenv(name, value, 1);
        } else {
            unsetenv(name);
        }
    }
    ~scoped_env() {
        if (had_) {
            setenv(name_.c_str(), old_.c_str(), 1);
        } else {
            unsetenv(name_.c_str());
        }
    }

  private:
    std::string name_, old_;
    bool        had_;
};

// the environment variables that steer pool selection, cleared for a test
struct clean_env {
    scoped_env no_vmm{ "GGML_CUDA_NO_VMM", nullptr };
    scoped_env kind{ "GGML_CUDA_POOL", nullptr };
};

inline ggml_cpool_sim_params sim_params(size_t capacity, int devices = 1,
                                        ggml_cpool_platform platform = GGML_CPOOL_PLATFORM_CUDA) {
    ggml_cpool_sim_params p = ggml_cpool_sim_default_params();
    p.capacity              = capacity;
    p.device_count          = devices;
    p.platform              = platform;
    return p;
}

// a sim driver for one test: at the end of its scope it checks that nothing is left outstanding
// (free the contexts first) and releases the driver
struct sim_device {
    explicit sim_device(const ggml_cpool_sim_params & p) {
        EXPECT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &drv), GGML_CPOOL_STATUS_OK);
    }
    ~sim_device() {
        EXPECT_EQ(ggml_cpool_driver_outstanding(drv), 0u) << "driver memory left after every context was freed";
        ggml_cpool_driver_release(drv);
    }
    sim_device(const sim_device &)                    = delete;
    sim_device &        operator=(const sim_device &) = delete;
    ggml_cpool_driver_t drv                           = nullptr;
};

// the parameters of a context of one kind on a given driver
inline ggml_cpool_ctx_params ctx_params(ggml_cpool_driver_t drv, ggml_cpool_kind kind, size_t vmm_reserve = 0) {
    ggml_cpool_ctx_params p = ggml_cpool_ctx_default_params();
    p.driver                = drv;
    for (auto & k : p.kind) {
        k = kind;
    }
    if (vmm_reserve) {
        p.vmm_reserve = vmm_reserve;
    }
    return p;
}

// a context of one kind on a given driver
inline ggml_cpool_ctx_t make_ctx(ggml_cpool_driver_t drv, ggml_cpool_kind kind, size_t vmm_reserve = 0) {
    ggml_cpool_ctx_params p   = ctx_params(drv, kind, vmm_reserve);
    ggml_cpool_ctx_t      ctx = nullptr;
    EXPECT_EQ(ggml_cpool_ctx_create(&p, &ctx), GGML_CPOOL_STATUS_OK);
    return ctx;
}

// a context of one kind whose pools keep the given headroom (GGML_CPOOL_HEADROOM_UNLIMITED: none)
inline ggml_cpool_ctx_t make_ctx_with_headroom(ggml_cpool_driver_t drv, ggml_cpool_kind kind, uint32_t headroom_pct) {
    ggml_cpool_ctx_params p = ctx_params(drv, kind);
    p.headroom_pct          = headroom_pct;
    ggml_cpool_ctx_t ctx    = nullptr;
    EXPECT_EQ(ggml_cpool_ctx_create(&p, &ctx), GGML_CPOOL_STATUS_OK);
    return ctx;
}

// what creating a sim context with the default parameters returns under the environment now
// (the context is freed at once)
inline ggml_cpool_status sim_ctx_status() {
    ggml_cpool_ctx_params p = ggml_cpool_ctx_default_params();
    p.driver_kind           = GGML_CPOOL_DRIVER_SIM;
    ggml_cpool_ctx_t  ctx   = nullptr;
    ggml_cpool_status st    = ggml_cpool_ctx_create(&p, &ctx);
    ggml_cpool_ctx_free(ctx);
    return st;
}

inline ggml_cpool_t pool_of(ggml_cpool_ctx_t ctx, int device = 0) {
    ggml_cpool_t pool = nullptr;
    EXPECT_EQ(ggml_cpool_ctx_get_pool(ctx, device, &pool), GGML_CPOOL_STATUS_OK);
    return pool;
}

// an async context on a sim device, and its stream, whose capture the test switches on and off;
// the context goes first, then the device checks that nothing is left
struct async_sim {
    explicit async_sim(size_t capacity) : device(sim_params(capacity)) {
        ctx  = make_ctx(device.drv, GGML_CPOOL_KIND_ASYNC);
        pool = pool_of(ctx);
        EXPECT_EQ(ggml_cpool_ctx_stream(ctx, 0, &stream), GGML_CPOOL_STATUS_OK);
    }
    ~async_sim() { ggml_cpool_ctx_free(ctx); }
    async_sim(const async_sim &)             = delete;
    async_sim & operator=(const async_sim &) = delete;

    ggml_cpool_status capture(bool on) { return ggml_cpool_sim_set_capturing(device.drv, 0, stream, on ? 1 : 0); }
    uint64_t          calls(ggml_cpool_call c) const { return ggml_cpool_driver_calls(device.drv, c); }

    sim_device       device;
    ggml_cpool_ctx_t ctx    = nullptr;
    ggml_cpool_t     pool   = nullptr;
    void *           stream = nullptr;
};

inline ggml_cpool_stats stats_of(ggml_cpool_t pool) {
    ggml_cpool_stats s{};
    EXPECT_EQ(ggml_cpool_get_stats(pool, &s), GGML_CPOOL_STATUS_OK);
    return s;
}

// every pool, at every moment
inline void expect_consistent(ggml_cpool_t pool) {
    ggml_cpool_stats s = stats_of(pool);
    EXPECT_EQ(s.live_bytes + s.cached_bytes, s.reserved_bytes);
    EXPECT_GE(s.peak_live_bytes, s.live_bytes);
    EXPECT_GE(s.peak_reserved_bytes, s.reserved_bytes);
    EXPECT_LE(s.hits, s.allocs);            // a hit always succeeds
    EXPECT_LE(s.allocs, s.hits + s.misses); // a miss may fail
}

// one allocation the test holds
struct buf {
    void * ptr  = nullptr;
    size_t size = 0;
};

inline buf alloc(ggml_cpool_t pool, size_t size, uint32_t flags = 0) {
    buf b;
    EXPECT_EQ(ggml_cpool_alloc(pool, size, flags, &b.ptr, &b.size), GGML_CPOOL_STATUS_OK) << "size " << size;
    return b;
}

inline void release(ggml_cpool_t pool, const buf & b) {
    EXPECT_EQ(ggml_cpool_free(pool, b.ptr, b.size), GGML_CPOOL_STATUS_OK);
}

// driver under test
enum class drv { sim, cuda };

inline const char * drv_name(drv d) {
    return d == drv::sim ? "sim" : "cuda";
}
inline void PrintTo(drv d, std::ostream * os) {
    *os << drv_name(d);
}

// a suite parameterized by driver and pool kind
using driver_kind = std::tuple<drv, ggml_cpool_kind>;

// the names of parameterized tests: `sim`, `legacy`, `sim_legacy`
inline std::string driver_name(const testing::TestParamInfo<drv> & info) {
    return drv_name(info.param);
}
inline std::string kind_name(const testing::TestParamInfo<ggml_cpool_kind> & info) {
    return ggml_cpool_kind_str(info.param);
}
inline std::string driver_kind_name(const testing::TestParamInfo<driver_kind> & info) {
    return std::string(drv_name(std::get<0>(info.param))) + "_" + ggml_cpool_kind_str(std::get<1>(info.param));
}

// Each test executable is built for one driver, so that its ctest labels are the executable's:
// test-gpu and test-gpu-fault (HARNESS_DRIVER_CUDA) run the suites a driver parameterizes over
// the cuda driver, the other executables over the sim driver. HARNESS_INSTANTIATE names the
// instantiation after it (Cuda/..., Sim/...).
#if defined(HARNESS_DRIVER_CUDA)
constexpr drv DRIVER = drv::cuda;
#    define HARNESS_INSTANTIATE(suite, ...) INSTANTIATE_TEST_SUITE_P(Cuda, suite, __VA_ARGS__)
#else
constexpr drv DRIVER = drv::sim;
#    define HARNESS_INSTANTIATE(suite, ...) INSTANTIATE_TEST_SUITE_P(Sim, suite, __VA_ARGS__)
#endif

// the cuda driver, or a reason why the tests using it must skip
ggml_cpool_driver_t make_cuda_driver(std::string * why_not);

// the driver a parameterized suite runs over: a sim driver of these parameters, or the cuda
// driver; nullptr and the reason when the cuda driver is unavailable (the test then skips)
ggml_cpool_driver_t open_driver(drv which, const ggml_cpool_sim_params & sim, std::string * why_not);

// a fault driver over inner, armed with spec
inline ggml_cpool_driver_t fault_over(ggml_cpool_driver_t inner, const char * spec) {
    ggml_cpool_driver_t f = nullptr;
    EXPECT_EQ(ggml_cpool_driver_fault_create(inner, spec, &f), GGML_CPOOL_STATUS_OK) << spec;
    return f;
}

// writes a pattern through the device and reads it back: the memory is real and usable
bool fill_and_check(drv d, void * ptr, size_t size, unsigned char pattern);

// The fixture every suite of one context on one driver shares (Base: testing::Test, or
// testing::TestWithParam<...>): open_driver/open_sim make the driver, open_ctx the context and
// its pool for device 0. At the end the pool is consistent, the context freed, the driver holds
// nothing and no failure is left latched; then the driver (and `top_`, a decorator the context
// may use instead) is released.
template <typename Base = testing::Test> class pool_test : public Base {
  protected:
    // the driver `which` (sim: of these parameters); false, and the test skips with the reason,
    // where the cuda driver is unavailable
    bool open_driver(drv which, const ggml_cpool_sim_params & sim) {
        std::string why;
        driver_ = harness::open_driver(which, sim, &why);
        if (driver_ == nullptr) {
            [&] { GTEST_SKIP() << why; }();
        }
        return driver_ != nullptr;
    }
    void open_sim(const ggml_cpool_sim_params & sim) {
        ASSERT_EQ(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &sim, &driver_), GGML_CPOOL_STATUS_OK);
    }
    // a context of `kind` over top_ (else the driver), and its pool for device 0
    void open_ctx(ggml_cpool_kind kind, size_t vmm_reserve = 0) {
        ctx_  = make_ctx(top_ ? top_ : driver_, kind, vmm_reserve);
        pool_ = pool_of(ctx_);
    }
    void TearDown() override {
        if (ctx_) {
            expect_consistent(pool_);
            ggml_cpool_ctx_free(ctx_);
        }
        if (driver_) {
            EXPECT_EQ(ggml_cpool_driver_outstanding(driver_), 0u) << "driver memory left after the context was freed";
            EXPECT_FALSE(ggml_cpool_driver_error_latched(top_ ? top_ : driver_)) << "a failure was left latched";
        }
        ggml_cpool_driver_release(top_);
        ggml_cpool_driver_release(driver_);
    }

    ggml_cpool_driver_t driver_ = nullptr;
    ggml_cpool_driver_t top_    = nullptr; // optional: a decorator over driver_ (fault injection)
    ggml_cpool_ctx_t    ctx_    = nullptr;
    ggml_cpool_t        pool_   = nullptr;
};

} // namespace harness
