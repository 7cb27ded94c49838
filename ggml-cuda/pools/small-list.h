#pragma once
// A list whose first N elements live inside the object and the rest on the heap once it grows:
// the legacy pool's bins keep their buffers so, and a bin with few buffers (ggml's usual one or
// two of a size) has its counts and its entries on one cache line, which a hit reads once.
// Like a vector, it grows only through reserve(), which may throw and then changes nothing; every
// other operation stays within the capacity reserve() made and cannot throw.

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace gcp {

template <typename T, uint32_t N> class small_list {
    static_assert(std::is_trivially_copyable<T>::value, "elements are copied as bytes");

  public:
    small_list() = default;
    small_list(small_list && o) noexcept { steal(o); }
    small_list & operator=(small_list && o) noexcept {
        if (this != &o) {
            release();
            steal(o);
        }
        return *this;
    }
    small_list(const small_list &)             = delete;
    small_list & operator=(const small_list &) = delete;
    ~small_list() { release(); }

    uint32_t  size() const { return size_; }
    bool      empty() const { return size_ == 0; }
    T *       begin() { return data(); }
    T *       end() { return data() + size_; }
    const T * begin() const { return data(); }
    const T * end() const { return data() + size_; }
    T &       operator[](size_t i) { return data()[i]; }
    const T & operator[](size_t i) const { return data()[i]; }
    T &       back() { return data()[size_ - 1]; }

    // room for n elements; may throw std::bad_alloc, and then nothing changed
    void reserve(size_t n) {
        if (n <= cap_) {
            return;
        }
        const size_t cap  = std::max(n, size_t(2) * cap_);
        T *          heap = new T[cap];
        std::copy(begin(), end(), heap);
        const uint32_t size = size_;
        release();
        data_ = heap;
        size_ = size;
        cap_  = uint32_t(cap);
    }
    void push_back(const T & v) { data_[size_++] = v; } // within the capacity reserve() made
    void pop_back() { size_--; }
    // removes element i, keeping the order of the rest
    void erase(size_t i) {
        std::copy(begin() + i + 1, end(), begin() + i);
        size_--;
    }

  private:
    T *       data() { return data_; }
    const T * data() const { return data_; }
    // frees the heap's elements, if any: empty, inline
    void      release() {
             if (data_ != inline_) {
                 delete[] data_;
        }
             data_ = inline_;
             size_ = 0;
             cap_  = N;
    }
    // takes o's elements and leaves it empty
    void steal(small_list & o) {
        if (o.data_ != o.inline_) {
            data_ = o.data_;
        } else {
            std::copy(o.inline_, o.inline_ + o.size_, inline_);
        }
        size_   = o.size_;
        cap_    = o.cap_;
        o.data_ = o.inline_;
        o.size_ = 0;
        o.cap_  = N;
    }

    // the elements: inline_, or cap_ of them on the heap once reserve() outgrew it (a move points
    // the new object's at its own inline_, so a read never asks which)
    T *      data_ = inline_;
    uint32_t size_ = 0;
    uint32_t cap_  = N;
    T        inline_[N];
};

} // namespace gcp
