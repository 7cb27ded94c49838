#pragma once
// The buffers a pool has handed out and not taken back: pointer -> size, in one flat table (open
// addressing, linear probing, deletion by backward shift), so that a hit costs no heap allocation
// and a free never needs memory. The table grows only in reserve(), which the pool calls before it
// hands a buffer out: insert and erase never allocate, so a free cannot fail for want of host memory.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gcp {

class live_set {
  public:
    // room for `count` entries in all; may throw std::bad_alloc, and leaves the set as it was then.
    // Inline where there is room already (every hit), the growth out of line
    void reserve(size_t count) {
        if (count * MAX_LOAD_DEN > slots_.size() * MAX_LOAD_NUM) {
            grow(count);
        }
    }

    // requires room (reserve) and ptr not present
    void insert(const void * ptr, size_t size) {
        size_t i = home(ptr);
        while (slots_[i].ptr != nullptr) {
            i = (i + 1) & mask_;
        }
        slots_[i] = { ptr, size };
        count_++;
    }

    static constexpr size_t NONE = SIZE_MAX;

    // the slot holding ptr, or NONE: a free looks it up once, then checks and erases by slot
    size_t slot_of(const void * ptr) const {
        if (slots_.empty() || ptr == nullptr) { // nullptr marks an empty slot, never a buffer
            return NONE;
        }
        for (size_t i = home(ptr);; i = (i + 1) & mask_) {
            if (slots_[i].ptr == ptr) {
                return i;
            }
            if (slots_[i].ptr == nullptr) {
                return NONE;
            }
        }
    }
    // the size recorded in a slot slot_of returned
    size_t size_at(size_t slot) const { return slots_[slot].size; }

    // the recorded size, or nullptr when ptr is not in the set
    const size_t * find(const void * ptr) const {
        const size_t i = slot_of(ptr);
        return i == NONE ? nullptr : &slots_[i].size;
    }

    // false when ptr is not in the set
    bool erase(const void * ptr) {
        const size_t i = slot_of(ptr);
        if (i == NONE) {
            return false;
        }
        erase_at(i);
        return true;
    }

    // empties a slot slot_of returned
    void erase_at(size_t i) {
        // backward shift: pull later entries of the run into the hole when their home allows it
        for (size_t j = (i + 1) & mask_; slots_[j].ptr != nullptr; j = (j + 1) & mask_) {
            size_t h = home(slots_[j].ptr);
            if (((j - h) & mask_) >= ((j - i) & mask_)) {
                slots_[i] = slots_[j];
                i         = j;
            }
        }
        slots_[i] = {};
        count_--;
    }

    size_t size() const { return count_; }
    bool   empty() const { return count_ == 0; }

    template <typename F> void for_each(F && f) const {
        for (const slot & s : slots_) {
            if (s.ptr != nullptr) {
                f(s.ptr, s.size);
            }
        }
    }

  private:
    struct slot {
        const void * ptr  = nullptr; // nullptr: empty (a pool never hands out nullptr)
        size_t       size = 0;
    };
    static constexpr size_t   MIN_SLOTS = 16;
    // at most half full: probe runs stay short
    static constexpr size_t   MAX_LOAD_NUM = 1;
    static constexpr size_t   MAX_LOAD_DEN = 2;
    // Fibonacci hashing over the address without its alignment bits, which every buffer shares
    static constexpr uint64_t GOLDEN     = 0x9E3779B97F4A7C15ull;
    static constexpr unsigned ALIGN_BITS = 7;

    __attribute__((noinline)) void grow(size_t count) {
        size_t want = slots_.empty() ? MIN_SLOTS : slots_.size();
        while (count * MAX_LOAD_DEN > want * MAX_LOAD_NUM) {
            want *= 2;
        }
        rehash(want);
    }

    size_t home(const void * ptr) const {
        return size_t(((uint64_t(reinterpret_cast<uintptr_t>(ptr)) >> ALIGN_BITS) * GOLDEN) >> shift_);
    }

    void rehash(size_t slots) {
        std::vector<slot> old(slots, slot{});
        old.swap(slots_); // the only allocation: if it throws, nothing changed
        mask_  = slots - 1;
        shift_ = 64 - unsigned(__builtin_ctzll(slots));
        count_ = 0;
        for (const slot & s : old) {
            if (s.ptr != nullptr) {
                insert(s.ptr, s.size);
            }
        }
    }

    std::vector<slot> slots_;
    size_t            mask_  = 0;
    unsigned          shift_ = 64;
    size_t            count_ = 0;
};

} // namespace gcp
