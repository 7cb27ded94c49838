#pragma once
// What every pool kind shares: argument checks, the record of live buffers that makes a bad
// free a status instead of corruption, and exact statistics.

#include "../drivers/driver.h"
#include "live-set.h"
#include "recovery.h"
#include "../support/log.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>
#include <type_traits>
#include <unordered_map>
#include <vector>

// GCP_HIT_PATH marks a function the hit path inlines whole (hit-path.h): a kind's do_alloc and
// do_free, defined in the kind's own source, which alone calls them. GCP_LINE_ALIGNED starts a
// function on a cache line
#if defined(__GNUC__)
#    define GCP_HIT_PATH     __attribute__((always_inline)) inline
#    define GCP_LINE_ALIGNED __attribute__((aligned(gcp::CACHE_LINE)))
#else
#    define GCP_HIT_PATH inline
#    define GCP_LINE_ALIGNED
#endif

namespace gcp {

// the kinds' classes, whose hit paths pool::alloc and pool::free call by name (hit-path.h)
class pool_legacy;
class pool_vmm;
class pool_async;

// the most a pool may hold for `peak` live bytes with `headroom_pct` percent above them;
// GGML_CPOOL_HEADROOM_UNLIMITED, or a budget past SIZE_MAX, is SIZE_MAX (no bound)
inline size_t headroom_budget(size_t peak, uint32_t headroom_pct) {
    if (headroom_pct == GGML_CPOOL_HEADROOM_UNLIMITED) {
        return SIZE_MAX;
    }
    const double extra = double(peak) * headroom_pct / 100.0;
    return extra >= double(SIZE_MAX - peak) ? SIZE_MAX : peak + size_t(extra);
}

// what a caller asks for
struct request {
    size_t   size;
    uint32_t flags;
    size_t   limit; // a growing request's bound: the most the buffer can ever need (0: none)

    // OVERALLOCATE: the caller expects this request to keep growing
    bool growing() const { return (flags & GGML_CPOOL_ALLOC_OVERALLOCATE) != 0; }
};

class pool {
  public:
    // who keeps the record of live buffers that checks every free: the pool's table, or the kind's
    // own structures (a VMM pool's block list, a legacy pool's bins), which then check the free in
    // do_free. The table serves the async kind. A kind names its own as RECORD, which its hit path
    // (hit-path.h) reads at compile time
    enum class live_record { table, kind };

    // whose alloc and free a pool's calls run: a kind's whole alloc and free, the common checks
    // and counts with its do_alloc and do_free inlined (hit-path.h), one function a call whose hot
    // lines lie together, called by name after a test of this byte on the hit line, where a call
    // through the vtable or a function pointer would read another line
    enum class hit_path : uint8_t { legacy, vmm, async };

    // stream: the one the consumer launches this pool's kernels on (nullptr: the device as a whole)
    pool(driver & drv, int device, ggml_cpool_kind kind, stream_t stream, hit_path path) :
        device_(device),
        stream_(stream),
        drv_(drv),
        kind_(kind) {
        hit_.path = path;
        enroll();
    }
    virtual ~pool();

    pool(const pool &)             = delete;
    pool & operator=(const pool &) = delete;

    // actual >= size; OVERALLOCATE asks for 2x headroom, never beyond `limit` (0: no bound)
    // (the async kind's call, which asks the driver anyway, laid after the others: the caller's
    // code for the two that do not then fits a line)
    status alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual, size_t limit = 0) {
        if (GCP_UNLIKELY(hit_.path == hit_path::async)) {
            return alloc_as<pool_async>(*this, size, flags, ptr, actual, limit);
        }
        return hit_.path == hit_path::vmm ? alloc_as<pool_vmm>(*this, size, flags, ptr, actual, limit) :
                                            alloc_as<pool_legacy>(*this, size, flags, ptr, actual, limit);
    }
    // actual must be the size alloc returned
    status free(void * ptr, size_t actual) {
        if (GCP_UNLIKELY(hit_.path == hit_path::async)) {
            return free_as<pool_async>(*this, ptr, actual);
        }
        return hit_.path == hit_path::vmm ? free_as<pool_vmm>(*this, ptr, actual) :
                                            free_as<pool_legacy>(*this, ptr, actual);
    }
    // return what is cached to the driver
    virtual status trim() = 0;

    // whether the C API times and traces this pool's calls (trace.h): a flag of its own, on the
    // line every call reads anyway, where a process-wide one would cost a line more. The tracer
    // sets every live pool's with observe_all, and a pool starts with the latest setting
    bool        observed() const { return hit_.observed.load(std::memory_order_relaxed); }
    static void observe_all(bool on);

    ggml_cpool_stats stats() const;
    // device memory the pool holds for itself (kept whole when the pool is quarantined)
    virtual size_t   held_bytes() const { return stats_.reserved_bytes; }

    // moves the pool to another stream once the current one has finished with its buffers;
    // UNSUPPORTED while the current one is capturing a graph
    status          set_stream(stream_t stream);
    stream_t        stream() const { return stream_; }
    // waits for the work queued on the pool's stream (on the whole device where it has none)
    status          synchronize();
    // forgets the stream, which its owner may destroy now: synchronize and free act on the device
    void            detach_stream() { stream_ = nullptr; }
    // for traces and timing (trace.h): the calls made through this pool's driver so far, and
    // the time spent inside this pool's calls (stats.call_ns)
    uint64_t        driver_calls() const { return drv_.calls(); }
    void            add_call_ns(uint64_t ns) { stats_.call_ns += ns; }
    // pin mode: buffers handed out between pin_begin and pin_end belong to `graph` until
    // pin_release; reclaim, flush and trim never give a pinned buffer back to the driver
    void            pin_begin(uint64_t graph);
    void            pin_end() { pin_begin(0); }
    void            pin_release(uint64_t graph);
    // the stream's capture as the consumer declares it (1 capturing, 0 not), or -1: ask the driver
    void            declare_capture(int capturing);
    bool            has_pins() const { return !pins_.empty(); }
    ggml_cpool_kind kind() const { return kind_; }
    int             device() const { return device_; }
    // "CUDA pool[0]" or "HIP pool[1]", the prefix of this pool's log lines
    const char *    name() const;

  protected:
    static constexpr size_t OVERALLOCATE_FACTOR = 2;

    // the request and 1/look_ahead of it more (0: nothing more), rounded up to `rounding`
    static size_t with_look_ahead(const request & r, size_t look_ahead, size_t rounding) {
        return round_up(r.size + (look_ahead != 0 ? r.size / look_ahead : 0), rounding);
    }
    // the bytes a miss takes for a request: twice a growing one (OVERALLOCATE), but no more than
    // its limit, rounded up to `rounding`; any other with its look-ahead
    static size_t miss_bytes(const request & r, size_t look_ahead, size_t rounding) {
        if (!r.growing()) {
            return with_look_ahead(r, look_ahead, rounding);
        }
        const size_t doubled = OVERALLOCATE_FACTOR * r.size;
        return round_up(r.limit != 0 ? std::max(r.size, std::min(doubled, r.limit)) : doubled, rounding);
    }
    // after the driver refused `refused` bytes for a request: the next smaller size to ask for,
    // the request with its look-ahead, then the request alone (0: none is smaller). The doubling
    // and the look-ahead only spare later misses: they give way before the request fails
    static size_t fallback_bytes(const request & r, size_t refused, size_t look_ahead, size_t rounding) {
        const size_t ahead = with_look_ahead(r, look_ahead, rounding);
        const size_t exact = round_up(r.size, rounding);
        return ahead < refused ? ahead : exact < refused ? exact : 0;
    }
    // one line: `refused` bytes were refused for a request of `size`, which took `taken` instead
    void   log_fallback(size_t refused, size_t taken, size_t size) const;
    // after the driver refused an allocation for want of memory: the out-of-memory ladder
    // (recovery.h) over this pool's rungs; the status the caller gets
    status climb(recovery_steps & steps);

    // a driver call failed: its latched error is cleared (the status reports it) and the pool says why
    void driver_failed(ggml_cpool_log_level level, const char * fmt, ...) GCP_PRINTF(3, 4);
    // the same, for a failure that the caller's own lines report or that changes nothing
    void driver_failed() { drv_.clear_error(); }

    // Each kind's hit path (hit-path.h): `status do_alloc(const request & r, void ** ptr, size_t *
    // actual)`, with r.size > 0 and <= MAX_REQUEST, and on OK *actual >= r.size; `size_t
    // do_free(void * ptr, size_t actual) noexcept`, which frees a live buffer and never allocates
    // host memory (a free that could fail would lose its buffer), and returns the size the live
    // record holds for ptr: `actual` once it is freed, NOT_LIVE or another size when the kind keeps
    // the record (live_record::kind) and nothing was freed. A kind that keeps the record serves the
    // usual calls first, inlined where nothing else need be checked or recorded: `bool
    // serve_hit(size_t size, void ** ptr, size_t * actual)` for a request that does not grow, and
    // `bool serve_free(void * ptr, size_t actual) noexcept`, each false, with nothing changed, where
    // the whole path must serve the call
    static constexpr size_t NOT_LIVE = SIZE_MAX;
    // buffers handed out and not taken back, as the table records them (live_record::table)
    size_t                  live_count() const { return live_.size(); }
    // the same by whichever record is kept, and one of them (false: none); release_live frees them
    virtual size_t          live_buffers() const { return live_count(); }
    virtual bool            any_live(void ** ptr, size_t * size) const;

    // the driver memory this pool holds moved: keep reserved/peak/counters/generation exact
    void on_driver_alloc(size_t bytes);
    void on_driver_free(size_t bytes) {
        on_addresses_gone();
        on_released(bytes);
    }
    // addresses the pool handed out no longer reach memory (a graph using them must be
    // recaptured): the generation moves
    void           on_addresses_gone() { stats_.generation++; }
    // bytes the driver took back
    void           on_released(size_t bytes);
    // bytes held for reuse, from the pool's own structures
    virtual size_t cached_bytes() const = 0;

    // frees what is live at destruction (the owner forgot it), with one line, so nothing reaches
    // the driver's leak list
    void release_live();

    bool         pinned(const void * ptr) const { return pins_.count(ptr) != 0; }
    // the end of the highest pinned buffer, as an address (0 when none is pinned)
    uintptr_t    pinned_top() const;
    // whether the context's stream is being captured into a graph: no synchronize and no free
    // then (both are illegal during capture and would invalidate it)
    bool         capturing();
    // the same on a hit path: as the consumer declared it, where it did (declare_capture), which
    // spares the driver's query; what may synchronize or free asks capturing()
    bool         capturing_as_declared();
    // logs why `what` is not done while the context's stream is capturing
    void         log_capture_refusal(const char * what); // e.g. "trim refused"
    // some buffers lost their last pin
    virtual void on_unpinned() {}
    // the stream is about to change: what is queued for the old one goes there first
    virtual void on_stream_change() {}

    // the kind's own hit fields (kind_hit), on the hit line: a kind whose hit reads no more than
    // these bytes reads that line alone (the VMM pool)
    static constexpr size_t KIND_HIT_BYTES = 32;

    // the kind's hit fields, a trivially destructible T that the kind's constructor makes there
    template <class T> T & make_kind_hit() {
        static_assert(sizeof(T) <= KIND_HIT_BYTES && alignof(T) <= alignof(uint64_t), "the hit line holds it");
        static_assert(std::is_trivially_destructible<T>::value, "the pool never destroys it");
        return *new (hit_.kind) T{};
    }

    template <class T> T & kind_hit() { return *std::launder(reinterpret_cast<T *>(hit_.kind)); }

    template <class T> const T & kind_hit() const { return const_cast<pool *>(this)->kind_hit<T>(); }

    // after the vtable pointer, together: the table and what a capture query names (stream,
    // driver), for the kind that uses them on its hit path (async)
    int device_;

  private:
    live_set live_; // ptr -> actual size (live_record::table)

  protected:
    stream_t         stream_ = nullptr;
    driver &         drv_;
    ggml_cpool_stats stats_{}; // the rest of the statistics (its hit counts are hit_.counts)
    ggml_cpool_kind  kind_;

  private:
    // the ladder's transient retries: the last attempt's status; a failed one's error is cleared
    status retry_transient(recovery_steps & steps);
    void   pause_before_retry(int attempt) const; // attempt: 1 for the first retry

    // the whole of a kind's alloc and free (hit_path): alloc_as and free_as serve the usual call
    // and pass every other to alloc_whole and free_whole. Instantiated in the kind's own source;
    // each starts a cache line (said here: an explicit instantiation takes the declaration's)
    template <class Kind>
    GCP_LINE_ALIGNED static status alloc_as(pool & p, size_t size, uint32_t flags, void ** ptr, size_t * actual,
                                            size_t limit);
    template <class Kind>
    static status alloc_whole(pool & p, size_t size, uint32_t flags, void ** ptr, size_t * actual, size_t limit);
    template <class Kind> GCP_LINE_ALIGNED static status free_as(pool & p, void * ptr, size_t actual);
    template <class Kind> static status                  free_whole(pool & p, void * ptr, size_t actual);

    // a buffer of `actual` bytes was handed out
    void count_alloc(size_t actual) {
        hit_.counts.live_bytes += actual;
        hit_.counts.peak_live_bytes = std::max(hit_.counts.peak_live_bytes, hit_.counts.live_bytes);
    }

    // the line and status of an alloc with a bad argument (null output, zero or too large a size,
    // unknown flags)
    GCP_COLD status reject_alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual);
    // in pin mode: pins a buffer just recorded as live; may throw, and then give_back took it out
    // of the record and freed it through the kind's do_free, and the call hands nothing out (a hit
    // counted no hit)
    using kind_free = size_t (*)(pool &, void *, size_t) noexcept;
    GCP_COLD void   pin_new(void ** ptr, size_t * actual, uint64_t hits, kind_free give_back);
    // the line a rejected free logs: the record holds `recorded` for ptr (NOT_LIVE: nothing)
    GCP_COLD status reject_free(const void * ptr, size_t actual, size_t recorded) const;

    struct pin {
        uint32_t graphs; // graphs pinning the buffer
        size_t   size;
    };
    uint64_t                                          pinning_ = 0; // the graph pin_begin named
    std::unordered_map<const void *, pin>             pins_;
    std::unordered_map<uint64_t, std::vector<void *>> graphs_; // graph -> buffers it pinned
    mutable char                                      name_[32] = {};
    // the live pools, for observe_all
    pool *                                            prev_ = nullptr;
    pool *                                            next_ = nullptr;
    void                                              enroll();
    // allocations served that no kind counted as a hit: the statistics' allocs are these and the hits
    uint64_t                                          unhit_allocs_ = 0;

    static constexpr uint8_t PINNING            = 1; // between pin_begin and pin_end
    static constexpr uint8_t DECLARED           = 2; // the consumer declares its captures
    static constexpr uint8_t DECLARED_CAPTURING = 4; // and the stream is capturing, it says

  protected:
    // what a hit changes in the statistics; stats() reports them with the rest
    struct hit_counts {
        size_t   live_bytes      = 0;
        size_t   peak_live_bytes = 0;
        uint64_t hits            = 0;
    };
    // Everything a hit of ggml's pattern reads, on one line: between two calls an engine's kernel
    // launches evict the pool's lines, and each one a call touches is a miss. The kinds read the
    // counts and their own fields (kind_hit); the flags and the path are the pool's
    struct alignas(CACHE_LINE) hit_line {
        hit_path          path;
        uint8_t           flags = 0;
        std::atomic<bool> observed{ false };
        hit_counts        counts;
        alignas(uint64_t) unsigned char kind[KIND_HIT_BYTES];
    };
    static_assert(sizeof(hit_line) == CACHE_LINE, "a hit reads one line of the pool");
    hit_line hit_;
};

// each kind's, instantiated in its own source (hit-path.h), where the kind is complete
extern template status pool::alloc_as<pool_legacy>(pool &, size_t, uint32_t, void **, size_t *, size_t);
extern template status pool::alloc_as<pool_vmm>(pool &, size_t, uint32_t, void **, size_t *, size_t);
extern template status pool::alloc_as<pool_async>(pool &, size_t, uint32_t, void **, size_t *, size_t);
extern template status pool::free_as<pool_legacy>(pool &, void *, size_t);
extern template status pool::free_as<pool_vmm>(pool &, void *, size_t);
extern template status pool::free_as<pool_async>(pool &, void *, size_t);

inline bool pool::capturing_as_declared() {
    return (hit_.flags & DECLARED) != 0 ? (hit_.flags & DECLARED_CAPTURING) != 0 : capturing();
}

} // namespace gcp
