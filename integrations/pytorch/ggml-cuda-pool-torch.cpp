// The library PyTorch loads: one allocator (torch-allocator.h) over one module context on the
// cuda driver for the whole process, made at the first allocation. It is never destroyed:
// PyTorch frees tensors until the interpreter is gone, and the process's exit takes the device
// memory back. A request it refuses is raised as an exception (torch-raise.h), never returned as
// NULL, and a bad setting is refused the same way at the first allocation (or earlier, through
// ggml_cuda_pool_torch_check).

#include "ggml-cuda-pool-torch.h"

#include "torch-allocator.h"
#include "torch-raise.h"
#include "torch-settings.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace {

using gcp_torch::STATS_STDERR;

std::atomic<gcp_torch::torch_allocator *> made{ nullptr }; // for the report, which makes nothing
std::string stats_where; // GGML_CUDA_POOL_STATS, read with the settings: the lines at exit go there

void log_line(const char * line) {
    fprintf(stderr, "%s\n", line);
}

// PyTorch's streams are the runtime's; synchronizing one needs no current device
bool wait_stream(int device, void * stream) {
    cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
    if (e != cudaSuccess) {
        (void) cudaGetLastError(); // reported here, not against the next kernel launch
        fprintf(stderr, "ggml-cuda-pool-torch: synchronizing stream %p on device %d failed: %s\n", stream, device,
                cudaGetErrorString(e));
        return false;
    }
    return true;
}

// the device's free and total memory, read with the device current and the caller's put back
bool device_memory(int device, size_t * free, size_t * total) {
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || (current != device && cudaSetDevice(device) != cudaSuccess)) {
        (void) cudaGetLastError();
        return false;
    }
    const cudaError_t e = cudaMemGetInfo(free, total);
    if (current != device) {
        (void) cudaSetDevice(current);
    }
    (void) cudaGetLastError(); // nothing of this reaches the next kernel launch
    return e == cudaSuccess;
}

// the most memory a visible device has, from its properties (no context is made for it); 0 when
// it cannot be read
size_t largest_device_memory() {
    int    count = 0;
    size_t most  = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        count = 0;
    }
    for (int d = 0; d < count; d++) {
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) {
            most = std::max(most, prop.totalGlobalMem);
        }
    }
    (void) cudaGetLastError();
    return most;
}

int write_lines(const char * where) {
    gcp_torch::torch_allocator * a = made.load();
    if (a == nullptr) {
        return 0;
    }
    try {
        std::vector<std::string> lines = a->stats_lines();
        const bool               err   = strcmp(where, STATS_STDERR) == 0;
        FILE *                   out   = err ? stderr : fopen(where, "a");
        if (out == nullptr) {
            fprintf(stderr, "ggml-cuda-pool-torch: cannot append the pool statistics to %s\n", where);
            return -1;
        }
        for (const std::string & l : lines) {
            fprintf(out, "%s\n", l.c_str());
        }
        if (!err && fclose(out) != 0) {
            fprintf(stderr, "ggml-cuda-pool-torch: writing the pool statistics to %s failed\n", where);
            return -1;
        }
        return int(lines.size());
    } catch (const std::bad_alloc &) {
        fprintf(stderr, "ggml-cuda-pool-torch: out of host memory for the pool statistics\n");
        return -1;
    }
}

void report_at_exit() {
    (void) write_lines(stats_where.c_str());
}

gcp_torch::torch_allocator * make_allocator(gcp_torch::refusal * why) {
    using gcp_torch::refusal;
    // the settings first: a file the lines cannot go to is refused now, not at exit
    if (gcp_torch::check_settings(&stats_where, why) != GGML_CPOOL_STATUS_OK) {
        return nullptr;
    }
    // GGML_CUDA_POOL unset or empty: legacy; a VMM pool's range as large as the largest device
    ggml_cpool_ctx_params params = gcp_torch::context_params(largest_device_memory());
    ggml_cpool_ctx_t      ctx    = nullptr;
    ggml_cpool_status     st     = ggml_cpool_ctx_create(&params, &ctx);
    if (st != GGML_CPOOL_STATUS_OK) {
        why->set(st == GGML_CPOOL_STATUS_INVALID_ARGUMENT ? refusal::kind::bad_setting : refusal::kind::failure,
                 "ggml-cuda-pool-torch: creating the pool context failed (%s: %s)", ggml_cpool_status_str(st),
                 gcp_torch::module_reason());
        return nullptr;
    }
    gcp_torch::torch_allocator * a = nullptr;
    try {
        a = new gcp_torch::torch_allocator(ctx, { cudaStreamLegacy, wait_stream, log_line, device_memory });
    } catch (const std::bad_alloc &) {
        why->set(refusal::kind::failure, "ggml-cuda-pool-torch: out of host memory for the allocator");
        ggml_cpool_ctx_free(ctx);
        return nullptr;
    }
    made.store(a);
    // registered after the runtime's own exit handler (the context's creation initialized it), so it runs first
    if (!stats_where.empty() && std::atexit(report_at_exit) != 0) {
        fprintf(stderr, "ggml-cuda-pool-torch: cannot register the statistics at exit\n");
    }
    return a;
}

// the allocator, made once whichever thread comes first; nullptr when it could not be, with the
// reason in *why (every allocation raises it)
gcp_torch::torch_allocator * instance(gcp_torch::refusal * why) {
    static gcp_torch::refusal                 not_made;
    static gcp_torch::torch_allocator * const a = make_allocator(&not_made);
    if (a == nullptr) {
        *why = not_made;
    }
    return a;
}

} // namespace

extern "C" void * ggml_cuda_pool_torch_alloc(size_t size, int device, void * stream) {
    if (size == 0) {
        return nullptr;
    }
    gcp_torch::refusal           why;
    gcp_torch::torch_allocator * a   = instance(&why);
    void *                       ptr = a != nullptr ? a->alloc(size, device, stream, &why) : nullptr;
    if (ptr == nullptr) {
        gcp_torch::raise(why); // PyTorch does not check for NULL: its first kernel would write through it
    }
    return ptr;
}

extern "C" void ggml_cuda_pool_torch_free(void * ptr, size_t size, int device, void * stream) {
    gcp_torch::torch_allocator * a = made.load();
    if (ptr == nullptr) {
        return;
    }
    if (a == nullptr) {
        fprintf(stderr, "ggml-cuda-pool-torch: free of %p before any allocation; ignored\n", ptr);
        return;
    }
    a->free(ptr, size, device, stream);
}

extern "C" int ggml_cuda_pool_torch_report(const char * where) {
    return write_lines(where != nullptr ? where : STATS_STDERR);
}

extern "C" int ggml_cuda_pool_torch_check(char * line, size_t size) {
    gcp_torch::refusal why;
    std::string        where;
    const bool         ok = gcp_torch::check_settings(&where, &why) == GGML_CPOOL_STATUS_OK;
    if (!ok && line != nullptr && size > 0) {
        snprintf(line, size, "%s", why.message);
    }
    return ok ? 0 : -1;
}

extern "C" int ggml_cuda_pool_torch_raises_torch_errors(void) {
    return gcp_torch::raises_torch_errors() ? 1 : 0;
}

extern "C" void ggml_cuda_pool_torch_timing(int on) {
    ggml_cpool_timing_set(on);
}
