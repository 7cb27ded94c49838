#pragma once
// Checked readings of the environment variables (options.h): a malformed value is answered with
// INVALID_ARGUMENT and one log line, never a guess.

#include "common.h"
#include "options.h"

namespace gcp {

// unset leaves *no_vmm untouched
status env_no_vmm(bool * no_vmm);
// unset leaves *kind untouched
status env_pool_kind(ggml_cpool_kind * kind);
// unset leaves *on untouched
status env_timing(bool * on);

} // namespace gcp
