#pragma once
// A board: what the processes using the module on one device as one user share, in shared memory
// named from the device's UUID and the uid, mode 0600. Lock-free: every field is an atomic that one
// store or compare-exchange moves, so a process that dies anywhere blocks nobody, and zero bytes are
// an empty board (no initialization to race). A slot per process (member): its pid, its demand, what
// it received and gave. Responders sleep on the board's bell, an asker on its slot's doorbell. Under
// it, the OS (os.cpp, Linux): shared memory only this user opens, futexes, which processes live.

#include "../drivers/primitives.h"

#include <atomic>
#include <cstdio>
#include <type_traits>
#include <unistd.h>

namespace gcp::neighbours {

// a futex word: one process's atomics and another's futex calls see the same 32 bits
using word = std::atomic<uint32_t>;
static_assert(sizeof(word) == sizeof(uint32_t) && word::is_always_lock_free, "a futex is a plain 32-bit word");

constexpr uint64_t NO_BOUND = UINT64_MAX; // a futex wait without a timeout

// the segment `name` of `size` bytes, mapped shared: made (zeroed, mode 0600) where it is not there
// yet. UNSUPPORTED, with a line, where another user owns it, or anyone else may open it
status   map_segment(const char * name, size_t size, void ** out);
// sleeps while w holds `expected`, at most timeout_ns; `shared`: w is in memory other processes map.
// OK also when woken, interrupted or timed out, or where w moved: the caller looks again
status   futex_wait(word & w, uint32_t expected, uint64_t timeout_ns, bool shared);
void     futex_wake(word & w, bool shared); // every waiter
// whether pid is a live process (a zombie is: its parent has not waited for it yet)
bool     alive(pid_t pid);
uint64_t now_ns(); // CLOCK_MONOTONIC: one clock for every process of the host

constexpr size_t MAX_MEMBERS  = 32; // processes at one board: more than share a device in practice
constexpr int    BOARD_LAYOUT = 1;  // in the name: a board of another layout is another board

struct demand { // as a responder reads it
    pid_t    asker;
    uint32_t number;
    size_t   want; // bytes asked for and not received yet
};

struct alignas(CACHE_LINE) member {
    std::atomic<pid_t>    pid, asker;             // pid 0: a free slot; a dead one's is taken over
    std::atomic<uint64_t> bytes, base;            // base: `received` when the demand was posted
    std::atomic<uint64_t> deadline;               // now_ns() at which the demand expires; 0: none
    std::atomic<uint64_t> replies;                // the demand's number << 32 | its answers
    std::atomic<uint64_t> received, given, gives; // bytes, bytes, and the passes that gave: ever
    word                  doorbell;               // moves at each answer
};

struct board {
    std::atomic<uint32_t> next_demand;
    word                  bell; // moves at each demand and departure
    std::atomic<uint64_t> asks;
    member                members[MAX_MEMBERS];

    void ring() { // wakes every responder
        bell.fetch_add(1);
        futex_wake(bell, true);
    }
    int claim() { // a slot for this process; -1: the board is full
        for (member & m : members) {
            pid_t p = m.pid;
            if ((p == 0 || !alive(p)) && m.pid.compare_exchange_strong(p, getpid())) {
                m.deadline = 0; // a dead member's demand goes with it
                return int(&m - members);
            }
        }
        return -1;
    }
    uint32_t others(int slot) { // the live members but slot's
        uint32_t n = 0;
        for (size_t s = 0; s < MAX_MEMBERS; s++) {
            n += s != size_t(slot) && alive(members[s].pid);
        }
        return n;
    }
    // posts slot's demand and rings: a sequence lock whose count is the deadline, 0 while it is written
    void post(int slot, size_t bytes, uint64_t deadline) {
        member & m = members[slot];
        m.deadline = 0;
        m.asker    = getpid();
        m.bytes    = bytes;
        m.base     = m.received.load();
        m.replies  = uint64_t(next_demand.fetch_add(1) + 1) << 32;
        m.deadline = deadline;
        asks.fetch_add(1);
        ring();
    }
    void withdraw(int slot) { members[slot].deadline = 0; }
    // slot's demand, where it is live, unexpired, and another process's
    bool read(int slot, demand * out) {
        member &       m        = members[slot];
        const uint64_t deadline = m.deadline, bytes = m.bytes, got = m.received - m.base;
        const pid_t    asker = m.asker;
        *out                 = { asker, uint32_t(m.replies >> 32), size_t(bytes > got ? bytes - got : 0) };
        // then: none (0) or expired; written meanwhile; not its member's; this process's own; its asker died
        return deadline > now_ns() && m.deadline == deadline && asker == m.pid && asker != getpid() && alive(asker);
    }
    // a responder's answer to demand `number` of slot: the bytes it gave, counted before the answer
    void answer(int slot, uint32_t number, size_t gave) {
        member & m = members[slot];
        m.received.fetch_add(gave);
        for (uint64_t r = m.replies; uint32_t(r >> 32) == number && !m.replies.compare_exchange_weak(r, r + 1);) {
        }
        m.doorbell.fetch_add(1);
        futex_wake(m.doorbell, true);
    }
};
static_assert(std::is_standard_layout<board>::value && std::atomic<uint64_t>::is_always_lock_free &&
                  std::atomic<pid_t>::is_always_lock_free,
              "lock-free atomics, which processes map at different addresses");

// "/ggml-cpool-<layout>-<uid>-<UUID in hex>": zeros, as map_segment makes it, are an empty board
inline void board_name(const device_uuid & id, char (&name)[64]) {
    int n = snprintf(name, sizeof(name), "/ggml-cpool-%d-%u-", BOARD_LAYOUT, unsigned(geteuid()));
    for (uint8_t byte : id.bytes) {
        n += snprintf(name + n, sizeof(name) - size_t(n), "%02x", byte);
    }
}

} // namespace gcp::neighbours
