#pragma once
// The rules a legacy pool keeps around best fit as it grows. The headroom: before a miss takes
// more from the driver, what the pool would hold beyond `headroom_pct` percent above its peak live
// bytes goes back first, so buffers a growing request has outgrown are not stranded. The growth
// reserve: a buffer that served a growing request (OVERALLOCATE) and is still large enough for the
// latest one is kept apart once freed, where only growing requests take it and the headroom rule
// leaves it, so the 2x it was allocated with serves the steps that follow (out-of-memory recovery
// and trim still give it back). Not an ordinary cached buffer larger than the growing request's
// miss would take, which best fit lent it: that one goes back to the ordinary cache, for the
// request it was made for.

#include "pool.h"
#include "size-bins.h"

#include <algorithm>
#include <vector>

namespace gcp {

// the bytes that must go back before a miss takes `bytes` more, so that the pool holds at most
// `headroom_pct` percent above its peak live bytes, this request counted (0: none)
inline size_t headroom_excess(const ggml_cpool_stats & s, size_t bytes, uint32_t headroom_pct) {
    const size_t budget = headroom_budget(std::max(s.peak_live_bytes, s.live_bytes + bytes), headroom_pct);
    return s.reserved_bytes + bytes > budget ? s.reserved_bytes + bytes - budget : 0;
}

class growth_reserve {
  public:
    // growing buffers in the reserve at once: the K and V conversions of a context, with room
    // for a few more sequences of growth; beyond it they are cached as any other buffer
    static constexpr size_t MAX_GROWING = 8;

    using buffer = size_bins::buffer;

    size_t count() const { return cached_.size(); }
    size_t bytes() const {
        size_t n = 0;
        for (const buffer & b : cached_) {
            n += b.size;
        }
        return n;
    }
    bool holds(size_t size) const { return find(size) != cached_.end(); }

    // a growing request of `size`: room for its buffer to come back (may throw: nothing changed),
    // then every reserve buffer it has outgrown leaves to outgrown(buffer): any request may use
    // it now, and it goes back first
    template <typename F> void grow_to(size_t size, F && outgrown) {
        reserve_at_least(cached_, MAX_GROWING);
        need_ = size;
        for (size_t i = cached_.size(); i-- > 0;) {
            if (cached_[i].size < size) {
                outgrown(cached_[i]);
                cached_.erase(cached_.begin() + std::ptrdiff_t(i));
            }
        }
    }
    // the best fit for `size` (false when none holds it); take() then counts it out
    bool best_fit(size_t size, buffer * hit) const {
        auto best = find(size);
        if (best == cached_.end()) {
            return false;
        }
        *hit = *best;
        return true;
    }
    void take(void * ptr) { remove(ptr); }
    // a freed buffer that a growing request held (the bins know which: size-bins.h): true when the
    // reserve keeps it (it is still as large as the latest growing request and there is room)
    bool keep(void * ptr, size_t actual, uint64_t stamp) {
        if (actual < need_ || cached_.size() >= MAX_GROWING) {
            return false;
        }
        cached_.push_back({ ptr, actual, stamp }); // within the room grow_to made
        return true;
    }
    // a cached reserve buffer that went back to the driver (false: not one of the reserve's)
    bool remove(void * ptr) {
        auto it = std::find_if(cached_.begin(), cached_.end(), [&](const buffer & b) { return b.ptr == ptr; });
        if (it == cached_.end()) {
            return false;
        }
        cached_.erase(it);
        return true;
    }
    template <typename F> void for_each(F && f) const { std::for_each(cached_.begin(), cached_.end(), f); }

  private:
    std::vector<buffer>::const_iterator find(size_t size) const {
        auto best = cached_.end();
        for (auto it = cached_.begin(); it != cached_.end(); ++it) {
            if (it->size >= size && (best == cached_.end() || it->size < best->size)) {
                best = it;
            }
        }
        return best;
    }

    std::vector<buffer> cached_;   // the reserve
    size_t              need_ = 0; // the latest growing request
};

} // namespace gcp
