#pragma once
// Tracing and timing of the calls into the module (docs/trace-and-replay.md), hooked in capi.cpp.
// Off, a pool call pays one branch on its pool's flag; on, it is timed into its pool's stats and,
// while a trace records, written as one line (trace-format.h).

#include "../pools/pool.h"
#include "trace-format.h"

#include <atomic>

namespace gcp::trace {

using trace_format::op;

constexpr unsigned TIMING    = 1; // pool calls are timed into stats.call_ns
constexpr unsigned RECORDING = 2; // a trace file is open (pool calls are timed too)

extern std::atomic<unsigned> g_mode;

// a pool call's check is the pool's own flag (pool::observed), which every change of the mode sets
inline bool recording() {
    return (g_mode.load(std::memory_order_relaxed) & RECORDING) != 0;
}

// GGML_CUDA_POOL_TRACE and GGML_CUDA_POOL_TIMING, read once: a refused value fails every context creation
status init_from_env();
// a trace in progress is closed first; t_ns counts from here
status start(const char * path);
status stop();
void   set_timing(bool on);

uint64_t now_ns();

// what one call named and returned; a field a call lacks stays at its NO value
constexpr uint64_t NO = UINT64_MAX;
struct call {
    op       o;
    status   st;
    uint64_t t0;  // now_ns() when the call began
    uint64_t ns;  // time inside it
    uint64_t drv; // driver calls it made
    uint64_t size   = NO;
    uint64_t flags  = NO;
    uint64_t actual = NO;
    uint64_t ptr    = NO;
};

// a pool's call (alloc, free, trim)
void     record(const pool & p, const call & c);
// a context's call (ctx_create, pins); ctx is its handle, which the trace numbers 1, 2, ...
void     record(const void * ctx, const call & c);
// get_pool: also tells the trace the context and slot of the pool (null when refused)
void     record_get_pool(const void * ctx, int device, int slot, const pool * p, const call & c);
// the number the trace gives a context
uint64_t context_id(const void * ctx);
// ctx_free (of the context the trace numbered id): forgets it and its pools, flushes the file
void     record_ctx_free(uint64_t id, const call & c);

// runs a pool call, times it into the pool's stats and records it; ptr and actual: the call's
// pointer and size as they are after it, or null
template <typename F>
status observe(pool & p, op o, uint64_t size, uint64_t flags, void * const * ptr, const size_t * actual, F && run) {
    const bool     rec  = recording();
    const uint64_t drv0 = rec ? p.driver_calls() : 0;
    const uint64_t t0   = now_ns();
    const status   st   = run();
    const uint64_t ns   = now_ns() - t0;
    p.add_call_ns(ns);
    if (rec) {
        const bool kept = o != op::alloc || st == OK; // a refused alloc returns no pointer or size
        record(p, { o, st, t0, ns, p.driver_calls() - drv0, size, flags, actual && kept ? uint64_t(*actual) : NO,
                    ptr && kept ? uint64_t(reinterpret_cast<uintptr_t>(*ptr)) : NO });
    }
    return st;
}

} // namespace gcp::trace
