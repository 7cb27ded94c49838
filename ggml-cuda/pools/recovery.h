#pragma once
// The out-of-memory ladder every pool climbs once the driver refused one of its allocations
// (pool::climb, recovery.cpp); the rungs are each pool's own, behind recovery_steps:
//
//   during a capture  no synchronize and no free is legal: the smaller sizes at once (fall_back),
//                     else one line and OUT_OF_MEMORY
//   1. reclaim        what the pool can free, a retry after each step (legacy: LRU reclaim of 3x
//                     the request, then a flush; vmm: a synchronize; async: its reuse cache and
//                     the device pool's unused memory)
//   2. fall_back      the request without its doubling or look-ahead
//   3. retries        TRANSIENT_RETRIES more attempts at the last size asked for, each after a
//                     pause and a synchronize
//   4. wait           up to the pool's wait budget (ggml_cpool_ctx_params.wait_ms; in a capture
//                     too, after fall_back): poll the device's free memory, retry whenever the
//                     request may fit, with a line when the wait starts and one when it ends
//   5. report         the pool's one line for the status the caller gets
//
// A rung refused for want of memory leads to the next; OK or any other status ends the climb.

#include "../support/common.h"

namespace gcp {

// A refusal may pass by itself (frees landing on other streams, another process giving memory
// back): this many more attempts, each after a pause that doubles from the driver's (1 ms on a
// real device: 7 ms in all) and a synchronize of the stream
constexpr int TRANSIENT_RETRIES = 3;

// the wait's first pause, doubled after each poll up to the longest: a spike that ends soon is
// seen soon, a long one costs few polls
constexpr uint32_t WAIT_FIRST_PAUSE_MS   = 1;
constexpr uint32_t WAIT_LONGEST_PAUSE_MS = 64;

// one pool's rungs, for one refused request
class recovery_steps {
  public:
    virtual ~recovery_steps() = default;

    // the request again, at the size asked for last
    virtual status retry() = 0;
    // the bytes retry asks the device for
    virtual size_t asking() const = 0;
    // (optional) frees what the pool can, outside a capture, and retries: OK once it is served
    virtual status reclaim() { return OUT_OF_MEMORY; }
    // (optional) the request at the smaller sizes it may take instead
    virtual status fall_back() { return OUT_OF_MEMORY; }
    // (optional) the climb, outside a capture, ends in st (not OK): the line that says why, unless a
    // rung's own line has
    virtual void   report(status /*st*/) {}
};

} // namespace gcp
