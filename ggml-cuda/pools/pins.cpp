#include "pins.h"

#include <algorithm>

namespace gcp {

void pins::add(void * ptr, size_t size) {
    // everything that allocates first: the graph's list then never holds a buffer that was not pinned
    std::vector<void *> & list = by_graph_[open_];
    ensure_capacity(list, list.size() + 1);
    pin & p = by_buffer_[ptr];
    list.push_back(ptr);
    p.graphs++;
    p.size = std::max(p.size, size);
}

bool pins::unpin(uint64_t graph) {
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

uintptr_t pins::top() const {
    uintptr_t t = 0;
    for (auto & p : by_buffer_) {
        t = std::max(t, reinterpret_cast<uintptr_t>(p.first) + p.second.size);
    }
    return t;
}

} // namespace gcp
