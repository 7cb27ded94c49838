#pragma once
// The legacy pool's slots: the few buffers whose state lives on its hit line, each with its size,
// whether it is out or cached since a stamp, and its floor, the largest size the bins cache at or
// below its own (0: none), so that a pair a slot serves reads no line of the bins: a request above
// the floor that the slot holds has it as its best fit. The bins (size-bins.h) decide what enters
// and leaves a slot, keep the floors, and record a slot's buffer as out whatever its state here.
// Sizes are 32-bit, so that two slots and the bins' hit fields share the line: a buffer of 4 GiB
// or more takes no slot.

#include "../support/common.h"

#include <cstddef>
#include <cstdint>

namespace gcp {

class hit_slots {
  public:
    // two: ggml's usual sizes at once (size-bins.h says why)
    static constexpr size_t COUNT = 2;
    static constexpr size_t NONE  = SIZE_MAX;

    static bool fits(size_t size) { return size <= UINT32_MAX; }

    bool     held(size_t k) const { return slots_[k].ptr != nullptr && slots_[k].stamp != 0; }
    bool     empty(size_t k) const { return slots_[k].ptr == nullptr; }
    void *   ptr(size_t k) const { return slots_[k].ptr; }
    size_t   size(size_t k) const { return size_[k]; }
    size_t   floor(size_t k) const { return floor_[k]; }
    void     set_floor(size_t k, size_t floor) { floor_[k] = uint32_t(floor); } // <= size(k)
    uint64_t stamp(size_t k) const { return slots_[k].stamp; }

    // the slot that holds ptr, out or cached (NONE: none)
    size_t of(const void * ptr) const {
        for (size_t k = 0; k < COUNT; k++) {
            if (ptr != nullptr && slots_[k].ptr == ptr) {
                return k;
            }
        }
        return NONE;
    }
    // the same, cached only
    size_t held_of(const void * ptr) const {
        const size_t k = of(ptr);
        return k != NONE && held(k) ? k : NONE;
    }

    // the smallest cached slot that holds want, the newest of a size (NONE: none)
    size_t best(size_t want) const {
        size_t b = NONE;
        for (size_t k = 0; k < COUNT; k++) {
            if (held(k) && size_[k] >= want &&
                (b == NONE || size_[k] < size_[b] || (size_[k] == size_[b] && slots_[k].stamp > slots_[b].stamp))) {
                b = k;
            }
        }
        return b;
    }
    // the cached slot with the oldest stamp (NONE: none cached)
    size_t oldest() const {
        size_t o = NONE;
        for (size_t k = 0; k < COUNT; k++) {
            if (held(k) && (o == NONE || slots_[k].stamp < slots_[o].stamp)) {
                o = k;
            }
        }
        return o;
    }
    size_t first_empty() const {
        for (size_t k = 0; k < COUNT; k++) {
            if (empty(k)) {
                return k;
            }
        }
        return NONE;
    }

    // a free of ptr, of `size`, that an out slot holds: cached again, stamped (> 0); false when no
    // slot holds it out
    bool put(const void * ptr, size_t size, uint64_t stamp) {
        for (size_t k = 0; k < COUNT; k++) {
            // an empty slot's stamp is not 0: no free matches it
            if (slots_[k].ptr == ptr && slots_[k].stamp == 0 && size_[k] == size) {
                slots_[k].stamp = stamp;
                return true;
            }
        }
        return false;
    }
    void lend(size_t k) { slots_[k].stamp = 0; }
    // slot k holds ptr (fits(size)), cached since stamp, or out (0), over floor
    void fill(size_t k, void * ptr, size_t size, uint64_t stamp, size_t floor) {
        slots_[k] = { ptr, stamp };
        size_[k]  = uint32_t(size);
        floor_[k] = uint32_t(floor);
    }
    void clear(size_t k) { fill(k, nullptr, 0, EMPTY_STAMP, 0); }
    // the slot that holds ptr, if any, empties (the bins keep ptr's entry as it is)
    void drop(const void * ptr) {
        const size_t k = of(ptr);
        if (k != NONE) {
            clear(k);
        }
    }

  private:
    // not 0, so that no free matches an empty slot (put)
    static constexpr uint64_t EMPTY_STAMP = ~uint64_t(0);
    struct slot {
        void *   ptr   = nullptr;     // nullptr: empty
        uint64_t stamp = EMPTY_STAMP; // 0: out; else cached, since then (the pool's clock)
    };
    slot     slots_[COUNT];
    uint32_t size_[COUNT]  = {}; // apart from the slots: a pair reads the sizes, then one slot
    uint32_t floor_[COUNT] = {};
};

} // namespace gcp
