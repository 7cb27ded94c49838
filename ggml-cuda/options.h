#pragma once
// The module's reading of the options table (ggml-cuda-pool-options.h, where every variable the
// module and its integrations read is a row; docs/design.md lists each one). It sits below every other
// file: the logger reads its level here, and env.h's checked readings (which log what they
// refuse) build on it.

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
