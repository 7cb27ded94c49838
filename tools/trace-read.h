#pragma once
// Reads a trace file (GGML_CUDA_POOL_TRACE, format in ggml-cuda/trace-format.h and
// docs/trace-and-replay.md) into records. A malformed file is refused whole, with the line and the
// reason: a replay of half a trace would report numbers that mean nothing.

#include "../ggml-cuda/trace/trace-format.h"

#include <cstdint>
#include <string>
#include <vector>

namespace replay {

using gcp::trace_format::op;

constexpr uint64_t NONE = UINT64_MAX; // a field written as "-"
// pools smaller than this hold what the driver's granularity makes them hold (VMM: 2 MiB)
constexpr uint64_t SMALL_POOL = uint64_t(4) << 20;

struct record {
    uint64_t          t;    // ns since the trace started
    uint64_t          ctx;  // context number (NONE when the call made none)
    int32_t           dev;  // -1: none
    int32_t           slot; // -1: none
    uint64_t          stream;
    op                o;
    ggml_cpool_status st;
    ggml_cpool_kind   kind; // get_pool: the kind in effect
    uint64_t          size;
    uint64_t          flags;
    uint64_t          actual;
    uint64_t          ptr;
    uint64_t          drv;      // driver calls the call made
    uint64_t          reserved; // the pool's reserved bytes after the call
    uint64_t          ns;       // time inside the call
};

// a call into a pool (the calls a result counts), not into a context
inline bool is_pool_call(op o) {
    return o == op::alloc || o == op::free || o == op::trim;
}

// where a pool of the trace lives: its context, device and consumer-stream slot
struct pool_key {
    uint64_t ctx;
    int32_t  dev;
    int32_t  slot;

    bool operator<(const pool_key & o) const {
        return ctx != o.ctx ? ctx < o.ctx : dev != o.dev ? dev < o.dev : slot < o.slot;
    }
    bool operator==(const pool_key & o) const { return ctx == o.ctx && dev == o.dev && slot == o.slot; }
};

struct trace {
    std::string         path;
    std::vector<record> records;
    uint64_t            duration_ns = 0; // until the last call ended
    int                 devices     = 0; // highest device named, plus one
    size_t              contexts    = 0;
    size_t              pools       = 0;
    // the peak, over time, of the bytes requested by live buffers on the busiest device: what
    // the consumer needed, before any pool's rounding (a capacity fraction refers to it)
    uint64_t            peak_requested = 0;
};

// false and *error ("<path>:<line>: <reason>") when the file cannot be read or is malformed
bool read_trace(const std::string & path, trace * out, std::string * error);

} // namespace replay
