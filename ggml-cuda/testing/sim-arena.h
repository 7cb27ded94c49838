#pragma once
// The sim driver's device memory: offsets in [0, capacity) handed out first fit, with free
// ranges coalesced. Contiguity is what makes an out-of-memory depend on fragmentation, as on a
// device, so freeing "enough" bytes that are scattered does not always make a request fit.

#include "../support/common.h"

#include <iterator>
#include <vector>

namespace gcp {

class sim_arena {
  public:
    explicit sim_arena(size_t capacity) : free_{ { 0, capacity } } {}

    // first fit; false when no free range holds size. May throw std::bad_alloc, changing nothing
    bool take(size_t size, size_t * offset) {
        // give never allocates: the free ranges are the gaps between the pieces out, at most
        // one more than there are pieces
        reserve_at_least(free_, pieces_ + 2);
        for (auto it = free_.begin(); it != free_.end(); ++it) {
            if (it->size >= size) {
                *offset = it->offset;
                it->offset += size;
                it->size -= size;
                if (it->size == 0) {
                    free_.erase(it);
                }
                used_ += size;
                pieces_++;
                return true;
            }
        }
        return false;
    }

    void give(size_t offset, size_t size) noexcept {
        used_ -= size;
        pieces_--;
        auto next = free_.begin();
        while (next != free_.end() && next->offset < offset) {
            ++next;
        }
        const bool after  = next != free_.end() && offset + size == next->offset;
        const bool before = next != free_.begin() && std::prev(next)->offset + std::prev(next)->size == offset;
        if (before) {
            std::prev(next)->size += size + (after ? next->size : 0);
            if (after) {
                free_.erase(next);
            }
        } else if (after) {
            next->offset = offset;
            next->size += size;
        } else {
            free_.insert(next, { offset, size }); // within the room take made
        }
    }

    size_t used() const { return used_; }

  private:
    struct range {
        size_t offset;
        size_t size;
    };
    size_t             used_   = 0;
    size_t             pieces_ = 0;
    std::vector<range> free_; // ascending offsets
};

} // namespace gcp
