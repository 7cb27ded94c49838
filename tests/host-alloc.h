#pragma once
// Host-allocation failure injection. The test program replaces the global operator new and
// delete (every form, host-alloc.cpp): on a thread that armed it, each allocation is counted
// and the ones a plan names fail (std::bad_alloc, or nullptr from the nothrow forms).
// Unarmed, it is plain malloc, so the test framework's own allocations never fail: arm it
// around the library calls alone.

#include <cstdint>

namespace host_alloc {

struct plan {
    uint64_t fail_at   = 0;     // the 1-based allocation that fails; 0: none (a counting run)
    bool     and_later = false; // every allocation after it fails too
};

// a new run on this thread: the counts restart
void     start(const plan & p);
// allocations this thread made armed since start, and of those the ones that failed
uint64_t counted();
uint64_t failed();

// arms the hook on this thread for its lifetime
class scope {
  public:
    scope();
    ~scope();
    scope(const scope &)             = delete;
    scope & operator=(const scope &) = delete;
};

// f() with the hook armed
template <typename F> auto armed(F && f) -> decltype(f()) {
    scope s;
    return f();
}

} // namespace host_alloc
