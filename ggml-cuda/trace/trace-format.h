#pragma once
// The trace file's vocabulary, shared by the writer (trace.cpp) and the readers (tools/): a
// header line, a column line, then one line per call into the module, fields separated by one
// space, NONE where a call has no such field. docs/trace-and-replay.md documents each field.

#include "ggml-cuda-pool.h"

#include <cstdint>

namespace gcp::trace_format {

constexpr const char * MAGIC   = "# ggml-cuda-pool trace"; // followed by " <VERSION>"
constexpr int          VERSION = 1;
constexpr const char * COLUMNS = "# t_ns ctx dev slot stream op size flags status actual ptr drv reserved ns";
constexpr int          FIELDS  = 14;
constexpr const char * NONE    = "-";

enum class op : uint8_t {
    ctx_create, // a context was asked for
    get_pool,   // flags: the kind in effect
    alloc,      // size requested, flags, actual and ptr returned
    free,       // ptr and size given
    trim,
    ctx_free,
    pin_begin, // actual: the graph id returned
    pin_end,
    pin_release, // size: the graph id given
    count,
};

constexpr const char * OP_NAMES[size_t(op::count)] = {
    "ctx_create", "get_pool", "alloc", "free", "trim", "ctx_free", "pin_begin", "pin_end", "pin_release",
};

inline const char * op_name(op o) {
    return o < op::count ? OP_NAMES[size_t(o)] : "?";
}

} // namespace gcp::trace_format
