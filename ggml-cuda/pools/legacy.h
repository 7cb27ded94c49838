#pragma once
// Legacy pool: ggml's legacy pool, made recoverable. The whole policy:
// - a freed buffer is cached whole, never split or merged, up to MAX_CACHED_BUFFERS of them;
// - a request takes the smallest cached buffer that holds it (best fit; of one size, the last
//   used), unless it would waste more than max(request, WASTE_SLACK) bytes: then it misses;
// - a miss asks the driver for the request and 1/LOOK_AHEAD_DIVISOR (5%) more, rounded up to
//   ROUNDING; a growing request (OVERALLOCATE) for twice its size, never beyond its limit;
// - every buffer carries the tick of its last use: the clock ticks at every alloc and free;
// - a buffer that served a growing request is kept for growing requests alone while it holds the
//   latest one (the growth reserve, MAX_GROWING buffers); outgrown, it is the first to go back;
// - before a miss, what would take the pool past its headroom above the peak live bytes goes back,
//   outgrown buffers first, then the least recently used;
// - on a driver out-of-memory: synchronize, free the least recently used cached buffers until
//   RECLAIM_FACTOR times the request is freed, retry; free every cached buffer, retry; ask for the
//   request's own size; then the ladder's transient retries (recovery.h); then OUT_OF_MEMORY;
// - the plain kind skips the LRU step; a HIP build with several GPUs gets it (context.cpp).
// A captured graph's pinned buffers never go back (pool.h). The buffers handed out are the
// pool's record of live buffers: a free finds its own, or is refused.

#include "pool.h"

#include <vector>

namespace gcp {

class pool_legacy final : public pool {
  public:
    static constexpr size_t MAX_CACHED_BUFFERS = 256; // ggml's: a graph's scratch, and a bound
    static constexpr size_t LOOK_AHEAD_DIVISOR = 20;
    static constexpr size_t ROUNDING           = 256;
    static constexpr size_t RECLAIM_FACTOR     = 3; // room for the next few requests too
    static constexpr size_t MAX_GROWING        = 8; // a context's K and V conversions, and a few more
    static constexpr size_t WASTE_SLACK        = 16 * MiB;

    struct options {
        bool     lru;          // LRU reclaim before the flush (false: the plain kind)
        uint32_t headroom_pct; // GGML_CPOOL_HEADROOM_UNLIMITED: keep every cached buffer
    };

    pool_legacy(driver & drv, int device, ggml_cpool_kind kind, stream_t stream, options opt);
    ~pool_legacy() override;

    status trim() override;

    // the largest buffer that may serve a request of n bytes (the waste bound)
    static size_t most_for(size_t n) { return n + std::max(n, WASTE_SLACK); }

  protected:
    friend class pool; // calls do_alloc and do_free by this class's name
    status                do_alloc(const request & r, void ** ptr, size_t * actual) final;
    bool                  do_free(void * ptr, size_t actual) noexcept final;
    std::optional<size_t> live_size(const void * ptr) const override;
    bool                  any_live(void ** ptr, size_t * size) const override;
    size_t                cached_bytes() const override;

  private:
    enum class use : uint8_t {
        cached,      // any request may take it
        growth,      // cached for growing requests alone: the growth reserve
        out,         // handed out
        out_growing, // handed out to a growing request: into the reserve once freed, if it still fits
    };
    struct buffer {
        size_t   size;
        void *   ptr;
        uint64_t last_use; // the clock when it was last handed out or cached
        use      state;
    };
    // what release_oldest gives back: unpinned ordinary buffers (headroom); the reserve's too; all
    enum class scope { ordinary, unpinned, everything };
    class steps; // the rungs of the out-of-memory ladder for one miss

    size_t              end() const { return buffers_.size(); }
    // the first buffer of at least n bytes
    size_t              first_of(size_t n) const;
    // the smallest buffer in `state` that may serve n bytes, the newest of its size (end(): none)
    size_t              best_fit(size_t n, use state) const;
    // ptr's buffer, handed out at `size` (end(): none)
    size_t              find_out(const void * ptr, size_t size) const;
    size_t              count(use state) const;
    // the best fit for a growing request, the reserve first, handed out (end(): none)
    size_t              take_growing(const request & r);
    // a request no cached buffer serves
    GCP_NOINLINE status miss(const request & r, void ** ptr, size_t * actual);
    // a buffer freed past the cache's bound goes back to the driver, unless pinned or captured
    GCP_COLD void       release_over_bound(size_t i) noexcept;
    // the ladder's rungs: synchronize, LRU reclaim and flush, a retry after each (*how: what was
    // tried, null where a line said why nothing could be); the request at smaller sizes
    status              reclaim(size_t bytes, void ** ptr, const char ** how);
    status              fall_back(const request & r, size_t * bytes, void ** ptr);
    void                keep_within_headroom(size_t bytes); // before a miss takes `bytes` more
    bool                release(size_t i);                  // a cached buffer to the driver; false if refused
    // cached buffers in `which`, least recently used first, until `target` bytes went back
    size_t              release_oldest(size_t target, scope which);

    // An outgrown buffer's stamp counts up from 0, the others' from FIRST_USE: outgrown ones go back first
    static constexpr uint64_t FIRST_USE = uint64_t(1) << 62;

    // what a hit reads, on a line of its own
    alignas(CACHE_LINE)
        std::vector<buffer, line_aligned_allocator<buffer>> buffers_; // ascending sizes, cached and out alike
    uint64_t clock_      = FIRST_USE;
    size_t   last_taken_ = 0; // where the last hit's buffer was
    size_t   cached_     = 0; // buffers cached, the reserve's included
    size_t   need_       = 0; // the latest growing request
    static_assert(sizeof(buffers_) + 4 * sizeof(uint64_t) <= CACHE_LINE, "buffers_ to need_ share a line");
    uint64_t outgrown_ = 0;
    options  opt_;
};

} // namespace gcp
