#include "legacy.h"

#include "recovery.h"

namespace gcp {

pool_legacy::pool_legacy(driver & drv, int device, ggml_cpool_kind kind, stream_t stream, options opt) :
    pool(drv, device, kind, stream),
    opt_(opt) {}

pool_legacy::~pool_legacy() {
    free_live();
    for (size_t i = end(); i-- > 0;) {
        release(i); // every buffer, pinned or not
    }
}

status pool_legacy::do_alloc(const request & r, void ** ptr, size_t * actual) {
    hit_.clock++;
    if (GCP_UNLIKELY(r.growing())) {
        return alloc_growing(r, ptr, actual);
    }
    return take(r, use::ordinary, ptr, actual) ? OK : miss(r, ptr, actual);
}

GCP_INLINE bool pool_legacy::take(const request & r, use from, void ** ptr, size_t * actual) {
    auto &       buffers = hit_.buffers;
    const size_t most    = from == use::growth && r.growing() ? SIZE_MAX : r.size + std::max(r.size, WASTE_SLACK);
    size_t       best    = end();
    for (size_t i = size_t(std::lower_bound(buffers.begin(), buffers.end(), r.size, by_size) - buffers.begin());
         i < end() && buffers[i].size <= most; i++) {
        if (best != end() && buffers[i].size != buffers[best].size) {
            break; // a larger size: the best is found
        }
        if (buffers[i].state == from && (best == end() || buffers[i].last_use > buffers[best].last_use)) {
            best = i;
        }
    }
    if (best == end()) {
        return false;
    }
    buffer & b = buffers[best];
    (from == use::growth ? growth_ : hit_.ordinary)--;
    b.state         = use::out;
    b.last_use      = hit_.clock;
    hit_.last_taken = best;
    *ptr            = b.ptr;
    *actual         = b.size;
    return true;
}

status pool_legacy::alloc_growing(const request & r, void ** ptr, size_t * actual) {
    need_ = r.size;
    for (buffer & b : hit_.buffers) {
        if (b.state == use::growth && b.size < need_) { // outgrown: any request may take it, and it goes back first
            b = { b.size, b.ptr, ++outgrown_, use::ordinary };
            growth_--, hit_.ordinary++;
        }
    }
    const bool kept = take(r, use::growth, ptr, actual);
    if (!kept && !take(r, use::ordinary, ptr, actual)) {
        return miss(r, ptr, actual);
    }
    // an ordinary buffer larger than this request's miss was made for another: it stays ordinary
    buffer & b = hit_.buffers[hit_.last_taken];
    b.state    = kept || b.size <= miss_bytes(r, 0, ROUNDING) ? use::out_growing : use::out;
    return OK;
}

status pool_legacy::miss(const request & r, void ** ptr, size_t * actual) {
    // beyond the request, so that a slightly larger one next time hits: all of 1/LOOK_AHEAD_DIVISOR
    // where it outgrew a buffer the pool holds by at most that, else at most LOOK_AHEAD_MAX
    const auto   below = std::lower_bound(hit_.buffers.begin(), hit_.buffers.end(), r.size, by_size);
    const size_t held  = below != hit_.buffers.begin() ? std::prev(below)->size : 0; // the largest smaller buffer
    const size_t part  = r.size / LOOK_AHEAD_DIVISOR;
    const size_t ahead = held + held / LOOK_AHEAD_DIVISOR >= r.size ? part : std::min(part, LOOK_AHEAD_MAX);
    ensure_capacity(hit_.buffers, end() + 1); // room for its record (the insert below), before anything is taken
    ladder l(*this, miss_bytes(r, ahead, ROUNDING), ptr, ladder::driver_malloc);
    keep_within_headroom(l.bytes);
    asking();
    if (!l.ask() && !r.growing() && take(r, use::growth, ptr, actual)) {
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed; served from a cached %.2f MiB growth buffer instead", name(),
                      to_mib(l.bytes), to_mib(*actual));
        return OK; // it serves rather than going back in the reclaim that would follow
    }
    if (l.st == OUT_OF_MEMORY && capturing()) {
        l.fall_back(r, ahead, ROUNDING) || l.wait() || l.refused_in_capture();
    } else if (l.st == OUT_OF_MEMORY) {
        const char * how = nullptr; // what reclaim tried; none where the synchronize's line said why
        reclaim(l, &how) || l.fall_back(r, ahead, ROUNDING) || l.retry_transient() || l.wait();
        if (l.st != OK && how != nullptr) {
            say(GGML_CPOOL_LOG_WARN,
                "alloc of %.2f MiB failed: %s (%.2f MiB live), and %d retries after a pause did not help",
                to_mib(l.bytes), how, to_mib(hot_.live_bytes), TRANSIENT_RETRIES);
        }
    } else if (l.st != OK) {
        say(GGML_CPOOL_LOG_ERROR, "driver alloc of %.2f MiB failed (%s)", to_mib(l.bytes), ggml_cpool_status_str(l.st));
    }
    if (l.st != OK) {
        return l.st;
    }
    on_driver_alloc(l.bytes);
    auto at = std::lower_bound(hit_.buffers.begin(), hit_.buffers.end(), l.bytes, by_size);
    hit_.buffers.insert(at, { l.bytes, *ptr, hit_.clock, r.growing() ? use::out_growing : use::out });
    *actual = l.bytes;
    return OK;
}

void pool_legacy::keep_within_headroom(size_t bytes) {
    if (opt_.headroom_pct == GGML_CPOOL_HEADROOM_UNLIMITED || hit_.ordinary == 0) {
        return;
    }
    const size_t peak   = std::max(hot_.peak_live_bytes, hot_.live_bytes + bytes);
    const size_t budget = headroom_budget(peak, opt_.headroom_pct);
    if (stats_.reserved_bytes + bytes <= budget || capturing()) {
        return;
    }
    // queued kernels may still use cached buffers: they finish before any goes back
    status st = synchronize();
    if (st != OK) {
        say(GGML_CPOOL_LOG_WARN, "synchronize before giving back outgrown buffers failed (%s); kept",
            ggml_cpool_status_str(st));
        return;
    }
    const size_t freed = release_oldest(stats_.reserved_bytes + bytes - budget, false);
    GCP_LOG_DEBUG("%s: %.2f MiB more would hold %.2f MiB for %.2f MiB live at peak; gave back %.2f MiB least "
                  "recently used",
                  name(), to_mib(bytes), to_mib(stats_.reserved_bytes + freed + bytes), to_mib(peak), to_mib(freed));
}

bool pool_legacy::reclaim(ladder & l, const char ** how) {
    // queued kernels may still use cached buffers, and other streams' frees land; the stream, since a
    // device-wide synchronize would break another context's capture
    status st = synchronize();
    if (st != OK) {
        say(GGML_CPOOL_LOG_ERROR, "synchronize before reclaim failed (%s); nothing freed", ggml_cpool_status_str(st));
        return l.ends(st);
    }
    // a retry once `freed` bytes went back by `verb`; the flush, or the caller, says what follows
    auto retried = [&](const char * verb, size_t freed) {
        const bool ended = l.ask();
        if (l.st == OK) {
            GCP_LOG_DEBUG("%s: retry succeeded after %s %.2f MiB", name(), verb, to_mib(freed));
        }
        return ended;
    };
    if (cached() == 0) {
        // nothing to free: one retry, for a failure that has passed by now
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed with nothing cached (%.2f MiB live); retrying once", name(),
                      to_mib(l.bytes), to_mib(hot_.live_bytes));
        *how = "out of memory with nothing cached";
        return retried("freeing", 0);
    }
    if (opt_.lru) {
        const size_t target = RECLAIM_FACTOR * l.bytes;
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed, trying LRU-style reclaim (target %.2f MiB) from %.2f MiB cached",
                      name(), to_mib(l.bytes), to_mib(target), to_mib(cached_bytes()));
        const size_t freed = release_oldest(target, true);
        stats_.lru_reclaims++;
        stats_.lru_reclaimed_bytes += freed;
        if (retried("reclaiming", freed)) {
            return true;
        }
        if (cached() == 0) {
            *how = "out of memory after reclaiming everything cached";
            return false;
        }
    }
    GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed, freeing all %.2f MiB cached and retrying once", name(),
                  to_mib(l.bytes), to_mib(cached_bytes()));
    const size_t freed = release_oldest(SIZE_MAX, true);
    stats_.flushes++;
    *how = "out of memory after freeing everything cached";
    return retried("freeing", freed);
}

bool pool_legacy::release(size_t i) {
    const buffer b  = hit_.buffers[i];
    const status st = drv_.free(device_, b.ptr);
    if (st != OK) {
        // kept cached: a buffer the driver would not take back is not lost from the accounting
        say(GGML_CPOOL_LOG_ERROR, "driver free of %p (%.2f MiB) failed (%s); kept cached", b.ptr, to_mib(b.size),
            ggml_cpool_status_str(st));
        return false;
    }
    hit_.buffers.erase(hit_.buffers.begin() + std::ptrdiff_t(i));
    (b.state == use::growth ? growth_ : hit_.ordinary)--;
    on_driver_free(b.size);
    return true;
}

size_t pool_legacy::release_oldest(size_t target, bool growth) {
    // oldest first, a scan per buffer: no allocation; `after` steps over the driver's refusals
    size_t   freed = 0;
    uint64_t after = 0;
    while (freed < target) {
        size_t oldest = end();
        for (size_t i = 0; i < end(); i++) {
            const buffer & b = hit_.buffers[i];
            if ((b.state == use::ordinary || (growth && b.state == use::growth)) && b.last_use > after &&
                (oldest == end() || b.last_use < hit_.buffers[oldest].last_use) && !pinned(b.ptr)) {
                oldest = i;
            }
        }
        if (oldest == end()) {
            break;
        }
        after             = hit_.buffers[oldest].last_use;
        const size_t size = hit_.buffers[oldest].size;
        freed += release(oldest) ? size : 0;
    }
    return freed;
}

bool pool_legacy::do_free(void * ptr, size_t actual) noexcept {
    auto & buffers = hit_.buffers;
    // ggml frees the buffer taken last first: its place, where it still is, before a search
    size_t i = hit_.last_taken < end() && buffers[hit_.last_taken].ptr == ptr ?
                   hit_.last_taken :
                   size_t(std::lower_bound(buffers.begin(), buffers.end(), actual, by_size) - buffers.begin());
    while (i < end() && buffers[i].size == actual && buffers[i].ptr != ptr) {
        i++;
    }
    if (GCP_UNLIKELY(i == end() || buffers[i].ptr != ptr || buffers[i].size != actual || buffers[i].state < use::out)) {
        return false;
    }
    buffer &   b = buffers[i];
    // still as large as the latest growing request: kept for the next steps of the growth
    const bool growth = GCP_UNLIKELY(b.state == use::out_growing) && b.size >= need_ && growth_ < MAX_GROWING;
    b.state           = growth ? use::growth : use::ordinary;
    b.last_use        = ++hit_.clock;
    (growth ? growth_ : hit_.ordinary)++;
    if (GCP_UNLIKELY(cached() > MAX_CACHED_BUFFERS)) {
        release_over_bound(i);
    }
    return true;
}

void pool_legacy::release_over_bound(size_t i) noexcept {
    if (pinned(hit_.buffers[i].ptr) || capturing()) {
        return; // kept cached past the bound, as one the driver refuses: the next flush tries again
    }
    GCP_LOG_DEBUG("%s: cache full (%zu buffers); returning %.2f MiB to the driver", name(), MAX_CACHED_BUFFERS,
                  to_mib(hit_.buffers[i].size));
    release(i);
}

bool pool_legacy::live_buffer(const void * ptr, held_buffer * out) const {
    auto it = std::find_if(hit_.buffers.begin(), hit_.buffers.end(),
                           [&](const buffer & b) { return b.state >= use::out && (ptr == nullptr || b.ptr == ptr); });
    if (it == hit_.buffers.end()) {
        return false;
    }
    *out = { it->ptr, it->size };
    return true;
}

status pool_legacy::do_trim() {
    release_oldest(SIZE_MAX, true);
    const bool refused = std::any_of(hit_.buffers.begin(), hit_.buffers.end(),
                                     [&](const buffer & b) { return b.state < use::out && !pinned(b.ptr); });
    return refused ? DRIVER_ERROR : OK; // the driver refused one
}

} // namespace gcp
