#pragma once
// ggml-cuda-pool as the pools of ggml's CUDA backend, built in by integrations/llama.cpp (CMake
// option GGML_CUDA_POOL); the variable GGML_CUDA_POOL picks the module's pools or ggml's own at run time.

#include "ggml.h"

#include <cstdint>
#include <memory>

struct ggml_cuda_pool;
struct ggml_backend_cuda_context;
struct ggml_cuda_cpool_context; // what the pools of one backend context share

// ggml's own pool for a device (VMM where the device has it and `vmm` is set, else legacy)
typedef std::unique_ptr<ggml_cuda_pool> (*ggml_cuda_own_pool_fn)(int device, bool vmm);

// the pool of a backend context for (device, stream_no): the module's, or ggml's own (GGML_CUDA_POOL=ggml
// or ggml-legacy). GGML_CUDA_POOL_ROTATE gives the contexts its configurations in turn: A/B in one process
std::unique_ptr<ggml_cuda_pool> ggml_cuda_cpool_new_pool(ggml_backend_cuda_context & ctx, int device, int stream_no,
                                                         ggml_cuda_own_pool_fn own_pool);

// where the flash-attention K/V f16 conversion buffers live (GGML_CUDA_POOL_KV_F16): false, ggml's
// graph allocator (the default); true, the pool, with the overallocate request up to the whole K/V cache
bool ggml_cuda_cpool_kv_f16_in_pool();

// moves whenever a backend context's module pools give memory back to the driver: a CUDA graph
// captured at an older generation may hold freed buffers, so ggml captures it again
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

// whether a pool allocation failed during this context's capture since the last call: the adapter
// ended the capture to recover (none is legal inside one), so ggml has no graph to launch
bool ggml_cuda_cpool_capture_abandoned(ggml_backend_cuda_context & ctx);

// Where the module's pools serve a backend context and GGML_CUDA_POOL_ON_OOM is error (the default),
// an out-of-memory inside a compute unwinds as this exception to ggml_backend_cuda_graph_compute,
// which returns GGML_STATUS_ALLOC_FAILED: llama.cpp drops the batch and goes on. Elsewhere it ends the process.
struct ggml_cuda_cpool_out_of_memory {};

// a compute of `ctx` on this thread, from before its capture begins until its graph is launched
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
// CU_CHECK give it) in a compute scope that may unwind throws; anything else returns to ggml's abort
void ggml_cuda_cpool_on_cuda_error(const char * stmt, const char * msg);

// after a compute of `ctx` unwound: its open capture thrown away, its device's streams synchronized
// and the latched error cleared. Returns GGML_STATUS_ALLOC_FAILED (GGML_STATUS_FAILED where a stream failed)
enum ggml_status ggml_cuda_cpool_compute_failed(ggml_backend_cuda_context & ctx);

// reads the settings when ggml-cuda initializes: a bad value ends the run with one line, before a model loads
void ggml_cuda_cpool_check_settings();
