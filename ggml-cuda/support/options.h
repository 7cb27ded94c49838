#pragma once
// The options table's names and texts (ggml-cuda-pool-options.h, where every variable the module
// and its integrations read is a row; docs/design.md lists each one). The one getenv of the
// project's C and C++ is here: env.h reads every row through it, by the table's rule.

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
