#pragma once
// Legacy pool: caches whole freed buffers and serves best fit. On a driver out-of-memory it
// frees least-recently-used cached buffers (3x the request), retries, then flushes everything
// and retries once (option lru off: flush and retry only, the plain kind), then asks for the
// request without its doubling or look-ahead before it gives up. What it holds stays
// near what it has needed at once (the headroom and the growth reserve, growth-reserve.h): before
// a miss takes more from the driver, cached buffers that a growing request has outgrown, then
// least-recently-used ones, go back (out-of-memory recovery, too, takes outgrown buffers first).

#include "growth-reserve.h"
#include "pool.h"
#include "size-bins.h"

namespace gcp {

class pool_legacy final : public pool {
  public:
    // ggml's slot count: enough for every scratch buffer of a graph, bounded so a full cache
    // gives memory back rather than growing without end
    static constexpr size_t MAX_CACHED_BUFFERS = 256;
    // a miss allocates 5% more so a slightly larger request next time still hits
    static constexpr size_t LOOK_AHEAD_DIVISOR = 20;
    static constexpr size_t ROUNDING           = 256;
    // LRU reclaim frees this multiple of the failed allocation, so the retry can also leave
    // room for the next few requests instead of failing again one buffer later
    static constexpr size_t RECLAIM_FACTOR = 3;

    struct options {
        bool     lru;          // LRU reclaim before the flush (false: the plain kind)
        uint32_t headroom_pct; // GGML_CPOOL_HEADROOM_UNLIMITED: keep every cached buffer
    };

    pool_legacy(driver & drv, int device, ggml_cpool_kind kind, stream_t stream, options opt);
    ~pool_legacy() override;

    status trim() override;

  protected:
    // who records the buffers out (pool::live_record)
    static constexpr live_record RECORD = live_record::kind; // the bins

    friend class pool; // calls the hit path (hit-path.h)
    // a request that does not grow, served by a slot without a search; false, with nothing
    // changed, where it needs more
    GCP_HIT_PATH bool   serve_hit(size_t size, void ** ptr, size_t * actual);
    GCP_HIT_PATH status do_alloc(const request & r, void ** ptr, size_t * actual);
    // a free back to its slot, on the hit line; false, with nothing changed, otherwise
    GCP_HIT_PATH bool   serve_free(void * ptr, size_t actual) noexcept;
    GCP_HIT_PATH size_t do_free(void * ptr, size_t actual) noexcept;
    size_t              cached_bytes() const override;
    // the bins record what is out too (size-bins.h)
    size_t              live_buffers() const override;
    bool                any_live(void ** ptr, size_t * size) const override;

  private:
    // out of line, so that the hit paths stay short: a request no cached buffer holds; a free
    // that may not go to the cache (a growing buffer, or the cache is full), false when it may
    GCP_COLD status miss(const request & r, void ** ptr, size_t * actual);
    GCP_COLD bool   set_aside(size_bins::out_ref at, void * ptr, size_t actual) noexcept;
    // the best fit for a growing request (the reserve first), held for the growth; false when
    // nothing cached holds it. Out of line: a few requests a step grow
    GCP_COLD bool   take_growing(const request & r, size_bins::buffer * hit);

    // what release_oldest may give back: cached buffers outside the growth reserve that no
    // captured graph pins (the headroom rule); every unpinned one (out-of-memory recovery, trim);
    // every one (destruction)
    enum class scope { ordinary, unpinned, everything };

    class steps; // the rungs of the out-of-memory ladder (recovery.h) for one miss
    // the ladder's give_back: synchronize, then reclaim, flush, a retry after each; on
    // OUT_OF_MEMORY *how says what was tried, and stays null where a line said why nothing could be
    status give_back(size_t bytes, void ** ptr, const char ** how);
    // after the driver refused *bytes for r: the request at the smaller sizes fallback_bytes
    // gives, until one is taken (*bytes: the last size asked for, whose room the bins keep)
    status fall_back(const request & r, size_t * bytes, void ** ptr);
    void   keep_within_headroom(size_t bytes);   // before a miss takes `bytes` more
    bool   release(const size_bins::buffer & b); // one cached buffer to the driver; false if refused
    // cached buffers in `which`, least recently used first, until `target` bytes went back
    size_t release_oldest(size_t target, scope which);
    size_t cached_count() const { return bins_.count() + reserve_.count(); }
    // whether the cache holds its bound of buffers (the bins' count first: the reserve's lies on
    // another line, and matters only near the bound)
    bool   cache_full() const;
    // a growing request of `size`: reserve buffers it has outgrown become ordinary cached ones
    void   note_growth(size_t size);
    // the best fit in the reserve, counted out, for a growing request or not (false when none
    // holds the request)
    bool   take_reserved(size_t size, bool growing, size_bins::buffer * hit);
    // a request that is not growing, refused by the driver: a reserve buffer that holds it
    // serves it rather than the memory going back in the reclaim that would follow (false: none)
    bool   serve_from_reserve(size_t size, size_t bytes, void ** ptr, size_t * actual);

    // a cached buffer's stamp orders the give-backs (release_oldest). A buffer a growing request
    // has outgrown is stamped from a count of its own below FIRST_USE, so it goes back before any
    // buffer a request has used, however recently the growing buffer itself was used: nothing
    // asks for it again, while a scratch freed just before it (ggml frees in reverse order) is
    // asked for again in the next step
    static constexpr uint64_t FIRST_USE = uint64_t(1) << 62;

    // the hit path's fields first, from a cache line of their own (pool.h says why)
    alignas(CACHE_LINE) uint64_t clock_ = FIRST_USE; // ticks once per alloc and free: a total order of uses
    size_bins      bins_;
    growth_reserve reserve_;
    options        opt_;
    uint64_t       outgrown_ = 0; // ticks once per outgrown buffer, oldest outgrown first
};

inline bool pool_legacy::cache_full() const {
    return bins_.count() + growth_reserve::MAX_GROWING >= MAX_CACHED_BUFFERS && cached_count() >= MAX_CACHED_BUFFERS;
}

} // namespace gcp
