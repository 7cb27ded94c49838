#pragma once
// The pools ggml gets from a context: a module pool behind ggml's interface, or ggml's own pool
// watched for the statistics lines.

#include "common.cuh"
#include "ggml-cuda-pool.h"

#include <memory>

struct ggml_cuda_cpool_context;

namespace cpool_adapter {

// the module pool of (device, slot), whose kernels run on `stream` (ggml's, borrowed)
std::unique_ptr<ggml_cuda_pool> make_module_pool(std::shared_ptr<ggml_cuda_cpool_context> context, ggml_cpool_t pool,
                                                 int device, int slot, cudaStream_t stream);

// ggml's own pool `own`, watched for the stats line (only where GGML_CUDA_POOL_STATS asks for one);
// `legacy`: it is ggml's legacy pool, which flushes when the driver refuses (its VMM pool never
// gives memory back)
std::unique_ptr<ggml_cuda_pool> make_watched_pool(std::shared_ptr<ggml_cuda_cpool_context> context,
                                                  std::unique_ptr<ggml_cuda_pool> own, int device, int slot,
                                                  bool legacy);

} // namespace cpool_adapter
