// The statistics lines (adapter-stats.cuh), where GGML_CUDA_POOL_STATS asks for them.

#include "adapter-stats.cuh"

#include "adapter-settings.cuh"
#include "common.cuh"

#include <atomic>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>

namespace cpool_adapter {

namespace {

using ull = unsigned long long; // what %llu reads

void report_line(const char * fmt, ...) GGML_ATTRIBUTE_FORMAT(1, 2);
void report_line(const char * fmt, ...) {
    const settings & c = config();
    if (c.stats_out == nullptr) {
        return;
    }
    static std::mutex           mutex;
    std::lock_guard<std::mutex> lock(mutex);
    static bool                 warned = false; // one line for a file that stopped taking them, not one per pool
    va_list                     args;
    va_start(args, fmt);
    // flushed line by line: a snapshot is read while the process lives, and processes may share the file
    const bool written = vfprintf(c.stats_out, fmt, args) >= 0 && fflush(c.stats_out) == 0;
    va_end(args);
    if (!written && !warned) {
        warned = true;
        GGML_LOG_WARN("ggml-cuda-pool: cannot append the pool statistics to %s\n", c.stats.c_str());
    }
}

std::atomic<unsigned> snapshots{ 0 }; // lock-free, so the handler may touch it

void ask_snapshot(int /*signal*/) {
    snapshots.fetch_add(1, std::memory_order_relaxed);
}

#if defined(SIGUSR1)
// in place from the moment ggml-cuda loads, only over SIGUSR1's default action, which would end a
// server signalled before its first pool; it comes back where ggml-cuda is unloaded
struct snapshot_handler {
    bool installed = false;

    snapshot_handler() {
        // from the environment now, saying nothing of a bad value: the settings' reading says it
        ggml_cpool_option_value stats;
        if (ggml_cpool_option_peek(GGML_CPOOL_OPTION_STATS, &stats) != GGML_CPOOL_STATUS_OK || !stats.on) {
            return;
        }
        struct sigaction current = {};
        if (sigaction(SIGUSR1, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) {
            return; // the process has its own use for it
        }
        struct sigaction ours = {};
        ours.sa_handler       = ask_snapshot;
        ours.sa_flags         = SA_RESTART; // a server blocked in accept() keeps waiting for its next client
        sigemptyset(&ours.sa_mask);
        installed = sigaction(SIGUSR1, &ours, nullptr) == 0;
        if (!installed) {
            GGML_LOG_WARN("ggml-cuda-pool: SIGUSR1 cannot ask for the pools' lines in this process\n");
        }
    }

    ~snapshot_handler() {
        struct sigaction current = {};
        if (installed && sigaction(SIGUSR1, nullptr, &current) == 0 && current.sa_handler == ask_snapshot) {
            signal(SIGUSR1, SIG_DFL);
        }
    }
} const handler;
#endif

} // namespace

unsigned snapshots_asked() {
    return snapshots.load(std::memory_order_relaxed);
}

void report(const char * what, uint64_t context, int device, int slot, const figures & f) {
    const ggml_cpool_stats & s = f.stats;
    report_line(
        "ggml-cuda-pool %s: context=%llu device=%d slot=%d pool=%s allocs=%llu hits=%llu driver_allocs=%llu "
        "driver_frees=%llu live_mib=%.2f reserved_mib=%.2f peak_live_mib=%.2f peak_reserved_mib=%.2f lru_reclaims=%llu "
        "flushes=%llu oom=%llu syncs=%llu growing_requests=%llu growing_peak_request_mib=%.2f "
        "growing_peak_buffer_mib=%.2f waits=%llu waits_served=%llu wait_ms=%.1f call_ms=%.3f first_call_ms=%.3f "
        "neighbour_asks=%llu neighbour_received_mib=%.2f neighbour_ask_ms=%.1f neighbour_gives=%llu "
        "neighbour_given_mib=%.2f\n",
        what, ull(context), device, slot, f.kind, ull(s.allocs), ull(s.hits), ull(s.driver_allocs), ull(s.driver_frees),
        s.live_bytes / MiB, s.reserved_bytes / MiB, s.peak_live_bytes / MiB, s.peak_reserved_bytes / MiB,
        ull(s.lru_reclaims), ull(s.flushes), ull(s.oom_returned), ull(s.synchronizes), ull(f.growing),
        f.growing_peak / MiB, f.growing_got / MiB, ull(s.waits), ull(s.waits_served), s.wait_ns / 1e6, f.call_ns / 1e6,
        f.first_call_ns / 1e6, ull(s.neighbour_asks), s.neighbour_received_bytes / MiB, s.neighbour_ask_ns / 1e6,
        ull(s.neighbour_gives), s.neighbour_given_bytes / MiB);
}

void report_graphs(uint64_t context, const uint64_t (&n)[GGML_CUDA_CPOOL_GRAPH_EVENTS], const char * config_name) {
    report_line("ggml-cuda-pool graphs: context=%llu eager=%llu captures=%llu instantiations=%llu updates=%llu "
                "update_failures=%llu launches=%llu abandoned=%llu failed=%llu config=%s\n",
                ull(context), ull(n[GGML_CUDA_CPOOL_GRAPH_EAGER]), ull(n[GGML_CUDA_CPOOL_GRAPH_CAPTURE]),
                ull(n[GGML_CUDA_CPOOL_GRAPH_INSTANTIATE]), ull(n[GGML_CUDA_CPOOL_GRAPH_UPDATE]),
                ull(n[GGML_CUDA_CPOOL_GRAPH_UPDATE_FAILED]), ull(n[GGML_CUDA_CPOOL_GRAPH_LAUNCH]),
                ull(n[GGML_CUDA_CPOOL_GRAPH_ABANDONED]), ull(n[GGML_CUDA_CPOOL_GRAPH_FAILED]), config_name);
}

} // namespace cpool_adapter
