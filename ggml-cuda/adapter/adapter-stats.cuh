#pragma once
// The statistics lines (GGML_CUDA_POOL_STATS) of the pools and the contexts, and the timer of a pool's calls.

#include "ggml-cuda-pool-adapter.cuh"
#include "ggml-cuda-pool.h"

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace cpool_adapter {

constexpr double MiB = 1024.0 * 1024.0;

// what a pool's line says: the module's statistics (or what watching ggml's own gave), and the adapter's
struct figures {
    const char *     kind = "";
    ggml_cpool_stats stats{};
    uint64_t         call_ns = 0; // inside the pool's alloc and free, as ggml calls them
    // the first of those, which sets the pool up (a device's first cudaMallocAsync: milliseconds)
    uint64_t         first_call_ns = 0;
    // the growing K/V f16 conversion buffers: requests, the largest one, and the largest buffer they got
    uint64_t         growing      = 0;
    size_t           growing_peak = 0, growing_got = 0;
};

// adds the time until its end to f's call_ns, and the first call's to its first_call_ns (nothing
// when f is null): every pool timed alike at ggml's interface, the adapter's own work included
class call_timer {
  public:
    explicit call_timer(figures * f) : f(f), start(f ? clock::now() : clock::time_point()) {}
    ~call_timer() {
        if (f != nullptr) {
            const uint64_t ns =
                uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start).count());
            if (f->call_ns == 0) { // no call timed before (a call takes more than a nanosecond)
                f->first_call_ns = ns;
            }
            f->call_ns += ns;
        }
    }
    call_timer(const call_timer &)             = delete;
    call_timer & operator=(const call_timer &) = delete;

  private:
    using clock = std::chrono::steady_clock;
    figures *         f;
    clock::time_point start;
};

// one line per pool: "stats" at its destruction, "snapshot" on demand
void report(const char * what, uint64_t context, int device, int slot, const figures & f);

// the SIGUSR1s so far, each asking every pool for a line at its next call (a handler may not write a
// file): a process that keeps its backends, as rpc-server does, would otherwise never show its pools
unsigned snapshots_asked();

// one line per backend context, when its context ends: what its CUDA graphs did
void report_graphs(uint64_t context, const uint64_t (&events)[GGML_CUDA_CPOOL_GRAPH_EVENTS], const char * config_name);

} // namespace cpool_adapter
