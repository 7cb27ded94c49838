#pragma once
// Legacy pool: caches whole freed buffers and serves best fit. On a driver out-of-memory it
// frees least-recently-used cached buffers (3x the request), retries, then flushes everything
// and retries once. Kind PLAIN skips the LRU step (flush and retry only).

#include "pool.h"

#include <vector>

namespace gcp {

class pool_legacy final : public pool {
  public:
    // ggml's slot count: enough for every scratch buffer of a graph, bounded so lookups stay cheap
    static constexpr size_t MAX_CACHED_BUFFERS = 256;
    // a miss allocates 5% more so a slightly larger request next time still hits
    static constexpr size_t LOOK_AHEAD_DIVISOR = 20;
    static constexpr size_t ROUNDING           = 256;
    // LRU reclaim frees this multiple of the failed allocation, so the retry can also leave
    // room for the next few requests instead of failing again one buffer later
    static constexpr size_t RECLAIM_FACTOR     = 3;

    pool_legacy(driver & drv, int device, ggml_cpool_kind kind, stream_t stream) : pool(drv, device, kind, stream) {}
    ~pool_legacy() override;

    status trim() override;

  protected:
    status do_alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual) override;
    void   do_free(void * ptr, size_t actual) noexcept override;
    // every buffer handed out may end up in the cache (pinned, capturing, or the driver refused it)
    void   room_for_frees(size_t buffers) override { reserve_at_least(cache_, cache_.size() + buffers); }
    size_t cached_bytes() const override { return cached_; }

  private:
    struct buffer {
        void *   ptr;
        size_t   size;
        uint64_t last_use; // pool clock when it was freed into the cache
    };

    status recover(size_t bytes, void ** ptr); // after a driver out-of-memory
    size_t release(size_t index);              // give one cached buffer back; returns bytes freed
    size_t reclaim_lru(size_t target);         // oldest first until target freed
    size_t flush(bool keep_pinned = true);     // everything cached (but what graphs still use)

    std::vector<buffer> cache_;
    size_t              cached_ = 0;
    uint64_t            clock_  = 0; // ticks once per alloc and free: a total order of uses
};

} // namespace gcp
