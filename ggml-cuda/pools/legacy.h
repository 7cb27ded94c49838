#pragma once
// Legacy pool: ggml's legacy pool, made recoverable. The whole policy, in the code's order:
//  1. every buffer carries the tick of its last use: the clock ticks at every alloc and free;
//  2. a request takes the smallest cached buffer that holds it, the newest of its size (best fit),
//     but none over n + max(n, WASTE_SLACK) bytes for n: one made for a far larger tensor misses;
//  3. a growing request (OVERALLOCATE) takes a growth buffer first, whatever its size, then an
//     ordinary buffer; a growth buffer that no longer holds the latest growing request is outgrown:
//     ordinary again, and the first to go back;
//  4. before a miss, what would take the pool past its headroom above the peak live bytes goes back:
//     it synchronizes first (queued kernels may use cached buffers), then outgrown buffers, then the
//     least recently used; it skips growth buffers, and does nothing while the stream captures;
//  5. a miss asks the driver for the request and 1/LOOK_AHEAD_DIVISOR (5%) more where it outgrew a
//     buffer the pool holds by at most that, else at most LOOK_AHEAD_MAX more, rounded up to
//     ROUNDING; a growing request for twice its size, never beyond its limit;
//  6. on a driver out-of-memory (recovery.h): a growth buffer that holds an ordinary request serves
//     it, within the waste bound; else synchronize; with nothing cached, retry once; else free the
//     least recently used cached buffers, growth buffers too, until RECLAIM_FACTOR times the request
//     went back, retry, free every cached buffer, retry (the plain kind skips the LRU step; a HIP
//     build with several GPUs gets it, context.cpp); then the request without its look-ahead or
//     doubling; the transient retries; the wait; then OUT_OF_MEMORY;
//  7. a freed buffer is cached whole, never split or merged: a growth buffer while it holds the
//     latest growing request (MAX_GROWING of them), else an ordinary one; past MAX_CACHED_BUFFERS it
//     goes back to the driver, unless a graph pins it or the stream captures;
//  8. a buffer the driver would not take back stays cached, even past the bound, and is tried again;
//  9. trim gives every cached buffer that no graph pins back to the driver.
// The buffers handed out are the pool's record of live buffers: a free finds its own, or is refused.

#include "pool.h"

#include <vector>

namespace gcp {

class pool_legacy final : public pool {
  public:
    static constexpr size_t MAX_CACHED_BUFFERS = 256; // ggml's: a graph's scratch, and a bound
    static constexpr size_t LOOK_AHEAD_DIVISOR = 20;
    static constexpr size_t LOOK_AHEAD_MAX     = 2 * MiB; // a size that does not grow gains nothing by more
    static constexpr size_t ROUNDING           = 256;
    static constexpr size_t RECLAIM_FACTOR     = 3;   // room for the next few requests too
    static constexpr size_t MAX_GROWING        = 8;   // a context's K and V conversions, and a few more
    static constexpr size_t WASTE_SLACK        = GiB; // above any step's scratch, below a tensor of its own

    struct options {
        bool     lru;          // LRU reclaim before the flush (false: the plain kind)
        uint32_t headroom_pct; // GGML_CPOOL_HEADROOM_UNLIMITED: keep every cached buffer
    };

    pool_legacy(driver & drv, int device, ggml_cpool_kind kind, stream_t stream, options opt);
    ~pool_legacy() override;

  protected:
    friend class pool; // calls do_alloc and do_free by this class's name
    status do_alloc(const request & r, void ** ptr, size_t * actual) final;
    bool   do_free(void * ptr, size_t actual) noexcept final;
    status do_trim() override;
    bool   live_buffer(const void * ptr, held_buffer * out) const override;

  private:
    // the states handed out follow the cached ones
    enum class use : uint8_t {
        ordinary,    // cached for any request
        growth,      // cached for growing requests alone
        out,         // handed out
        out_growing, // handed out to a growing request: a growth buffer once freed, if it still holds the latest
    };
    struct buffer {
        size_t   size;
        void *   ptr;
        uint64_t last_use; // the clock when it was last handed out or cached
        use      state;
    };

    size_t                end() const { return hit_.buffers.size(); }
    size_t                cached() const { return hit_.ordinary + growth_; }
    static constexpr auto by_size = [](const buffer & b, size_t n) { return b.size < n; }; // inlined, unlike a pointer
    // the best fit for r among the buffers cached as `from`, handed out; false when none holds it.
    // Inlined: a frame of its own costs a hit a stack line
    GCP_INLINE bool       take(const request & r, use from, void ** ptr, size_t * actual);
    GCP_NOINLINE status   alloc_growing(const request & r, void ** ptr, size_t * actual); // growth buffers first
    GCP_NOINLINE status   miss(const request & r, void ** ptr, size_t * actual);
    // the ladder's reclaim rungs: synchronize, LRU reclaim then flush, a retry after each; `how`: what was tried
    bool                  reclaim(class ladder & l, const char ** how);
    void                  keep_within_headroom(size_t bytes);    // before a miss takes `bytes` more
    bool                  release(size_t i);                     // a cached buffer to the driver; false if refused
    GCP_COLD void         release_over_bound(size_t i) noexcept; // one freed past MAX_CACHED_BUFFERS
    // unpinned cached buffers (growth: growth buffers too), least recently used first, until `target` bytes went back
    size_t                release_oldest(size_t target, bool growth);

    // An outgrown buffer's stamp counts up from 0, the others' from FIRST_USE: outgrown ones go back first
    static constexpr uint64_t FIRST_USE = uint64_t(1) << 62;

    // what a hit reads and writes, on a line of its own
    struct hit_fields {
        std::vector<buffer, line_aligned_allocator<buffer>> buffers; // ascending sizes, cached and out alike
        uint64_t                                            clock = FIRST_USE;
        size_t last_taken = 0; // where the last hit's buffer was: ggml frees it first
        size_t ordinary   = 0; // buffers cached for any request
    };
    static_assert(sizeof(hit_fields) <= CACHE_LINE, "a hit reads one line of the kind");
    alignas(CACHE_LINE) hit_fields hit_;

    size_t   growth_   = 0; // growth buffers
    size_t   need_     = 0; // the latest growing request
    uint64_t outgrown_ = 0;
    options  opt_;
};

} // namespace gcp
