#pragma once
// Legacy pool: caches whole freed buffers and serves best fit. On a driver out-of-memory it
// frees least-recently-used cached buffers (3x the request), retries, then flushes everything
// and retries once (option lru off: flush and retry only, the plain kind). What it holds stays
// near what it has needed at once: before a miss takes more from the driver, least-recently-used
// cached buffers go back until the pool would hold at most `headroom_pct` percent above its peak
// live bytes, so buffers that a growing request has outgrown are not stranded.

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
    static constexpr size_t RECLAIM_FACTOR     = 3;

    struct options {
        bool     lru;          // LRU reclaim before the flush (false: the plain kind)
        uint32_t headroom_pct; // GGML_CPOOL_HEADROOM_UNLIMITED: keep every cached buffer
    };

    pool_legacy(driver & drv, int device, ggml_cpool_kind kind, stream_t stream, options opt) :
        pool(drv, device, kind, stream),
        opt_(opt) {}
    ~pool_legacy() override;

    status trim() override;

  protected:
    status do_alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual) override;
    void   do_free(void * ptr, size_t actual) noexcept override;
    size_t cached_bytes() const override { return bins_.bytes(); }

  private:
    status recover(size_t bytes, void ** ptr);      // after a driver out-of-memory
    void   keep_within_headroom(size_t bytes);      // before a miss takes `bytes` more
    bool   release(const size_bins::buffer & b);    // one cached buffer to the driver; false if refused
    // cached buffers, least recently used first, until `target` bytes went back; pinned ones
    // (a captured graph still uses them) stay where keep_pinned
    size_t release_oldest(size_t target, bool keep_pinned = true);

    options   opt_;
    size_bins bins_;
    uint64_t  clock_ = 0; // ticks once per alloc and free: a total order of uses
};

} // namespace gcp
