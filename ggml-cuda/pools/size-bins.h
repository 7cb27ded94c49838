#pragma once
// The legacy pool's buffers by size, cached and handed out: one bin per distinct buffer size, kept
// sorted. A bin's entries are its cached buffers, then the ones that are out (handed to the
// consumer), so the bins are the pool's record of live buffers too: a free finds its buffer among
// the out entries of its size's bin, or is refused. Taking a cached buffer out or putting it back
// moves the boundary between the two, never an entry's bin.
//
// Best fit is the first bin at or above the request that holds a cached buffer: a binary search
// over the bins' sizes, or a count of the sizes below the request when there are few (a dense
// array of their own, so either touches a few cache lines), then a bitmap of the bins that hold
// one. A buffer usually comes back to the bin it was last taken from (ggml frees in the reverse
// order it allocates), which a free checks before it searches. A bin keeps room for every buffer
// of its size, so a buffer comes back without an allocation: only reserve() on the allocating path
// grows anything. A bin goes when its last buffer, cached or out, goes back to the driver. An out
// entry says whether a growing request holds it (its free goes to the growth reserve first), so a
// free reads no line beyond its entry's to know. A bin's first buffers are on its own line, beside
// its counts (small-list.h), so a hit reads one line for the bin and its buffer.

#include "../support/common.h"
#include "small-list.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace gcp {

class size_bins {
  public:
    struct buffer {
        void *   ptr;
        size_t   size;
        uint64_t last_use; // pool clock when it was cached
    };

    // where an out buffer is recorded (found()), for put() and forget(); valid until the bins change
    struct out_ref {
        size_t bin     = NONE;
        size_t entry   = 0;
        size_t size    = 0;
        bool   growing = false; // a growing request holds it (lend(..., true), hold_for_growth)

        bool found() const { return bin != NONE; }
    };

    static constexpr size_t NONE = SIZE_MAX;

    // room for one more buffer of `size` that is about to be allocated (lend() records it); may
    // throw std::bad_alloc, and then nothing changed
    void reserve(size_t size) {
        auto it = lower(size);
        if (holds_size(it, size)) {
            it->entries.reserve(it->entries.size() + it->pending + 1);
            it->pending++;
            return;
        }
        const size_t at = size_t(it - bins_.begin());
        bin          fresh;
        fresh.pending = 1;
        fresh.entries.reserve(1);
        reserve_at_least(bins_, bins_.size() + 1);
        reserve_at_least(sizes_, bins_.size() + 1);
        reserve_at_least(more_marks_, words(bins_.size() + 1) - 1);
        // within capacity: cannot throw
        bins_.insert(bins_.begin() + std::ptrdiff_t(at), std::move(fresh));
        sizes_.insert(sizes_.begin() + std::ptrdiff_t(at), size);
        remark();
    }

    // the allocation reserve() made room for: ptr, of `size`, is out from now on, held by a growing
    // request or not (never allocates)
    void lend(void * ptr, size_t size, bool growing = false) {
        auto it = lower(size);
        it->pending--;
        it->entries.push_back({ ptr, growing ? GROWING : NOT_GROWING }); // within the room reserve() kept
    }

    // the allocation reserve() made room for failed: forget it
    void unreserve(size_t size) {
        auto it = lower(size);
        it->pending--;
        erase_if_empty(it);
    }

    // the best fit (the smallest cached buffer >= want), counted out; false when none
    bool take(size_t want, buffer * out) {
        const size_t i = next_marked(size_t(lower(want) - bins_.begin()));
        if (i >= bins_.size()) {
            return false;
        }
        bin &         b = bins_[i];
        const entry & e = b.entries[--b.cached]; // the newest cached becomes the first out
        *out            = { e.ptr, sizes_[i], e.last_use };
        hint_           = uint32_t(i);
        hint_size_      = sizes_[i];
        count_--;
        if (b.cached == 0) {
            unmark(i);
        }
        return true; // its stamp, never GROWING, says a growing request does not hold it
    }

    // the buffer take() handed out last is held by a growing request
    void hold_for_growth() { bins_[hint_].entries[bins_[hint_].cached].last_use = GROWING; }

    // where ptr is recorded out at `size` (not found(): it is not out at that size)
    out_ref find_out(const void * ptr, size_t size) {
        // sizes are unique across bins, so a hint that names a bin of this size names the right one
        size_t i = hint_;
        if (GCP_UNLIKELY(hint_size_ != size)) {
            auto it = lower(size);
            if (!holds_size(it, size)) {
                return {};
            }
            i = size_t(it - bins_.begin());
        }
        // the buffer taken last is the first out: a free in reverse order finds it at once
        const auto & es = bins_[i].entries;
        for (size_t j = bins_[i].cached; j < es.size(); j++) {
            if (es[j].ptr == ptr) {
                return { i, j, size, es[j].last_use == GROWING };
            }
        }
        return {};
    }

    // one out buffer (false: none is out)
    bool first_out(void ** ptr, size_t * size) const {
        for (size_t i = 0; i < bins_.size(); i++) {
            if (bins_[i].cached < bins_[i].entries.size()) {
                *ptr  = bins_[i].entries[bins_[i].cached].ptr;
                *size = sizes_[i];
                return true;
            }
        }
        return false;
    }

    // the size ptr is out at, or NONE (a refused free's line says it)
    size_t size_out(const void * ptr) const {
        size_t size = NONE;
        for_each_out([&](void * p, size_t s) { size = p == ptr ? s : size; });
        return size;
    }

    // an out buffer comes back to the cache, stamped last_use (> 0; never allocates)
    void put(out_ref at, uint64_t last_use) {
        bin & b = bins_[at.bin];
        std::swap(b.entries[at.entry], b.entries[b.cached]); // to the newest cached place
        b.entries[b.cached++].last_use = last_use;
        count_++;
        if (b.cached == 1) {
            mark(at.bin);
        }
    }

    // an out buffer goes to the driver instead of the cache
    void forget(out_ref at) {
        auto it = bins_.begin() + std::ptrdiff_t(at.bin);
        std::swap(it->entries[at.entry], it->entries.back());
        it->entries.pop_back();
        erase_if_empty(it);
    }

    // removes a cached buffer (it goes back to the driver); false when it is not cached
    bool remove(const void * ptr, size_t size) {
        auto it = lower(size);
        if (!holds_size(it, size)) {
            return false;
        }
        auto end = it->entries.begin() + std::ptrdiff_t(it->cached);
        auto e   = std::find_if(it->entries.begin(), end, [&](const entry & x) { return x.ptr == ptr; });
        if (e == end) {
            return false;
        }
        it->entries.erase(size_t(e - it->entries.begin())); // keeps the order of the rest: the newest cached stays last
        it->cached--;
        count_--;
        if (!erase_if_empty(it) && it->cached == 0) {
            unmark(size_t(it - bins_.begin()));
        }
        return true;
    }

    size_t count() const { return count_; }
    // the bytes cached, counted when asked (statistics, a miss) rather than kept on every hit
    size_t bytes() const {
        size_t n = 0;
        for (size_t i = 0; i < bins_.size(); i++) {
            n += sizes_[i] * bins_[i].cached;
        }
        return n;
    }

    // every cached buffer; f must not change the bins
    template <typename F> void for_each(F && f) const {
        for (size_t i = 0; i < bins_.size(); i++) {
            for (size_t j = 0; j < bins_[i].cached; j++) {
                f(buffer{ bins_[i].entries[j].ptr, sizes_[i], bins_[i].entries[j].last_use });
            }
        }
    }
    // every out buffer, f(ptr, size); f must not change the bins
    template <typename F> void for_each_out(F && f) const {
        for (size_t i = 0; i < bins_.size(); i++) {
            for (size_t j = bins_[i].cached; j < bins_[i].entries.size(); j++) {
                f(bins_[i].entries[j].ptr, sizes_[i]);
            }
        }
    }

  private:
    struct entry {
        void *   ptr;
        uint64_t last_use; // while cached (a stamp is never 0); while out, GROWING or NOT_GROWING
    };
    static constexpr uint64_t GROWING     = 0;
    static constexpr uint64_t NOT_GROWING = 1;

    // sizes_'s storage starts a cache line, so the search over up to 8 sizes reads one line
    template <typename T> struct line_aligned {
        using value_type              = T;
        static constexpr size_t ALIGN = CACHE_LINE;
        line_aligned()                = default;
        template <typename U> line_aligned(const line_aligned<U> &) {}
        T *  allocate(size_t n) { return static_cast<T *>(::operator new (n * sizeof(T), std::align_val_t{ ALIGN })); }
        void deallocate(T * p, size_t) { ::operator delete (p, std::align_val_t{ ALIGN }); }
        bool operator==(const line_aligned &) const { return true; }
        bool operator!=(const line_aligned &) const { return false; }
    };
    // the buffers a bin keeps on its own line: ggml asks for one or two of a size
    static constexpr uint32_t INLINE_ENTRIES = 2;
    struct alignas(CACHE_LINE) bin {                   // one cache line; its size is sizes_ at the same index
        uint32_t                          cached  = 0; // entries[0, cached) are cached, newest last; the rest are out
        uint32_t                          pending = 0; // allocations reserve() kept room for, not lent yet
        small_list<entry, INLINE_ENTRIES> entries;     // room for `pending` more
    };
    static_assert(sizeof(bin) == CACHE_LINE, "a bin's counts and its first entries share a line");

    static constexpr size_t WORD         = 64;
    static constexpr size_t COUNTED_BINS = 16; // up to this many bins, lower() counts instead of searching

    static size_t words(size_t bins) { return (bins + WORD - 1) / WORD; }

    // the first bin of at least `size` (bins_.end() when none), without a branch per step
    std::vector<bin>::iterator lower(size_t size) {
        size_t n = bins_.size(); // sizes_'s, from the line the hit path reads anyway
        if (n == 0) {
            return bins_.end();
        }
        const size_t * base = sizes_.data();
        if (GCP_LIKELY(n <= COUNTED_BINS)) {
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

    // a bin with no buffer, cached, out or about to be, goes; true when it went
    bool erase_if_empty(std::vector<bin>::iterator it) {
        if (!it->entries.empty() || it->pending != 0) {
            return false;
        }
        sizes_.erase(sizes_.begin() + (it - bins_.begin()));
        bins_.erase(it);
        remark();
        return true;
    }

    // the marks' word w: the first in the hit path's line, the rest in more_marks_
    uint64_t & word(size_t w) { return w == 0 ? mark0_ : more_marks_[w - 1]; }
    uint64_t   word(size_t w) const { return w == 0 ? mark0_ : more_marks_[w - 1]; }
    void       mark(size_t i) { word(i / WORD) |= uint64_t(1) << (i % WORD); }
    void       unmark(size_t i) { word(i / WORD) &= ~(uint64_t(1) << (i % WORD)); }
    // rebuilt when bins come or go (a miss or a release, never a hit); never grows past the
    // capacity reserve() made. The hint's index may name another bin now: forgotten
    void       remark() {
              mark0_ = 0;
              more_marks_.assign(std::max<size_t>(words(bins_.size()), 1) - 1, 0);
              for (size_t i = 0; i < bins_.size(); i++) {
                  if (bins_[i].cached != 0) {
                      mark(i);
            }
        }
              hint_size_ = 0;
    }
    // the first bin at or after i that holds a buffer (bins_.size() when none); up to 64 bins it
    // reads the first word alone, on the hit path's line
    size_t next_marked(size_t i) const {
        if (GCP_LIKELY(bins_.size() <= WORD)) {
            const uint64_t bits = i < WORD ? mark0_ & (~uint64_t(0) << i) : 0;
            return bits != 0 ? size_t(__builtin_ctzll(bits)) : bins_.size();
        }
        for (size_t w = i / WORD; w <= more_marks_.size(); w++) {
            uint64_t bits = word(w);
            if (w == i / WORD) {
                bits &= ~uint64_t(0) << (i % WORD);
            }
            if (bits != 0) {
                return w * WORD + size_t(__builtin_ctzll(bits));
            }
        }
        return bins_.size();
    }

    // The hit path's fields, to the start of sizes_, on one line with the legacy pool's clock: a
    // take reads the first word of the marks and the sizes' data through it, a free its first
    // guess, the bin take() took from last and its size (0: none), which saves it the search.
    // Nothing after sizes_'s start is read on a hit
    size_t                                    hint_size_ = 0;
    uint32_t                                  hint_      = 0;
    uint32_t                                  count_ = 0; // at most the pool's bound on cached buffers, and a few more
    uint64_t                                  mark0_ = 0; // bins 0-63 of the marks
    std::vector<bin>                          bins_;      // ascending sizes
    std::vector<size_t, line_aligned<size_t>> sizes_;     // bins_[i]'s buffer size, dense for the search
    std::vector<uint64_t> more_marks_; // the marks past bin 63 (bit i: bins_[i] holds a cached buffer)
};

} // namespace gcp
