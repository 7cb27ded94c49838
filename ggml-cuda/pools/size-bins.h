#pragma once
// The legacy pool's buffers by size: one bin per distinct buffer size, kept sorted, each holding a
// stack of the cached buffers of that size. Best fit is the first bin at or above the request that
// holds one: a binary search over the bins' sizes, or a count of the sizes below the request when
// there are few (a dense array of their own, so either touches a few cache lines), then a bitmap of
// the bins that hold any. A buffer usually comes back to the bin it was last taken from (ggml
// frees in the reverse order it allocates), which put() checks before it searches. A bin counts
// the buffers of its size that are out (handed to the consumer) and keeps room for every one of
// them, so a buffer comes back without an allocation: only reserve() and take() on the allocating
// path grow anything. A bin goes when its last buffer, cached or out, goes back to the driver.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gcp {

class size_bins {
  public:
    struct buffer {
        void *   ptr;
        size_t   size;
        uint64_t last_use; // pool clock when it was cached
    };

    // room for one more buffer of `size` that is about to be allocated (counted out from now on);
    // may throw std::bad_alloc, and then nothing changed
    void reserve(size_t size) {
        auto it = lower(size);
        if (holds_size(it, size)) {
            it->stack.reserve(it->stack.size() + it->out + 1);
            it->out++;
            return;
        }
        const size_t at = size_t(it - bins_.begin());
        bin          fresh{ 1, {} };
        fresh.stack.reserve(1);
        grow(bins_, bins_.size() + 1);
        grow(sizes_, bins_.size() + 1);
        grow(marks_, words(bins_.size() + 1));
        // within capacity: cannot throw
        bins_.insert(bins_.begin() + std::ptrdiff_t(at), std::move(fresh));
        sizes_.insert(sizes_.begin() + std::ptrdiff_t(at), size);
        remark();
    }

    // the allocation reserve() made room for failed: forget it
    void unreserve(size_t size) { drop_out(lower(size)); }

    // the best fit (the smallest cached buffer >= want), counted out; false when none
    bool take(size_t want, buffer * out) {
        size_t i = next_marked(size_t(lower(want) - bins_.begin()));
        if (i >= bins_.size()) {
            return false;
        }
        bin & b     = bins_[i];
        last_taken_ = i;
        *out        = b.stack.back();
        b.stack.pop_back();
        b.out++;
        count_--;
        bytes_ -= sizes_[i];
        if (b.stack.empty()) {
            unmark(i);
        }
        return true;
    }

    // a buffer that was out comes back (never allocates)
    void put(void * ptr, size_t size, uint64_t last_use) {
        // sizes are unique across bins, so a hint that names a bin of this size names the right one
        auto it = last_taken_ < bins_.size() && sizes_[last_taken_] == size ?
                      bins_.begin() + std::ptrdiff_t(last_taken_) :
                      lower(size);
        it->stack.push_back({ ptr, size, last_use }); // room kept since it went out
        it->out--;
        count_++;
        bytes_ += size;
        mark(size_t(it - bins_.begin()));
    }

    // a buffer that was out goes to the driver instead of the cache
    void forget_out(size_t size) { drop_out(lower(size)); }

    // removes a cached buffer (it goes back to the driver); false when it is not cached
    bool remove(const void * ptr, size_t size) {
        auto it = lower(size);
        if (!holds_size(it, size)) {
            return false;
        }
        auto e = std::find_if(it->stack.begin(), it->stack.end(), [&](const buffer & b) { return b.ptr == ptr; });
        if (e == it->stack.end()) {
            return false;
        }
        it->stack.erase(e);
        count_--;
        bytes_ -= size;
        if (it->stack.empty() && it->out == 0) {
            erase(it);
        } else if (it->stack.empty()) {
            unmark(size_t(it - bins_.begin()));
        }
        return true;
    }

    size_t count() const { return count_; }
    size_t bytes() const { return bytes_; }

    // every cached buffer; f must not change the bins
    template <typename F> void for_each(F && f) const {
        for (const bin & b : bins_) {
            for (const buffer & e : b.stack) {
                f(e);
            }
        }
    }

  private:
    struct bin {                 // its size is sizes_ at the same index
        size_t              out; // buffers of this size handed out: the stack keeps room for them
        std::vector<buffer> stack;
    };
    static constexpr size_t WORD         = 64;
    static constexpr size_t COUNTED_BINS = 16; // up to this many bins, lower() counts instead of searching

    static size_t words(size_t bins) { return (bins + WORD - 1) / WORD; }

    // capacity for n, doubling, so that a later insert or assign within n cannot throw
    template <typename V> static void grow(V & v, size_t n) {
        if (n > v.capacity()) {
            v.reserve(std::max(n, 2 * v.capacity()));
        }
    }

    // the first bin of at least `size` (bins_.end() when none), without a branch per step
    std::vector<bin>::iterator lower(size_t size) {
        size_t n = sizes_.size();
        if (n == 0) {
            return bins_.end();
        }
        const size_t * base = sizes_.data();
        if (n <= COUNTED_BINS) {
            // a few bins: count the sizes below the request, compares that do not depend on each
            // other and no branch to mispredict (a random request mix mispredicts a short search's
            // steps about every other time); larger pools keep the search, which is faster there
            size_t below = 0;
            for (size_t i = 0; i < n; i++) {
                below += size_t(base[i] < size);
            }
            return bins_.begin() + std::ptrdiff_t(below);
        }
        while (n > 1) {
            const size_t half = n / 2;
            base              = base[half - 1] < size ? base + half : base;
            n -= half;
        }
        const size_t at = size_t(base - sizes_.data()) + (*base < size ? 1 : 0);
        return bins_.begin() + std::ptrdiff_t(at);
    }

    // whether `it` (from lower(size)) is the bin of exactly `size`
    bool holds_size(std::vector<bin>::iterator it, size_t size) const {
        return it != bins_.end() && sizes_[size_t(it - bins_.begin())] == size;
    }

    void erase(std::vector<bin>::iterator it) {
        sizes_.erase(sizes_.begin() + (it - bins_.begin()));
        bins_.erase(it);
        remark();
    }

    void drop_out(std::vector<bin>::iterator it) {
        it->out--;
        if (it->out == 0 && it->stack.empty()) {
            erase(it);
        }
    }

    void mark(size_t i) { marks_[i / WORD] |= uint64_t(1) << (i % WORD); }
    void unmark(size_t i) { marks_[i / WORD] &= ~(uint64_t(1) << (i % WORD)); }
    // rebuilt when bins come or go (a miss or a release, never a hit); never grows past the
    // capacity reserve() made
    void remark() {
        marks_.assign(words(bins_.size()), 0);
        for (size_t i = 0; i < bins_.size(); i++) {
            if (!bins_[i].stack.empty()) {
                mark(i);
            }
        }
    }
    // the first bin at or after i that holds a buffer (bins_.size() when none)
    size_t next_marked(size_t i) const {
        for (size_t w = i / WORD; w < marks_.size(); w++) {
            uint64_t bits = marks_[w];
            if (w == i / WORD) {
                bits &= ~uint64_t(0) << (i % WORD);
            }
            if (bits != 0) {
                return w * WORD + size_t(__builtin_ctzll(bits));
            }
        }
        return bins_.size();
    }

    std::vector<bin>      bins_;  // ascending sizes
    std::vector<size_t>   sizes_; // bins_[i]'s buffer size, dense for the search
    std::vector<uint64_t> marks_; // bit i: bins_[i] holds a cached buffer
    size_t                count_      = 0;
    size_t                bytes_      = 0;
    size_t                last_taken_ = SIZE_MAX; // the bin take() took from last: a hint only
};

} // namespace gcp
