#pragma once
// The legacy pool's buffers by size: one bin per distinct buffer size, kept sorted, each holding
// a stack of the cached buffers of that size. Best fit is the first bin at or above the request
// that holds one: a binary search, then a bitmap of the bins that hold any. A bin counts the
// buffers of its size that are out (handed to the consumer) and keeps room for every one of them,
// so a buffer comes back without an allocation: only reserve() and take() on the allocating path
// grow anything. A bin goes when its last buffer, cached or out, goes back to the driver.

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
        if (it != bins_.end() && it->size == size) {
            it->stack.reserve(it->stack.size() + it->out + 1);
            it->out++;
            return;
        }
        const size_t at = size_t(it - bins_.begin());
        bin          fresh{ size, 1, {} };
        fresh.stack.reserve(1);
        grow(bins_, bins_.size() + 1);
        grow(marks_, words(bins_.size() + 1));
        bins_.insert(bins_.begin() + std::ptrdiff_t(at), std::move(fresh)); // within capacity: cannot throw
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
        bin & b = bins_[i];
        *out    = b.stack.back();
        b.stack.pop_back();
        b.out++;
        count_--;
        bytes_ -= b.size;
        if (b.stack.empty()) {
            unmark(i);
        }
        return true;
    }

    // a buffer that was out comes back (never allocates)
    void put(void * ptr, size_t size, uint64_t last_use) {
        auto it = lower(size);
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
        if (it == bins_.end() || it->size != size) {
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
            bins_.erase(it);
            remark();
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
    struct bin {
        size_t              size;
        size_t              out; // buffers of this size handed out: the stack keeps room for them
        std::vector<buffer> stack;
    };
    static constexpr size_t WORD = 64;

    static size_t words(size_t bins) { return (bins + WORD - 1) / WORD; }

    // capacity for n, doubling, so that a later insert or assign within n cannot throw
    template <typename V> static void grow(V & v, size_t n) {
        if (n > v.capacity()) {
            v.reserve(std::max(n, 2 * v.capacity()));
        }
    }

    std::vector<bin>::iterator lower(size_t size) {
        return std::lower_bound(bins_.begin(), bins_.end(), size, [](const bin & b, size_t s) { return b.size < s; });
    }

    void drop_out(std::vector<bin>::iterator it) {
        it->out--;
        if (it->out == 0 && it->stack.empty()) {
            bins_.erase(it);
            remark();
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
    std::vector<uint64_t> marks_; // bit i: bins_[i] holds a cached buffer
    size_t                count_ = 0;
    size_t                bytes_ = 0;
};

} // namespace gcp
