#include "pool-async.h"

#include "log.h"
#include "warm-record.h"

#include <algorithm>

namespace gcp {

pool_async::pool_async(std::shared_ptr<driver> drv, int device, stream_t stream) :
    pool(*drv, device, GGML_CPOOL_KIND_ASYNC, stream),
    owner_(std::move(drv)) {
    warm_record::instance().acquire(owner_, device_);
    observe();
}

pool_async::~pool_async() {
    release_live();
    drain(true);
    if (synchronize() != OK) {
        drv_.clear_error();
        GCP_LOG_ERROR("%s: synchronizing the stream before release failed", name());
    }
    warm_record::instance().release();
}

bool pool_async::observe(size_t pending) {
    size_t reserved = 0, used = 0;
    status st       = drv_.pool_usage(device_, &reserved, &used);
    if (st != OK) {
        drv_.clear_error(); // statistics only: the allocation itself went through
        reserved = stats_.reserved_bytes;
    }
    // the device pool holds at least what this context has live, held back or about to hand
    // out: never report less, even when the read failed (live + cached == reserved)
    reserved = std::max(reserved, stats_.live_bytes + deferred_bytes() + pending);
    bool grew = reserved > stats_.reserved_bytes;
    if (grew) {
        on_driver_alloc(reserved - stats_.reserved_bytes);
    } else if (reserved < stats_.reserved_bytes) {
        on_driver_free(stats_.reserved_bytes - reserved);
    }
    return grew;
}

size_t pool_async::deferred_bytes() const {
    size_t n = 0;
    for (const deferred & d : deferred_) {
        n += d.size;
    }
    return n;
}

size_t pool_async::cached_bytes() const {
    // reserved is the device pool's, so it holds at least this context's live bytes
    return stats_.reserved_bytes > stats_.live_bytes ? stats_.reserved_bytes - stats_.live_bytes : 0;
}

status pool_async::alloc_in_capture(size_t bytes, void ** ptr) {
    captured_.reserve(captured_.size() + 1); // its record cannot fail once the graph holds the node
    status st = drv_.malloc_async(device_, bytes, stream_, ptr);
    if (st != OK) {
        // no synchronize or trim is legal here to make room
        drv_.clear_error();
        GCP_LOG_WARN("%s: async alloc of %.2f MiB failed during graph capture (%s)", name(), to_mib(bytes),
                     ggml_cpool_status_str(st));
        return st;
    }
    captured_.push_back(*ptr);
    stats_.hits++; // no memory from the device pool: the graph's memory pool serves it at each launch
    return OK;
}

status pool_async::do_alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual) {
    size_t bytes = round_up((flags & GGML_CPOOL_ALLOC_OVERALLOCATE) ? OVERALLOCATE_FACTOR * size : size, ALIGNMENT);
    if (capturing()) {
        status st = alloc_in_capture(bytes, ptr);
        *actual   = st == OK ? bytes : 0;
        return st;
    }
    drain();
    status st = drv_.malloc_async(device_, bytes, stream_, ptr);
    if (st == OUT_OF_MEMORY) {
        // the device pool holds unused memory of every stream: let the frees land, give it back, retry once
        drv_.clear_error();
        GCP_LOG_DEBUG("%s: async alloc of %.2f MiB failed, trimming the stream-ordered pool and retrying once",
                      name(), to_mib(bytes));
        st = synchronize();
        if (st == OK) {
            st = drv_.pool_trim(device_, 0);
        }
        if (st == OK) {
            stats_.flushes++;
            st = drv_.malloc_async(device_, bytes, stream_, ptr);
        }
    }
    if (st != OK) {
        drv_.clear_error();
        GCP_LOG_WARN("%s: async alloc of %.2f MiB failed (%s)", name(), to_mib(bytes), ggml_cpool_status_str(st));
        observe();
        return st;
    }
    (observe(bytes) ? stats_.misses : stats_.hits)++;
    *actual = bytes;
    return OK;
}

void pool_async::do_free(void * ptr, size_t actual) noexcept {
    auto graph_memory = std::find(captured_.begin(), captured_.end(), ptr);
    if (graph_memory != captured_.end()) {
        // the graph's own memory: freed in the stream's order, as the graph's free node while the
        // capture lasts (an allocation that outlives its capture is freed after it, also legal)
        captured_.erase(graph_memory);
        if (!free_now(ptr, actual)) {
            deferred_.push_back({ ptr, actual });
        }
        return;
    }
    // a graph replays into it (once freed, a synchronize would let another context's stream take
    // it), or a free now would be captured into the graph: hold it back
    if (pinned(ptr) || capturing() || !free_now(ptr, actual)) {
        deferred_.push_back({ ptr, actual }); // within the room alloc made
    }
}

bool pool_async::free_now(void * ptr, size_t actual) {
    status st = drv_.free_async(device_, ptr, stream_);
    if (st != OK) {
        drv_.clear_error();
        GCP_LOG_ERROR("%s: async free of %p (%.2f MiB) failed (%s); kept, to retry", name(), ptr, to_mib(actual),
                      ggml_cpool_status_str(st));
    }
    return st == OK;
}

void pool_async::drain(bool force) {
    if (deferred_.empty() || (!force && capturing())) {
        return;
    }
    for (size_t i = deferred_.size(); i-- > 0;) {
        if ((force || !pinned(deferred_[i].ptr)) && free_now(deferred_[i].ptr, deferred_[i].size)) {
            deferred_.erase(deferred_.begin() + std::ptrdiff_t(i));
        }
    }
}

status pool_async::trim() {
    if (capturing()) {
        log_capture_refusal("trim refused");
        return UNSUPPORTED;
    }
    drain();
    status st = synchronize();
    if (st == OK) {
        st = drv_.pool_trim(device_, 0);
    }
    if (st != OK) {
        drv_.clear_error();
        GCP_LOG_ERROR("%s: trimming the stream-ordered pool failed (%s)", name(), ggml_cpool_status_str(st));
    }
    observe();
    return st;
}

} // namespace gcp
