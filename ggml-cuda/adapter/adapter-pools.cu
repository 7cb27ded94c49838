// The pools ggml gets: a module pool per (device, stream slot) on the stream of that slot's kernels,
// as ggml keeps a pool per stream; or ggml's own pool, watched for the stats line.

#include "adapter-context.cuh"
#include "adapter-settings.cuh"
#include "adapter-stats.cuh"
#include "common.cuh"

#include <algorithm>
#include <memory>

namespace cpool_adapter {

namespace {

// what both pools share: the time inside ggml's calls, the snapshot line SIGUSR1 asked for and the
// stats line at the end. Pool gives take, give and current
template <typename Pool> class reported_pool : public ggml_cuda_pool {
  public:
    void * alloc(size_t size, size_t * actual_size) final {
        void * ptr = call([&] { return self().take(size, false, 0, actual_size); });
        self().took(*actual_size);
        return ptr;
    }

    void * alloc_overallocate(size_t size, size_t max_size, size_t * actual_size) final {
        if (!config().kv_growing) {
            return alloc(size, actual_size); // as ggml's own pools serve it: no headroom
        }
        void * ptr = call([&] { return self().take(size, true, max_size, actual_size); });
        self().took(*actual_size);
        seen.growing++;
        seen.growing_peak = std::max(seen.growing_peak, size);
        seen.growing_got  = std::max(seen.growing_got, *actual_size);
        return ptr;
    }

    void free(void * ptr, size_t size) final {
        call([&] { self().give(ptr, size); });
        self().given(size);
    }

  protected:
    reported_pool(std::shared_ptr<ggml_cuda_cpool_context> context, int device, int slot) :
        context(std::move(context)),
        device(device),
        slot(slot) {}

    // from Pool's destructor, while its figures can still be read
    void report_stats() {
        if (timed) {
            report("stats", context->id, device, slot, self().current());
        }
    }

    void took(size_t /*actual*/) {}

    void given(size_t /*size*/) {}

    std::shared_ptr<ggml_cuda_cpool_context> context; // outlives every pool of the backend context
    int                                      device, slot;
    const bool                               timed = !config().stats.empty(); // a stats line will say the time
    figures                                  seen;

  private:
    Pool & self() { return static_cast<Pool &>(*this); }

    // f(), timed where the pool is, after the snapshot line SIGUSR1 asked for (before f changes anything)
    template <typename F> auto call(F && f) {
        if (timed && snapshots_seen != snapshots_asked()) {
            snapshots_seen = snapshots_asked();
            report("snapshot", context->id, device, slot, self().current());
        }
        call_timer timer(timed ? &seen : nullptr);
        return f();
    }

    unsigned snapshots_seen = snapshots_asked();
};

struct module_pool final : reported_pool<module_pool> {
    module_pool(std::shared_ptr<ggml_cuda_cpool_context> context, ggml_cpool_t pool, int device, int slot,
                cudaStream_t stream) :
        reported_pool(std::move(context), device, slot),
        pool(pool),
        stream(stream) {}

    ~module_pool() override { report_stats(); }

    void * take(size_t size, bool growing, size_t limit, size_t * actual_size) {
        // ggml may ask for 0 bytes (an empty tensor's scratch), which the module refuses: 1 byte, that free takes back
        const size_t asked   = std::max<size_t>(size, 1);
        void *       ptr     = nullptr;
        auto         request = [&] {
            return growing ? ggml_cpool_alloc_growing(pool, asked, limit, &ptr, actual_size) :
                                     ggml_cpool_alloc(pool, asked, 0, &ptr, actual_size);
        };
        ggml_cpool_status st = request();
        if (st != GGML_CPOOL_STATUS_OK && abandon_capture()) {
            st = request(); // outside the capture: with recovery
        }
        if (st != GGML_CPOOL_STATUS_OK) {
            char what[64];
            snprintf(what, sizeof(what), "alloc of %.2f MiB", size / MiB);
            fail(device, what, st); // inside a compute: unwinds, and the holders give back what the graph held
        }
        return ptr;
    }

    void give(void * ptr, size_t size) {
        ggml_cpool_status st = ggml_cpool_free(pool, ptr, size);
        if (st != GGML_CPOOL_STATUS_OK) {
            fail(device, "free", st);
        }
    }

    figures current() {
        if (ggml_cpool_get_stats(pool, &seen.stats) == GGML_CPOOL_STATUS_OK) { // written only where it succeeds
            seen.kind = ggml_cpool_kind_str(ggml_cpool_get_kind(pool));
        }
        return seen;
    }

  private:
    // the module refused during a capture, where it may not recover: the capture ends, what it holds runs
    // once and the rest eagerly. Not again from the start: ggml-alloc gave inputs' memory to later nodes
    bool abandon_capture() {
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture == cudaStreamCaptureStatusNone) {
            (void) cudaGetLastError();
            return false;
        }
        cudaGraph_t graph = nullptr;
        cudaError_t err   = cudaStreamEndCapture(stream, &graph); // an invalidated capture: an error, no graph
        if (err == cudaSuccess) {
            err = run_once(graph);
        }
        if (graph != nullptr) {
            (void) cudaGraphDestroy(graph);
        }
        if (err != cudaSuccess) {
            (void) cudaGetLastError();
            GGML_LOG_ERROR("ggml-cuda-pool: an allocation failed during a CUDA graph capture on device %d, and the "
                           "work captured before it could not run (%s)\n",
                           device, cudaGetErrorString(err));
            return false;
        }
        GGML_LOG_WARN("ggml-cuda-pool: an allocation failed during a CUDA graph capture on device %d (%s); the capture "
                      "ends there, what it holds runs once and the rest of the graph without it, where the pool can "
                      "recover\n",
                      device, ggml_cpool_last_error());
        context->capture_abandoned = true;
        context->graph_events[GGML_CUDA_CPOOL_GRAPH_ABANDONED]++;
        declare_capture(*context, device, false); // before the request is asked again, outside it
        return true;
    }

    // a captured graph launched once on the pool's stream, ahead of anything launched after it
    cudaError_t run_once(cudaGraph_t graph) const {
        size_t      nodes = 0;
        cudaError_t err   = cudaGraphGetNodes(graph, nullptr, &nodes);
        if (err != cudaSuccess || nodes == 0) {
            return err; // nothing was captured before the allocation
        }
        cudaGraphExec_t exec = nullptr;
        err                  = cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0);
        if (err != cudaSuccess) {
            return err;
        }
        err = cudaGraphLaunch(exec, stream);
        // freed once the launch completes
        const cudaError_t destroyed = cudaGraphExecDestroy(exec);
        return err != cudaSuccess ? err : destroyed;
    }

    ggml_cpool_t pool;
    cudaStream_t stream; // ggml's, the one this pool's kernels run on
};

// ggml's own pool, watched for GGML_CUDA_POOL_STATS. Its legacy pool flushes and retries once when the
// driver refuses: a miss after which it holds less than before plus the new buffer was such a flush
struct watched_pool final : reported_pool<watched_pool> {
    watched_pool(std::shared_ptr<ggml_cuda_cpool_context> context, std::unique_ptr<ggml_cuda_pool> own, int device,
                 int slot, bool legacy) :
        reported_pool(std::move(context), device, slot),
        own(std::move(own)),
        legacy(legacy) {
        seen.kind = this->context->config.c_str(); // ggml or ggml-legacy; the context outlives the pool
    }

    ~watched_pool() override { report_stats(); }

    void * take(size_t size, bool growing, size_t limit, size_t * actual_size) {
        return growing ? own->alloc_overallocate(size, limit, actual_size) : own->alloc(size, actual_size);
    }

    void took(size_t actual) {
        ggml_cpool_stats & s      = seen.stats;
        const uint64_t     before = s.driver_allocs;
        const size_t       held   = s.reserved_bytes;
        read_usage();
        // a legacy miss adds exactly the new buffer, unless the pool flushed first; a VMM
        // growth maps what the request lacks, which may be less
        s.flushes += legacy && s.driver_allocs != before && s.reserved_bytes < held + actual;
        s.allocs++;
        s.hits += s.driver_allocs == before;
        s.live_bytes += actual;
        s.peak_live_bytes = std::max(s.peak_live_bytes, s.live_bytes);
    }

    void give(void * ptr, size_t size) { own->free(ptr, size); }

    void given(size_t size) {
        seen.stats.live_bytes -= size;
        read_usage(); // a legacy pool with no slot left gives the buffer back
    }

    figures current() {
        read_usage();
        return seen;
    }

  private:
    // read after each call rather than before the next, which would warm the pool's lines for the timed call
    void read_usage() {
        own->driver_usage(&seen.stats.reserved_bytes, &seen.stats.peak_reserved_bytes, &seen.stats.driver_allocs);
    }

    std::unique_ptr<ggml_cuda_pool> own;
    bool                            legacy;
};

} // namespace

} // namespace cpool_adapter

std::unique_ptr<ggml_cuda_pool> ggml_cuda_cpool_new_pool(ggml_backend_cuda_context & ctx, int device, int stream_no,
                                                         ggml_cuda_own_pool_fn own_pool) {
    using namespace cpool_adapter;
    const ggml_cuda_cpool_context & s = context_of(ctx);
    if (s.pools != owner::module) {
        const bool                      vmm = s.pools == owner::ggml;
        std::unique_ptr<ggml_cuda_pool> own = own_pool(device, vmm);
        if (config().stats.empty()) {
            return own;
        }
        const bool legacy = !(vmm && ggml_cuda_info().devices[device].vmm); // as ggml chose; vmm is false without VMM
        return std::make_unique<watched_pool>(ctx.cpool_context, std::move(own), device, stream_no, legacy);
    }
    ggml_cpool_ctx_t  context = ctx.cpool_context->ctx;
    ggml_cpool_t      pool    = nullptr;
    cudaStream_t      stream  = ctx.stream(device, stream_no);
    ggml_cpool_status st      = ggml_cpool_ctx_set_stream(context, device, stream_no, stream);
    if (st == GGML_CPOOL_STATUS_OK) {
        st = ggml_cpool_ctx_get_slot_pool(context, device, stream_no, &pool);
    }
    if (st != GGML_CPOOL_STATUS_OK) {
        fail(device, "creating the pool", st);
    }
    if (stream_no == 0 && device == ctx.device) {
        // the stream ggml captures; its forked streams and other devices' keep asking the driver
        ggml_cuda_cpool_context & c = *ctx.cpool_context;
        c.first_stream_pool[device] = pool;
        declare_capture(c, device, c.capture_open);
    }
    return std::make_unique<module_pool>(ctx.cpool_context, pool, device, stream_no, stream);
}
