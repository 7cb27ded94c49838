// A compute that runs out of memory (ggml-cuda-pool-adapter.cuh): who unwinds, and what is set right after.

#include "adapter-context.cuh"
#include "adapter-settings.cuh"
#include "common.cuh"

#include <cstring>
#include <exception>
#include <string>

namespace cpool_adapter {

namespace {

// whether an out-of-memory on this thread fails the compute in progress (set by its scope)
thread_local bool compute_may_fail = false;

// an out-of-memory result as ggml's checks spell it: the runtime's and the driver API's, and cuBLAS's
bool is_out_of_memory(const char * msg) {
    return msg != nullptr && (strcmp(msg, cudaGetErrorString(cudaErrorMemoryAllocation)) == 0 ||
                              strcmp(msg, cublas_get_error_str(CUBLAS_STATUS_ALLOC_FAILED)) == 0);
}

bool capturing(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    return stream != nullptr && cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
           status != cudaStreamCaptureStatusNone;
}

// a capture still open on the device's first stream is thrown away, its forks joined first (else it cannot end)
void end_capture(ggml_backend_cuda_context & ctx) {
    cudaStream_t main_stream = ctx.streams[ctx.device][0];
    if (!capturing(main_stream)) {
        return;
    }
    cudaEvent_t join = nullptr;
    if (cudaEventCreateWithFlags(&join, cudaEventDisableTiming) == cudaSuccess) {
        for (int i = 1; i < GGML_CUDA_MAX_STREAMS; i++) {
            cudaStream_t forked = ctx.streams[ctx.device][i];
            if (capturing(forked) && cudaEventRecord(join, forked) == cudaSuccess) {
                (void) cudaStreamWaitEvent(main_stream, join, 0);
            }
        }
    }
    cudaGraph_t graph = nullptr;
    (void) cudaStreamEndCapture(main_stream, &graph); // an invalidated capture: an error, no graph
    if (graph != nullptr) {
        (void) cudaGraphDestroy(graph);
    }
    if (join != nullptr) {
        (void) cudaEventDestroy(join);
    }
}

// the compute in progress fails, its line said
[[noreturn]] void fail_compute(const std::string & what) {
    GGML_LOG_ERROR("ggml-cuda-pool: %s; the compute fails with GGML_STATUS_ALLOC_FAILED\n", what.c_str());
    throw ggml_cuda_cpool_out_of_memory{};
}

} // namespace

void fail(int device, const char * what, ggml_cpool_status st) {
    const std::string line = std::string(what) + " on device " + std::to_string(device) + " failed (" +
                             ggml_cpool_status_str(st) + "): " + ggml_cpool_last_error();
    if (st == GGML_CPOOL_STATUS_OUT_OF_MEMORY && compute_may_fail) {
        fail_compute(line);
    }
    GGML_ABORT("ggml-cuda-pool: %s", line.c_str());
}

} // namespace cpool_adapter

ggml_cuda_cpool_compute_scope::ggml_cuda_cpool_compute_scope(ggml_backend_cuda_context & ctx) :
    saved(cpool_adapter::compute_may_fail) {
    cpool_adapter::compute_may_fail = cpool_adapter::context_of(ctx).pools == cpool_adapter::owner::module &&
                                      cpool_adapter::config().oom_fails_compute;
}

ggml_cuda_cpool_compute_scope::~ggml_cuda_cpool_compute_scope() {
    cpool_adapter::compute_may_fail = saved;
}

void ggml_cuda_cpool_on_cuda_error(const char * stmt, const char * msg) {
    // a second refusal while the first unwinds (a holder's destructor) is left to ggml's abort, not std::terminate
    if (cpool_adapter::compute_may_fail && std::uncaught_exceptions() == 0 && cpool_adapter::is_out_of_memory(msg)) {
        cpool_adapter::fail_compute(std::string(stmt) + ": " + msg);
    }
}

enum ggml_status ggml_cuda_cpool_compute_failed(ggml_backend_cuda_context & ctx) {
    ctx.curr_stream_no = 0; // ggml's concurrent streams end with the graph
    cpool_adapter::end_capture(ctx);
    (void) cudaGetLastError(); // the refusal's, latched
    enum ggml_status status = GGML_STATUS_ALLOC_FAILED;
    for (cudaStream_t stream : ctx.streams[ctx.device]) {
        const cudaError_t err = stream != nullptr ? cudaStreamSynchronize(stream) : cudaSuccess;
        if (err != cudaSuccess) {
            // a kernel of the graph failed: the device cannot go on, and ggml ends the process at its next check
            GGML_LOG_ERROR("ggml-cuda-pool: after the compute on device %d ran out of memory, its stream failed: %s\n",
                           ctx.device, cudaGetErrorString(err));
            status = GGML_STATUS_FAILED;
        }
    }
    ggml_cuda_cpool_context & context = cpool_adapter::context_of(ctx);
    context.capture_abandoned         = false; // that capture is gone too
    cpool_adapter::declare_capture(context, ctx.device, false);
    context.graph_events[GGML_CUDA_CPOOL_GRAPH_FAILED]++;
    return status;
}
