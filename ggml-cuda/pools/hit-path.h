#pragma once
// A kind's whole alloc and free (pool::hit_path): the checks, the live table and the counts every
// kind shares, around the kind's do_alloc and do_free, compiled into one function a call.
// Included only by the kind's own source, which defines do_alloc and do_free, so that they inline,
// and instantiates alloc_as and free_as for pool::alloc and pool::free (GCP_HIT_PATH_OF): between
// two calls an engine's kernel launches evict the pool's code as well as its data, and a call
// through four functions misses on each one's lines.

#include "pool.h"

namespace gcp {

// each starts a cache line, so that the few lines of its hot part are as few as they can be
template <class Kind>
GCP_LINE_ALIGNED status pool::alloc_as(pool & p, size_t size, uint32_t flags, void ** ptr, size_t * actual,
                                       size_t limit) {
    // the usual call: a request of a valid size that does not grow, outside pin mode, which a kind
    // that keeps its own record serves from what it holds (serve_hit), so that nothing else is
    // checked or recorded. Every other call goes the whole way, out of line: this part then needs
    // no stack frame, and its code is a few lines
    if constexpr (Kind::RECORD == live_record::kind) {
        if (GCP_LIKELY((flags | (p.hit_.flags & PINNING)) == 0 && ptr != nullptr && actual != nullptr &&
                       size - 1 < MAX_REQUEST) &&
            static_cast<Kind &>(p).serve_hit(size, ptr, actual)) {
            p.hit_.counts.hits++;
            p.count_alloc(*actual);
            return OK;
        }
    }
    return alloc_whole<Kind>(p, size, flags, ptr, actual, limit);
}

template <class Kind>
GCP_NOINLINE status pool::alloc_whole(pool & p, size_t size, uint32_t flags, void ** ptr, size_t * actual,
                                      size_t limit) {
    // one test for every bad argument (size - 1 wraps for a zero size); the cold path says which
    if (ptr == nullptr || actual == nullptr || size - 1 >= MAX_REQUEST ||
        (flags & ~GGML_CPOOL_ALLOC_OVERALLOCATE) != 0) {
        return p.reject_alloc(size, flags, ptr, actual);
    }
    *ptr    = nullptr;
    *actual = 0;
    // a free must never need host memory (failing, it would lose its buffer): room for every
    // live buffer, this one included, to be recorded is made before anything is taken (a kind
    // makes its own room in do_alloc)
    constexpr bool table = Kind::RECORD == live_record::table; // the kind's own, at compile time
    if (table) {
        p.live_.reserve(p.live_.size() + 1);
    }
    const uint64_t hits = p.hit_.counts.hits;
    status         st   = static_cast<Kind &>(p).do_alloc(request{ size, flags, limit }, ptr, actual);
    if (st != OK) {
        p.stats_.oom_returned += st == OUT_OF_MEMORY;
        return st;
    }
    if (table) {
        p.live_.insert(*ptr, *actual); // within the room made above
    }
    if ((p.hit_.flags & PINNING) != 0) {
        p.pin_new(ptr, actual, hits, [](pool & q, void * b, size_t n) noexcept {
            if (Kind::RECORD == live_record::table) {
                q.live_.erase(b);
            }
            return static_cast<Kind &>(q).do_free(b, n);
        });
    }
    p.unhit_allocs_ += p.hit_.counts.hits == hits; // after pin_new, which may take the hit back
    p.count_alloc(*actual);
    return OK;
}

template <class Kind> GCP_LINE_ALIGNED status pool::free_as(pool & p, void * ptr, size_t actual) {
    // the usual free, of a buffer the kind takes back on its hit fields (serve_free); every other
    // goes the whole way, out of line, as an allocation does
    if constexpr (Kind::RECORD == live_record::kind) {
        if (GCP_LIKELY(static_cast<Kind &>(p).serve_free(ptr, actual))) {
            p.hit_.counts.live_bytes -= actual;
            return OK;
        }
    }
    return free_whole<Kind>(p, ptr, actual);
}

template <class Kind> GCP_NOINLINE status pool::free_whole(pool & p, void * ptr, size_t actual) {
    if (Kind::RECORD == live_record::table) {
        const size_t at = p.live_.slot_of(ptr);
        if (at == live_set::NONE || p.live_.size_at(at) != actual) {
            return p.reject_free(ptr, actual, at == live_set::NONE ? NOT_LIVE : p.live_.size_at(at));
        }
        p.live_.erase_at(at);
    }
    // frees without fail (alloc made room for this buffer to come back) what the record holds
    const size_t recorded = static_cast<Kind &>(p).do_free(ptr, actual);
    if (recorded != actual) {
        return p.reject_free(ptr, actual, recorded);
    }
    p.hit_.counts.live_bytes -= actual;
    return OK;
}

} // namespace gcp

// Kind's alloc and free, for pool::alloc and pool::free to call; in gcp, in the kind's source
#define GCP_HIT_PATH_OF(Kind)                                                                  \
    template status pool::alloc_as<Kind>(pool &, size_t, uint32_t, void **, size_t *, size_t); \
    template status pool::free_as<Kind>(pool &, void *, size_t)
