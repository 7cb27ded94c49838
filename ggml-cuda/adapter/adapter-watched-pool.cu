// ggml's own pool, watched for the stats line (only where GGML_CUDA_POOL_STATS asks for one):
// what it hands out and keeps, from outside, and the time inside its calls. ggml's legacy pool
// flushes its cache and retries once when the driver refuses an allocation; seen from outside, a
// miss after which the pool holds less than before plus the new buffer was such a flush.

#include "adapter-pools.cuh"

#include "adapter-context.cuh"
#include "adapter-settings.cuh"
#include "adapter-stats.cuh"
#include "common.cuh"

#include <algorithm>
#include <memory>

namespace cpool_adapter {

namespace {

struct watched_pool final : ggml_cuda_pool {
    watched_pool(std::shared_ptr<ggml_cuda_cpool_context> context, std::unique_ptr<ggml_cuda_pool> own, int device,
                 int slot, bool legacy) :
        context(std::move(context)),
        own(std::move(own)),
        device(device),
        slot(slot),
        legacy(legacy) {
        seen.kind = this->context->config.c_str(); // ggml or ggml-legacy; the context outlives the pool
    }

    ~watched_pool() override { report(line::stats, context->id, device, slot, current()); }

    void * alloc(size_t size, size_t * actual_size) override {
        on_call();
        void * ptr = nullptr;
        {
            call_timer timer(&seen);
            ptr = own->alloc(size, actual_size); // before *actual_size is read
        }
        watch(*actual_size);
        return ptr;
    }

    void * alloc_overallocate(size_t size, size_t max_size, size_t * actual_size) override {
        if (!config().kv_growing) {
            return alloc(size, actual_size); // as ggml's own pools serve it: no headroom
        }
        on_call();
        void * ptr = nullptr;
        {
            call_timer timer(&seen);
            ptr = own->alloc_overallocate(size, max_size, actual_size);
        }
        watch(*actual_size);
        seen.note_growing(size, *actual_size);
        return ptr;
    }

    void free(void * ptr, size_t size) override {
        on_call();
        live -= size;
        {
            call_timer timer(&seen);
            own->free(ptr, size);
        }
        held = reserved(); // a legacy pool with no slot left gives the buffer back
    }

    bool driver_usage(size_t * reserved, size_t * peak_reserved, uint64_t * driver_allocs) const override {
        return own->driver_usage(reserved, peak_reserved, driver_allocs);
    }

  private:
    figures current() {
        uint64_t drv = 0;
        own->driver_usage(&seen.reserved, &seen.peak_reserved, &drv);
        seen.driver_allocs = drv;
        seen.live          = live;
        return seen;
    }

    // the snapshot line SIGUSR1 asked for, before this call changes anything
    void on_call() {
        if (snapshot.due()) {
            report(line::snapshot, context->id, device, slot, current());
        }
    }

    size_t reserved() const {
        size_t   now = 0, peak = 0;
        uint64_t drv = 0;
        return own->driver_usage(&now, &peak, &drv) ? now : 0;
    }

    // after an allocation of `actual` bytes
    void watch(size_t actual) {
        size_t   reserved = 0, peak = 0;
        uint64_t before = seen.driver_allocs, after = 0;
        if (own->driver_usage(&reserved, &peak, &after)) {
            seen.driver_allocs = after;
            // a legacy miss adds exactly the new buffer, unless the pool flushed first; a VMM
            // growth maps what the request lacks, which may be less
            seen.flushes += legacy && after != before && reserved < held + actual;
            held = reserved;
        }
        seen.allocs++;
        seen.hits += after == before;
        live += actual;
        seen.peak_live = std::max(seen.peak_live, live);
    }

    std::shared_ptr<ggml_cuda_cpool_context> context;
    std::unique_ptr<ggml_cuda_pool>          own;
    int                                      device, slot;
    bool                                     legacy;
    size_t                                   live = 0;
    // what ggml's pool reserved after its last call, which is what it holds before the next: read
    // after each call, never just before one, which would bring the pool's lines into the cache
    // ahead of the timed call (a module pool's call finds them as the kernel launches left them)
    size_t                                   held = 0;
    figures                                  seen;
    snapshot_request                         snapshot;
};

} // namespace

std::unique_ptr<ggml_cuda_pool> make_watched_pool(std::shared_ptr<ggml_cuda_cpool_context> context,
                                                  std::unique_ptr<ggml_cuda_pool> own, int device, int slot,
                                                  bool legacy) {
    return std::make_unique<watched_pool>(std::move(context), std::move(own), device, slot, legacy);
}

} // namespace cpool_adapter
