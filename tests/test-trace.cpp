// Tracing, timing and replay: a trace of an LLM workload parses and accounts for every driver
// call; replaying it on the kind and capacity that recorded it reproduces the live run's
// statistics exactly; a malformed trace is refused with the line and the reason; tracing and
// timing off cost nothing (no driver call, no log line, no time counted); GGML_CUDA_POOL_TRACE
// is read at the first context creation.

#include "../tools/llm-pass.h"
#include "../tools/perfetto.h"
#include "../tools/replay.h"
#include "harness.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace harness;

namespace {

// wide K/V on a small device: without OVERALLOCATE the legacy pool reclaims (16 times) and the
// plain pool flushes (12) as the context grows, and every request is still served
constexpr llm_shape MODEL    = { 4, 256, 512, 2048 };
constexpr int       PROMPT   = 128;
constexpr int       UBATCH   = 64;
constexpr int       TOKENS   = 400;
constexpr size_t    CAPACITY = 8 * MiB;

std::string temp_path(const char * what) {
    const testing::TestInfo * t    = testing::UnitTest::GetInstance()->current_test_info();
    std::string               name = std::string(t->test_suite_name()) + "." + t->name() + "." + what;
    for (char & c : name) {
        c = c == '/' ? '_' : c;
    }
    return testing::TempDir() + "gcp-" + std::to_string(getpid()) + "-" + name;
}

std::string read_file(const std::string & path) {
    std::ifstream     in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// one session of the model on a fresh context of the kind; the pool's statistics before the
// context goes, and the driver calls it all made
struct live_run {
    ggml_cpool_stats stats{};
    uint64_t         driver_calls = 0;
    int              errors       = 0;
};

live_run run_session(ggml_cpool_driver_t drv, ggml_cpool_kind kind, bool overallocate) {
    live_run         r;
    const uint64_t   calls0 = ggml_cpool_driver_calls(drv, GGML_CPOOL_CALL_COUNT);
    ggml_cpool_ctx_t ctx    = make_ctx(drv, kind);
    ggml_cpool_t     pool   = pool_of(ctx);
    r.errors                = llm_session(pool, MODEL, overallocate, PROMPT, UBATCH, TOKENS);
    EXPECT_EQ(ggml_cpool_trim(pool), GGML_CPOOL_STATUS_OK);
    r.errors += llm_forward(pool, MODEL, overallocate, 1, PROMPT + TOKENS);
    r.stats = stats_of(pool);
    ggml_cpool_ctx_free(ctx);
    r.driver_calls = ggml_cpool_driver_calls(drv, GGML_CPOOL_CALL_COUNT) - calls0;
    return r;
}

// the workload above, traced to `path`; the log lines it made, if asked
live_run traced_session(const std::string & path, ggml_cpool_kind kind, bool overallocate,
                        std::vector<std::string> * lines = nullptr) {
    sim_device dev(sim_params(CAPACITY));
    EXPECT_EQ(ggml_cpool_trace_start(path.c_str()), GGML_CPOOL_STATUS_OK);
    log_capture log;
    live_run    r = run_session(dev.drv, kind, overallocate);
    EXPECT_EQ(ggml_cpool_trace_stop(), GGML_CPOOL_STATUS_OK);
    if (lines) {
        *lines = log.lines();
    }
    return r;
}

replay::trace read_ok(const std::string & path) {
    replay::trace t;
    std::string   error;
    EXPECT_TRUE(replay::read_trace(path, &t, &error)) << error;
    return t;
}

TEST(Trace, AWorkloadTraceParsesAndCountsEveryDriverCall) {
    const std::string path = temp_path("trace");
    live_run          live = traced_session(path, GGML_CPOOL_KIND_LEGACY, false);
    ASSERT_EQ(live.errors, 0);
    ASSERT_GT(live.stats.lru_reclaims, 0u) << "the workload is meant to reclaim: pick a smaller capacity";

    replay::trace t = read_ok(path);
    ASSERT_GE(t.records.size(), 4u);
    EXPECT_EQ(t.contexts, 1u);
    EXPECT_EQ(t.pools, 1u);
    EXPECT_EQ(t.records.front().o, replay::op::ctx_create);
    EXPECT_EQ(t.records[1].o, replay::op::get_pool);
    EXPECT_EQ(t.records[1].kind, GGML_CPOOL_KIND_LEGACY);
    EXPECT_EQ(t.records.back().o, replay::op::ctx_free);

    uint64_t allocs = 0, frees = 0, trims = 0, drv = 0, last_reserved = 0, t_prev = 0;
    for (const replay::record & r : t.records) {
        EXPECT_EQ(r.st, GGML_CPOOL_STATUS_OK);
        EXPECT_GE(r.t, t_prev) << "one thread: times only grow";
        t_prev = r.t;
        allocs += r.o == replay::op::alloc;
        frees += r.o == replay::op::free;
        trims += r.o == replay::op::trim;
        drv += r.drv;
        if (r.o == replay::op::alloc) {
            EXPECT_GE(r.actual, r.size);
            EXPECT_EQ(r.flags, 0u);
        }
        if (r.reserved != replay::NONE) {
            last_reserved = r.reserved;
        }
    }
    EXPECT_EQ(allocs, live.stats.allocs);
    EXPECT_EQ(frees, live.stats.allocs) << "every buffer was given back";
    EXPECT_EQ(trims, 1u);
    EXPECT_EQ(last_reserved, live.stats.reserved_bytes);
    EXPECT_EQ(drv, live.driver_calls) << "the drv fields add up to every call the driver saw";
    remove(path.c_str());
}

// a trace holds what each pool had reserved when each call returned; an async pool that grew
// within a call and gave unused memory back before returning (its headroom) peaked in between
void expect_peak_reserved(uint64_t traced, uint64_t live, ggml_cpool_kind kind) {
    if (kind == GGML_CPOOL_KIND_ASYNC) {
        EXPECT_LE(traced, live);
    } else {
        EXPECT_EQ(traced, live);
    }
}

class TraceReplay : public testing::TestWithParam<ggml_cpool_kind> {};

TEST_P(TraceReplay, ReproducesTheLiveRunExactly) {
    const std::string path = temp_path("trace");
    live_run          live = traced_session(path, GetParam(), false);
    ASSERT_EQ(live.errors, 0);
    replay::trace t = read_ok(path);

    replay::options o;
    o.capacity               = CAPACITY;
    const replay::config * c = replay::find_config(ggml_cpool_kind_str(GetParam())); // as traced, default options
    ASSERT_NE(c, nullptr);
    replay::result r = replay::play(t, *c, o);
    ASSERT_EQ(r.unavailable, "");
    const ggml_cpool_stats & s = live.stats;
    EXPECT_EQ(r.allocs, s.allocs);
    EXPECT_EQ(r.hits, s.hits);
    EXPECT_EQ(r.driver_allocs, s.driver_allocs);
    EXPECT_EQ(r.driver_frees, s.driver_frees);
    EXPECT_EQ(r.peak_live, s.peak_live_bytes);
    expect_peak_reserved(r.peak_reserved, s.peak_reserved_bytes, GetParam());
    EXPECT_EQ(r.lru_reclaims, s.lru_reclaims);
    EXPECT_EQ(r.flushes, s.flushes);
    EXPECT_EQ(r.oom, s.oom_returned);
    EXPECT_EQ(r.unmatched_frees, 0u);
    EXPECT_GT(r.modelled_us, 0.0);

    // the recorded row reads the same peaks from the trace alone
    replay::result rec = replay::play(t, *replay::find_config("recorded"), o);
    EXPECT_EQ(rec.allocs, s.allocs);
    EXPECT_EQ(rec.peak_live, s.peak_live_bytes);
    expect_peak_reserved(rec.peak_reserved, s.peak_reserved_bytes, GetParam());
    remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Kinds, TraceReplay,
                         testing::Values(GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM,
                                         GGML_CPOOL_KIND_ASYNC),
                         kind_name);

TEST(TraceReplay, ReplayAtATightCapacityReportsReclaimsAndOutOfMemory) {
    const std::string path = temp_path("trace");
    traced_session(path, GGML_CPOOL_KIND_VMM, false);
    replay::trace   t = read_ok(path);
    replay::options o;
    log_capture     quiet; // the pools say why they run out
    o.capacity            = replay::capacity_for_fraction(t, 0.95);
    o.samples             = 100;
    replay::result legacy = replay::play(t, *replay::find_config("legacy"), o);
    EXPECT_GT(legacy.lru_reclaims + legacy.oom, 0u) << "95% of the device leaves no room for 5% look-ahead";
    EXPECT_LE(legacy.peak_reserved, o.capacity);
    ASSERT_FALSE(legacy.tracks.empty());
    EXPECT_EQ(legacy.tracks[0].name, "all pools");
    EXPECT_LE(legacy.tracks[0].points.size(), 2 * o.samples + 2);
    size_t events = 0;
    for (const replay::event & e : legacy.events) {
        events += e.name == "LRU reclaim" || e.name == "OUT_OF_MEMORY";
    }
    EXPECT_EQ(events, legacy.lru_reclaims + legacy.oom);

    const std::string json = temp_path("json");
    std::string       error;
    ASSERT_TRUE(replay::write_perfetto(json, { legacy }, &error)) << error;
    const std::string text = read_file(json);
    EXPECT_NE(text.find("\"process_name\",\"args\":{\"name\":\"legacy\"}"), std::string::npos);
    EXPECT_NE(text.find("\"ph\":\"C\",\"pid\":1,\"name\":\"all pools\""), std::string::npos);
    EXPECT_NE(text.find("\"reserved MiB\""), std::string::npos);
    EXPECT_EQ(text.find("\"ph\":\"i\"") != std::string::npos, events > 0);
    remove(json.c_str());
    remove(path.c_str());
}

// a malformed trace: refused whole, naming the file, the line and what is wrong
TEST(Trace, AMalformedTraceIsRefusedWithTheLineAndTheReason) {
    const std::string head = "# ggml-cuda-pool trace 1\n# t_ns ctx dev slot stream op size flags status actual ptr drv "
                             "reserved ns\n";
    const std::string good = "10 1 0 0 0x1 alloc 1000 0 OK 1280 0x7f00 1 1280 50\n";
    struct bad_case {
        std::string text;
        std::string error; // a regular expression the message must match
    };
    const bad_case cases[] = {
        { "", "empty file" },
        { "hello\n", ":1: not a ggml-cuda-pool trace of version 1" },
        { "# ggml-cuda-pool trace 2\n", ":1: not a ggml-cuda-pool trace of version 1" },
        { head + good + "11 1 0 0 0x1 alloc 1000 0 OK\n", ":4: expected 14 fields" },
        { head + "x 1 0 0 0x1 alloc 1000 0 OK 1280 0x7f00 1 1280 50\n", ":3: field t_ns: not a number: 'x'" },
        { head + "10 1 0 0 0x1 grab 1000 0 OK 1280 0x7f00 1 1280 50\n", ":3: unknown op 'grab'" },
        { head + "10 1 0 0 0x1 alloc 1000 0 FINE 1280 0x7f00 1 1280 50\n", ":3: unknown status 'FINE'" },
        { head + "10 1 0 0 0x1 alloc 1000 0 OK 1280 - 1 1280 50\n", ":3: alloc without" },
        { head + "10 1 0 0 0x1 alloc 1000 0 OK 1280 7f00 1 1280 50\n", ":3: field ptr: not a hexadecimal number" },
        { head + "10 1 0 0 0x1 free - - OK - 0x7f00 0 1280 50\n", ":3: free without its pointer and size" },
        { head + "10 1 0 0 0x1 get_pool - bogus OK - - 0 0 50\n", ":3: unknown pool kind 'bogus'" },
        { head + "10 - 0 0 0x1 alloc 1000 0 OK 1280 0x7f00 1 1280 50\n", ":3: alloc without a context" },
        { head + good + "11 1 0 0 0x1 free 1280 - OK - 0x7f", ":4: expected 14 fields" }, // cut short
    };
    const std::string path = temp_path("bad");
    for (const bad_case & c : cases) {
        std::ofstream(path) << c.text;
        replay::trace t;
        std::string   error;
        EXPECT_FALSE(replay::read_trace(path, &t, &error)) << c.text;
        EXPECT_TRUE(std::regex_search(error, std::regex(c.error))) << error;
        EXPECT_EQ(error.rfind(path, 0), 0u) << "the message starts with the file: " << error;
    }
    replay::trace t;
    std::string   error;
    std::ofstream(path) << head + good;
    EXPECT_TRUE(replay::read_trace(path, &t, &error)) << error;
    EXPECT_FALSE(replay::read_trace(path + ".missing", &t, &error));
    EXPECT_TRUE(std::regex_search(error, std::regex("cannot open")));
    remove(path.c_str());
}

// off: no driver call and no log line beyond the pools' own, nothing written, no time counted
TEST(Trace, OffCostsNoDriverCallNorLogLine) {
    const std::string        path = temp_path("trace");
    std::vector<std::string> on_lines;
    live_run                 on           = traced_session(path, GGML_CPOOL_KIND_LEGACY, false, &on_lines);
    const std::string        text         = read_file(path);
    uint64_t                 traced_calls = 0;
    for (const replay::record & r : read_ok(path).records) {
        traced_calls += r.drv;
    }

    sim_device  dev(sim_params(CAPACITY));
    log_capture log;
    live_run    off = run_session(dev.drv, GGML_CPOOL_KIND_LEGACY, false);
    EXPECT_EQ(off.driver_calls, on.driver_calls);
    EXPECT_EQ(off.driver_calls, traced_calls) << "every driver call is a pool's";
    EXPECT_EQ(log.lines(), on_lines) << "the pools' own lines (reclaims), and nothing from the trace";
    EXPECT_EQ(off.stats.call_ns, 0u) << "timing is off";
    EXPECT_EQ(read_file(path), text) << "a stopped trace is not written to";
    remove(path.c_str());
}

TEST(Timing, CallTimeIsCountedWhileOnOnly) {
    sim_device       dev(sim_params(CAPACITY));
    ggml_cpool_ctx_t ctx  = make_ctx(dev.drv, GGML_CPOOL_KIND_LEGACY);
    ggml_cpool_t     pool = pool_of(ctx);
    release(pool, alloc(pool, MiB));
    EXPECT_EQ(stats_of(pool).call_ns, 0u);

    ggml_cpool_timing_set(1);
    release(pool, alloc(pool, MiB));
    ggml_cpool_timing_set(0);
    const uint64_t timed = stats_of(pool).call_ns;
    EXPECT_GT(timed, 0u);

    release(pool, alloc(pool, MiB));
    EXPECT_EQ(stats_of(pool).call_ns, timed) << "off again: nothing more counted";
    ggml_cpool_ctx_free(ctx);
}

TEST(Timing, ReachesEveryPoolWhateverItsBirth) {
    sim_device       dev(sim_params(CAPACITY));
    ggml_cpool_ctx_t before = make_ctx(dev.drv, GGML_CPOOL_KIND_LEGACY);
    ggml_cpool_ctx_t gone   = make_ctx(dev.drv, GGML_CPOOL_KIND_VMM);
    ggml_cpool_t     first  = pool_of(before);
    pool_of(gone);
    ggml_cpool_timing_set(1);
    ggml_cpool_ctx_free(gone); // leaves the pools' list from its middle
    ggml_cpool_ctx_t during = make_ctx(dev.drv, GGML_CPOOL_KIND_PLAIN);
    ggml_cpool_t     second = pool_of(during);
    release(first, alloc(first, MiB));
    release(second, alloc(second, MiB));
    ggml_cpool_timing_set(0);
    EXPECT_GT(stats_of(first).call_ns, 0u) << "a pool that existed when timing began";
    EXPECT_GT(stats_of(second).call_ns, 0u) << "a pool created while it was on";
    ggml_cpool_ctx_t after = make_ctx(dev.drv, GGML_CPOOL_KIND_LEGACY);
    ggml_cpool_t     third = pool_of(after);
    release(third, alloc(third, MiB));
    EXPECT_EQ(stats_of(third).call_ns, 0u) << "a pool created after it ended";
    ggml_cpool_ctx_free(after);
    ggml_cpool_ctx_free(during);
    ggml_cpool_ctx_free(before);
}

TEST(Trace, StartRefusesAPathItCannotWrite) {
    log_capture log;
    EXPECT_EQ(ggml_cpool_trace_start("/nonexistent-dir/trace"), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(log.count("/nonexistent-dir/trace: cannot open the trace file"), 1u);
    EXPECT_EQ(ggml_cpool_trace_start(nullptr), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(ggml_cpool_trace_stop(), GGML_CPOOL_STATUS_OK) << "nothing to stop is no error";
}

// GGML_CUDA_POOL_TRACE is read once, at the first context creation of the process: a child
// process (this binary, running the disabled test below) starts with it set
constexpr const char * CHILD_TEST = "TraceEnvChild.DISABLED_FirstContextReadsTheEnvironment";
constexpr const char * CHILD_MODE = "GCP_TEST_TRACE_CHILD"; // "writes" or "refused"

int run_child(const char * mode, const char * trace_path) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv(CHILD_MODE, mode, 1);
        setenv("GGML_CUDA_POOL_TRACE", trace_path, 1);
        std::string filter = std::string("--gtest_filter=") + CHILD_TEST;
        execl("/proc/self/exe", "test-unit", "--gtest_also_run_disabled_tests", filter.c_str(), (char *) nullptr);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(TraceEnv, FirstContextCreationOpensTheTrace) {
    const std::string path = temp_path("trace");
    ASSERT_EQ(run_child("writes", path.c_str()), 0);
    replay::trace t = read_ok(path);
    ASSERT_EQ(t.records.size(), 5u) << "ctx_create, get_pool, alloc, free, ctx_free";
    EXPECT_EQ(t.records[2].o, replay::op::alloc);
    EXPECT_EQ(t.records[2].size, MiB);
    remove(path.c_str());
}

TEST(TraceEnv, AnUnwritablePathFailsEveryContextCreation) {
    EXPECT_EQ(run_child("refused", "/nonexistent-dir/trace"), 0);
}

TEST(TraceEnvChild, DISABLED_FirstContextReadsTheEnvironment) {
    const char * mode = getenv(CHILD_MODE);
    ASSERT_NE(mode, nullptr) << "run by TraceEnv tests only";
    sim_device  dev(sim_params(CAPACITY));
    log_capture log;
    auto        p        = ggml_cpool_ctx_default_params();
    p.driver             = dev.drv;
    ggml_cpool_ctx_t ctx = nullptr;
    if (std::string(mode) == "refused") {
        for (int i = 0; i < 2; i++) {
            EXPECT_EQ(ggml_cpool_ctx_create(&p, &ctx), GGML_CPOOL_STATUS_INVALID_ARGUMENT);
            EXPECT_EQ(log.count("GGML_CUDA_POOL_TRACE=/nonexistent-dir/trace"), size_t(i + 1));
        }
        EXPECT_EQ(log.lines().size(), 2u) << "one line per refused creation";
        return;
    }
    ASSERT_EQ(ggml_cpool_ctx_create(&p, &ctx), GGML_CPOOL_STATUS_OK);
    ggml_cpool_t pool = pool_of(ctx);
    release(pool, alloc(pool, MiB));
    ggml_cpool_ctx_free(ctx); // flushes the trace
}

} // namespace
