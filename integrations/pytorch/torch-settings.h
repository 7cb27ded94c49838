#pragma once
// What the PyTorch library reads from the environment, through the module's reader (one rule for
// every row of ggml-cuda-pool-options.h: unset or empty is the default, words in any case, a bad
// value one line): the pool kind's default, where the statistics lines go, and the check of them
// all that the library runs before it makes its context (and exports for its Python helper).

#include "refusal.h"

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

// every setting, read now as the first allocation reads them, with no device touched: each row of
// the options table by its rule (ggml_cpool_options_check: the module's line for each bad value,
// as the llama.cpp adapter checks them), a GGML_CUDA_POOL that names ggml's own pools (the
// adapter's alone), and where the statistics go (*stats_where). A bad one: INVALID_ARGUMENT, and
// *why a bad_setting with the line that names it.
ggml_cpool_status check_settings(std::string * stats_where, refusal * why);

} // namespace gcp_torch
