#pragma once
// What the memory did over a trace's time, pool by pool and in all: peak live and reserved
// bytes, stranded bytes (reserved - live, integrated over time), sampled counter tracks and
// events. A replay keeps one, and so does the recorded row, from the trace's own numbers.

#include "replay.h"

#include <map>
#include <string>
#include <vector>

namespace replay {

// one counter track, sampled: each interval's maximum at its start and its last value at its
// end, so no peak is lost and a quiet stretch holds the right value
class sampler {
  public:
    sampler(std::string name, uint64_t interval);
    void  add(uint64_t t, uint64_t live, uint64_t reserved);
    track finish();

  private:
    void close();

    uint64_t interval_;
    bool     open_   = false;
    uint64_t bucket_ = 0;
    point    max_{}, last_{};
    track    out_;
};

class ledger {
  public:
    ledger(const trace & t, const options & o);

    // a pool's live and reserved bytes after a call that ended at trace time t
    void set(const pool_key & k, uint64_t t, uint64_t live, uint64_t reserved);
    // an instant on the pool's track ("LRU reclaim", "flush", "OUT_OF_MEMORY", "fault")
    void mark(uint64_t t, const pool_key & k, const char * name, uint64_t bytes);
    // peaks, stranded bytes, tracks and events into r; end: when the trace ended
    void finish(uint64_t end, result * r);

  private:
    struct pool {
        uint64_t live      = 0;
        uint64_t reserved  = 0;
        uint64_t peak_live = 0, peak_reserved = 0;
        size_t   sampler = 0; // its index in samplers_ (0: none yet)
    };

    bool                     timeline_;
    bool                     per_pool_;
    uint64_t                 interval_;
    std::map<pool_key, pool> pools_;
    std::vector<sampler>     samplers_; // "all pools" first
    std::vector<event>       events_;
    uint64_t                 t_ = 0, live_ = 0, reserved_ = 0, peak_live_ = 0, peak_reserved_ = 0;
    double                   area_ = 0; // (reserved - live) x ns
};

} // namespace replay
