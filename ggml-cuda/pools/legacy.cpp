#include "legacy.h"

#include "../support/log.h"

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
    clock_++;
    if (GCP_UNLIKELY(r.growing())) {
        return alloc_growing(r, ptr, actual);
    }
    return take(r, use::cached, ptr, actual) ? OK : miss(r, ptr, actual);
}

bool pool_legacy::take(const request & r, use from, void ** ptr, size_t * actual) {
    const size_t most = from == use::growth && r.growing() ? SIZE_MAX : r.size + std::max(r.size, WASTE_SLACK);
    size_t       best = end();
    for (size_t i = size_t(std::lower_bound(buffers_.begin(), buffers_.end(), r.size, by_size) - buffers_.begin());
         i < end() && buffers_[i].size <= most; i++) {
        if (best != end() && buffers_[i].size != buffers_[best].size) {
            break; // a larger size: the best is found
        }
        if (buffers_[i].state == from && (best == end() || buffers_[i].last_use > buffers_[best].last_use)) {
            best = i;
        }
    }
    if (best == end()) {
        return false;
    }
    buffer & b = buffers_[best];
    (from == use::growth ? growth_ : cached_)--;
    b.state     = use::out;
    b.last_use  = clock_;
    last_taken_ = best;
    hot_.hits++;
    *ptr    = b.ptr;
    *actual = b.size;
    return true;
}

status pool_legacy::alloc_growing(const request & r, void ** ptr, size_t * actual) {
    need_ = r.size;
    for (buffer & b : buffers_) {
        if (b.state == use::growth && b.size < need_) { // outgrown: any request may take it, and it goes back first
            b = { b.size, b.ptr, ++outgrown_, use::cached };
            growth_--, cached_++;
        }
    }
    const bool kept = take(r, use::growth, ptr, actual);
    if (!kept && !take(r, use::cached, ptr, actual)) {
        return miss(r, ptr, actual);
    }
    // an ordinary buffer larger than this request's miss was made for another: it stays ordinary
    buffer & b = buffers_[last_taken_];
    b.state    = kept || b.size <= miss_bytes(r, 0, ROUNDING) ? use::out_growing : use::out;
    return OK;
}

class pool_legacy::steps final : public recovery_steps {
  public:
    steps(pool_legacy & p, const request & r, size_t * bytes, void ** ptr) : p_(p), r_(r), bytes_(bytes), ptr_(ptr) {}

    status retry() override { return p_.drv_.malloc(p_.device_, *bytes_, ptr_); }
    size_t asking() const override { return *bytes_; }
    status reclaim() override { return p_.reclaim(*bytes_, ptr_, &how_); }
    status fall_back() override { return p_.fall_back(r_, bytes_, ptr_); }

    void report(status /*st*/) override {
        if (how_ != nullptr) { // else the synchronize's line said why nothing was freed
            p_.say(GGML_CPOOL_LOG_WARN,
                   "alloc of %.2f MiB failed: %s (%.2f MiB live), and %d retries after a pause did not help",
                   to_mib(*bytes_), how_, to_mib(p_.hot_.live_bytes), TRANSIENT_RETRIES);
        }
    }

  private:
    pool_legacy &   p_;
    const request & r_;
    size_t *        bytes_; // the last size asked for
    void **         ptr_;
    const char *    how_ = nullptr;
};

size_t pool_legacy::look_ahead(size_t n) const {
    const size_t below = size_t(std::lower_bound(buffers_.begin(), buffers_.end(), n, by_size) - buffers_.begin());
    const bool   grew  = below > 0 && buffers_[below - 1].size + buffers_[below - 1].size / LOOK_AHEAD_DIVISOR >= n;
    return grew ? n / LOOK_AHEAD_DIVISOR : std::min(n / LOOK_AHEAD_DIVISOR, LOOK_AHEAD_MAX);
}

status pool_legacy::miss(const request & r, void ** ptr, size_t * actual) {
    size_t bytes = miss_bytes(r, look_ahead(r.size), ROUNDING);
    make_room(buffers_, buffers_.size() + 1); // its record's, before anything is taken (may throw)
    keep_within_headroom(bytes);
    status st = drv_.malloc(device_, bytes, ptr);
    // a growth buffer serves it rather than going back in the reclaim that would follow
    if (st == OUT_OF_MEMORY && !r.growing() && take(r, use::growth, ptr, actual)) {
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed; served from a cached %.2f MiB growth buffer instead", name(),
                      to_mib(bytes), to_mib(*actual));
        return OK;
    }
    stats_.misses++;
    if (st == OUT_OF_MEMORY) {
        steps ladder(*this, r, &bytes, ptr);
        st = climb(ladder);
    } else if (st != OK) {
        say(GGML_CPOOL_LOG_ERROR, "driver alloc of %.2f MiB failed (%s)", to_mib(bytes), ggml_cpool_status_str(st));
    }
    if (st != OK) {
        return st;
    }
    on_driver_alloc(bytes);
    auto at = std::lower_bound(buffers_.begin(), buffers_.end(), bytes, by_size);
    buffers_.insert(at, { bytes, *ptr, clock_, r.growing() ? use::out_growing : use::out }); // within the room made
    *actual = bytes;
    return OK;
}

status pool_legacy::fall_back(const request & r, size_t * bytes, void ** ptr) {
    const size_t refused = *bytes, ahead = look_ahead(r.size);
    for (size_t next = fallback_bytes(r, refused, ahead, ROUNDING); next != 0;
         next        = fallback_bytes(r, next, ahead, ROUNDING)) {
        *bytes = next;
        if (drv_.malloc(device_, next, ptr) == OK) {
            log_fallback(refused, next, r.size);
            return OK;
        }
    }
    return OUT_OF_MEMORY;
}

void pool_legacy::keep_within_headroom(size_t bytes) {
    if (opt_.headroom_pct == GGML_CPOOL_HEADROOM_UNLIMITED || cached_ == 0) {
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

status pool_legacy::reclaim(size_t bytes, void ** ptr, const char ** how) {
    // queued kernels may still use cached buffers, and other streams' frees land; the stream, since a
    // device-wide synchronize would break another context's capture
    status st = synchronize();
    if (st != OK) {
        say(GGML_CPOOL_LOG_ERROR, "synchronize before reclaim failed (%s); nothing freed", ggml_cpool_status_str(st));
        return st;
    }
    // a retry once `freed` bytes went back by `verb`; the flush, or the caller, says what follows
    auto retried = [&](const char * verb, size_t freed) {
        const bool ok = drv_.malloc(device_, bytes, ptr) == OK;
        if (ok) {
            GCP_LOG_DEBUG("%s: retry succeeded after %s %.2f MiB", name(), verb, to_mib(freed));
        }
        return ok;
    };
    if (cached_ + growth_ == 0) {
        // nothing to free: one retry, for a failure that has passed by now
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed with nothing cached (%.2f MiB live); retrying once", name(),
                      to_mib(bytes), to_mib(hot_.live_bytes));
        *how = "out of memory with nothing cached";
        return retried("freeing", 0) ? OK : OUT_OF_MEMORY;
    }
    if (opt_.lru) {
        const size_t target = RECLAIM_FACTOR * bytes;
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed, trying LRU-style reclaim (target %.2f MiB) from %.2f MiB cached",
                      name(), to_mib(bytes), to_mib(target), to_mib(cached_bytes()));
        const size_t freed = release_oldest(target, true);
        stats_.lru_reclaims++;
        stats_.lru_reclaimed_bytes += freed;
        if (retried("reclaiming", freed)) {
            return OK;
        }
        if (cached_ + growth_ == 0) {
            *how = "out of memory after reclaiming everything cached";
            return OUT_OF_MEMORY;
        }
    }
    GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed, freeing all %.2f MiB cached and retrying once", name(), to_mib(bytes),
                  to_mib(cached_bytes()));
    const size_t freed = release_oldest(SIZE_MAX, true);
    stats_.flushes++;
    *how = "out of memory after freeing everything cached";
    return retried("freeing", freed) ? OK : OUT_OF_MEMORY;
}

bool pool_legacy::release(size_t i) {
    const buffer b  = buffers_[i];
    const status st = drv_.free(device_, b.ptr);
    if (st != OK) {
        // kept cached: a buffer the driver would not take back is not lost from the accounting
        say(GGML_CPOOL_LOG_ERROR, "driver free of %p (%.2f MiB) failed (%s); kept cached", b.ptr, to_mib(b.size),
            ggml_cpool_status_str(st));
        return false;
    }
    buffers_.erase(buffers_.begin() + std::ptrdiff_t(i));
    (b.state == use::growth ? growth_ : cached_)--;
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
            const buffer & b = buffers_[i];
            if ((b.state == use::cached || (growth && b.state == use::growth)) && b.last_use > after &&
                (oldest == end() || b.last_use < buffers_[oldest].last_use) && !pinned(b.ptr)) {
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
    // ggml frees the buffer taken last first: its place, where it still is, before a search
    size_t i = last_taken_ < end() && buffers_[last_taken_].ptr == ptr ?
                   last_taken_ :
                   size_t(std::lower_bound(buffers_.begin(), buffers_.end(), actual, by_size) - buffers_.begin());
    while (i < end() && buffers_[i].size == actual && buffers_[i].ptr != ptr) {
        i++;
    }
    if (GCP_UNLIKELY(i == end() || buffers_[i].ptr != ptr || buffers_[i].size != actual ||
                     buffers_[i].state < use::out)) {
        return false;
    }
    buffer &   b = buffers_[i];
    // still as large as the latest growing request: kept for the next steps of the growth
    const bool growth = GCP_UNLIKELY(b.state == use::out_growing) && b.size >= need_ && growth_ < MAX_GROWING;
    b.state           = growth ? use::growth : use::cached;
    b.last_use        = ++clock_;
    (growth ? growth_ : cached_)++;
    if (GCP_UNLIKELY(cached_ + growth_ > MAX_CACHED_BUFFERS) && !pinned(ptr) && !capturing()) {
        GCP_LOG_DEBUG("%s: cache full (%zu buffers); returning %.2f MiB to the driver", name(), MAX_CACHED_BUFFERS,
                      to_mib(actual));
        release(i); // a refused one stays cached past the bound, as a pinned one does: the next flush tries again
    }
    return true;
}

std::optional<size_t> pool_legacy::live_size(const void * ptr) const {
    auto it = std::find_if(buffers_.begin(), buffers_.end(),
                           [&](const buffer & b) { return b.ptr == ptr && b.state >= use::out; });
    return it != buffers_.end() ? std::optional<size_t>(it->size) : std::nullopt;
}

bool pool_legacy::any_live(void ** ptr, size_t * size) const {
    auto it = std::find_if(buffers_.begin(), buffers_.end(), [](const buffer & b) { return b.state >= use::out; });
    *ptr    = it != buffers_.end() ? it->ptr : nullptr;
    *size   = it != buffers_.end() ? it->size : 0;
    return it != buffers_.end();
}

status pool_legacy::trim() {
    if (capturing()) {
        log_capture_refusal("trim refused");
        return UNSUPPORTED;
    }
    release_oldest(SIZE_MAX, true);
    const bool refused = std::any_of(buffers_.begin(), buffers_.end(),
                                     [&](const buffer & b) { return b.state < use::out && !pinned(b.ptr); });
    return refused ? DRIVER_ERROR : OK; // the driver refused one
}

} // namespace gcp
