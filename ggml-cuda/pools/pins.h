#pragma once
// The pins of captured CUDA graphs: a buffer handed out from pin_begin(graph) to pin_begin(0) is the
// graph's until pin_release, and never goes back to the driver before (a replay still uses it).

#include "../support/common.h"

#include <unordered_map>
#include <vector>

namespace gcp {

class pins {
  public:
    // the graph whose buffers are pinned from now on (0: none)
    void      begin(uint64_t graph) { open_ = graph; }
    // pins a buffer just handed out to the open graph; may throw, changing nothing
    void      add(void * ptr, size_t size);
    // unpins what `graph` pinned; false where it pinned nothing here
    bool      unpin(uint64_t graph);
    bool      holds(const void * ptr) const { return by_buffer_.count(ptr) != 0; }
    bool      empty() const { return by_buffer_.empty(); }
    // the end of the highest pinned buffer, as an address (0 when none is pinned)
    uintptr_t top() const;

  private:
    struct pin {
        uint32_t graphs; // graphs pinning the buffer
        size_t   size;   // an address can come back with another size: the largest
    };
    uint64_t                                          open_ = 0;
    std::unordered_map<const void *, pin>             by_buffer_;
    std::unordered_map<uint64_t, std::vector<void *>> by_graph_;
};

} // namespace gcp
