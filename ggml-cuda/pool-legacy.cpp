#include "pool-legacy.h"

#include "log.h"

#include <algorithm>

namespace gcp {

pool_legacy::~pool_legacy() {
    release_live();
    flush(false);
}

status pool_legacy::do_alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual) {
    clock_++;
    // best fit: the smallest cached buffer that holds the request
    size_t best = cache_.size();
    for (size_t i = 0; i < cache_.size(); i++) {
        if (cache_[i].size >= size && (best == cache_.size() || cache_[i].size < cache_[best].size)) {
            best = i;
            if (cache_[i].size == size) {
                break;
            }
        }
    }
    if (best != cache_.size()) {
        *ptr    = cache_[best].ptr;
        *actual = cache_[best].size;
        cached_ -= cache_[best].size;
        cache_[best] = cache_.back();
        cache_.pop_back();
        stats_.hits++;
        return OK;
    }

    stats_.misses++;
    size_t bytes = (flags & GGML_CPOOL_ALLOC_OVERALLOCATE) ? OVERALLOCATE_FACTOR * size : size + size / LOOK_AHEAD_DIVISOR;
    bytes        = round_up(bytes, ROUNDING);
    status st    = drv_.malloc(device_, bytes, ptr);
    if (st == OUT_OF_MEMORY) {
        st = recover(bytes, ptr);
    } else if (st != OK) {
        drv_.clear_error();
        GCP_LOG_ERROR("%s: driver alloc of %.2f MiB failed (%s)", name(), to_mib(bytes), ggml_cpool_status_str(st));
    }
    if (st != OK) {
        return st;
    }
    on_driver_alloc(bytes);
    *actual = bytes;
    return OK;
}

status pool_legacy::recover(size_t bytes, void ** ptr) {
    drv_.clear_error();
    if (capturing()) {
        GCP_LOG_WARN("%s: alloc of %.2f MiB failed during graph capture, where synchronize and free are illegal: "
                     "no reclaim, returning OUT_OF_MEMORY (allocate before capturing, as a warm-up run does)",
                     name(), to_mib(bytes));
        return OUT_OF_MEMORY;
    }
    if (cached_ == 0) {
        GCP_LOG_WARN("%s: alloc of %.2f MiB failed: out of memory with nothing cached (%.2f MiB live)", name(),
                     to_mib(bytes), to_mib(stats_.live_bytes));
        return OUT_OF_MEMORY;
    }
    // queued kernels may still use cached buffers: let them finish before any goes back. The
    // pool's stream, not the device: a device-wide synchronize would break a graph capture that
    // another context runs on this device
    status st = synchronize();
    if (st != OK) {
        drv_.clear_error();
        GCP_LOG_ERROR("%s: synchronize before reclaim failed (%s); nothing freed", name(), ggml_cpool_status_str(st));
        return st;
    }

    if (kind_ == GGML_CPOOL_KIND_LEGACY) {
        size_t target = RECLAIM_FACTOR * bytes;
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed, trying LRU-style reclaim (target %.2f MiB) from %.2f MiB cached",
                      name(), to_mib(bytes), to_mib(target), to_mib(cached_));
        size_t freed = reclaim_lru(target);
        stats_.lru_reclaims++;
        stats_.lru_reclaimed_bytes += freed;
        if (drv_.malloc(device_, bytes, ptr) == OK) {
            GCP_LOG_DEBUG("%s: retry succeeded after reclaiming %.2f MiB", name(), to_mib(freed));
            return OK;
        }
        drv_.clear_error();
        if (cached_ == 0) {
            GCP_LOG_WARN("%s: alloc of %.2f MiB failed after reclaiming all %.2f MiB cached: out of memory", name(),
                         to_mib(bytes), to_mib(freed));
            return OUT_OF_MEMORY;
        }
    }

    GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed, freeing all %.2f MiB cached and retrying once", name(), to_mib(bytes),
                  to_mib(cached_));
    size_t freed = flush();
    stats_.flushes++;
    if (drv_.malloc(device_, bytes, ptr) == OK) {
        GCP_LOG_DEBUG("%s: retry succeeded after freeing %.2f MiB", name(), to_mib(freed));
        return OK;
    }
    drv_.clear_error();
    GCP_LOG_WARN("%s: alloc of %.2f MiB failed after freeing everything cached: out of memory (%.2f MiB live)", name(),
                 to_mib(bytes), to_mib(stats_.live_bytes));
    return OUT_OF_MEMORY;
}

size_t pool_legacy::release(size_t index) {
    buffer b  = cache_[index];
    status st = drv_.free(device_, b.ptr);
    if (st != OK) {
        // kept cached: a buffer the driver would not take back is not lost from the accounting
        drv_.clear_error();
        GCP_LOG_ERROR("%s: driver free of %p (%.2f MiB) failed (%s); kept cached", name(), b.ptr, to_mib(b.size),
                      ggml_cpool_status_str(st));
        return 0;
    }
    cache_.erase(cache_.begin() + std::ptrdiff_t(index));
    cached_ -= b.size;
    on_driver_free(b.size);
    return b.size;
}

size_t pool_legacy::reclaim_lru(size_t target) {
    std::sort(cache_.begin(), cache_.end(), [](const buffer & a, const buffer & b) { return a.last_use < b.last_use; });
    size_t freed = 0;
    size_t i     = 0;
    while (freed < target && i < cache_.size()) {
        // a buffer the driver refused, or one a captured graph still uses, stays: step over it
        size_t n = pinned(cache_[i].ptr) ? 0 : release(i);
        freed += n;
        i += n == 0;
    }
    return freed;
}

size_t pool_legacy::flush(bool keep_pinned) {
    size_t freed = 0;
    for (size_t i = cache_.size(); i-- > 0;) {
        freed += keep_pinned && pinned(cache_[i].ptr) ? 0 : release(i);
    }
    return freed;
}

void pool_legacy::do_free(void * ptr, size_t actual) noexcept {
    clock_++;
    if (cache_.size() >= MAX_CACHED_BUFFERS && !pinned(ptr) && !capturing()) {
        GCP_LOG_DEBUG("%s: cache full (%zu buffers); returning %.2f MiB to the driver", name(), MAX_CACHED_BUFFERS,
                      to_mib(actual));
        status st = drv_.free(device_, ptr);
        if (st == OK) {
            on_driver_free(actual);
            return;
        }
        // kept cached past the limit: still accounted, and the next flush tries again
        drv_.clear_error();
        GCP_LOG_ERROR("%s: driver free of %p failed (%s); kept cached", name(), ptr, ggml_cpool_status_str(st));
    }
    cache_.push_back({ ptr, actual, clock_ }); // within the room alloc made
    cached_ += actual;
}

status pool_legacy::trim() {
    if (capturing()) {
        log_capture_refusal("trim refused");
        return UNSUPPORTED;
    }
    flush();
    for (const buffer & b : cache_) {
        if (!pinned(b.ptr)) {
            return DRIVER_ERROR; // the driver refused one
        }
    }
    return OK;
}

} // namespace gcp
