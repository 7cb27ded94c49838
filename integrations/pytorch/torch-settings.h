#pragma once
// What the PyTorch library reads from the environment, through the module's reader (one rule for
// every row of ggml-cuda-pool-options.h: unset or empty is the default, words in any case, a bad
// value one line): the pool kind's default and where the statistics lines go.

#include "ggml-cuda-pool.h"

#include <string>

namespace gcp_torch {

// GGML_CUDA_POOL_STATS's stderr, for stats_target and the report
constexpr const char * STATS_STDERR = "-";

// PyTorch frees in whatever order Python drops tensors and keeps its weights in the same pool: the
// VMM pool finds a hole for such frees by a scan of its blocks, the legacy pool by a binary
// search over its sizes, so where GGML_CUDA_POOL is unset or empty the context asks for the legacy
// kind; any other value is the module's to read when the context is made (`auto`: its own
// default, VMM where the device has it; a bad value: refused there, with its line).
// device_memory: the most memory a device has (0: unknown). A VMM pool reserves that much address
// range (the module rounds it to the granularity), so that it can serve a tensor as large as the
// device holds, as PyTorch's own allocator can; the module's default range is 32 GiB.
ggml_cpool_ctx_params context_params(size_t device_memory = 0);

// where GGML_CUDA_POOL_STATS sends the lines at exit: "" nowhere, STATS_STDERR, or a file, opened
// for appending now; a bad value (a file that cannot be written): INVALID_ARGUMENT and the
// module's line, now rather than at exit
ggml_cpool_status stats_target(std::string * where);

} // namespace gcp_torch
