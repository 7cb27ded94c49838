#pragma once
// The sim driver's device memory: offsets in [0, capacity) handed out first fit, with free
// ranges coalesced. Contiguity is what makes an out-of-memory depend on fragmentation, as on a
// device, so freeing "enough" bytes that are scattered does not always make a request fit.

#include <cstddef>
#include <iterator>
#include <map>

namespace gcp {

class sim_arena {
  public:
    explicit sim_arena(size_t capacity) { free_[0] = capacity; }

    // first fit; false when no free range holds size
    bool take(size_t size, size_t * offset) {
        for (auto it = free_.begin(); it != free_.end(); ++it) {
            if (it->second >= size) {
                *offset          = it->first;
                size_t rest      = it->second - size;
                size_t rest_base = it->first + size;
                free_.erase(it);
                if (rest > 0) {
                    free_[rest_base] = rest;
                }
                used_ += size;
                return true;
            }
        }
        return false;
    }

    void give(size_t offset, size_t size) {
        used_ -= size;
        auto next = free_.lower_bound(offset);
        if (next != free_.end() && offset + size == next->first) { // merge with the range after
            size += next->second;
            next = free_.erase(next);
        }
        if (next != free_.begin()) { // merge with the range before
            auto prev = std::prev(next);
            if (prev->first + prev->second == offset) {
                prev->second += size;
                return;
            }
        }
        free_[offset] = size;
    }

    size_t used() const { return used_; }

  private:
    size_t                   used_ = 0;
    std::map<size_t, size_t> free_; // offset -> length
};

} // namespace gcp
