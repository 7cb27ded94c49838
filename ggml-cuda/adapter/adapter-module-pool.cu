// A module pool behind ggml's interface, one per (device, stream slot) of a backend context, on
// the stream ggml launches that slot's kernels on; and the way out of a capture that a failed
// allocation leaves it: the capture ends there and what it holds runs once.

#include "adapter-pools.cuh"

#include "adapter-context.cuh"
#include "adapter-settings.cuh"
#include "adapter-stats.cuh"
#include "common.cuh"

#include <algorithm>
#include <memory>

namespace cpool_adapter {

namespace {

struct module_pool final : ggml_cuda_pool {
    module_pool(std::shared_ptr<ggml_cuda_cpool_context> context, ggml_cpool_t pool, int device, int slot,
                cudaStream_t stream) :
        context(std::move(context)),
        pool(pool),
        device(device),
        slot(slot),
        stream(stream),
        timed(!config().stats.empty()) {}

    ~module_pool() override {
        if (!config().stats.empty()) {
            report(line::stats, context->id, device, slot, current());
        }
    }

    void * alloc(size_t size, size_t * actual_size) override {
        on_call();
        call_timer timer(timed ? &seen : nullptr);
        return take(size, false, 0, actual_size);
    }

    void * alloc_overallocate(size_t size, size_t max_size, size_t * actual_size) override {
        if (!config().kv_growing) {
            return alloc(size, actual_size); // as ggml's own pools serve it: no headroom
        }
        on_call();
        void * ptr = nullptr;
        {
            call_timer timer(timed ? &seen : nullptr);
            ptr = take(size, true, max_size, actual_size);
        }
        seen.note_growing(size, *actual_size);
        return ptr;
    }

    void free(void * ptr, size_t size) override {
        on_call();
        call_timer        timer(timed ? &seen : nullptr);
        ggml_cpool_status st = ggml_cpool_free(pool, ptr, size);
        if (st != GGML_CPOOL_STATUS_OK) {
            fail(device, "free", st);
        }
    }

    bool driver_usage(size_t * reserved, size_t * peak_reserved, uint64_t * driver_allocs) const override {
        ggml_cpool_stats s{};
        if (ggml_cpool_get_stats(pool, &s) != GGML_CPOOL_STATUS_OK) {
            return false;
        }
        *reserved      = s.reserved_bytes;
        *peak_reserved = s.peak_reserved_bytes;
        *driver_allocs = s.driver_allocs;
        return true;
    }

  private:
    // the module's statistics and the adapter's own figures, as a stats line says them
    figures current() {
        ggml_cpool_stats s{};
        if (ggml_cpool_get_stats(pool, &s) == GGML_CPOOL_STATUS_OK) {
            seen.kind          = ggml_cpool_kind_str(ggml_cpool_get_kind(pool));
            seen.allocs        = s.allocs;
            seen.hits          = s.hits;
            seen.driver_allocs = s.driver_allocs;
            seen.driver_frees  = s.driver_frees;
            seen.live          = s.live_bytes;
            seen.reserved      = s.reserved_bytes;
            seen.peak_live     = s.peak_live_bytes;
            seen.peak_reserved = s.peak_reserved_bytes;
            seen.lru_reclaims  = s.lru_reclaims;
            seen.flushes       = s.flushes;
            seen.oom           = s.oom_returned;
            seen.syncs         = s.synchronizes;
        }
        return seen;
    }

    // the snapshot line SIGUSR1 asked for, before this call changes anything
    void on_call() {
        if (timed && snapshot.due()) {
            report(line::snapshot, context->id, device, slot, current());
        }
    }

    ggml_cpool_status request(size_t size, bool growing, size_t limit, void ** ptr, size_t * actual_size) {
        // ggml may ask for nothing (the scratch of an empty tensor); the module refuses a zero
        // size, so ask for one byte: still a buffer of its own that free takes back
        size = std::max<size_t>(size, 1);
        return growing ? ggml_cpool_alloc_growing(pool, size, limit, ptr, actual_size) :
                         ggml_cpool_alloc(pool, size, 0, ptr, actual_size);
    }

    void * take(size_t size, bool growing, size_t limit, size_t * actual_size) {
        void *            ptr = nullptr;
        ggml_cpool_status st  = request(size, growing, limit, &ptr, actual_size);
        if (st != GGML_CPOOL_STATUS_OK && abandon_capture()) {
            st = request(size, growing, limit, &ptr, actual_size); // outside the capture: with recovery
        }
        if (st != GGML_CPOOL_STATUS_OK) {
            char what[64];
            snprintf(what, sizeof(what), "alloc of %.2f MiB", size / MiB);
            fail(device, what, st); // inside a compute: unwinds, and the holders give back what the graph held
        }
        return ptr;
    }

    // the module returned an error while the stream captures a graph, where it may not synchronize
    // or free to recover: the capture ends here, what it holds (the graph's nodes before this
    // allocation) runs now, once, and the rest of the graph runs eagerly after it. Dropping what
    // was captured and evaluating the graph again would not do: ggml-alloc hands an input's memory
    // to a later node once its last reader has run, so a graph's evaluation cannot be repeated
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

    std::shared_ptr<ggml_cuda_cpool_context> context; // outlives every pool of the backend context
    ggml_cpool_t                             pool;
    int                                      device, slot;
    cudaStream_t                             stream; // ggml's, the one this pool's kernels run on
    bool                                     timed;  // a stats line will report the time in its calls
    figures                                  seen;
    snapshot_request                         snapshot;
};

} // namespace

std::unique_ptr<ggml_cuda_pool> make_module_pool(std::shared_ptr<ggml_cuda_cpool_context> context, ggml_cpool_t pool,
                                                 int device, int slot, cudaStream_t stream) {
    return std::make_unique<module_pool>(std::move(context), pool, device, slot, stream);
}

} // namespace cpool_adapter
