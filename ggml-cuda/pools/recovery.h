#pragma once
// The out-of-memory ladder. Once the driver refuses an allocation, each kind climbs its own chain
// of rungs, written in order in its own file; a rung is true once the climb ends (the request is
// served, or failed otherwise than for want of memory), so each chain reads as one expression:
//
//   legacy and plain  ask || rescue || reclaim (LRU, then flush) || fall_back || retry_transient || wait
//   vmm               ask (grow) || alone || reclaim (synchronize) || retry_transient || wait
//   async             ask || reclaim (trim) || fall_back || retry_transient || wait
//   in a capture      ask || fall_back || wait: no synchronize and no free is legal there
//
// The rungs every kind shares are the ladder's: fall_back (the request without its doubling or
// look-ahead), retry_transient (TRANSIENT_RETRIES more attempts, each after a pause and a
// synchronize) and wait (up to the pool's wait budget, ggml_cpool_ctx_params.wait_ms: poll the
// device's free memory, retry whenever the request may fit, a line when it starts and one when it
// ends). The wait asks the other processes on the device first (neighbours.h), where wait_ms is 0 too.

#include "pool.h"

namespace gcp {

// A refusal may pass by itself (frees landing on other streams, another process giving memory
// back): this many more attempts, each after a pause that doubles from the driver's (1 ms on a
// real device: 7 ms in all) and a synchronize of the stream
constexpr int TRANSIENT_RETRIES = 3;

// the wait's first pause, doubled after each poll up to the longest: a spike that ends soon is
// seen soon, a long one costs few polls
constexpr uint32_t WAIT_FIRST_PAUSE_MS   = 1;
constexpr uint32_t WAIT_LONGEST_PAUSE_MS = 64;

// one refused request, and the rungs every kind shares, over a pool and the kind's driver call (`ask`)
class ladder {
  public:
    using ask_fn = status (*)(pool & p, ladder & l);

    size_t  bytes;              // what is asked for last
    void ** ptr;                // where the driver's call puts what it allocates
    status  st = OUT_OF_MEMORY; // the last rung's

    ladder(pool & p, size_t bytes, void ** ptr, ask_fn ask) : bytes(bytes), ptr(ptr), p_(p), ask_(ask) {}
    // the ask of legacy and of async in a capture: the driver's malloc on the pool's device
    static status driver_malloc(pool & p, ladder & l) { return p.drv_.malloc(p.device_, l.bytes, l.ptr); }

    // a rung's result: true once the climb ends
    bool ends(status s) {
        st = s;
        return s != OUT_OF_MEMORY;
    }
    // the driver's call at `bytes`
    bool ask() { return ends(ask_(p_, *this)); }
    // each smaller size the request may take: with its `ahead` bytes, then alone
    bool fall_back(const request & r, size_t ahead, size_t rounding);
    bool retry_transient();
    bool wait();
    // a capture's last rung: the line of a climb that ended there for want of memory; false
    bool refused_in_capture() const;

  private:
    pool & p_;
    ask_fn ask_;
};

} // namespace gcp
