#pragma once
// ggml-cuda-pool as the pools of ggml's CUDA backend. Built into ggml-cuda by the llama.cpp
// integration (integrations/llama.cpp, CMake option GGML_CUDA_CPOOL), which defines
// GGML_CUDA_CPOOL; GGML_CUDA_POOL picks the module's pools or ggml's own at run time.

#include <cstdint>
#include <memory>

struct ggml_cuda_pool;
struct ggml_backend_cuda_context;
// the module context the pools of one backend context share
struct ggml_cuda_cpool_session;

// ggml's own pool for a device (VMM where the device has it and `vmm` is set, else legacy)
typedef std::unique_ptr<ggml_cuda_pool> (*ggml_cuda_own_pool_fn)(int device, bool vmm);

// the pool of a backend context for (device, stream_no): the module's, on the stream ggml
// launches that slot's kernels on, or ggml's own (GGML_CUDA_POOL=ggml or ggml-legacy)
std::unique_ptr<ggml_cuda_pool> ggml_cuda_cpool_new_pool(ggml_backend_cuda_context & ctx, int device, int stream_no,
                                                         ggml_cuda_own_pool_fn own_pool);

// whether the module's pools serve this process; the flash-attention K/V f16 conversion buffers
// then come from the pool (with headroom) instead of the graph allocator
bool ggml_cuda_cpool_active();

// the generation of a backend context's module pools: it moves whenever they give memory back to
// the driver (reclaim, flush, trim, the headroom rule). A CUDA graph captured at an older
// generation may hold freed buffers: ggml captures it again instead of launching it.
uint64_t ggml_cuda_cpool_generation(const ggml_backend_cuda_context & ctx);
