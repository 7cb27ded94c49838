#pragma once
// The async pool's record of the buffers it handed out: pointer -> size, in one flat table (open
// addressing, linear probing, deletion by backward shift). Only reserve() allocates, before a
// buffer is handed out: insert and erase never do, so a free cannot fail for want of host memory.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gcp {

class live_set {
  public:
    // room for `count` entries in all; may throw std::bad_alloc, and leaves the set as it was then
    void reserve(size_t count) {
        if (count * MAX_LOAD_DEN > cells_.size() * MAX_LOAD_NUM) {
            size_t want = cells_.empty() ? MIN_CELLS : cells_.size();
            while (count * MAX_LOAD_DEN > want * MAX_LOAD_NUM) {
                want *= 2;
            }
            rehash(want);
        }
    }

    // requires room (reserve) and ptr not present
    void insert(const void * ptr, size_t size) {
        size_t i = home(ptr);
        while (cells_[i].ptr != nullptr) {
            i = (i + 1) & mask();
        }
        cells_[i] = { ptr, size };
        count_++;
    }

    // the recorded size, or nullptr when ptr is not in the set
    const size_t * find(const void * ptr) const {
        const size_t i = cell_of(ptr);
        return i == NONE ? nullptr : &cells_[i].size;
    }

    // false when ptr is not in the set
    bool erase(const void * ptr) {
        size_t i = cell_of(ptr);
        if (i == NONE) {
            return false;
        }
        // backward shift: pull later entries of the run into the hole when their home allows it
        for (size_t j = (i + 1) & mask(); cells_[j].ptr != nullptr; j = (j + 1) & mask()) {
            if (((j - home(cells_[j].ptr)) & mask()) >= ((j - i) & mask())) {
                cells_[i] = cells_[j];
                i         = j;
            }
        }
        cells_[i] = {};
        count_--;
        return true;
    }

    size_t size() const { return count_; }

    // one entry (false: the set is empty)
    bool first(void ** ptr, size_t * size) const {
        auto c = std::find_if(cells_.begin(), cells_.end(), [](const cell & x) { return x.ptr != nullptr; });
        *ptr   = c != cells_.end() ? const_cast<void *>(c->ptr) : nullptr;
        *size  = c != cells_.end() ? c->size : 0;
        return c != cells_.end();
    }

  private:
    struct cell {
        const void * ptr  = nullptr; // nullptr: empty (a pool never hands out nullptr)
        size_t       size = 0;
    };
    static constexpr size_t   NONE      = SIZE_MAX;
    static constexpr size_t   MIN_CELLS = 16;
    // at most half full: probe runs stay short
    static constexpr size_t   MAX_LOAD_NUM = 1;
    static constexpr size_t   MAX_LOAD_DEN = 2;
    // Fibonacci hashing over the address without its alignment bits, which every buffer shares
    static constexpr uint64_t GOLDEN     = 0x9E3779B97F4A7C15ull;
    static constexpr unsigned ALIGN_BITS = 7;

    // cells_.size() is a power of two: the hash's top bits are a cell
    size_t mask() const { return cells_.size() - 1; }
    size_t home(const void * ptr) const {
        const unsigned shift = 64 - unsigned(__builtin_ctzll(cells_.size()));
        return size_t(((uint64_t(reinterpret_cast<uintptr_t>(ptr)) >> ALIGN_BITS) * GOLDEN) >> shift);
    }

    size_t cell_of(const void * ptr) const {
        if (cells_.empty() || ptr == nullptr) {
            return NONE;
        }
        for (size_t i = home(ptr);; i = (i + 1) & mask()) {
            if (cells_[i].ptr == ptr) {
                return i;
            }
            if (cells_[i].ptr == nullptr) {
                return NONE;
            }
        }
    }

    void rehash(size_t cells) {
        std::vector<cell> old(cells, cell{});
        old.swap(cells_); // the only allocation: if it throws, nothing changed
        count_ = 0;
        for (const cell & c : old) {
            if (c.ptr != nullptr) {
                insert(c.ptr, c.size);
            }
        }
    }

    std::vector<cell> cells_;
    size_t            count_ = 0;
};

} // namespace gcp
