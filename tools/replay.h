#pragma once
// Plays a trace (trace-read.h) against a pool configuration on the sim driver, keeping the
// trace's contexts, devices and slots apart (one replay context per traced context and slot),
// and measures what the memory did: driver allocations and frees, peaks, stranded bytes,
// out-of-memory events, reclaims, flushes and modelled driver time (cost-model.h). The
// configurations are one table (configs.cpp); the recorded row replays nothing (recorded.h).
//
// Stranded bytes are reserved bytes no live buffer uses: reported as the peak reserved minus the
// peak live, and as the mean over the trace's time of (reserved - live).

#include "trace-read.h"

#include <string>
#include <vector>

namespace replay {

// one way to serve a trace: a pool kind and its options. A policy joins as a new row of
// configurations() that sets the context parameters it needs in `tune`.
struct config {
    const char *    name;
    ggml_cpool_kind kind;       // AUTO: nothing replayed, the trace's own numbers ("recorded")
    uint32_t        drop_flags; // request flags the replay clears (ggml's own pools know no OVERALLOCATE)
    void (*tune)(ggml_cpool_ctx_params * params); // more context parameters, or null
    const char * what;                            // one line for --help
};

const std::vector<config> & configurations();
// nullptr when no configuration has that name
const config *              find_config(const std::string & name);
// replayed when none is named: recorded and every kind as traced
std::vector<const config *> default_configs();

struct options {
    size_t      capacity = 0; // device memory per device, bytes
    std::string faults;       // a fault spec over the sim driver (docs/fault-injection.md), or empty
    size_t      samples = 0;  // timeline points per track (0: no timeline)
};

// a counter track: bytes over time, at most two points per interval (its maximum at its start,
// its last value at its end), so no peak is lost and a quiet stretch holds the right value
struct point {
    uint64_t t;
    uint64_t live, cached, reserved;
};
struct track {
    std::string        name;
    std::vector<point> points;
};
struct event {
    uint64_t    t;
    std::string name;  // "LRU reclaim", "flush", "OUT_OF_MEMORY", "fault"
    std::string track; // the pool it happened in
    uint64_t    bytes; // reclaimed, or requested
};

struct result {
    std::string config;
    bool        replayed = false;  // false: the trace's own numbers
    std::string unavailable;       // why the configuration could not run; empty when it ran
    uint64_t    calls         = 0; // pool calls in the trace
    uint64_t    allocs        = 0; // allocations that succeeded
    uint64_t    hits          = 0; // recorded: allocations that made no driver call
    uint64_t    driver_allocs = 0; // NONE when unknown (recorded)
    uint64_t    driver_frees  = 0;
    uint64_t    driver_calls  = 0; // recorded: every driver call the trace counted
    uint64_t    oom           = 0; // OUT_OF_MEMORY returned
    uint64_t    lru_reclaims  = 0;
    uint64_t    flushes       = 0;
    uint64_t    faults        = 0; // injected
    uint64_t    unmatched_frees =
        0; // frees of buffers the replay does not hold (allocated before the trace, or failed here)
    uint64_t           peak_live     = 0;
    uint64_t           peak_reserved = 0;
    double             stranded_mean = 0; // bytes
    // the largest peak reserved / peak live of one pool, over pools whose peak live reaches
    // SMALL_POOL (below it the driver's granularity, not the policy, sets the ratio); 0: none
    double             worst_pool  = 0;
    double             modelled_us = -1; // modelled driver time; < 0 when not modelled
    uint64_t           call_ns     = 0;  // recorded: time inside the pool calls, as measured
    std::vector<track> tracks;           // "all pools" first, then one per pool when there are several
    std::vector<event> events;
};

result play(const trace & t, const config & c, const options & o);

// the capacity at which the trace's peak requested bytes are `fraction` of a device
size_t capacity_for_fraction(const trace & t, double fraction);

} // namespace replay
