#pragma once
// The options table's names and texts (ggml-cuda-pool-options.h). The one getenv of the project's
// C and C++ is here: env.h reads every row through it.

#include "ggml-cuda-pool-options.h"

#include <cstdlib>

namespace gcp {

using option = ggml_cpool_option;

inline const char * option_name(option o) {
    return ggml_cpool_option_name(o);
}

// the variable's text; nullptr when it is unset
inline const char * option_text(option o) {
    return getenv(option_name(o));
}

} // namespace gcp
