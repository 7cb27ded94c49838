#pragma once
// The pins of captured CUDA graphs: a buffer handed out from pin_begin(graph) to pin_begin(0) is the
// graph's until pin_release, and never goes back to the driver before (a replay still uses it).

#include "../support/common.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace gcp {

class pins {
  public:
    // the graph whose buffers are pinned from now on (0: none)
    void begin(uint64_t graph) { open_ = graph; }
    bool holds(const void * ptr) const { return by_buffer_.count(ptr) != 0; }
    bool empty() const { return by_buffer_.empty(); }

    // pins a buffer just handed out to the open graph; may throw, changing nothing
    void add(void * ptr, size_t size) {
        // everything that allocates first: the graph's list then never holds a buffer that was not pinned
        std::vector<void *> & list = by_graph_[open_];
        ensure_capacity(list, list.size() + 1);
        pin & p = by_buffer_[ptr];
        list.push_back(ptr);
        p.graphs++;
        p.size = std::max(p.size, size);
    }

    // unpins what `graph` pinned; false where it pinned nothing here
    bool unpin(uint64_t graph) {
        auto it = by_graph_.find(graph);
        if (it == by_graph_.end()) {
            return false;
        }
        for (void * p : it->second) {
            auto pinned = by_buffer_.find(p);
            if (--pinned->second.graphs == 0) {
                by_buffer_.erase(pinned);
            }
        }
        by_graph_.erase(it);
        return true;
    }

    // the end of the highest pinned buffer, as an address (0 when none is pinned)
    uintptr_t top() const {
        uintptr_t t = 0;
        for (auto & p : by_buffer_) {
            t = std::max(t, reinterpret_cast<uintptr_t>(p.first) + p.second.size);
        }
        return t;
    }

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
