// bench-hit: the hit path, an alloc + free pair served from memory the pool already holds, through
// the C ABI on the sim driver, against pools shaped like ggml's legacy and VMM pools
// (ggml-style-pool.h) timed in the same run (Google Benchmark).
//
//   hit/<pool>/<cached>   <pool>: ggml-style, ggml-vmm-style, legacy, plain, vmm, async,
//                         async-declared (its captures declared, as the llama.cpp adapter's
//                         GGML_CUDA_POOL_CAPTURES=declared does: no capture query); <cached>: 8,
//                         64 or 256 buffers, or step (below)
//   cold/<pool>/<cached>  the same pairs with the pool's lines evicted before each call, as the
//                         driver work of the kernel launches between two pool calls in an engine
//                         evicts them; each call timed alone by the clock, as the llama.cpp
//                         adapter times it (GGML_CUDA_POOL_STATS), so that the clock's cost is in
//                         every pool's figure alike
//
// Each pool is first made to serve <cached> buffers of mixed sizes at once (log-uniform between
// 4 KiB and 64 MiB) and take them all back; then every timed pair asks for a size a little below
// one of them (never an exact size, so no early exit), in a fixed random order. For the legacy
// kinds and the baseline that is <cached> cached buffers to choose from; a VMM pool serves every
// request from its mapped range, whatever the depth; the async kind from its reuse cache where the
// buffer fits it, else from the device's stream-ordered pool (the sim's). After the run, a summary
// gives each pool's median CPU time (steadier than wall time on a shared machine; the clock's time
// for cold) and its ratio to each ggml-shaped pool at the same depth.
//
// step: a graphs-off llama-bench step of a 1B model through llama.cpp's CUDA backend, per layer as
// its trace shows: eight requests, five of one size (src1 quantized for a matrix-vector product).
//
// Defaults: 5 repetitions, randomly interleaved, aggregates only; any --benchmark_* flag given
// overrides them (CI: --benchmark_min_time=0.001 --benchmark_repetitions=2).

#include "ggml-cuda-pool-testing.h"
#include "ggml-style-pool.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

const char * const DEPTHS[]     = { "8", "64", "256", "step" };
constexpr size_t   KiB          = size_t(1) << 10;
constexpr size_t   MiB          = size_t(1) << 20;
constexpr size_t   MIN_SIZE     = 4 * KiB;
constexpr size_t   MAX_SIZE     = 64 * MiB;
constexpr size_t   REQUESTS     = 4096;             // timed requests cycle through this many (a power of two)
constexpr size_t   BELOW_PERMIL = 30;               // a request is up to 3% below the buffer it was made for
constexpr size_t   SIM_CAPACITY = size_t(64) << 30; // host pages are reserved, never touched
constexpr uint64_t SEED         = 12;
constexpr int64_t  COLD_PAIRS   = 2000; // a cold run's timed pairs

const char * const BASELINES[] = { "ggml-style", "ggml-vmm-style" };
const char * const FAMILIES[]  = { "hit", "cold" };

// what a kernel launch's driver work does to a pool's lines between two of its calls: a walk
// over more memory than a core's L1 and L2 caches hold, which leaves the pool's lines in L3
class evictor {
  public:
    static constexpr size_t BYTES = 4 * MiB;
    static constexpr size_t LINE  = 64;

    void operator()() {
        for (size_t i = 0; i < BYTES; i += LINE) {
            lines_[i]++;
        }
        benchmark::ClobberMemory();
    }

  private:
    std::vector<unsigned char> lines_ = std::vector<unsigned char>(BYTES);
};

// times the pairs of a run: back to back (hit), or each call alone after an eviction (cold)
class pair_timer {
  public:
    explicit pair_timer(bool cold) : cold_(cold) {}

    // one alloc + free pair: alloc() returns the buffer and its size, free(ptr, size) takes it back
    template <typename A, typename F> bool pair(benchmark::State & state, A && alloc, F && free) {
        if (!cold_) {
            auto b = alloc();
            benchmark::DoNotOptimize(b.first);
            return b.first != nullptr && free(b.first, b.second);
        }
        evict_();
        const auto t0 = clock::now();
        auto       b  = alloc();
        const auto t1 = clock::now();
        benchmark::DoNotOptimize(b.first);
        evict_();
        const auto t2 = clock::now();
        const bool ok = b.first != nullptr && free(b.first, b.second);
        const auto t3 = clock::now();
        state.SetIterationTime(std::chrono::duration<double>((t1 - t0) + (t3 - t2)).count());
        return ok;
    }

  private:
    using clock = std::chrono::steady_clock;
    bool    cold_;
    evictor evict_;
};

struct subject {
    const char *    name;
    ggml_cpool_kind kind;             // AUTO: a baseline
    bool            declared = false; // the consumer declares its captures (ggml_cpool_declare_capture)
};
const subject SUBJECTS[] = {
    { BASELINES[0], GGML_CPOOL_KIND_AUTO },
    { BASELINES[1], GGML_CPOOL_KIND_AUTO },
    { "legacy", GGML_CPOOL_KIND_LEGACY },
    { "plain", GGML_CPOOL_KIND_PLAIN },
    { "vmm", GGML_CPOOL_KIND_VMM },
    { "async", GGML_CPOOL_KIND_ASYNC },
    { "async-declared", GGML_CPOOL_KIND_ASYNC, true },
};

// the buffers that fill a pool, and the timed requests
struct workload {
    std::vector<size_t> fill;
    std::vector<size_t> requests;
};

// a layer of llama-bench's step (the header says what); the fill: the buffers a legacy pool keeps
const size_t STEP_LAYER[] = { 32768, 1024, 2304, 2304, 6336, 2304, 2304, 2304 }, STEP_FILL[] = { 2304, 32768 };

workload make_workload(const std::string & depth) {
    if (depth == "step") {
        workload w{ { std::begin(STEP_FILL), std::end(STEP_FILL) }, {} };
        for (size_t i = 0; i < REQUESTS; i++) {
            w.requests.push_back(STEP_LAYER[i % std::size(STEP_LAYER)]);
        }
        return w;
    }
    const int                              cached = std::stoi(depth);
    std::mt19937_64                        rng(SEED);
    std::uniform_real_distribution<double> log_size(std::log(double(MIN_SIZE)), std::log(double(MAX_SIZE)));
    workload                               w;
    for (int i = 0; i < cached; i++) {
        w.fill.push_back(size_t(std::exp(log_size(rng))));
    }
    for (size_t i = 0; i < REQUESTS; i++) {
        size_t made_for = w.fill[rng() % w.fill.size()];
        w.requests.push_back(made_for - 1 - rng() % (made_for * BELOW_PERMIL / 1000));
    }
    return w;
}

// a ggml-shaped pool made to hold the workload's buffers, then timed over its requests
template <typename Pool> void bench_baseline(benchmark::State & state, Pool & pool, const workload & w, bool cold) {
    std::vector<void *> held;
    std::vector<size_t> sizes(w.fill.size());
    for (size_t i = 0; i < w.fill.size(); i++) {
        held.push_back(pool.alloc(w.fill[i], &sizes[i]));
    }
    for (size_t i = held.size(); i-- > 0;) { // in reverse: a VMM-shaped pool takes back its top alone
        pool.free(held[i], sizes[i]);
    }
    pair_timer timer(cold);
    size_t     i = 0;
    for (auto _ : state) {
        const size_t size  = w.requests[i++ & (REQUESTS - 1)];
        auto         alloc = [&] {
            size_t actual = 0;
            void * p      = pool.alloc(size, &actual);
            return std::make_pair(p, actual);
        };
        auto free = [&](void * p, size_t actual) {
            pool.free(p, actual);
            return true;
        };
        if (!timer.pair(state, alloc, free)) {
            state.SkipWithError("the baseline pool could not serve a request");
            break;
        }
    }
}

void bench_ggml_style(benchmark::State & state, const workload & w, bool cold) {
    ggml_style_pool pool;
    bench_baseline(state, pool, w, cold);
}

void bench_ggml_vmm_style(benchmark::State & state, const workload & w, bool cold) {
    size_t range = MAX_SIZE; // room for every buffer of the fill at once, and a request beyond
    for (size_t size : w.fill) {
        range += size + ggml_style_vmm_pool::ALIGNMENT;
    }
    ggml_style_vmm_pool pool(range);
    bench_baseline(state, pool, w, cold);
}

void bench_pool(benchmark::State & state, subject s, const workload & w, bool cold) {
    ggml_cpool_sim_params sim = ggml_cpool_sim_default_params();
    sim.capacity              = SIM_CAPACITY;
    ggml_cpool_ctx_params p   = ggml_cpool_ctx_default_params();
    p.driver_kind             = GGML_CPOOL_DRIVER_SIM;
    p.sim                     = &sim;
    p.kind[0]                 = s.kind;
    ggml_cpool_ctx_t ctx      = nullptr;
    ggml_cpool_t     pool     = nullptr;
    if (ggml_cpool_ctx_create(&p, &ctx) != GGML_CPOOL_STATUS_OK ||
        ggml_cpool_ctx_get_pool(ctx, 0, &pool) != GGML_CPOOL_STATUS_OK) {
        state.SkipWithError("no pool of this kind on the sim driver");
        ggml_cpool_ctx_free(ctx);
        return;
    }
    if (s.declared) {
        ggml_cpool_declare_capture(pool, 0);
    }
    std::vector<void *> held(w.fill.size());
    std::vector<size_t> sizes(w.fill.size());
    bool                ok = true;
    for (size_t i = 0; i < w.fill.size(); i++) {
        ok = ok && ggml_cpool_alloc(pool, w.fill[i], 0, &held[i], &sizes[i]) == GGML_CPOOL_STATUS_OK;
    }
    for (size_t i = 0; ok && i < held.size(); i++) {
        ggml_cpool_free(pool, held[i], sizes[i]);
    }
    ggml_cpool_stats before{};
    ggml_cpool_get_stats(pool, &before);
    pair_timer timer(cold);
    size_t     i = 0;
    for (auto _ : state) {
        if (!ok) {
            state.SkipWithError("filling the pool failed");
            break;
        }
        const size_t size  = w.requests[i++ & (REQUESTS - 1)];
        auto         alloc = [&] {
            void * ptr    = nullptr;
            size_t actual = 0;
            return ggml_cpool_alloc(pool, size, 0, &ptr, &actual) == GGML_CPOOL_STATUS_OK ?
                               std::make_pair(ptr, actual) :
                               std::make_pair(nullptr, size_t(0));
        };
        auto free = [&](void * ptr, size_t actual) {
            return ggml_cpool_free(pool, ptr, actual) == GGML_CPOOL_STATUS_OK;
        };
        if (!timer.pair(state, alloc, free)) {
            state.SkipWithError("alloc or free failed");
            break;
        }
    }
    ggml_cpool_stats after{};
    ggml_cpool_get_stats(pool, &after);
    if (ok && after.misses != before.misses) {
        state.SkipWithError("a timed request missed: this is not the hit path");
    }
    ggml_cpool_ctx_free(ctx);
}

// a run that did not complete: Google Benchmark 1.8 renamed error_occurred to skipped
template <typename R> auto incomplete(const R & r, int) -> decltype(bool(r.skipped)) {
    return bool(r.skipped);
}
template <typename R> auto incomplete(const R & r, long) -> decltype(bool(r.error_occurred)) {
    return r.error_occurred;
}

// prints the default reports, and after the run a summary of medians and ratios
class summary_reporter : public benchmark::ConsoleReporter {
  public:
    void ReportRuns(const std::vector<Run> & runs) override {
        for (const Run & r : runs) {
            const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
            if (incomplete(r, 0) || (r.run_type == Run::RT_Aggregate && !median)) {
                continue;
            }
            entry & e = medians_[r.run_name.function_name];
            if (median || !e.median) { // a single repetition has no aggregate: its run stands in
                // cold: the clock's time, the calls' alone (the evictions are not in it)
                const bool   cold = r.run_name.function_name.rfind("cold/", 0) == 0;
                const double t    = cold ? r.GetAdjustedRealTime() : r.GetAdjustedCPUTime();
                e                 = { t * ns_per(r.time_unit), median, r.repetitions };
            }
        }
        ConsoleReporter::ReportRuns(runs);
    }

    void Finalize() override {
        ConsoleReporter::Finalize();
        long reps = 0;
        for (auto & m : medians_) {
            reps = std::max(reps, long(m.second.repetitions));
        }
        for (const char * family : FAMILIES) {
            for (const char * baseline : BASELINES) {
                printf("\n%s: median %s ns per alloc+free pair (%ld repetitions), and its ratio to the %s pool at the "
                       "same depth\n",
                       family, std::string(family) == "cold" ? "clock" : "CPU", reps, baseline);
                table(family, baseline);
            }
        }
    }

    void table(const char * family, const char * baseline) const {
        printf("%-8s", "cached");
        for (const subject & s : SUBJECTS) {
            printf(" %18s", s.name);
        }
        printf("\n");
        for (const char * depth : DEPTHS) {
            const entry * base = find(family, baseline, depth);
            printf("%-8s", depth);
            for (const subject & s : SUBJECTS) {
                const entry * e = find(family, s.name, depth);
                if (e == nullptr) {
                    printf(" %18s", "-");
                } else if (base == nullptr || s.kind == GGML_CPOOL_KIND_AUTO) {
                    printf(" %10.1f ns      ", e->ns);
                } else {
                    printf(" %10.1f ns %5.2fx", e->ns, e->ns / base->ns);
                }
            }
            printf("\n");
        }
    }

  private:
    struct entry {
        double  ns;
        bool    median;
        int64_t repetitions;
    };

    static double ns_per(benchmark::TimeUnit u) {
        switch (u) {
            // clang-format off
            case benchmark::kSecond:      return 1e9;
            case benchmark::kMillisecond: return 1e6;
            case benchmark::kMicrosecond: return 1e3;
            default:                      return 1;
                // clang-format on
        }
    }

    const entry * find(const char * family, const char * name, const char * depth) const {
        auto it = medians_.find(std::string(family) + "/" + name + "/" + depth);
        return it == medians_.end() ? nullptr : &it->second;
    }

    std::map<std::string, entry> medians_;
};

} // namespace

int main(int argc, char ** argv) {
    // defaults first: a flag given on the command line comes later and wins
    std::vector<char *> args       = { argv[0] };
    std::string         defaults[] = { "--benchmark_repetitions=5", "--benchmark_enable_random_interleaving=true",
                                       "--benchmark_report_aggregates_only=true" };
    for (std::string & d : defaults) {
        args.push_back(d.data());
    }
    for (int i = 1; i < argc; i++) {
        args.push_back(argv[i]);
    }
    int n = int(args.size());

    std::map<std::string, workload> workloads;
    for (const char * depth : DEPTHS) {
        workloads[depth] = make_workload(depth);
    }
    for (const char * family : FAMILIES) {
        const bool cold = std::string(family) == "cold";
        for (const char * depth : DEPTHS) {
            const workload & w = workloads[depth];
            for (const subject & s : SUBJECTS) {
                const std::string                name = std::string(family) + "/" + s.name + "/" + depth;
                benchmark::internal::Benchmark * b    = nullptr;
                if (s.name == BASELINES[0]) {
                    b = benchmark::RegisterBenchmark(name.c_str(), bench_ggml_style, w, cold);
                } else if (s.name == BASELINES[1]) {
                    b = benchmark::RegisterBenchmark(name.c_str(), bench_ggml_vmm_style, w, cold);
                } else {
                    b = benchmark::RegisterBenchmark(name.c_str(), bench_pool, s, w, cold);
                }
                if (cold) { // a fixed count: the evictions, outside the clock's time, take the run's time
                    b->UseManualTime()->Iterations(COLD_PAIRS);
                }
            }
        }
    }
    benchmark::Initialize(&n, args.data());
    if (benchmark::ReportUnrecognizedArguments(n, args.data())) {
        return 2;
    }
    summary_reporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    return 0;
}
