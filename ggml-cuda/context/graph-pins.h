#pragma once
// A context's pin mode (CUDA graphs): the graph open between pin_begin and pin_end, and the
// graphs pinned and not yet released. It checks and numbers the calls; the context applies
// each to its pools.

#include "../support/common.h"

#include <vector>

namespace gcp {

class graph_pins {
  public:
    // the open graph, which a pool made now joins; 0 when none is open
    uint64_t open() const { return pinning_; }
    // opens a new graph; may throw std::bad_alloc, changing nothing
    status   begin(uint64_t * graph);
    status   end();
    status   release(uint64_t graph);

  private:
    uint64_t              pinning_    = 0;
    uint64_t              next_graph_ = 1;
    std::vector<uint64_t> graphs_; // pinned, not released
};

} // namespace gcp
