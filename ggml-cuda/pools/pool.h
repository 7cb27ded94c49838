#pragma once
// What every pool kind shares: the argument checks, exact statistics, the pins of CUDA graphs, the
// capture query and the out-of-memory ladder (recovery.h). Each kind keeps the record of its own
// live buffers, so that a bad free is a status; a free never allocates, so it cannot fail.

#include "../drivers/driver.h"
#include "../support/log.h"
#include "recovery.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace gcp {

// the most a pool may hold for `peak` live bytes with `headroom_pct` percent above them;
// GGML_CPOOL_HEADROOM_UNLIMITED, or a budget past SIZE_MAX, is SIZE_MAX (no bound)
inline size_t headroom_budget(size_t peak, uint32_t headroom_pct) {
    if (headroom_pct == GGML_CPOOL_HEADROOM_UNLIMITED) {
        return SIZE_MAX;
    }
    const double extra = double(peak) * headroom_pct / 100.0;
    return extra >= double(SIZE_MAX - peak) ? SIZE_MAX : peak + size_t(extra);
}

// the smallest buffer of [first, last) that holds n bytes and that `usable` accepts, the last of
// equal sizes (last: none); an element names its bytes `size`
template <class It, class Usable> It smallest_holding(It first, It last, size_t n, Usable && usable) {
    It best = last;
    for (It it = first; it != last; ++it) {
        if (it->size >= n && (best == last || it->size <= best->size) && usable(*it)) {
            best = it;
        }
    }
    return best;
}

// the bytes of the buffers of a range
template <class Range> size_t total_size(const Range & buffers) {
    size_t n = 0;
    for (const auto & b : buffers) {
        n += b.size;
    }
    return n;
}

// what a caller asks for
struct request {
    size_t   size;
    uint32_t flags;
    size_t   limit; // a growing request's bound: the most the buffer can ever need (0: none)

    // OVERALLOCATE: the caller expects this request to keep growing
    bool growing() const { return (flags & GGML_CPOOL_ALLOC_OVERALLOCATE) != 0; }
};

// Pools start a cache line: a hit reads the vtable pointer's line (hot_), then its kind's fields
class alignas(CACHE_LINE) pool {
  public:
    // stream: the one the consumer launches this pool's kernels on (nullptr: the device as a whole)
    pool(driver & drv, int device, ggml_cpool_kind kind, stream_t stream);
    virtual ~pool();

    pool(const pool &)             = delete;
    pool & operator=(const pool &) = delete;

    // actual >= size; OVERALLOCATE asks for 2x headroom, never beyond `limit` (0: no bound)
    status         alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual, size_t limit = 0);
    // actual must be the size alloc returned
    status         free(void * ptr, size_t actual);
    // return what is cached to the driver
    virtual status trim() = 0;

    // whether the C API times and traces this pool's calls (trace.h), on the line every call reads
    bool        observed() const { return hot_.observed.load(std::memory_order_relaxed); }
    static void observe_all(bool on);

    ggml_cpool_stats stats() const;
    // device memory the pool holds for itself (kept whole when the pool is quarantined)
    virtual size_t   held_bytes() const { return stats_.reserved_bytes; }

    // moves the pool to another stream once the current one is done; UNSUPPORTED while it captures
    status          set_stream(stream_t stream);
    stream_t        stream() const { return stream_; }
    // waits for the work queued on the pool's stream (on the whole device where it has none)
    status          synchronize();
    // how long a refused allocation waits for memory to come back (recovery.h)
    void            set_wait_ms(uint32_t ms) { wait_ms_ = ms; }
    // forgets the stream, which its owner may destroy now: synchronize and free act on the device
    void            detach_stream() { stream_ = nullptr; }
    // for traces and timing (trace.h): the driver calls so far, and time spent in this pool's calls
    uint64_t        driver_calls() const { return drv_.calls(); }
    void            add_call_ns(uint64_t ns) { stats_.call_ns += ns; }
    // pin mode: buffers handed out between pin_begin and pin_end are `graph`'s until pin_release,
    // and never go back to the driver before
    void            pin_begin(uint64_t graph);
    void            pin_end() { pin_begin(0); }
    void            pin_release(uint64_t graph);
    // the stream's capture as the consumer declares it (1 capturing, 0 not), or -1: ask the driver
    void            declare_capture(int capturing);
    bool            has_pins() const { return !pins_.empty(); }
    ggml_cpool_kind kind() const { return hot_.kind; }
    int             device() const { return device_; }
    // "CUDA pool[0]" or "HIP pool[1]", the prefix of this pool's log lines
    const char *    name() const;

  protected:
    static constexpr size_t OVERALLOCATE_FACTOR = 2;

    // A kind's own calls. do_alloc: a valid request (size > 0, at most MAX_REQUEST), *actual >=
    // size on OK. do_free: frees ptr when it is live at exactly `actual` bytes, never allocating;
    // false, with nothing freed, otherwise. live_size: the size ptr is live at, for a refusal's line
    virtual status                do_alloc(const request & r, void ** ptr, size_t * actual) = 0;
    virtual bool                  do_free(void * ptr, size_t actual) noexcept               = 0;
    virtual std::optional<size_t> live_size(const void * ptr) const                         = 0;
    // one live buffer (false: none); free_live frees them
    virtual bool                  any_live(void ** ptr, size_t * size) const = 0;
    // bytes held for reuse, from the pool's own structures
    virtual size_t                cached_bytes() const = 0;
    // some buffers lost their last pin
    virtual void                  on_unpinned() {}
    // the stream is about to change: what is queued for the old one goes there first
    virtual void                  on_stream_change() {}

    // the bytes a miss takes for a request, rounded up to `rounding`: twice a growing one
    // (OVERALLOCATE), but no more than its limit; any other with `ahead` bytes more
    static size_t miss_bytes(const request & r, size_t ahead, size_t rounding) {
        const size_t doubled = OVERALLOCATE_FACTOR * r.size;
        const size_t limited = r.limit != 0 ? std::max(r.size, std::min(doubled, r.limit)) : doubled;
        return round_up(r.growing() ? limited : r.size + ahead, rounding);
    }
    // after the driver refused `refused` bytes: the next smaller size to ask for, the request with its
    // `ahead`, then alone (0: none); the doubling and look-ahead give way before the request fails
    static size_t fallback_bytes(const request & r, size_t refused, size_t ahead, size_t rounding) {
        const size_t more = round_up(r.size + ahead, rounding), exact = round_up(r.size, rounding);
        return more < refused ? more : exact < refused ? exact : 0;
    }
    // one line: `refused` bytes were refused for a request of `size`, which took `taken` instead
    void   log_fallback(size_t refused, size_t taken, size_t size) const;
    // the out-of-memory ladder (recovery.h) over this pool's rungs: the status the caller gets
    status climb(recovery_steps & steps);
    // the ladder's wait alone (recovery.h)
    status wait_for_memory(recovery_steps & steps);

    // one line, after the pool's name: why a driver call failed
    void say(ggml_cpool_log_level level, const char * fmt, ...) const GCP_PRINTF(3, 4);

    // the driver memory this pool holds moved: keep reserved/peak/counters/generation exact
    void on_driver_alloc(size_t bytes);
    void on_driver_free(size_t bytes) {
        on_addresses_gone();
        on_released(bytes);
    }
    // addresses the pool handed out no longer reach memory (a graph using them must be
    // recaptured): the generation moves
    void on_addresses_gone() { stats_.generation++; }
    // bytes the driver took back
    void on_released(size_t bytes);

    // frees what is live at destruction (the owner forgot it), with one line
    void free_live();

    bool      pinned(const void * ptr) const { return pins_.count(ptr) != 0; }
    // the end of the highest pinned buffer, as an address (0 when none is pinned)
    uintptr_t pinned_top() const;
    // whether the stream is capturing a graph: no synchronize and no free then (they would break it)
    bool      capturing();
    // the same as the consumer declared it, where it did, sparing the driver's query on a hit path
    bool      capturing_as_declared() {
             return (hot_.flags & DECLARED) != 0 ? (hot_.flags & DECLARED_CAPTURING) != 0 : capturing();
    }
    // logs why `what` is not done while the context's stream is capturing
    void log_capture_refusal(const char * what); // e.g. "trim refused"

    static constexpr uint8_t PINNING            = 1; // between pin_begin and pin_end
    static constexpr uint8_t DECLARED           = 2; // the consumer declares its captures
    static constexpr uint8_t DECLARED_CAPTURING = 4; // and the stream is capturing, it says

    // what every hit reads and writes, first after the vtable pointer: between two calls an
    // engine's kernel launches evict the pool, and each line a call touches is a miss
    struct hot_fields {
        ggml_cpool_kind   kind;
        uint8_t           flags = 0;
        std::atomic<bool> observed{ false };
        size_t            live_bytes      = 0;
        size_t            peak_live_bytes = 0;
        uint64_t          hits            = 0;
        uint64_t          allocs          = 0;
    };
    static_assert(sizeof(void *) + sizeof(hot_fields) <= CACHE_LINE, "the vtable pointer and hot_ share a line");
    hot_fields hot_;

    int              device_;
    stream_t         stream_ = nullptr;
    driver &         drv_;
    ggml_cpool_stats stats_{}; // the rest of the statistics (hot_ holds the counts of every call)

  private:
    // the ladder's transient retries and its wait: the last attempt's status; a failed one's error
    // is cleared
    status   retry_transient(recovery_steps & steps);
    void     pause_before_retry(int attempt) const; // attempt: 1 for the first retry
    uint32_t wait_ms_ = 0;

    // the line and status of an alloc with a bad argument (null output, zero or too large a size,
    // unknown flags)
    GCP_COLD status reject_alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual);
    // the line of a free the kind refused
    GCP_COLD status reject_free(const void * ptr, size_t actual) const;
    // in pin mode: pins a buffer just handed out; may throw, once the buffer went back (hits: the
    // count before the call)
    GCP_COLD void   pin_new(void ** ptr, size_t * actual, uint64_t hits);

    struct pin {
        uint32_t graphs; // graphs pinning the buffer
        size_t   size;
    };
    uint64_t                                          pinning_ = 0; // the graph pin_begin named
    std::unordered_map<const void *, pin>             pins_;
    std::unordered_map<uint64_t, std::vector<void *>> graphs_; // graph -> buffers it pinned
    mutable char                                      name_[32] = {};
};

inline status pool::alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual, size_t limit) {
    // one test for every bad argument (size - 1 wraps for a zero size); the cold path says which
    if (GCP_UNLIKELY(ptr == nullptr || actual == nullptr || size - 1 >= MAX_REQUEST ||
                     (flags & ~GGML_CPOOL_ALLOC_OVERALLOCATE) != 0)) {
        return reject_alloc(size, flags, ptr, actual);
    }
    *ptr                = nullptr;
    *actual             = 0;
    const uint64_t hits = hot_.hits;
    const status   st   = do_alloc(request{ size, flags, limit }, ptr, actual);
    if (GCP_UNLIKELY(st != OK)) {
        stats_.oom_returned += st == OUT_OF_MEMORY;
        return st;
    }
    if (GCP_UNLIKELY((hot_.flags & PINNING) != 0)) {
        pin_new(ptr, actual, hits);
    }
    hot_.allocs++;
    hot_.live_bytes += *actual;
    hot_.peak_live_bytes = std::max(hot_.peak_live_bytes, hot_.live_bytes);
    return OK;
}

inline status pool::free(void * ptr, size_t actual) {
    if (GCP_UNLIKELY(!do_free(ptr, actual))) {
        return reject_free(ptr, actual);
    }
    hot_.live_bytes -= actual;
    return OK;
}

} // namespace gcp
