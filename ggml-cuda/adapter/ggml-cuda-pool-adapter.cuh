#pragma once
// ggml-cuda-pool as the pools of ggml's CUDA backend. Built into ggml-cuda by the llama.cpp
// integration (integrations/llama.cpp, CMake option GGML_CUDA_POOL), which defines
// GGML_CUDA_POOL; GGML_CUDA_POOL picks the module's pools or ggml's own at run time.

#include "ggml.h"

#include <cstdint>
#include <memory>

struct ggml_cuda_pool;
struct ggml_backend_cuda_context;
// the module context the pools of one backend context share
struct ggml_cuda_cpool_context;

// ggml's own pool for a device (VMM where the device has it and `vmm` is set, else legacy)
typedef std::unique_ptr<ggml_cuda_pool> (*ggml_cuda_own_pool_fn)(int device, bool vmm);

// the pool of a backend context for (device, stream_no): the module's, on the stream ggml
// launches that slot's kernels on, or ggml's own (GGML_CUDA_POOL=ggml or ggml-legacy). With
// GGML_CUDA_POOL_ROTATE=<configuration>,... (instead of GGML_CUDA_POOL) the backend contexts take
// its configurations in turn, in the order of their first pool or graph (one process A/B: what a
// process shares, every configuration shares; a run of several contexts mixes configurations)
std::unique_ptr<ggml_cuda_pool> ggml_cuda_cpool_new_pool(ggml_backend_cuda_context & ctx, int device, int stream_no,
                                                         ggml_cuda_own_pool_fn own_pool);

// where the flash-attention K/V f16 conversion buffers live (GGML_CUDA_POOL_KV_F16): false, ggml's
// graph allocator (extra memory of the attention's output, overlapped with tensors that are dead
// by then: the default); true, the pool, with the overallocate request up to the whole K/V cache
bool ggml_cuda_cpool_kv_f16_in_pool();

// the generation of a backend context's module pools: it moves whenever they give memory back to
// the driver (reclaim, flush, trim, the headroom rule). A CUDA graph captured at an older
// generation may hold freed buffers: ggml captures it again instead of launching it.
uint64_t ggml_cuda_cpool_generation(const ggml_backend_cuda_context & ctx);

// what a backend context's CUDA graphs do, counted for the statistics lines (GGML_CUDA_POOL_STATS)
enum ggml_cuda_cpool_graph_event {
    GGML_CUDA_CPOOL_GRAPH_EAGER,         // an evaluation without a CUDA graph
    GGML_CUDA_CPOOL_GRAPH_CAPTURE,       // a capture began
    GGML_CUDA_CPOOL_GRAPH_INSTANTIATE,   // an executable graph was made from a captured one
    GGML_CUDA_CPOOL_GRAPH_UPDATE,        // an executable graph was updated in place
    GGML_CUDA_CPOOL_GRAPH_UPDATE_FAILED, // the update was refused: destroyed and instantiated again
    GGML_CUDA_CPOOL_GRAPH_LAUNCH,
    GGML_CUDA_CPOOL_GRAPH_ABANDONED, // a capture given up (below)
    GGML_CUDA_CPOOL_GRAPH_FAILED,    // a compute that ran out of memory and returned GGML_STATUS_ALLOC_FAILED
    GGML_CUDA_CPOOL_GRAPH_EVENTS,
};
void ggml_cuda_cpool_graph_note(ggml_backend_cuda_context & ctx, ggml_cuda_cpool_graph_event event);

// whether a pool allocation failed during this context's capture since the last call: no
// recovery is legal during a capture, so the adapter ended it, ran what it held, recovered and
// served the request outside it; the rest of the graph runs eagerly. ggml has no graph to launch
// and captures again once the graph is warm
bool ggml_cuda_cpool_capture_abandoned(ggml_backend_cuda_context & ctx);

// Out of memory inside a compute. Where the module's pools serve a backend context and
// GGML_CUDA_POOL_ON_OOM is error (the default), an allocation they refuse after their own recovery,
// and an out-of-memory result of the compute path (cuBLAS, graph instantiation, a launch), unwind
// out of the op being computed as this exception, up to ggml_backend_cuda_graph_compute, which
// returns GGML_STATUS_ALLOC_FAILED: llama.cpp drops the batch and goes on. The pool buffers the
// ops held go back as their holders (ggml_cuda_pool_alloc) unwind. Elsewhere (ggml's own pools,
// ON_OOM=abort, outside a compute) an out-of-memory ends the process as ggml's does.
struct ggml_cuda_cpool_out_of_memory {};

// a compute of `ctx` on this thread, from before its capture begins until its graph is launched:
// while one lives, an out-of-memory may unwind (above)
class ggml_cuda_cpool_compute_scope {
  public:
    explicit ggml_cuda_cpool_compute_scope(ggml_backend_cuda_context & ctx);
    ~ggml_cuda_cpool_compute_scope();
    ggml_cuda_cpool_compute_scope(const ggml_cuda_cpool_compute_scope &)             = delete;
    ggml_cuda_cpool_compute_scope & operator=(const ggml_cuda_cpool_compute_scope &) = delete;

  private:
    bool saved; // the enclosing scope's permission (a compute inside a compute: a split's copy)
};

// ggml_cuda_error's first step: an out-of-memory result (`msg` as CUDA_CHECK, CUBLAS_CHECK or
// CU_CHECK give it) inside a compute scope that may unwind throws ggml_cuda_cpool_out_of_memory;
// anything else returns, and ggml_cuda_error aborts as before
void ggml_cuda_cpool_on_cuda_error(const char * stmt, const char * msg);

// after a compute of `ctx` unwound: a capture still open on its streams ends and is thrown away,
// every stream of its device is synchronized (no kernel of the failed graph runs on), the error
// the refusal latched is cleared, and one line says what failed. Returns GGML_STATUS_ALLOC_FAILED
enum ggml_status ggml_cuda_cpool_compute_failed(ggml_backend_cuda_context & ctx);

// the adapter's settings read and checked when ggml-cuda initializes, before a model loads: a bad
// value of one of its variables ends the run there, with one line naming the variable and the
// values it takes
void ggml_cuda_cpool_check_settings();
