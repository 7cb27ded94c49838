#include "legacy.h"

#include "../support/log.h"

#include <cstdio>

namespace gcp {

pool_legacy::pool_legacy(driver & drv, int device, ggml_cpool_kind kind, stream_t stream, options opt) :
    pool(drv, device, kind, stream),
    opt_(opt) {}

pool_legacy::~pool_legacy() {
    release_live();
    release_oldest(SIZE_MAX, scope::everything);
}

size_t pool_legacy::first_of(size_t n) const {
    auto it =
        std::lower_bound(buffers_.begin(), buffers_.end(), n, [](const buffer & b, size_t m) { return b.size < m; });
    return size_t(it - buffers_.begin());
}

size_t pool_legacy::best_fit(size_t n, use state) const {
    size_t best = end();
    for (size_t i = first_of(n); i < end() && buffers_[i].size <= most_for(n); i++) {
        if (best != end() && buffers_[i].size != buffers_[best].size) {
            break; // a larger size: the best is found
        }
        if (buffers_[i].state == state && (best == end() || buffers_[i].last_use > buffers_[best].last_use)) {
            best = i;
        }
    }
    return best;
}

size_t pool_legacy::find_out(const void * ptr, size_t size) const {
    // ggml frees the buffer taken last first: its place, where it still is, before a search
    size_t i = last_taken_ < end() && buffers_[last_taken_].ptr == ptr ? last_taken_ : first_of(size);
    for (; i < end() && buffers_[i].size == size; i++) {
        if (buffers_[i].ptr == ptr) {
            return buffers_[i].state == use::out || buffers_[i].state == use::out_growing ? i : end();
        }
    }
    return end();
}

size_t pool_legacy::count(use state) const {
    return size_t(std::count_if(buffers_.begin(), buffers_.end(), [&](const buffer & b) { return b.state == state; }));
}

status pool_legacy::do_alloc(const request & r, void ** ptr, size_t * actual) {
    clock_++;
    size_t i = r.growing() ? take_growing(r) : best_fit(r.size, use::cached);
    if (i == end()) {
        return miss(r, ptr, actual);
    }
    if (!r.growing()) {
        buffers_[i].state = use::out;
    }
    buffers_[i].last_use = clock_;
    last_taken_          = i;
    cached_--;
    hot_.hits++;
    *ptr    = buffers_[i].ptr;
    *actual = buffers_[i].size;
    return OK;
}

size_t pool_legacy::take_growing(const request & r) {
    // reserve buffers the request has outgrown: any request may take them, and they go back first
    need_ = r.size;
    for (buffer & b : buffers_) {
        if (b.state == use::growth && b.size < need_) {
            b.state    = use::cached;
            b.last_use = ++outgrown_;
        }
    }
    size_t i = best_fit(r.size, use::growth);
    if (i == end()) {
        i = best_fit(r.size, use::cached);
    }
    // a larger cached buffer was made for another request: it goes back to the ordinary cache once freed
    if (i != end()) {
        const bool kept = buffers_[i].state == use::growth ||
                          buffers_[i].size <= miss_bytes(r, LOOK_AHEAD_DIVISOR, ROUNDING);
        buffers_[i].state = kept ? use::out_growing : use::out;
    }
    return i;
}

class pool_legacy::steps final : public recovery_steps {
  public:
    steps(pool_legacy & p, const request & r, size_t * bytes, void ** ptr) : p_(p), r_(r), bytes_(bytes), ptr_(ptr) {}

    status retry() override { return p_.drv_.malloc(p_.device_, *bytes_, ptr_); }
    size_t asking() const override { return *bytes_; }
    status reclaim() override { return p_.reclaim(*bytes_, ptr_, &how_); }
    status fall_back() override { return p_.fall_back(r_, bytes_, ptr_); }

    void refuse_in_capture() override {
        GCP_LOG_WARN("%s: alloc of %.2f MiB failed during graph capture, where synchronize and free are illegal: "
                     "no reclaim, returning OUT_OF_MEMORY (allocate before capturing, as a warm-up run does)",
                     p_.name(), to_mib(*bytes_));
    }
    void report(status /*st*/) override {
        if (how_ == nullptr) {
            return; // the synchronize's line said why nothing was freed
        }
        p_.driver_failed(GGML_CPOOL_LOG_WARN,
                         "alloc of %.2f MiB failed: %s (%.2f MiB live), and %d retries after a pause did not help",
                         to_mib(*bytes_), how_, to_mib(p_.hot_.live_bytes), TRANSIENT_RETRIES);
    }

  private:
    pool_legacy &   p_;
    const request & r_;
    size_t *        bytes_; // the last size asked for
    void **         ptr_;
    const char *    how_ = nullptr;
};

status pool_legacy::miss(const request & r, void ** ptr, size_t * actual) {
    stats_.misses++;
    size_t bytes = miss_bytes(r, LOOK_AHEAD_DIVISOR, ROUNDING);
    reserve_at_least(buffers_, buffers_.size() + 1); // its record's room, before anything is taken (may throw)
    keep_within_headroom(bytes);
    status st = OK;
    {
        const reclaim_scope asking(*this);
        st = drv_.malloc(device_, bytes, ptr);
    }
    const size_t reserved = st == OUT_OF_MEMORY && !r.growing() ? best_fit(r.size, use::growth) : end();
    if (reserved != end()) {
        // a reserve buffer serves it rather than going back in the reclaim that would follow
        driver_failed();
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed; served from a cached %.2f MiB growing buffer instead", name(),
                      to_mib(bytes), to_mib(buffers_[reserved].size));
        buffer & b = buffers_[reserved];
        b.state    = use::out;
        b.last_use = clock_;
        cached_--;
        stats_.misses--;
        hot_.hits++;
        *ptr    = b.ptr;
        *actual = b.size;
        return OK;
    }
    if (st == OUT_OF_MEMORY) {
        steps ladder(*this, r, &bytes, ptr);
        st = climb(ladder);
    } else if (st != OK) {
        driver_failed(GGML_CPOOL_LOG_ERROR, "driver alloc of %.2f MiB failed (%s)", to_mib(bytes),
                      ggml_cpool_status_str(st));
    }
    if (st != OK) {
        return st;
    }
    on_driver_alloc(bytes);
    auto at = std::upper_bound(buffers_.begin(), buffers_.end(), bytes,
                               [](size_t m, const buffer & b) { return m < b.size; });
    buffers_.insert(at, { bytes, *ptr, clock_, r.growing() ? use::out_growing : use::out }); // within the room made
    *actual = bytes;
    return OK;
}

status pool_legacy::fall_back(const request & r, size_t * bytes, void ** ptr) {
    const size_t refused = *bytes;
    for (size_t next = fallback_bytes(r, refused, LOOK_AHEAD_DIVISOR, ROUNDING); next != 0;
         next        = fallback_bytes(r, next, LOOK_AHEAD_DIVISOR, ROUNDING)) {
        driver_failed(); // the refusal before this attempt: the lines of the caller or below say how it ends
        *bytes = next;
        if (drv_.malloc(device_, next, ptr) == OK) {
            log_fallback(refused, next, r.size);
            return OK;
        }
    }
    driver_failed();
    return OUT_OF_MEMORY;
}

void pool_legacy::keep_within_headroom(size_t bytes) {
    if (opt_.headroom_pct == GGML_CPOOL_HEADROOM_UNLIMITED || cached_ == count(use::growth)) {
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
        driver_failed(GGML_CPOOL_LOG_WARN, "synchronize before giving back outgrown buffers failed (%s); kept",
                      ggml_cpool_status_str(st));
        return;
    }
    const size_t freed = release_oldest(stats_.reserved_bytes + bytes - budget, scope::ordinary);
    GCP_LOG_DEBUG("%s: %.2f MiB more would hold %.2f MiB for %.2f MiB live at peak; gave back %.2f MiB least "
                  "recently used",
                  name(), to_mib(bytes), to_mib(stats_.reserved_bytes + freed + bytes), to_mib(peak), to_mib(freed));
}

status pool_legacy::reclaim(size_t bytes, void ** ptr, const char ** how) {
    // queued kernels may still use cached buffers, and other streams' frees land; the stream, since a
    // device-wide synchronize would break another context's capture
    status st = synchronize();
    if (st != OK) {
        driver_failed(GGML_CPOOL_LOG_ERROR, "synchronize before reclaim failed (%s); nothing freed",
                      ggml_cpool_status_str(st));
        return st;
    }
    // a retry once `after` (its line's words) went back; the flush, or the caller, says what follows
    auto retried = [&](const char * after) {
        if (drv_.malloc(device_, bytes, ptr) == OK) {
            GCP_LOG_DEBUG("%s: retry succeeded%s", name(), after);
            return true;
        }
        driver_failed();
        return false;
    };
    char after[64];
    if (cached_ == 0) {
        // nothing to free: one retry, for a failure that has passed by now
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed with nothing cached (%.2f MiB live); retrying once", name(),
                      to_mib(bytes), to_mib(hot_.live_bytes));
        *how = "out of memory with nothing cached";
        return retried("") ? OK : OUT_OF_MEMORY;
    }
    if (opt_.lru) {
        const size_t target = RECLAIM_FACTOR * bytes;
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed, trying LRU-style reclaim (target %.2f MiB) from %.2f MiB cached",
                      name(), to_mib(bytes), to_mib(target), to_mib(cached_bytes()));
        const size_t freed = release_oldest(target, scope::unpinned);
        stats_.lru_reclaims++;
        stats_.lru_reclaimed_bytes += freed;
        snprintf(after, sizeof(after), " after reclaiming %.2f MiB", to_mib(freed));
        if (retried(after)) {
            return OK;
        }
        if (cached_ == 0) {
            *how = "out of memory after reclaiming everything cached";
            return OUT_OF_MEMORY;
        }
    }
    GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed, freeing all %.2f MiB cached and retrying once", name(), to_mib(bytes),
                  to_mib(cached_bytes()));
    const size_t freed = release_oldest(SIZE_MAX, scope::unpinned);
    stats_.flushes++;
    *how = "out of memory after freeing everything cached";
    snprintf(after, sizeof(after), " after freeing %.2f MiB", to_mib(freed));
    return retried(after) ? OK : OUT_OF_MEMORY;
}

bool pool_legacy::release(size_t i) {
    const buffer b  = buffers_[i];
    status       st = drv_.free(device_, b.ptr);
    if (st != OK) {
        // kept cached: a buffer the driver would not take back is not lost from the accounting
        driver_failed(GGML_CPOOL_LOG_ERROR, "driver free of %p (%.2f MiB) failed (%s); kept cached", b.ptr,
                      to_mib(b.size), ggml_cpool_status_str(st));
        return false;
    }
    buffers_.erase(buffers_.begin() + std::ptrdiff_t(i));
    cached_--;
    on_driver_free(b.size);
    return true;
}

size_t pool_legacy::release_oldest(size_t target, scope which) {
    // oldest first, a scan per buffer: no allocation, so this serves destruction too; `after` skips refusals
    size_t   freed = 0;
    uint64_t after = 0;
    while (freed < target) {
        size_t oldest = end();
        for (size_t i = 0; i < end(); i++) {
            const buffer & b      = buffers_[i];
            const bool     cached = b.state == use::cached || (which != scope::ordinary && b.state == use::growth);
            if (cached && b.last_use > after && (oldest == end() || b.last_use < buffers_[oldest].last_use) &&
                (which == scope::everything || !pinned(b.ptr))) {
                oldest = i;
            }
        }
        if (oldest == end()) {
            break;
        }
        after             = buffers_[oldest].last_use;
        const size_t size = buffers_[oldest].size;
        freed += release(oldest) ? size : 0;
    }
    return freed;
}

bool pool_legacy::do_free(void * ptr, size_t actual) noexcept {
    const size_t i = find_out(ptr, actual);
    if (GCP_UNLIKELY(i == end())) {
        return false;
    }
    buffer &   b = buffers_[i];
    // still as large as the latest growing request: kept for the next steps of the growth
    const bool growth = GCP_UNLIKELY(b.state == use::out_growing) && b.size >= need_ &&
                        count(use::growth) < MAX_GROWING;
    b.state    = growth ? use::growth : use::cached;
    b.last_use = ++clock_;
    if (GCP_UNLIKELY(++cached_ > MAX_CACHED_BUFFERS)) {
        release_over_bound(i);
    }
    return true;
}

void pool_legacy::release_over_bound(size_t i) noexcept {
    if (pinned(buffers_[i].ptr) || capturing()) {
        return; // kept cached past the bound: still accounted, and the next flush tries again
    }
    GCP_LOG_DEBUG("%s: cache full (%zu buffers); returning %.2f MiB to the driver", name(), MAX_CACHED_BUFFERS,
                  to_mib(buffers_[i].size));
    release(i);
}

std::optional<size_t> pool_legacy::live_size(const void * ptr) const {
    for (const buffer & b : buffers_) {
        if (b.ptr == ptr && (b.state == use::out || b.state == use::out_growing)) {
            return b.size;
        }
    }
    return std::nullopt;
}

bool pool_legacy::any_live(void ** ptr, size_t * size) const {
    for (const buffer & b : buffers_) {
        if (b.state == use::out || b.state == use::out_growing) {
            *ptr  = b.ptr;
            *size = b.size;
            return true;
        }
    }
    return false;
}

size_t pool_legacy::cached_bytes() const {
    size_t n = 0;
    for (const buffer & b : buffers_) {
        n += b.state == use::cached || b.state == use::growth ? b.size : 0;
    }
    return n;
}

status pool_legacy::trim() {
    if (capturing()) {
        log_capture_refusal("trim refused");
        return UNSUPPORTED;
    }
    release_oldest(SIZE_MAX, scope::unpinned);
    const bool refused = std::any_of(buffers_.begin(), buffers_.end(), [&](const buffer & b) {
        return (b.state == use::cached || b.state == use::growth) && !pinned(b.ptr);
    });
    return refused ? DRIVER_ERROR : OK; // the driver refused one
}

} // namespace gcp
