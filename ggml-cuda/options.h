#pragma once
// The environment variables the module reads, in one table; README lists each one. The table
// sits below every other file: the logger reads its level here, and env.h's checked readings
// (which log what they refuse) build on it.

#include <cstddef>
#include <cstdlib>

namespace gcp {

enum class option { no_vmm, pool_kind, log_level, fault, trace, timing, count };

struct option_info {
    const char * name;
    const char * values;
};

constexpr option_info OPTIONS[size_t(option::count)] = {
    { "GGML_CUDA_NO_VMM", "1/0: legacy pool instead of VMM" },
    { "GGML_CUDA_POOL", "auto | vmm | legacy | plain | async" },
    { "GGML_CUDA_POOL_LOG", "debug | info | warn | error" },
    { "GGML_CUDA_POOL_FAULT", "a fault spec (fault-spec.h)" },
    { "GGML_CUDA_POOL_TRACE", "a file: every call into the module is traced to it (trace.h)" },
    { "GGML_CUDA_POOL_TIMING", "1/0: time spent inside pool calls into stats" },
};

constexpr const char * option_name(option o) {
    return OPTIONS[size_t(o)].name;
}

// the variable's text; nullptr when it is unset
inline const char * option_text(option o) {
    return getenv(option_name(o));
}

} // namespace gcp
