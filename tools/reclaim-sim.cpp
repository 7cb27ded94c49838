// reclaim-sim: LRU reclaim against a full flush, on the sim driver. Workloads that make a pool
// run out of device memory again and again, each against three pools (reclaim-pools.h) on a sim
// device of a fixed budget: legacy (LRU reclaim of 3x the request, then a flush), plain (a flush
// only) and a pool shaped like ggml's legacy pool (a flush and one retry). Every run is repeated
// on a device with room to spare: what the pressured run allocates beyond it is what the
// recoveries cost (buffers that had to come back), in driver allocations and in modelled H200
// driver time. After every session, the largest single allocation that still fits on the
// first-fit device is found by bisection with real allocations (freed again). Every row is a mean
// over fixed seeds: the output is the same on every run (docs/results/sim/reclaim.txt).
// The seed's regime follows the table: in every workload the legacy and plain pools ask the driver
// and return OUT_OF_MEMORY no more often than the ggml-style pool, and synchronize no more often
// where the workload says so, beyond the seeds' noise; the exit status is 1 where one does.
//
//   reclaim-sim [--quick] [--seeds N] [--verbose]
//     --quick    one seed, two sessions a workload, no verdict (ctest)
//     --seeds N  N seeds a row instead of 128 (at 128 a mixed row's OOM has a standard error of
//                about 1.3 a run, at 1024 about 0.45: smaller differences need more seeds)
//     --verbose  the pools' log lines on stderr (by default none: they run out on purpose)

#include "llm-pass.h"
#include "reclaim-pools.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

namespace {

using namespace reclaim;

constexpr size_t   MiB            = size_t(1) << 20;
constexpr size_t   AMPLE          = size_t(64) << 30; // the run without pressure: never runs out
constexpr size_t   PROBE_UNIT     = 64 << 10;         // the largest-block bisection's resolution
constexpr uint64_t TENANT_SEED    = 7;                // plus the run's seed
constexpr uint64_t WORKLOAD_SEED  = 11;               // plus the run's seed: prompt lengths, random requests
constexpr int      SEEDS          = 128;              // runs a row is the mean of: fewer leave the mixed rows to chance
constexpr int      QUICK_SEEDS    = 1;
constexpr int      QUICK_SESSIONS = 2;
constexpr double   NOISE_SE       = 2; // a mean paired difference above this many standard errors: more

// a 7B-class width with grouped-query attention (K/V a quarter of the width), few layers: the
// memory of a pass is set by one layer's buffers, the layer count only repeats them
const llm_shape MODEL = { 4, 4096, 11008, 1024 };

enum class pattern {
    llm,   // LLM sessions (llm-pass.h): a prompt in batches, then decode steps
    mixed, // rounds of random requests, of sizes log-uniform over MIXED_MIN..MIXED_MAX
};
// a workload's numbers; its sessions run one after another on one pool
struct workload {
    const char * name;
    pattern      kind;
    size_t       capacity_mib;           // the budget: the sim device's memory
    int          sessions;               // llm: sessions; mixed: rounds of MIXED_OPS requests and frees
    int          prompt_min, prompt_max; // a session's prompt length, drawn from the seed
    bool         ubatch_cycles;          // ubatch 512, 384, 256, 128 from session to session (else 512)
    int          decode;                 // decode steps a session
    // co-tenant (0: none): a cycle of `cycle` passes, the first half taking a chunk a pass (up to
    // `hold_mib` held), the second half giving a random one back
    int          cycle;
    size_t       hold_mib;
    bool         syncs_checked; // the verdict holds the module's synchronizes to ggml-style's (no headroom rule)
};
const workload WORKLOADS[] = {
    { "cotenant", pattern::llm, 224, 8, 512, 8192, false, 512, 48, 128, false },
    { "batches", pattern::llm, 224, 24, 128, 8192, true, 16, 0, 0, true },
    { "mixed", pattern::mixed, 192, 8, 0, 0, false, 0, 0, 0, false },
};
constexpr int    UBATCHES[]   = { 512, 384, 256, 128 };
constexpr size_t TENANT_MIN   = 8 * MiB; // a tenant's chunk: uniform over TENANT_MIN..TENANT_MAX
constexpr size_t TENANT_MAX   = 64 * MiB;
constexpr int    MIXED_OPS    = 4000;
constexpr size_t MIXED_MIN    = 64 << 10;
constexpr size_t MIXED_MAX    = 16 * MiB;
constexpr size_t MIXED_LIVE   = 16; // live buffers hover around this count
constexpr size_t MIXED_RECENT = 4;  // 7 frees in 10 take one of the this many most recent buffers

// another tenant of the device: raw driver allocations in a cycle of takes and give-backs
class tenant {
  public:
    tenant(ggml_cpool_driver_t drv, const workload & w, uint64_t seed, tally * books) :
        drv_(drv),
        w_(w),
        books_(books),
        rng_(TENANT_SEED + seed) {}
    ~tenant() {
        for (void * p : held_) {
            ggml_cpool_driver_free(drv_, 0, p);
        }
    }
    void step() {
        if (w_.cycle == 0) {
            return;
        }
        const uint64_t r    = rng_(); // one draw a step, whatever happens, so every pool sees the same tenant
        const size_t   size = TENANT_MIN + r % (TENANT_MAX - TENANT_MIN + 1) / MiB * MiB;
        if (pass_++ % uint64_t(w_.cycle) < uint64_t(w_.cycle / 2)) {
            void * p = nullptr;
            if (bytes_ + size > w_.hold_mib * MiB) {
                return;
            }
            if (ggml_cpool_driver_malloc(drv_, 0, size, &p) != GGML_CPOOL_STATUS_OK) {
                books_->refused++;
                return;
            }
            held_.push_back(p);
            sizes_.push_back(size);
            bytes_ += size;
        } else if (!held_.empty()) {
            const size_t i = size_t(r >> 32) % held_.size();
            ggml_cpool_driver_free(drv_, 0, held_[i]);
            bytes_ -= sizes_[i];
            held_.erase(held_.begin() + std::ptrdiff_t(i));
            sizes_.erase(sizes_.begin() + std::ptrdiff_t(i));
        }
    }

  private:
    ggml_cpool_driver_t drv_;
    workload            w_;
    tally *             books_;
    std::mt19937_64     rng_;
    std::vector<void *> held_;
    std::vector<size_t> sizes_;
    size_t              bytes_ = 0;
    uint64_t            pass_  = 0;
};

// the largest single allocation that fits now, by bisection with real allocations, freed again
size_t largest_fit(ggml_cpool_driver_t drv, size_t capacity) {
    size_t lo = 0, hi = capacity / PROBE_UNIT + 1; // lo units fit, hi do not
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        void *       p   = nullptr;
        if (ggml_cpool_driver_malloc(drv, 0, mid * PROBE_UNIT, &p) == GGML_CPOOL_STATUS_OK) {
            ggml_cpool_driver_free(drv, 0, p);
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo * PROBE_UNIT;
}

// one session: a prompt in batches of `ubatch`, then the decode steps; the tenant acts after
// every pass
void session(subject & s, tenant & t, int prompt, int ubatch, int decode) {
    auto get = [&](size_t size, uint32_t flags, void ** p, size_t * a) { return s.get(size, flags, p, a); };
    auto put = [&](void * p, size_t a) { s.put(p, a); };
    int  ctx = 0;
    for (int done = 0; done < prompt; done += ubatch) {
        const int batch = prompt - done < ubatch ? prompt - done : ubatch;
        ctx += batch;
        llm_forward_over(get, put, MODEL, true, batch, ctx);
        t.step();
    }
    for (int i = 0; i < decode; i++) {
        llm_forward_over(get, put, MODEL, true, 1, ++ctx);
        t.step();
    }
}

struct buffer {
    void * ptr;
    size_t size;
};

// one round of random requests and frees: the live set hovers around MIXED_LIVE, and most frees
// take one of the most recent buffers (as a graph's do), the rest any
void mixed_round(subject & s, std::mt19937_64 & rng, std::vector<buffer> & live) {
    std::uniform_real_distribution<double> log_size(std::log(double(MIXED_MIN)), std::log(double(MIXED_MAX)));
    for (int i = 0; i < MIXED_OPS; i++) {
        const uint64_t r    = rng();
        const size_t   size = size_t(std::exp(log_size(rng)));
        if (live.empty() || r % 100 < (live.size() < MIXED_LIVE ? 60u : 40u)) {
            buffer b{};
            if (s.get(size, 0, &b.ptr, &b.size)) {
                live.push_back(b);
            }
            continue;
        }
        const size_t n    = live.size();
        const size_t pick = r % 10 < 7 ? n - 1 - (r >> 8) % std::min(n, MIXED_RECENT) : (r >> 8) % n;
        s.put(live[pick].ptr, live[pick].size);
        live.erase(live.begin() + std::ptrdiff_t(pick));
    }
}

// one workload against one pool; pressure: on the budget (and with the tenant), else ample
tally run(const workload & w, pool_choice which, bool pressure, int sessions, uint64_t seed) {
    tally                 books;
    ggml_cpool_sim_params sim = ggml_cpool_sim_default_params();
    sim.capacity              = pressure ? w.capacity_mib * MiB : AMPLE;
    ggml_cpool_driver_t drv   = nullptr;
    if (ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &sim, &drv) != GGML_CPOOL_STATUS_OK) {
        books.outstanding = SIZE_MAX;
        return books;
    }
    {
        std::unique_ptr<subject> s = make_subject(which, drv, &books);
        tenant                   t(drv, pressure ? w : workload{}, seed, &books);
        std::mt19937_64          rng(WORKLOAD_SEED + seed);
        std::vector<buffer>      live;
        for (int i = 0; i < sessions; i++) {
            if (w.kind == pattern::mixed) {
                mixed_round(*s, rng, live);
            } else {
                const int prompt = w.prompt_min + int(rng() % uint64_t(w.prompt_max - w.prompt_min + 1));
                session(*s, t, prompt, w.ubatch_cycles ? UBATCHES[i % 4] : UBATCHES[0], w.decode);
            }
            if (pressure) {
                const size_t used = ggml_cpool_driver_used(drv, 0);
                books.free_sum += double(sim.capacity - used) / double(MiB);
                books.largest_sum += double(largest_fit(drv, sim.capacity - used)) / double(MiB);
                books.probes++;
            }
        }
        for (const buffer & b : live) {
            s->put(b.ptr, b.size);
        }
        s->count(&books);
        books.syncs = ggml_cpool_driver_calls(drv, GGML_CPOOL_CALL_SYNCHRONIZE) +
                      ggml_cpool_driver_calls(drv, GGML_CPOOL_CALL_STREAM_SYNC);
    }
    books.outstanding = ggml_cpool_driver_outstanding(drv);
    ggml_cpool_driver_release(drv);
    return books;
}

// the runs of one pool on one workload, summed over the seeds
struct row {
    tally              p;                            // on the budget
    double             base_allocs = 0, base_us = 0; // with room to spare
    size_t             leaked = 0;
    std::vector<tally> runs; // on the budget, a seed each
};

void add(tally & sum, const tally & t) {
    sum.lru += t.lru, sum.kept += t.kept, sum.lru_flushed += t.lru_flushed, sum.flushes += t.flushes;
    sum.syncs += t.syncs, sum.driver_allocs += t.driver_allocs, sum.oom += t.oom, sum.refused += t.refused;
    sum.modelled_us += t.modelled_us, sum.free_sum += t.free_sum, sum.largest_sum += t.largest_sum;
    sum.probes += t.probes, sum.outstanding += t.outstanding;
}

row measure(const workload & w, pool_choice which, int sessions, int seeds) {
    row r;
    for (int seed = 0; seed < seeds; seed++) {
        const tally base = run(w, which, false, sessions, uint64_t(seed));
        const tally p    = run(w, which, true, sessions, uint64_t(seed));
        add(r.p, p);
        r.runs.push_back(p);
        r.base_allocs += double(base.driver_allocs);
        r.base_us += base.modelled_us;
        r.leaked += base.outstanding + p.outstanding;
    }
    return r;
}

void print_header() {
    printf("%-8s %-10s %7s %5s %6s %6s %7s %8s %8s %8s %7s %7s %6s %7s\n", "workload", "pool", "LRU", "kept", "LRU+fl",
           "flush", "syncs", "drv-allc", "re-alloc", "lost ms", "OOM", "tenant", "free", "largest");
    printf("%-8s %-10s %7s %5s %6s %6s %7s %8s %8s %8s %7s %7s %6s %7s\n", "", "", "", "", "", "", "", "", "",
           "(model)", "", "refused", "MiB", "MiB");
}

void print_row(const workload & w, pool_choice which, const row & r, int seeds) {
    const double  n = double(seeds), probes = r.p.probes > 0 ? double(r.p.probes) : 1.0;
    const tally & p = r.p;
    printf("%-8s %-10s %7.1f %5.1f %6.1f %6.1f %7.1f %8.1f %8.1f %8.2f %7.1f %7.1f %6.1f %7.1f\n", w.name,
           pool_name(which), double(p.lru) / n, double(p.kept) / n, double(p.lru_flushed) / n, double(p.flushes) / n,
           double(p.syncs) / n, double(p.driver_allocs) / n, (double(p.driver_allocs) - r.base_allocs) / n,
           (p.modelled_us - r.base_us) / n / 1000.0, double(p.oom) / n, double(p.refused) / n, p.free_sum / probes,
           p.largest_sum / probes);
}

void print_workloads(bool quick) {
    printf("reclaim-sim: LRU reclaim (legacy) against a full flush (plain, ggml-style) on the sim driver%s\n",
           quick ? " (--quick)" : "");
    printf("model: %d layers, embd %zu, ff %zu, K/V width %zu; OVERALLOCATE on the K/V conversions (not ggml-style)\n",
           MODEL.layers, MODEL.embd, MODEL.ff, MODEL.kv_embd);
    for (const workload & w : WORKLOADS) {
        const int sessions = quick ? QUICK_SESSIONS : w.sessions;
        if (w.kind == pattern::mixed) {
            printf("%-8s %zu MiB device, %d rounds of %d random requests of %zu KiB-%zu MiB, about %zu live", w.name,
                   w.capacity_mib, sessions, MIXED_OPS, MIXED_MIN >> 10, MIXED_MAX / MiB, MIXED_LIVE);
        } else {
            printf("%-8s %zu MiB device, %d sessions: prompts of %d-%d tokens, ubatch %s, %d decode steps", w.name,
                   w.capacity_mib, sessions, w.prompt_min, w.prompt_max,
                   w.ubatch_cycles ? "512, 384, 256, 128 by turns" : "512", w.decode);
        }
        if (w.cycle > 0) {
            printf(";\n         a tenant takes a chunk of %zu-%zu MiB a pass (up to %zu MiB) for %d passes, then "
                   "gives a random one back a pass for %d",
                   TENANT_MIN / MiB, TENANT_MAX / MiB, w.hold_mib, w.cycle / 2, w.cycle - w.cycle / 2);
        }
        printf("\n");
    }
}

// the verdict on one of `which`'s counts against ggml-style's, paired by seed: false where it is more
bool no_more(const char * workload, pool_choice which, const char * what, uint64_t tally::*count, const row & r,
             const row & ggml) {
    double       sum = 0, squares = 0;
    const double n = double(r.runs.size());
    for (size_t i = 0; i < r.runs.size(); i++) {
        const double d = double(r.runs[i].*count) - double(ggml.runs[i].*count);
        sum += d;
        squares += d * d;
    }
    const double mean = sum / n, se = n > 1 ? std::sqrt(std::max(0.0, squares - sum * mean) / (n - 1) / n) : 0;
    const bool   more = mean > NOISE_SE * se;
    printf("%-8s %-6s %-18s %+8.2f a run beside ggml-style (standard error %.2f): %s\n", workload, pool_name(which),
           what, mean, se, more ? "MORE" : "no more");
    return !more;
}

// the seed's regime on one workload: false where the legacy or plain pool does more than ggml-style
bool verdict(const workload & w, const row rows[]) {
    bool ok = true;
    for (int i = 0; i < 2; i++) { // legacy, plain against ggml-style
        ok &= no_more(w.name, POOL_CHOICES[i], "driver allocations", &tally::driver_allocs, rows[i], rows[2]);
        ok &= no_more(w.name, POOL_CHOICES[i], "OUT_OF_MEMORY", &tally::oom, rows[i], rows[2]);
        if (w.syncs_checked) {
            ok &= no_more(w.name, POOL_CHOICES[i], "synchronizes", &tally::syncs, rows[i], rows[2]);
        }
    }
    return ok;
}

void print_legend() {
    printf("\nLRU: LRU reclaims; kept: those whose retry succeeded with buffers still cached (every other one freed\n"
           "the whole cache, as a flush does); LRU+fl: those a flush had to follow; flush: flushes (ggml-style: its\n"
           "every recovery); syncs: synchronizes (the module's pools: the headroom rule's too); drv-allc: driver\n"
           "allocations; re-alloc: beyond the same run with room to spare (buffers that had to come back); lost ms:\n"
           "their cudaMalloc + cudaFree time on an H200 (cost-model.h); OOM: OUT_OF_MEMORY returned (ggml-style:\n"
           "where ggml aborts); tenant refused: the tenant's allocations the device refused; free, largest: the\n"
           "device's free MiB and the largest allocation that fits, after every session (means)\n");
}

} // namespace

int main(int argc, char ** argv) {
    bool quick = false, verbose = false;
    int  seeds = SEEDS;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--verbose") == 0) {
            verbose = true;
        } else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            seeds = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--quick] [--seeds N] [--verbose]\n", argv[0]);
            return 2;
        }
    }
    if (!verbose) {
        ggml_cpool_log_set([](ggml_cpool_log_level, const char *, void *) {}, nullptr);
    }
    seeds = quick ? QUICK_SEEDS : seeds;
    print_workloads(quick);
    printf("each row: the mean of %d runs (seeds)\n\n", seeds);
    print_header();
    int leaks = 0;
    row rows[std::size(WORKLOADS)][std::size(POOL_CHOICES)];
    for (size_t i = 0; i < std::size(WORKLOADS); i++) {
        const workload & w = WORKLOADS[i];
        for (size_t j = 0; j < std::size(POOL_CHOICES); j++) {
            const row & r = rows[i][j] = measure(w, POOL_CHOICES[j], quick ? QUICK_SESSIONS : w.sessions, seeds);
            print_row(w, POOL_CHOICES[j], r, seeds);
            fflush(stdout); // in order with the pools' lines under --verbose
            if (r.leaked != 0) {
                fprintf(stderr, "%s/%s: %zu driver allocations left after the runs\n", w.name,
                        pool_name(POOL_CHOICES[j]), r.leaked);
                leaks++;
            }
        }
    }
    print_legend();
    bool regime = true;
    if (!quick) {
        printf("\nthe seed's regime: the legacy and plain pools against ggml-style, paired by seed (MORE: beyond %g "
               "standard errors)\n",
               NOISE_SE);
        for (size_t i = 0; i < std::size(WORKLOADS); i++) {
            regime &= verdict(WORKLOADS[i], rows[i]);
        }
    }
    return leaks == 0 && regime ? 0 : 1;
}
