#pragma once
// Which of the legacy pool's bins (size-bins.h) hold a cached buffer: a bitmap, bit i for bin i.
// The first word lies in the bins' search line, so that up to 64 bins the search for the next
// bin with a cached buffer reads nothing more; the rest, for larger pools, on the heap.

#include "../support/common.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gcp {

class bin_marks {
  public:
    // room for the marks of `bins` bins, so that rebuild() never allocates; may throw
    // std::bad_alloc, and then nothing changed
    void                       reserve(size_t bins) { reserve_at_least(more_, words(bins) - 1); }
    void                       mark(size_t i) { word(i / WORD) |= uint64_t(1) << (i % WORD); }
    void                       unmark(size_t i) { word(i / WORD) &= ~(uint64_t(1) << (i % WORD)); }
    // for `bins` bins, bin i marked where cached(i) (within the room reserve() made)
    template <typename F> void rebuild(size_t bins, F && cached) {
        first_ = 0;
        more_.assign(std::max<size_t>(words(bins), 1) - 1, 0);
        for (size_t i = 0; i < bins; i++) {
            if (cached(i)) {
                mark(i);
            }
        }
    }
    // the first marked bin at or after i, of `bins` (bins when none)
    size_t next(size_t i, size_t bins) const {
        if (GCP_LIKELY(bins <= WORD)) {
            const uint64_t bits = i < WORD ? first_ & (~uint64_t(0) << i) : 0;
            return bits != 0 ? size_t(__builtin_ctzll(bits)) : bins;
        }
        for (size_t w = i / WORD; w <= more_.size(); w++) {
            uint64_t bits = word(w);
            if (w == i / WORD) {
                bits &= ~uint64_t(0) << (i % WORD);
            }
            if (bits != 0) {
                return w * WORD + size_t(__builtin_ctzll(bits));
            }
        }
        return bins;
    }

    // the last marked bin before i (SIZE_MAX: none)
    size_t prev(size_t i) const {
        while (i > 0) {
            const size_t   w    = (i - 1) / WORD;
            const size_t   top  = (i - 1) % WORD; // bits 0..top of word w are before i
            const uint64_t bits = word(w) & (~uint64_t(0) >> (WORD - 1 - top));
            if (bits != 0) {
                return w * WORD + WORD - 1 - size_t(__builtin_clzll(bits));
            }
            i = w * WORD;
        }
        return SIZE_MAX;
    }

  private:
    static constexpr size_t WORD = 64;
    static size_t           words(size_t bins) { return (bins + WORD - 1) / WORD; }
    uint64_t &              word(size_t w) { return w == 0 ? first_ : more_[w - 1]; }
    uint64_t                word(size_t w) const { return w == 0 ? first_ : more_[w - 1]; }

    uint64_t              first_ = 0; // bins 0-63, first: the search reads it with the bins' vectors
    std::vector<uint64_t> more_;      // past bin 63
};

} // namespace gcp
