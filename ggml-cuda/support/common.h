#pragma once
// Shared vocabulary of the module: statuses, size arithmetic, names.

#include "ggml-cuda-pool.h"
#include "ggml-cuda-pool-calls.h"
#include "names.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

namespace gcp {

using status                      = ggml_cpool_status;
constexpr status OK               = GGML_CPOOL_STATUS_OK;
constexpr status OUT_OF_MEMORY    = GGML_CPOOL_STATUS_OUT_OF_MEMORY;
constexpr status INVALID_ARGUMENT = GGML_CPOOL_STATUS_INVALID_ARGUMENT;
constexpr status DRIVER_ERROR     = GGML_CPOOL_STATUS_DRIVER_ERROR;
constexpr status UNSUPPORTED      = GGML_CPOOL_STATUS_UNSUPPORTED;

// between two pool calls an engine's kernel launches evict the pool: each line a call touches is a miss
constexpr size_t CACHE_LINE = 64;

// the branch a hit takes, for the compiler to lay the other away from its lines; a path kept out
// of its caller: a rare one (GCP_COLD), or one that is not rare but need not be inline (a miss), or
// one that must be (GCP_INLINE). GCC's attributes: every compiler that builds the module takes them
#define GCP_LIKELY(x)   __builtin_expect(!!(x), 1)
#define GCP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GCP_COLD        __attribute__((noinline, cold))
#define GCP_NOINLINE    __attribute__((noinline))
#define GCP_ALWAYS      __attribute__((always_inline)) // a lambda's: after its parameters
#define GCP_INLINE      inline GCP_ALWAYS

constexpr size_t MiB = size_t(1) << 20;
constexpr size_t GiB = size_t(1) << 30;

// Largest request any pool accepts: keeps every rounding and 2x/3x product below SIZE_MAX.
constexpr size_t MAX_REQUEST = size_t(1) << 60;

// round x up to a multiple of align; x <= MAX_REQUEST, so this cannot overflow
constexpr size_t round_up(size_t x, size_t align) {
    return (x + align - 1) / align * align;
}

// room for at least `need` elements, grown geometrically so that a run of calls rarely
// allocates; may throw std::bad_alloc, leaving v as it was
template <typename V> void ensure_capacity(V & v, size_t need) {
    if (v.capacity() < need) {
        v.reserve(std::max(need, 2 * v.capacity()));
    }
}

// the smallest element of [first, last) of at least n bytes (its `size`) that `usable` accepts, the
// last of equal sizes (last: none)
template <class It, class Usable> It smallest_holding(It first, It last, size_t n, Usable && usable) {
    It best = last;
    for (It it = first; it != last; ++it) {
        if (it->size >= n && (best == last || it->size <= best->size) && usable(*it)) {
            best = it;
        }
    }
    return best;
}

// the bytes of the elements of a range (their `size`)
template <class Range> size_t total_size(const Range & buffers) {
    size_t n = 0;
    for (const auto & b : buffers) {
        n += b.size;
    }
    return n;
}

// storage that starts a cache line: a pool's few records then take as few lines as they can
template <typename T> struct line_aligned_allocator {
    using value_type         = T;
    line_aligned_allocator() = default;
    template <typename U> line_aligned_allocator(const line_aligned_allocator<U> &) {}
    T *  allocate(size_t n) { return static_cast<T *>(::operator new (n * sizeof(T), std::align_val_t{ CACHE_LINE })); }
    void deallocate(T * p, size_t) { ::operator delete (p, std::align_val_t{ CACHE_LINE }); }
    bool operator==(const line_aligned_allocator &) const { return true; }
    bool operator!=(const line_aligned_allocator &) const { return false; }
};

inline double to_mib(size_t bytes) {
    return double(bytes) / double(MiB);
}

// the int a C caller stored in an enum field, which may be no enumerator
template <typename E> int raw_enum(const E & e) {
    static_assert(sizeof(E) == sizeof(int), "C enums are int-sized here");
    int v;
    std::memcpy(&v, &e, sizeof(v));
    return v;
}

} // namespace gcp
