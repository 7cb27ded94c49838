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
//
// Slots: up to SLOTS buffers also live on the pool's hit line, each with its size and state, so
// that a pair served from one reads no line of the bins. ggml asks for a few sizes over and over,
// each buffer back before the next request (a step of a 1B model: five of every eight requests
// are one size, the rest two others, one nested), so two buffers serve nearly every pair. A
// slot's bin records it as out, whether it is out or cached: its state is the slot's. A free
// that comes back to an out slot marks it cached, on the hit line; a take serves the smallest
// cached slot that holds the request without a search where the request is above the slot's
// floor (no bin caches a buffer between the two), otherwise after the search, which weighs the
// bins' best fit against the slot's (a tie: the newest). A buffer freed to the bins takes an
// empty slot, or the oldest one where no request has used it for STALE_TICKS or, for a buffer
// newer than it, one bin has served the last BINS_RUN takes (the bins list the buffer it held, by
// its stamp), so that the slots follow the sizes in use without two hot buffers taking each
// other's place.

#include "../support/common.h"
#include "bin-marks.h"
#include "hit-slots.h"
#include "small-list.h"

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
    void reserve(size_t size);

    // the allocation reserve() made room for: ptr, of `size`, is out from now on, held by a growing
    // request or not (never allocates)
    void lend(void * ptr, size_t size, bool growing = false);

    // the allocation reserve() made room for failed: forget it
    void unreserve(size_t size);

    // the best fit (the smallest cached buffer >= want), counted out; false when none. Its stamp,
    // never GROWING, says a growing request does not hold it
    bool take(size_t want, buffer * out) {
        return take_slotted(want, out) || take_searched(want, slots_.best(want), out);
    }
    // the same where a slot serves it without a search; false, with nothing changed, where none does
    bool take_slotted(size_t want, buffer * out) {
        const size_t k = slots_.best(want);
        if (GCP_LIKELY(k != NONE) && want > slots_.floor(k)) { // no bin caches one that holds it as well
            take_slot(k, out);
            return true;
        }
        return false;
    }

    // a buffer take() handed out is held by a growing request: it leaves its slot, if it had one,
    // so that its free finds its entry and sees it
    void hold_for_growth(const buffer & b);

    // a free of ptr, of `size`, that an out slot holds: cached again there, stamped last_use (> 0),
    // on the hit line; false when no slot holds it out (find_out and put then)
    bool put_slotted(const void * ptr, size_t size, uint64_t last_use) {
        if (!slots_.put(ptr, size, last_use)) {
            return false;
        }
        count_++;
        return true;
    }

    // where ptr is recorded out at `size` (not found(): it is not out at that size)
    out_ref find_out(const void * ptr, size_t size) {
        if (slots_.held_of(ptr) != NONE) {
            return {}; // cached in its slot, though its bin records it out
        }
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
    bool first_out(void ** ptr, size_t * size) const;

    // the size ptr is out at, or NONE (a refused free's line says it)
    size_t size_out(const void * ptr) const;

    // an out buffer comes back to the cache, stamped last_use (> 0; never allocates): to its slot,
    // or to a slot it may take, else to its bin
    void put(out_ref at, uint64_t last_use) {
        void * const ptr = bins_[at.bin].entries[at.entry].ptr;
        size_t       k   = slots_.of(ptr);
        if (k == NONE && hit_slots::fits(at.size) && !at.growing) {
            k = free_slot(last_use);
        }
        count_++;
        if (k != NONE) {
            slots_.fill(k, ptr, at.size, last_use, floor_below(at.bin + 1));
            return;
        }
        file(at, last_use);
    }

    // an out buffer goes to the driver instead of the cache
    void forget(out_ref at) {
        slots_.drop(bins_[at.bin].entries[at.entry].ptr);
        auto it = bins_.begin() + std::ptrdiff_t(at.bin);
        std::swap(it->entries[at.entry], it->entries.back());
        it->entries.pop_back();
        erase_if_empty(it);
    }

    // removes a cached buffer (it goes back to the driver); false when it is not cached
    bool remove(const void * ptr, size_t size);

    // cached buffers, the slots' included
    size_t count() const { return count_; }
    // the bytes cached, counted when asked (statistics, a miss) rather than kept on every hit
    size_t bytes() const {
        size_t n = 0;
        for_each([&](const buffer & b) { n += b.size; });
        return n;
    }

    // every cached buffer; f must not change the bins
    template <typename F> void for_each(F && f) const {
        for (size_t i = 0; i < bins_.size(); i++) {
            for (size_t j = 0; j < bins_[i].cached; j++) {
                f(buffer{ bins_[i].entries[j].ptr, sizes_[i], bins_[i].entries[j].last_use });
            }
        }
        for (size_t k = 0; k < hit_slots::COUNT; k++) {
            if (slots_.held(k)) {
                f(buffer{ slots_.ptr(k), slots_.size(k), slots_.stamp(k) });
            }
        }
    }
    // every out buffer, f(ptr, size); f must not change the bins
    template <typename F> void for_each_out(F && f) const {
        any_out([&](void * ptr, size_t size) {
            f(ptr, size);
            return false;
        });
    }
    // whether f(ptr, size) is true for an out buffer, asked of each in turn until it is; f must
    // not change the bins
    template <typename F> bool any_out(F && f) const {
        for (size_t i = 0; i < bins_.size(); i++) {
            for (size_t j = bins_[i].cached; j < bins_[i].entries.size(); j++) {
                if (slots_.held_of(bins_[i].entries[j].ptr) == NONE && f(bins_[i].entries[j].ptr, sizes_[i])) {
                    return true;
                }
            }
        }
        return false;
    }

  private:
    struct entry {
        void *   ptr;
        uint64_t last_use; // while cached (a stamp is never 0); while out, GROWING or NOT_GROWING
    };
    static constexpr uint64_t GROWING     = 0;
    static constexpr uint64_t NOT_GROWING = 1;

    // a slot none has used for STALE_TICKS (alloc and free calls: half a step of an 8B model's
    // graph, 32 layers of about 8 pairs) gives its place to a buffer freed to the bins; fewer
    // would let a random mix of sizes trade the slots' buffers back and forth, each time a search
    static constexpr uint64_t STALE_TICKS = 256;
    // takes one bin served in a row, none by a slot, after which a buffer freed to the bins takes
    // the oldest slot's place: a server's step nests three requests a layer, which keeps both
    // slots fresh, while its small requests, several a layer of one or two sizes, all search.
    // One bin's: a random mix of sizes seldom asks one bin three times running
    static constexpr uint16_t BINS_RUN = 3;

    void take_slot(size_t k, buffer * out) {
        *out = { slots_.ptr(k), slots_.size(k), slots_.stamp(k) };
        slots_.lend(k);
        bins_run_ = 0;
        count_--;
    }
    // take() past the slots: the bins' best fit, or slot k's where it fits better (NONE: none fits)
    GCP_COLD bool take_searched(size_t want, size_t k, buffer * out);
    // a slot for a buffer coming back at last_use: an empty one, else the oldest cached one where
    // its buffer is stale or, last_use being newer, one bin served the last BINS_RUN takes; that
    // buffer goes to its bin (NONE: none)
    size_t        free_slot(uint64_t last_use);
    // slot k's buffer is its bin's alone from now on: cached there in the order of its stamp
    // (an entry cached after it came back stays the newer), or out there as its slot had it
    void          list_slot(size_t k);

    // an out entry becomes its bin's newest cached, stamped last_use; its index
    size_t file(out_ref at, uint64_t last_use) {
        bin & b = bins_[at.bin];
        std::swap(b.entries[at.entry], b.entries[b.cached]); // to the newest cached place
        b.entries[b.cached].last_use = last_use;
        if (++b.cached == 1) {
            marks_.mark(at.bin);
        }
        for (size_t k = 0; k < hit_slots::COUNT; k++) { // a slot's floor rises to a size it holds
            if (!slots_.empty(k) && at.size <= slots_.size(k) && at.size > slots_.floor(k)) {
                slots_.set_floor(k, at.size);
            }
        }
        return b.cached - 1;
    }
    // the largest size the bins cache below bin i (0: none)
    size_t floor_below(size_t i) const {
        const size_t j = marks_.prev(i);
        return j != NONE ? sizes_[j] : 0;
    }
    // bin i caches none any more: a slot whose floor it was takes the next cached size below it
    void lower_floors(size_t i) {
        for (size_t k = 0; k < hit_slots::COUNT; k++) {
            if (!slots_.empty(k) && slots_.floor(k) == sizes_[i]) {
                slots_.set_floor(k, floor_below(i));
            }
        }
    }

    // the buffers a bin keeps on its own line: ggml asks for one or two of a size
    static constexpr uint32_t INLINE_ENTRIES = 2;
    struct alignas(CACHE_LINE) bin {                   // one cache line; its size is sizes_ at the same index
        uint32_t                          cached  = 0; // entries[0, cached) are cached, newest last; the rest are out
        uint32_t                          pending = 0; // allocations reserve() kept room for, not lent yet
        small_list<entry, INLINE_ENTRIES> entries;     // room for `pending` more
    };
    static_assert(sizeof(bin) == CACHE_LINE, "a bin's counts and its first entries share a line");

    static constexpr size_t COUNTED_BINS = 16; // up to this many bins, lower() counts instead of searching

    // the first bin of at least `size` (bins_.end() when none), without a branch per step
    std::vector<bin>::iterator lower(size_t size);

    // whether `it` (from lower(size)) is the bin of exactly `size`
    bool holds_size(std::vector<bin>::iterator it, size_t size) const {
        return it != bins_.end() && sizes_[size_t(it - bins_.begin())] == size;
    }

    // a bin with no buffer, cached, out or about to be, goes; true when it went
    bool erase_if_empty(std::vector<bin>::iterator it);

    // rebuilt when bins come or go (a miss or a release, never a hit); never grows past the
    // capacity reserve() made. The hint's index may name another bin now: forgotten
    void   remark();
    // the first bin at or after i that holds a cached buffer (bins_.size() when none)
    size_t next_marked(size_t i) const { return marks_.next(i, bins_.size()); }

    // The hit path's fields, on one line with the legacy pool's clock: the slots (their sizes,
    // stamps and floors), the count and the bins' run of takes. Nothing after bins_run_ is read on
    // a pair the slots serve
    hit_slots slots_;
    uint32_t  count_    = 0; // at most the pool's bound on cached buffers, and a few more
    uint16_t  bins_run_ = 0; // takes the hint's bin served in a row (no slot's, no bin come or gone), up to BINS_RUN
    // The search's fields, from here to the next line: a take reads the sizes' data and the marks'
    // first word through them, a free outside the slots its first guess, the bin take() took from
    // last and its size (0: none; a bin past UINT16_MAX is no guess), which saves it the search
    uint16_t  hint_      = 0;
    size_t    hint_size_ = 0;
    std::vector<bin>                                    bins_;  // ascending sizes
    std::vector<size_t, line_aligned_allocator<size_t>> sizes_; // bins_[i]'s buffer size, dense for the search
    bin_marks                                           marks_; // its first word ends the line
};

} // namespace gcp
