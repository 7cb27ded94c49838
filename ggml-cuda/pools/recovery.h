#pragma once
// The out-of-memory ladder every pool climbs once the driver refused one of its allocations.
// The sequence is shared (pool::climb, recovery.cpp); the rungs are each pool's own, behind
// recovery_steps, as RMM's failure_callback_resource_adaptor retries around what it wraps:
//
//   during a capture  no synchronize and no free is legal: the smaller sizes at once (fall_back),
//                     else the pool's line (refuse_in_capture) and OUT_OF_MEMORY
//   1. give_back      what the pool may give back, a retry after each rung (legacy: LRU reclaim
//                     of 3x the request, then every cached buffer; vmm: nothing, one retry after
//                     a synchronize; async: its reuse cache and the device pool's unused memory)
//   2. fall_back      the request without its doubling or look-ahead: they only spare later
//                     misses, worth a reclaim but not a failed request
//   3. retries        TRANSIENT_RETRIES more attempts at the last size asked for (retry), each
//                     after a pause and a synchronize
//   4. report         the pool's one line for the status the caller gets
//
// A rung refused for want of memory (OUT_OF_MEMORY) leads to the next, its latched error cleared
// first; OK or any other status ends the climb.

#include "../support/common.h"

namespace gcp {

// A refusal may pass by itself (frees landing on other streams, another process giving memory
// back): up to this many more attempts, each after a pause that doubles from the driver's (1 ms
// on a real device: 1 + 2 + 4 = 7 ms in all, so a refusal that persists still reaches the caller
// promptly) and a synchronize of the stream. None during a capture, where no synchronize is legal.
constexpr int TRANSIENT_RETRIES = 3;

// one pool's rungs, for one refused request
class recovery_steps {
  public:
    virtual ~recovery_steps() = default;

    // the request again, at the size asked for last
    virtual status retry() = 0;
    // the pool's own rungs, outside a capture: OK once one is served
    virtual status give_back() = 0;
    // (optional) the request at the smaller sizes it may take instead
    virtual status fall_back() { return OUT_OF_MEMORY; }
    // the line for a refusal that a capture leaves no rung for
    virtual void   refuse_in_capture() = 0;
    // the climb, outside a capture, ends in st (not OK): the line that says why, unless a rung's
    // own line has
    virtual void   report(status st) = 0;
};

} // namespace gcp
