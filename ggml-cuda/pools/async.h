#pragma once
// Async pool: the driver's stream-ordered allocator (cudaMallocAsync / cudaFreeAsync on the pool's
// stream, from the device's default pool), kept warm by warm_record. Live bytes are this pool's
// own; reserved and cached come from the device pool, which every async context on the device
// shares. The buffers the stream freed last are handed out again first (reuse-cache.h).
// A capture is served from buffers held outside any graph (cudaMalloc, legal in a relaxed-mode
// capture): a stream-ordered allocation would become a memory node, and cudaGraphExecUpdate
// refuses graphs with those, so ggml would instantiate its graph again at every change. Those
// buffers are kept for the next capture (best fit), and go back at trim and destruction.

#include "pool.h"
#include "reuse-cache.h"

#include <memory>
#include <vector>

namespace gcp {

class pool_async final : public pool {
  public:
    // headroom_pct: what the device pool may hold beyond the most it has had in use (pool.h)
    pool_async(std::shared_ptr<driver> drv, int device, stream_t stream, uint32_t headroom_pct);
    ~pool_async() override;

  protected:
    friend class pool; // calls do_alloc and do_free by this class's name
    status do_alloc(const request & r, void ** ptr, size_t * actual) final;
    bool   do_free(void * ptr, size_t actual) noexcept final;
    status do_trim() override;
    bool   live_buffer(const void * ptr, held_buffer * out) const override;
    size_t held_bytes() const override {
        return hot_.live_bytes + total_size(deferred_) + total_size(capture_cache_) + reuse_.bytes();
    }

  private:
    static constexpr size_t ALIGNMENT = 256; // what cudaMallocAsync guarantees

    // reads the device pool's reserved memory: growth is a driver allocation, shrinkage memory given
    // back; `pending`: bytes about to become live, which the device pool already holds
    bool read_usage(size_t pending = 0);
    // what the device pool holds beyond `keep` goes back (`pending`: as read_usage's): at most headroom_pct_
    // above its peak use stays, before a growth its unused memory cannot serve and after one that grew it anyway
    void trim_to(size_t keep, size_t pending);
    void on_unpinned() override { drain(); }
    void on_stream_change() override {
        flush_reuse();
        drain();
    }
    // do_alloc once the room is made: from the capture cache, the reuse cache or the device pool
    status                             alloc_stream_ordered(const request & r, void ** ptr, size_t * actual);
    // the ladder's reclaim rung: the reuse cache and the device pool's unused memory go back, one retry
    bool                               reclaim(class ladder & l);
    // an allocation while the stream captures: the capture cache's best fit, else a buffer of its own
    status                             alloc_in_capture(const request & r, void ** ptr, size_t * actual);
    // the capture cache's buffers that no graph pins (force: every one) go back to the driver
    void                               release_capture_cache(bool force = false);
    // frees what was deferred, but what a graph still uses; not while capturing (unless forced)
    void                               drain(bool force = false);
    bool                               free_now(void * ptr, size_t actual);
    // a buffer leaving this context: to the driver now, or held back (pinned, capturing, refused)
    void                               free_or_defer(void * ptr, size_t actual) noexcept;
    // the reuse cache's buffers go the way of free_or_defer
    void                               flush_reuse() noexcept;
    // ptr's record (live_.end(): none)
    std::vector<held_buffer>::iterator find_live(const void * ptr);

    // what a hit reads, on a line of its own: the record, the buffers out in a capture (a free looks
    // there first), and the reuse cache's count and total, its buffers on the lines after
    alignas(CACHE_LINE) std::vector<held_buffer> live_;
    std::vector<void *> capture_out_; // the capture cache's buffers handed out
    reuse_cache         reuse_;
    static_assert(2 * sizeof(std::vector<void *>) + reuse_cache::HEADER_BYTES <= CACHE_LINE,
                  "the record, capture_out_ and the reuse cache's count and total share a line");
    // freed but not yet the driver's: a graph still uses it, the stream captured, or the driver refused
    std::vector<held_buffer> deferred_;
    // the capture cache: buffers outside the device pool and any graph, for a capture's allocations
    std::vector<held_buffer> capture_cache_;
    size_t                   capture_bytes_ = 0; // all of them, cached or out

    std::shared_ptr<driver> owner_; // the warm record may outlive the context
    uint32_t                headroom_pct_;
    size_t                  pool_reserved_  = 0; // the device pool's reserved bytes, at the last read
    size_t                  pool_used_      = 0; // the device pool's bytes in use, at the last read
    size_t                  pool_peak_used_ = 0;
};

} // namespace gcp
