#include "graph-pins.h"

#include "../support/log.h"

#include <algorithm>

namespace gcp {

status graph_pins::begin(uint64_t * graph) {
    if (pinning_ != 0) {
        GCP_LOG_ERROR("context: pin_begin while graph %llu is still open (call pin_end first)",
                      (unsigned long long) pinning_);
        return INVALID_ARGUMENT;
    }
    graphs_.push_back(next_graph_); // may throw: nothing changed yet
    pinning_ = next_graph_++;
    *graph   = pinning_;
    return OK;
}

status graph_pins::end() {
    if (pinning_ == 0) {
        GCP_LOG_ERROR("context: pin_end without pin_begin");
        return INVALID_ARGUMENT;
    }
    pinning_ = 0;
    return OK;
}

status graph_pins::release(uint64_t graph) {
    auto it = std::find(graphs_.begin(), graphs_.end(), graph);
    if (it == graphs_.end() || graph == pinning_) {
        GCP_LOG_ERROR("context: pin_release of graph %llu, which is %s", (unsigned long long) graph,
                      graph == pinning_ && graph != 0 ? "still open" : "not pinned here");
        return INVALID_ARGUMENT;
    }
    graphs_.erase(it);
    return OK;
}

} // namespace gcp
