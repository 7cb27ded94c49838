#include "size-bins.h"

namespace gcp {

void size_bins::reserve(size_t size) {
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
    marks_.reserve(bins_.size() + 1);
    // within capacity: cannot throw
    bins_.insert(bins_.begin() + std::ptrdiff_t(at), std::move(fresh));
    sizes_.insert(sizes_.begin() + std::ptrdiff_t(at), size);
    remark();
}

void size_bins::lend(void * ptr, size_t size, bool growing) {
    auto it = lower(size);
    it->pending--;
    it->entries.push_back({ ptr, growing ? GROWING : NOT_GROWING }); // within the room reserve() kept
}

void size_bins::unreserve(size_t size) {
    auto it = lower(size);
    it->pending--;
    erase_if_empty(it);
}

void size_bins::hold_for_growth(const buffer & b) {
    slots_.drop(b.ptr);
    const out_ref at                         = find_out(b.ptr, b.size);
    bins_[at.bin].entries[at.entry].last_use = GROWING;
}

bool size_bins::first_out(void ** ptr, size_t * size) const {
    return any_out([&](void * p, size_t s) {
        *ptr  = p;
        *size = s;
        return true;
    });
}

size_t size_bins::size_out(const void * ptr) const {
    size_t size = NONE;
    for_each_out([&](void * p, size_t s) { size = p == ptr ? s : size; });
    return size;
}

bool size_bins::remove(const void * ptr, size_t size) {
    const size_t k = slots_.held_of(ptr);
    if (k != NONE && slots_.size(k) == size) {
        slots_.lend(k); // out, as its bin records it: forgotten there
        count_--;
        forget(find_out(ptr, size));
        return true;
    }
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
    if (it->cached == 0) { // before the bin may go: a slot's floor may name its size
        marks_.unmark(size_t(it - bins_.begin()));
        lower_floors(size_t(it - bins_.begin()));
    }
    erase_if_empty(it);
    return true;
}

bool size_bins::take_searched(size_t want, size_t k, buffer * out) {
    const size_t i = next_marked(size_t(lower(want) - bins_.begin()));
    if (i >= bins_.size()) {
        if (k != NONE) {
            take_slot(k, out);
        }
        return k != NONE;
    }
    bin & b = bins_[i];
    if (k != NONE && (slots_.size(k) < sizes_[i] ||
                      (slots_.size(k) == sizes_[i] && slots_.stamp(k) > b.entries[b.cached - 1].last_use))) {
        take_slot(k, out);
        return true;
    }
    const entry & e = b.entries[--b.cached]; // the newest cached becomes the first out
    *out            = { e.ptr, sizes_[i], e.last_use };
    bins_run_       = hint_size_ == sizes_[i] ? std::min<uint16_t>(bins_run_ + 1, BINS_RUN) : 1; // from the hint's bin
    hint_           = uint16_t(i);
    hint_size_      = i <= UINT16_MAX ? sizes_[i] : 0;
    count_--;
    if (b.cached == 0) {
        marks_.unmark(i);
        lower_floors(i);
    }
    return true;
}

size_t size_bins::free_slot(uint64_t last_use) {
    const size_t empty = slots_.first_empty();
    if (empty != NONE) {
        return empty;
    }
    const size_t oldest = slots_.oldest();
    if (oldest == NONE) {
        return NONE;
    }
    // a run gives the place to a buffer newer than the slot's, never to an outgrown one, whose low
    // stamp asks to go first
    const bool run = bins_run_ >= BINS_RUN && last_use > slots_.stamp(oldest);
    if (slots_.stamp(oldest) + STALE_TICKS >= last_use && !run) {
        return NONE;
    }
    bins_run_ = 0;
    list_slot(oldest);
    return oldest;
}

void size_bins::list_slot(size_t k) {
    const uint64_t stamp = slots_.stamp(k);
    const size_t   size  = slots_.size(k);
    void * const   ptr   = slots_.ptr(k);
    slots_.clear(k);
    if (stamp == 0) {
        return;
    }
    const out_ref at = find_out(ptr, size);
    bin &         b  = bins_[at.bin];
    size_t        j  = file(at, stamp);
    for (; j > 0 && b.entries[j - 1].last_use > stamp; j--) {
        std::swap(b.entries[j - 1], b.entries[j]);
    }
}

std::vector<size_bins::bin>::iterator size_bins::lower(size_t size) {
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

bool size_bins::erase_if_empty(std::vector<bin>::iterator it) {
    if (!it->entries.empty() || it->pending != 0) {
        return false;
    }
    sizes_.erase(sizes_.begin() + (it - bins_.begin()));
    bins_.erase(it);
    remark();
    return true;
}

void size_bins::remark() {
    marks_.rebuild(bins_.size(), [&](size_t i) { return bins_[i].cached != 0; });
    hint_size_ = 0;
    bins_run_  = 0; // a miss or a release breaks the run
}

} // namespace gcp
