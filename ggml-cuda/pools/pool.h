#pragma once
// What every pool kind shares: the argument checks and exact statistics, the stream with its
// capture state, the pins of CUDA graphs (pins.h). A hit is an allocation served
// without asking the driver for memory; any other, served after the driver was asked (refused or
// not), is a miss. Each kind keeps the record of its live buffers, so a bad free is a status; a
// free never allocates. The out-of-memory ladder is each kind's own chain of rungs (recovery.h).

#include "../drivers/driver.h"
#include "../neighbours/neighbours.h"
#include "../support/log.h"
#include "observed.h"
#include "pins.h"

#include <type_traits>

namespace gcp {

// the most a pool may hold for `peak` live bytes with `headroom_pct` percent above them;
// GGML_CPOOL_HEADROOM_UNLIMITED, or a budget past SIZE_MAX, is SIZE_MAX (no bound)
size_t headroom_budget(size_t peak, uint32_t headroom_pct);

// a buffer and its size
struct held_buffer {
    void * ptr;
    size_t size;
};

// what a caller asks for
struct request {
    size_t   size;
    uint32_t flags;
    size_t   limit; // a growing request's bound: the most the buffer can ever need (0: none)

    // OVERALLOCATE: the caller expects this request to keep growing
    bool growing() const { return (flags & GGML_CPOOL_ALLOC_OVERALLOCATE) != 0; }
};

// Pools start a cache line: a hit reads the vtable pointer's line (hot_), then its kind's own. Each
// call holds the pool's turn, so that the responder gives from it between calls (neighbours.h)
class alignas(CACHE_LINE) pool : public neighbours::giver {
  public:
    // stream: the one the consumer launches this pool's kernels on (nullptr: the device as a whole)
    pool(driver & drv, int device, ggml_cpool_kind kind, stream_t stream);
    virtual ~pool()                = default;
    pool(const pool &)             = delete;
    pool & operator=(const pool &) = delete;

    // actual >= size; OVERALLOCATE asks for 2x headroom, never beyond `limit` (0: no bound). Kind:
    // the pool's class where the caller knows it (the C API), whose calls then need no virtual call
    template <class Kind = pool>
    status alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual, size_t limit = 0);
    // actual must be the size alloc returned
    template <class Kind = pool> status free(void * ptr, size_t actual);

    // returns what is cached to the driver; UNSUPPORTED while the stream captures
    status           trim();
    ggml_cpool_stats stats() const;
    // device memory the pool holds for itself (kept whole when the pool is quarantined)
    virtual size_t   held_bytes() const { return stats_.reserved_bytes; }
    bool             observed() const { return hot_.observed.on(); }
    void             add_call_ns(uint64_t ns) { stats_.call_ns += ns; }
    uint64_t         driver_calls() const { return drv_.calls(); }

    // moves the pool to another stream once the current one is done; UNSUPPORTED while it captures
    status          set_stream(stream_t stream);
    stream_t        stream() const { return stream_; }
    // forgets the stream, which its owner may destroy now: synchronize and free act on the device
    void            detach_stream() { stream_ = nullptr; }
    // waits for the work queued on the pool's stream (on the whole device where it has none)
    status          synchronize();
    void            declare_capture(int capturing) { hot_.declared = int8_t(capturing < 0 ? -1 : capturing != 0); }
    // how long a refused allocation waits for memory to come back (recovery.h)
    void            set_wait_ms(uint32_t ms) { wait_ms_ = ms; }
    // buffers handed out from pin_begin(graph) to pin_begin(0) are the graph's until pin_release
    void            pin_begin(uint64_t graph);
    void            pin_release(uint64_t graph);
    bool            has_pins() const { return !pins_.empty(); }
    ggml_cpool_kind kind() const { return hot_.kind; }
    int             device() const { return device_; }
    const char *    name() const { return name_; } // "CUDA pool[0]" or "HIP pool[1]", the prefix of its log lines

    neighbours::seat & seat() { return seat_; }
    // the responder's, holding the turn: all its idle memory, as a trim gives it, whatever the ask's
    // size (an asker's next requests need it too); none while the stream captures
    size_t             give_idle(size_t want) noexcept final;

  protected:
    friend class ladder;
    static constexpr size_t OVERALLOCATE_FACTOR = 2;

    // A kind's own calls. do_alloc: a valid request (size > 0, at most MAX_REQUEST), *actual >=
    // size on OK; it calls asking() before it asks the driver for memory. do_free: frees ptr when
    // live at exactly `actual` bytes, never allocating; false, with nothing freed, otherwise.
    // do_trim: trim outside a capture
    virtual status do_alloc(const request & r, void ** ptr, size_t * actual) = 0;
    virtual bool   do_free(void * ptr, size_t actual) noexcept               = 0;
    virtual status do_trim()                                                 = 0;
    // the live buffer at ptr (nullptr: any one) into *out; false where there is none
    virtual bool   live_buffer(const void * ptr, held_buffer * out) const = 0;
    virtual void   on_unpinned() {}      // some buffers lost their last pin
    virtual void   on_stream_change() {} // what is queued for the old stream goes there first

    // reserved but not live (an async pool's reserved is the device pool's, at least its live bytes)
    size_t cached_bytes() const { return stats_.reserved_bytes - std::min(stats_.reserved_bytes, hot_.live_bytes); }

    // the allocation under way asks the driver for memory: a miss
    void          asking() { hot_.flags |= ASKED; }
    // returns st; where OK, the line of a request of `size` served at *actual bytes, after `refused` were
    status        fell_back(status st, size_t refused, size_t size, const size_t * actual) const;
    // the bytes a miss takes for a request, rounded up to `rounding`: twice a growing one
    // (OVERALLOCATE), but no more than its limit; any other with `ahead` bytes more
    static size_t miss_bytes(const request & r, size_t ahead, size_t rounding);
    // the driver memory this pool holds moved: keep reserved/peak/counters/generation exact
    void          on_driver_alloc(size_t bytes);
    void          on_driver_free(size_t bytes) { on_addresses_gone(), on_released(bytes); }
    // addresses the pool handed out no longer reach memory: a graph using them must be recaptured
    void          on_addresses_gone() { stats_.generation++; }
    void          on_released(size_t bytes); // bytes the driver took back
    void          free_live();               // at destruction: what the owner forgot, with one line
    bool          pinned(const void * ptr) const { return pins_.holds(ptr); }
    uintptr_t     pinned_top() const { return pins_.top(); }
    // whether the stream captures a graph, as the driver says (unknown: yes, an illegal call would break it)
    bool          capturing() const;
    // the consumer's word where it gave one, sparing the driver's query on a hit path
    bool          capturing_as_declared() const { return hot_.declared >= 0 ? hot_.declared != 0 : capturing(); }
    void          say(ggml_cpool_log_level level, const char * fmt, ...) const GCP_PRINTF(3, 4);

    static constexpr uint8_t PINNING = 1; // a graph is open in pins_
    static constexpr uint8_t ASKED   = 2; // the allocation under way asked the driver for memory

    // what every hit reads and writes, first after the vtable pointer: between two calls an
    // engine's kernel launches evict the pool, and each line a call touches is a miss
    struct hot_fields {
        ggml_cpool_kind          kind;
        uint8_t                  flags    = 0;
        std::atomic<int8_t>      declared = -1; // declare_capture's: 1 capturing, 0 not, -1: ask the driver
        observed_flag            observed;
        mutable neighbours::turn turn;
        size_t                   live_bytes      = 0;
        size_t                   peak_live_bytes = 0;
        uint64_t                 allocs          = 0;
    };
    static_assert(sizeof(void *) + sizeof(hot_fields) <= CACHE_LINE, "the vtable pointer and hot_ share a line");
    hot_fields hot_;

    int              device_;
    stream_t         stream_ = nullptr;
    driver &         drv_;
    ggml_cpool_stats stats_{}; // the rest of the statistics

  private:
    // after an allocation that missed, failed or is pinned: counts and pins it (cold)
    GCP_COLD status settle(status st, void ** ptr, size_t * actual);
    GCP_COLD status reject_alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual);
    GCP_COLD status reject_free(const void * ptr, size_t actual) const;
    bool            refused_in_capture(const char * what) const; // while capturing: its line, e.g. "trim refused"

    uint32_t         wait_ms_ = 0;
    pins             pins_;
    char             name_[32] = {};
    neighbours::seat seat_{ *this, hot_.turn, stats_ };
};

template <class Kind> status pool::alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual, size_t limit) {
    // one test for every bad argument (size - 1 wraps for a zero size); the cold path says which
    if (GCP_UNLIKELY(ptr == nullptr || actual == nullptr || size - 1 >= MAX_REQUEST ||
                     (flags & ~GGML_CPOOL_ALLOC_OVERALLOCATE) != 0)) {
        return reject_alloc(size, flags, ptr, actual);
    }
    neighbours::owner_call own(hot_.turn);
    *ptr    = nullptr;
    *actual = 0;
    status st;
    if constexpr (std::is_same_v<Kind, pool>) {
        st = do_alloc(request{ size, flags, limit }, ptr, actual);
    } else {
        st = static_cast<Kind *>(this)->Kind::do_alloc(request{ size, flags, limit }, ptr, actual);
    }
    if (GCP_UNLIKELY(st != OK || hot_.flags != 0)) {
        return settle(st, ptr, actual);
    }
    hot_.allocs++;
    hot_.live_bytes += *actual;
    hot_.peak_live_bytes = std::max(hot_.peak_live_bytes, hot_.live_bytes);
    return OK;
}

inline bool pool::capturing() const {
    bool active = false;
    return stream_ != nullptr && (drv_.stream_capturing(device_, stream_, &active) != OK || active);
}

template <class Kind> status pool::free(void * ptr, size_t actual) {
    neighbours::owner_call own(hot_.turn);
    bool                   freed;
    if constexpr (std::is_same_v<Kind, pool>) {
        freed = do_free(ptr, actual);
    } else {
        freed = static_cast<Kind *>(this)->Kind::do_free(ptr, actual);
    }
    if (GCP_UNLIKELY(!freed)) {
        return reject_free(ptr, actual);
    }
    hot_.live_bytes -= actual;
    return OK;
}

} // namespace gcp
