#include "legacy.h"

#include "hit-path.h"
#include "../support/log.h"

namespace gcp {

pool_legacy::pool_legacy(driver & drv, int device, ggml_cpool_kind kind, stream_t stream, options opt) :
    pool(drv, device, kind, stream, hit_path::legacy),
    opt_(opt) {}

pool_legacy::~pool_legacy() {
    release_live();
    release_oldest(SIZE_MAX, scope::everything);
}

size_t pool_legacy::cached_bytes() const {
    return bins_.bytes() + reserve_.bytes();
}

size_t pool_legacy::live_buffers() const {
    size_t n = 0;
    bins_.for_each_out([&](void *, size_t) { n++; });
    return n;
}

bool pool_legacy::any_live(void ** ptr, size_t * size) const {
    return bins_.first_out(ptr, size);
}

void pool_legacy::note_growth(size_t size) {
    reserve_.grow_to(size, [&](const size_bins::buffer & b) {
        bins_.reserve(b.size);
        bins_.lend(b.ptr, b.size);
        bins_.put(bins_.find_out(b.ptr, b.size), ++outgrown_);
    });
}

bool pool_legacy::take_reserved(size_t size, bool growing, size_bins::buffer * hit) {
    if (!reserve_.best_fit(size, hit)) {
        return false;
    }
    bins_.reserve(hit->size); // recorded out, as every buffer handed out is (may throw: nothing taken)
    reserve_.take(hit->ptr);
    bins_.lend(hit->ptr, hit->size, growing);
    return true;
}

bool pool_legacy::serve_hit(size_t size, void ** ptr, size_t * actual) {
    size_bins::buffer hit{};
    if (!bins_.take_slotted(size, &hit)) {
        return false;
    }
    clock_++;
    *ptr    = hit.ptr;
    *actual = hit.size;
    return true;
}

status pool_legacy::do_alloc(const request & r, void ** ptr, size_t * actual) {
    clock_++;
    size_bins::buffer hit{};
    // best fit: the smallest cached buffer that holds the request
    if (r.growing() ? take_growing(r, &hit) : bins_.take(r.size, &hit)) {
        *ptr    = hit.ptr;
        *actual = hit.size;
        hit_.counts.hits++;
        return OK;
    }
    return miss(r, ptr, actual);
}

bool pool_legacy::take_growing(const request & r, size_bins::buffer * hit) {
    note_growth(r.size);
    if (take_reserved(r.size, true, hit)) { // the reserve first
        return true;
    }
    if (!bins_.take(r.size, hit)) {
        return false;
    }
    // a growing request's buffer goes to the reserve once freed, but not an ordinary one larger
    // than its miss would take: that was made for another request (a weight matrix's
    // dequantization), which would miss while it waits there for growing requests only
    if (hit->size <= miss_bytes(r, LOOK_AHEAD_DIVISOR, ROUNDING)) {
        bins_.hold_for_growth(*hit);
    }
    return true;
}

class pool_legacy::steps final : public recovery_steps {
  public:
    steps(pool_legacy & p, const request & r, size_t * bytes, void ** ptr) : p_(p), r_(r), bytes_(bytes), ptr_(ptr) {}

    status retry() override { return p_.drv_.malloc(p_.device_, *bytes_, ptr_); }
    status give_back() override { return p_.give_back(*bytes_, ptr_, &how_); }
    // the doubling and the look-ahead are worth the recovery (a reclaim costs less than the
    // misses they spare), not a failed request
    status fall_back() override { return p_.fall_back(r_, bytes_, ptr_); }

    void refuse_in_capture() override {
        GCP_LOG_WARN("%s: alloc of %.2f MiB failed during graph capture, where synchronize and free are illegal: "
                     "no reclaim, returning OUT_OF_MEMORY (allocate before capturing, as a warm-up run does)",
                     p_.name(), to_mib(*bytes_));
    }
    void report(status /*st*/) override {
        if (how_ == nullptr) {
            return; // the synchronize's line said why nothing was given back
        }
        p_.driver_failed(GGML_CPOOL_LOG_WARN,
                         "alloc of %.2f MiB failed: %s (%.2f MiB live), and %d retries after a pause did not help",
                         to_mib(*bytes_), how_, to_mib(p_.hit_.counts.live_bytes), TRANSIENT_RETRIES);
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
    bins_.reserve(bytes); // room for it to come back, before anything is taken (may throw)
    keep_within_headroom(bytes);
    status st = drv_.malloc(device_, bytes, ptr, cached_bytes());
    if (st == OUT_OF_MEMORY && !r.growing() && serve_from_reserve(r.size, bytes, ptr, actual)) {
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
        bins_.unreserve(bytes);
        return st;
    }
    on_driver_alloc(bytes);
    bins_.lend(*ptr, bytes, r.growing());
    *actual = bytes;
    return OK;
}

status pool_legacy::fall_back(const request & r, size_t * bytes, void ** ptr) {
    const size_t refused = *bytes;
    size_t       next    = fallback_bytes(r, refused, LOOK_AHEAD_DIVISOR, ROUNDING);
    while (next != 0) {
        driver_failed(); // the refusal before this attempt: the lines of the caller or below say how it ends
        // the room kept for the buffer to come back follows its size (may throw: none is kept then)
        bins_.unreserve(*bytes);
        bins_.reserve(next);
        *bytes = next;
        if (drv_.malloc(device_, next, ptr) == OK) {
            log_fallback(refused, next, r.size);
            return OK;
        }
        next = fallback_bytes(r, next, LOOK_AHEAD_DIVISOR, ROUNDING);
    }
    driver_failed();
    return OUT_OF_MEMORY;
}

bool pool_legacy::serve_from_reserve(size_t size, size_t bytes, void ** ptr, size_t * actual) {
    if (!reserve_.holds(size)) {
        return false;
    }
    driver_failed(); // the line below says how it ends
    bins_.unreserve(bytes);
    size_bins::buffer hit{};
    take_reserved(size, false, &hit); // may throw: nothing is taken then
    GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed; served from a cached %.2f MiB growing buffer instead", name(),
                  to_mib(bytes), to_mib(hit.size));
    stats_.misses--;
    hit_.counts.hits++;
    *ptr    = hit.ptr;
    *actual = hit.size;
    return true;
}

void pool_legacy::keep_within_headroom(size_t bytes) {
    if (opt_.headroom_pct == GGML_CPOOL_HEADROOM_UNLIMITED) {
        return;
    }
    const size_t excess = headroom_excess(stats(), bytes, opt_.headroom_pct);
    if (excess == 0 || bins_.count() == 0 || capturing()) {
        return;
    }
    // queued kernels may still use cached buffers: they finish before any goes back
    status st = synchronize();
    if (st != OK) {
        driver_failed(GGML_CPOOL_LOG_WARN, "synchronize before giving back outgrown buffers failed (%s); kept",
                      ggml_cpool_status_str(st));
        return;
    }
    const size_t peak  = std::max(hit_.counts.peak_live_bytes, hit_.counts.live_bytes + bytes);
    const size_t freed = release_oldest(excess, scope::ordinary);
    GCP_LOG_DEBUG("%s: %.2f MiB more would hold %.2f MiB for %.2f MiB live at peak; gave back %.2f MiB least "
                  "recently used",
                  name(), to_mib(bytes), to_mib(stats_.reserved_bytes + freed + bytes), to_mib(peak), to_mib(freed));
}

status pool_legacy::give_back(size_t bytes, void ** ptr, const char ** how) {
    // queued kernels may still use cached buffers: let them finish before any goes back; it also
    // lets other streams' frees land. The pool's stream, not the device: a device-wide
    // synchronize would break a graph capture that another context runs on this device
    status st = synchronize();
    if (st != OK) {
        driver_failed(GGML_CPOOL_LOG_ERROR, "synchronize before reclaim failed (%s); nothing freed",
                      ggml_cpool_status_str(st));
        return st;
    }
    if (cached_count() == 0) {
        // nothing to give back: one retry, for a failure that has passed by now
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed with nothing cached (%.2f MiB live); retrying once", name(),
                      to_mib(bytes), to_mib(hit_.counts.live_bytes));
        if (drv_.malloc(device_, bytes, ptr) == OK) {
            GCP_LOG_DEBUG("%s: retry succeeded", name());
            return OK;
        }
        driver_failed();
        *how = "out of memory with nothing cached";
        return OUT_OF_MEMORY;
    }

    if (opt_.lru) {
        size_t target = RECLAIM_FACTOR * bytes;
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed, trying LRU-style reclaim (target %.2f MiB) from %.2f MiB cached",
                      name(), to_mib(bytes), to_mib(target), to_mib(cached_bytes()));
        size_t freed = release_oldest(target, scope::unpinned);
        stats_.lru_reclaims++;
        stats_.lru_reclaimed_bytes += freed;
        if (drv_.malloc(device_, bytes, ptr) == OK) {
            GCP_LOG_DEBUG("%s: retry succeeded after reclaiming %.2f MiB", name(), to_mib(freed));
            return OK;
        }
        driver_failed(); // the flush below, or the caller, says what comes next
        if (cached_count() == 0) {
            GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed after reclaiming all %.2f MiB cached", name(), to_mib(bytes),
                          to_mib(freed));
            *how = "out of memory after reclaiming everything cached";
            return OUT_OF_MEMORY;
        }
    }

    GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed, freeing all %.2f MiB cached and retrying once", name(), to_mib(bytes),
                  to_mib(cached_bytes()));
    size_t freed = release_oldest(SIZE_MAX, scope::unpinned);
    stats_.flushes++;
    if (drv_.malloc(device_, bytes, ptr) == OK) {
        GCP_LOG_DEBUG("%s: retry succeeded after freeing %.2f MiB", name(), to_mib(freed));
        return OK;
    }
    driver_failed();
    *how = "out of memory after freeing everything cached";
    return OUT_OF_MEMORY;
}

bool pool_legacy::release(const size_bins::buffer & b) {
    status st = drv_.free(device_, b.ptr);
    if (st != OK) {
        // kept cached: a buffer the driver would not take back is not lost from the accounting
        driver_failed(GGML_CPOOL_LOG_ERROR, "driver free of %p (%.2f MiB) failed (%s); kept cached", b.ptr,
                      to_mib(b.size), ggml_cpool_status_str(st));
        return false;
    }
    if (!reserve_.remove(b.ptr)) {
        bins_.remove(b.ptr, b.size);
    }
    on_driver_free(b.size);
    return true;
}

size_t pool_legacy::release_oldest(size_t target, scope which) {
    // oldest stamp first (outgrown buffers, then least recently used), by a scan per buffer: no
    // allocation, so this also serves destruction; each cached buffer has a stamp of its own, so
    // `after` steps over the refused ones
    size_t   freed = 0;
    uint64_t after = 0;
    while (freed < target) {
        size_bins::buffer next{};
        bool              found    = false;
        auto              consider = [&](const size_bins::buffer & b) {
            if (b.last_use > after && (!found || b.last_use < next.last_use) &&
                (which == scope::everything || !pinned(b.ptr))) {
                next  = b;
                found = true;
            }
        };
        bins_.for_each(consider);
        if (which != scope::ordinary) {
            reserve_.for_each(consider);
        }
        if (!found) {
            break;
        }
        after = next.last_use;
        freed += release(next) ? next.size : 0;
    }
    return freed;
}

bool pool_legacy::serve_free(void * ptr, size_t actual) noexcept {
    // back to its slot, on the hit line (size-bins.h); a full cache may send it to the driver
    if (GCP_LIKELY(!cache_full()) && bins_.put_slotted(ptr, actual, clock_ + 1)) {
        clock_++;
        return true;
    }
    return false;
}

size_t pool_legacy::do_free(void * ptr, size_t actual) noexcept {
    if (serve_free(ptr, actual)) {
        return actual;
    }
    const size_bins::out_ref at = bins_.find_out(ptr, actual);
    if (GCP_UNLIKELY(!at.found())) {
        static_assert(size_bins::NONE == NOT_LIVE, "a size the bins do not hold is no live buffer");
        return bins_.size_out(ptr); // NOT_LIVE, or the size it is out at
    }
    clock_++;
    if (GCP_UNLIKELY(at.growing || cache_full()) && set_aside(at, ptr, actual)) {
        return actual;
    }
    bins_.put(at, clock_); // within the room its bin kept
    return actual;
}

bool pool_legacy::set_aside(size_bins::out_ref at, void * ptr, size_t actual) noexcept {
    // still as large as the latest growing request: kept for the next steps of the growth
    if (at.growing && reserve_.keep(ptr, actual, clock_)) {
        bins_.forget(at);
        return true;
    }
    if (cache_full() && !pinned(ptr) && !capturing()) {
        GCP_LOG_DEBUG("%s: cache full (%zu buffers); returning %.2f MiB to the driver", name(), MAX_CACHED_BUFFERS,
                      to_mib(actual));
        status st = drv_.free(device_, ptr);
        if (st == OK) {
            bins_.forget(at);
            on_driver_free(actual);
            return true;
        }
        // kept cached past the limit: still accounted, and the next flush tries again
        driver_failed(GGML_CPOOL_LOG_ERROR, "driver free of %p failed (%s); kept cached", ptr,
                      ggml_cpool_status_str(st));
    }
    return false;
}

status pool_legacy::trim() {
    if (capturing()) {
        log_capture_refusal("trim refused");
        return UNSUPPORTED;
    }
    release_oldest(SIZE_MAX, scope::unpinned);
    bool refused = false;
    auto check   = [&](const size_bins::buffer & b) { refused = refused || !pinned(b.ptr); };
    bins_.for_each(check);
    reserve_.for_each(check);
    return refused ? DRIVER_ERROR : OK; // the driver refused one
}

GCP_HIT_PATH_OF(pool_legacy);

} // namespace gcp
