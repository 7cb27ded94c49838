#pragma once
// The one reader of the environment, for the module and (ggml_cpool_option_read) its integrations:
// every row of ggml-cuda-pool-options.h by one rule. Unset or empty is the row's default, words
// are taken in any case, a bad value is INVALID_ARGUMENT and one line. The one getenv of the
// project's C and C++ is here: option_text, through which every row is read.

#include "common.h"
#include "ggml-cuda-pool-options.h"

#include <cstdlib>

namespace gcp {

using option       = ggml_cpool_option;
using option_value = ggml_cpool_option_value;

inline const char * option_name(option o) {
    return ggml_cpool_option_name(o);
}

// the variable's text; nullptr when it is unset
inline const char * option_text(option o) {
    return getenv(option_name(o));
}

enum class reading {
    report, // a bad value says its line; a file the value names is opened for appending (and closed)
    check,  // as report, but a file the opening made is removed: context creation leaves no file behind
    quiet,  // neither: a choice made before the reading that reports, or the logger asking its level
};

// `o` from the environment now; a bad value leaves *v as unset
status       read_option(option o, option_value * v, reading how = reading::report);
// the word of entry `index` of a LIST row's text, as the table spells it; nullptr past the last
const char * option_entry(option o, const char * text, int index);
// every row read now, each bad value its line
status       check_options(reading how = reading::report);

// the module's rows, read at context creation: unset leaves the output untouched. A BOOLEAN row:
status env_flag(option o, bool * on);
// ggml's own pools (ggml, ggml-legacy), which only the llama.cpp adapter serves, are refused
status env_pool_kind(ggml_cpool_kind * kind);

} // namespace gcp
