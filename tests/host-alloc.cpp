// The test program's operator new and delete (host-alloc.h). Every form is replaced, so that
// each allocation and its release pair up in malloc and free, which the sanitizers track.

#include "host-alloc.h"

#include <cstddef>
#include <cstdlib>
#include <new>

namespace host_alloc {

namespace {

struct state {
    int      armed;
    uint64_t counted;
    uint64_t failed;
    plan     p;
};
thread_local state t; // trivially constructed: the hook itself never allocates

bool should_fail() {
    if (t.armed == 0) {
        return false;
    }
    const uint64_t n    = ++t.counted;
    const bool     fail = t.p.fail_at != 0 && (n == t.p.fail_at || (t.p.and_later && n > t.p.fail_at));
    t.failed += fail;
    return fail;
}

// nullptr when the plan fails this allocation or malloc does
void * allocate(std::size_t size, std::size_t align) noexcept {
    if (should_fail()) {
        return nullptr;
    }
    const std::size_t bytes = size != 0 ? size : 1;
    if (align <= alignof(std::max_align_t)) {
        return std::malloc(bytes);
    }
    return std::aligned_alloc(align, (bytes + align - 1) / align * align); // a multiple of align
}

void * allocate_or_throw(std::size_t size, std::size_t align) {
    void * p = allocate(size, align);
    if (p == nullptr) {
        throw std::bad_alloc();
    }
    return p;
}

} // namespace

void start(const plan & p) {
    t.counted = 0;
    t.failed  = 0;
    t.p       = p;
}

uint64_t counted() {
    return t.counted;
}

uint64_t failed() {
    return t.failed;
}

scope::scope() {
    t.armed++;
}

scope::~scope() {
    t.armed--;
}

} // namespace host_alloc

using host_alloc::allocate;
using host_alloc::allocate_or_throw;

// clang-format off
void * operator new(std::size_t n) { return allocate_or_throw(n, 0); }
void * operator new[](std::size_t n) { return allocate_or_throw(n, 0); }
void * operator new(std::size_t n, const std::nothrow_t &) noexcept { return allocate(n, 0); }
void * operator new[](std::size_t n, const std::nothrow_t &) noexcept { return allocate(n, 0); }
void * operator new(std::size_t n, std::align_val_t a) { return allocate_or_throw(n, std::size_t(a)); }
void * operator new[](std::size_t n, std::align_val_t a) { return allocate_or_throw(n, std::size_t(a)); }
void * operator new(std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept {
    return allocate(n, std::size_t(a));
}
void * operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept {
    return allocate(n, std::size_t(a));
}

void operator delete(void * p) noexcept { std::free(p); }
void operator delete[](void * p) noexcept { std::free(p); }
void operator delete(void * p, std::size_t) noexcept { std::free(p); }
void operator delete[](void * p, std::size_t) noexcept { std::free(p); }
void operator delete(void * p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void * p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete(void * p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void * p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void * p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void * p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void * p, std::align_val_t, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void * p, std::align_val_t, const std::nothrow_t &) noexcept { std::free(p); }
// clang-format on
