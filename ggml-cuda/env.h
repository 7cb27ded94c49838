#pragma once
// The environment variables the module reads; README lists each one.
// A malformed value is answered with INVALID_ARGUMENT and one log line, never a guess.

#include "common.h"

namespace gcp {

constexpr const char * ENV_NO_VMM    = "GGML_CUDA_NO_VMM";     // 1/0: legacy pool instead of VMM
constexpr const char * ENV_POOL_KIND = "GGML_CUDA_POOL";       // auto | vmm | legacy | plain | async
constexpr const char * ENV_LOG_LEVEL = "GGML_CUDA_POOL_LOG";   // debug | info | warn | error
constexpr const char * ENV_FAULT     = "GGML_CUDA_POOL_FAULT"; // a fault spec (fault-spec.h)
constexpr const char * ENV_TRACE     = "GGML_CUDA_POOL_TRACE";  // a file: every pool call is traced to it (trace.h)
constexpr const char * ENV_TIMING    = "GGML_CUDA_POOL_TIMING"; // 1/0: time spent inside pool calls into stats

// unset leaves *no_vmm untouched
status env_no_vmm(bool * no_vmm);
// unset leaves *kind untouched
status env_pool_kind(ggml_cpool_kind * kind);
// unset leaves *on untouched
status env_timing(bool * on);
// the stderr logger's threshold; a malformed value falls back to warn and says so once
ggml_cpool_log_level env_log_level();

} // namespace gcp
