#include "async.h"

#include "../support/log.h"
#include "warm-record.h"

#include <algorithm>

namespace gcp {

pool_async::pool_async(std::shared_ptr<driver> drv, int device, stream_t stream, uint32_t headroom_pct) :
    pool(*drv, device, GGML_CPOOL_KIND_ASYNC, stream),
    owner_(std::move(drv)),
    headroom_pct_(headroom_pct) {
    warm_record::instance().acquire(owner_, device_);
    observe();
}

pool_async::~pool_async() {
    free_live();
    flush_reuse();
    drain(true);
    if (synchronize() != OK) {
        say(GGML_CPOOL_LOG_ERROR, "synchronizing the stream before release failed");
    }
    release_capture_cache(true);
    warm_record::instance().release();
}

bool pool_async::observe(size_t pending) {
    size_t reserved = 0, used = 0;
    if (drv_.pool_usage(device_, &reserved, &used) != OK) { // statistics only: the allocation went through
        reserved = pool_reserved_;
        used     = pool_used_;
    }
    pool_reserved_  = reserved;
    pool_used_      = used;
    pool_peak_used_ = std::max(pool_peak_used_, used);
    // the device pool holds at least what this context has live from it, held back, kept for
    // reuse or about to hand out: never report less, even when the read failed (live + cached ==
    // reserved); the capture cache's buffers come on top
    const size_t capture_out = capture_bytes_ - total_size(capture_cache_);
    const size_t device_live = hot_.live_bytes - std::min(hot_.live_bytes, capture_out);
    const size_t held_back   = total_size(deferred_) + reuse_.bytes();
    reserved                 = std::max(reserved, device_live + held_back + pending) + capture_bytes_;
    bool grew                = reserved > stats_.reserved_bytes;
    if (grew) {
        on_driver_alloc(reserved - stats_.reserved_bytes);
    } else if (reserved < stats_.reserved_bytes) {
        on_driver_free(stats_.reserved_bytes - reserved);
    }
    return grew;
}

size_t pool_async::cached_bytes() const {
    // reserved is the device pool's, so it holds at least this context's live bytes
    return stats_.reserved_bytes > hot_.live_bytes ? stats_.reserved_bytes - hot_.live_bytes : 0;
}

// a capture's refused allocation: the one rung a capture allows is the wait
class pool_async::capture_wait final : public recovery_steps {
  public:
    capture_wait(pool_async & p, size_t bytes, void ** ptr) : p_(p), bytes_(bytes), ptr_(ptr) {}

    status retry() override { return p_.drv_.malloc(p_.device_, bytes_, ptr_); }
    size_t asking() const override { return bytes_; }

  private:
    pool_async & p_;
    const size_t bytes_;
    void **      ptr_;
};

status pool_async::alloc_in_capture(const request & r, void ** ptr, size_t * actual) {
    const size_t bytes = miss_bytes(r, 0, ALIGNMENT);
    // its free needs no memory once the graph uses it: a place among those out, and in the cache
    make_room(capture_out_, capture_out_.size() + 1);
    make_room(capture_cache_, capture_cache_.size() + capture_out_.size() + 1);
    auto best =
        smallest_holding(capture_cache_.begin(), capture_cache_.end(), bytes, [](const deferred &) { return true; });
    if (best != capture_cache_.end()) {
        *ptr    = best->ptr;
        *actual = best->size;
        capture_cache_.erase(best);
        capture_out_.push_back(*ptr);
        hot_.hits++;
        return OK;
    }
    // synchronous and outside the stream: legal in a relaxed-mode capture, and no graph node
    status st = drv_.malloc(device_, bytes, ptr);
    if (st == OUT_OF_MEMORY && fallback_bytes(r, bytes, 0, ALIGNMENT) != 0) {
        // no synchronize or trim is legal here: a growing request takes its own size (cached, or its own)
        st = alloc_in_capture(request{ r.size, 0, 0 }, ptr, actual);
        if (st == OK) {
            log_fallback(bytes, *actual, r.size);
        }
        return st;
    }
    if (st == OUT_OF_MEMORY) {
        // no synchronize or trim is legal here to make room; a wait is
        capture_wait wait(*this, bytes, ptr);
        st = wait_for_memory(wait);
    }
    if (st != OK) {
        say(GGML_CPOOL_LOG_WARN, "alloc of %.2f MiB failed during graph capture (%s)", to_mib(bytes),
            ggml_cpool_status_str(st));
        return st;
    }
    capture_out_.push_back(*ptr);
    capture_bytes_ += bytes;
    stats_.misses++;
    on_driver_alloc(bytes);
    *actual = bytes;
    return OK;
}

void pool_async::release_capture_cache(bool force) {
    bool gone = false;
    for (size_t i = capture_cache_.size(); i-- > 0;) {
        const deferred b = capture_cache_[i];
        if (!force && pinned(b.ptr)) {
            continue; // a graph still replays into it
        }
        status st = drv_.free(device_, b.ptr);
        if (st != OK) {
            say(GGML_CPOOL_LOG_ERROR, "driver free of %p (%.2f MiB) failed (%s); kept cached", b.ptr, to_mib(b.size),
                ggml_cpool_status_str(st));
            continue;
        }
        capture_cache_.erase(capture_cache_.begin() + std::ptrdiff_t(i));
        capture_bytes_ -= b.size;
        gone = true;
    }
    if (gone) {
        // the graphs captured with it are captured again: the device pool may have grown meanwhile
        on_addresses_gone();
    }
    observe();
}

class pool_async::steps final : public recovery_steps {
  public:
    steps(pool_async & p, const request & r, size_t * bytes, void ** ptr) : p_(p), r_(r), bytes_(bytes), ptr_(ptr) {}

    status retry() override { return p_.drv_.malloc_async(p_.device_, *bytes_, p_.stream_, ptr_); }
    size_t asking() const override { return *bytes_; }
    // the device pool holds unused memory of every stream: let the frees land, give it back, retry once
    status reclaim() override {
        p_.say(GGML_CPOOL_LOG_DEBUG,
               "async alloc of %.2f MiB failed, trimming the stream-ordered pool and retrying once", to_mib(*bytes_));
        p_.flush_reuse();
        status st = p_.synchronize();
        if (st == OK) {
            st = p_.drv_.pool_trim(p_.device_, 0);
        }
        if (st == OK) {
            p_.stats_.flushes++;
            st = retry();
        }
        return st;
    }
    // a growing request the device will not double takes its own size, before the retries that only wait
    status fall_back() override {
        const size_t alone = fallback_bytes(r_, *bytes_, 0, ALIGNMENT);
        if (alone == 0) {
            return OUT_OF_MEMORY;
        }
        status st = p_.drv_.malloc_async(p_.device_, alone, p_.stream_, ptr_);
        if (st == OK) {
            p_.log_fallback(*bytes_, alone, r_.size);
        }
        *bytes_ = alone;
        return st;
    }
    void report(status st) override {
        if (st == OUT_OF_MEMORY) {
            p_.say(GGML_CPOOL_LOG_WARN,
                   "async alloc of %.2f MiB failed: out of memory, also after trimming the "
                   "stream-ordered pool and %d retries after a pause",
                   to_mib(*bytes_), TRANSIENT_RETRIES);
        } else {
            p_.say(GGML_CPOOL_LOG_WARN, "async alloc of %.2f MiB failed (%s)", to_mib(*bytes_),
                   ggml_cpool_status_str(st));
        }
    }

  private:
    pool_async &    p_;
    const request & r_;
    size_t *        bytes_; // the last size asked for
    void **         ptr_;
};

status pool_async::do_alloc(const request & r, void ** ptr, size_t * actual) {
    make_room(live_, live_.size() + 1); // its record, before anything is taken
    const status st = take(r, ptr, actual);
    if (st == OK) {
        live_.push_back({ *ptr, *actual }); // within the room made above
    }
    return st;
}

status pool_async::take(const request & r, void ** ptr, size_t * actual) {
    if (capturing_as_declared()) {
        return alloc_in_capture(r, ptr, actual);
    }
    size_t              bytes = miss_bytes(r, 0, ALIGNMENT);
    reuse_cache::buffer again{};
    if (reuse_.take(round_up(r.size, ALIGNMENT), bytes, &again)) {
        *ptr    = again.ptr;
        *actual = again.size;
        hot_.hits++;
        return OK;
    }
    // a buffer from the device: room first for every buffer to be held back, which only these add to
    make_room(deferred_, deferred_.size() + live_.size() + 1 + reuse_cache::MAX_BUFFERS);
    if (!deferred_.empty()) {
        drain(); // what a capture held back goes first
    }
    if (!reuse_.empty() && would_grow(bytes)) {
        observe(); // the last read may be stale: other contexts' calls move the device pool too
        if (would_grow(bytes)) {
            flush_reuse(); // what the cache holds may serve this instead
            observe();
        }
    }
    make_room_within_headroom(bytes);
    status st = drv_.malloc_async(device_, bytes, stream_, ptr);
    steps  ladder(*this, r, &bytes, ptr);
    if (st == OUT_OF_MEMORY) {
        st = climb(ladder);
    } else if (st != OK) {
        ladder.report(st);
    }
    if (st != OK) {
        observe();
        return st;
    }
    if (observe(bytes)) {
        stats_.misses++;
        keep_within_headroom(bytes); // it grew where the unused memory looked enough: fragmented
    } else {
        hot_.hits++;
    }
    *actual = bytes;
    return OK;
}

void pool_async::make_room_within_headroom(size_t bytes) {
    const size_t unused = pool_reserved_ - std::min(pool_reserved_, pool_used_);
    if (headroom_pct_ == GGML_CPOOL_HEADROOM_UNLIMITED || unused == 0 || unused >= bytes) {
        return; // nothing to give back, or what the pool holds may serve it
    }
    // it must grow: what it would hold beyond the headroom goes back first
    const size_t budget = headroom_budget(std::max(pool_peak_used_, pool_used_ + bytes), headroom_pct_);
    if (pool_reserved_ + bytes > budget) {
        trim_down_to(budget > bytes ? budget - bytes : 0, 0);
    }
}

void pool_async::keep_within_headroom(size_t pending) {
    const size_t budget = headroom_budget(pool_peak_used_, headroom_pct_);
    if (pool_reserved_ > budget) {
        trim_down_to(budget, pending);
    }
}

void pool_async::trim_down_to(size_t keep, size_t pending) {
    // this stream's frees land first; memory whose frees have not landed stays (the driver's rule)
    status st = synchronize();
    if (st == OK) {
        st = drv_.pool_trim(device_, keep);
    }
    if (st != OK) {
        say(GGML_CPOOL_LOG_WARN, "giving back unused memory beyond the headroom failed (%s)",
            ggml_cpool_status_str(st));
        return;
    }
    const size_t before = pool_reserved_;
    observe(pending);
    GCP_LOG_DEBUG("%s: %.2f MiB held for %.2f MiB in use at peak; gave back %.2f MiB unused beyond the headroom",
                  name(), to_mib(before), to_mib(pool_peak_used_), to_mib(before - std::min(before, pool_reserved_)));
}

bool pool_async::do_free(void * ptr, size_t actual) noexcept {
    auto live = find_live(ptr);
    if (live == live_.end() || live->size != actual) {
        return false;
    }
    live_.erase(live);
    auto captured = std::find(capture_out_.begin(), capture_out_.end(), ptr);
    if (captured != capture_out_.end()) {
        // back to the capture cache, for this capture's next allocation; its graphs keep it
        capture_out_.erase(captured);
        capture_cache_.push_back({ ptr, actual }); // within the room alloc made
        return true;
    }
    auto leave = [this](const reuse_cache::buffer & b) { release(b.ptr, b.size); };
    if (!reuse_.put({ ptr, actual }, leave)) {
        release(ptr, actual);
    }
    return true;
}

std::vector<held_buffer>::iterator pool_async::find_live(const void * ptr) {
    // ggml frees the newest first: from the back
    auto it = std::find_if(live_.rbegin(), live_.rend(), [&](const held_buffer & b) { return b.ptr == ptr; });
    return it == live_.rend() ? live_.end() : std::prev(it.base());
}

std::optional<size_t> pool_async::live_size(const void * ptr) const {
    auto it = const_cast<pool_async *>(this)->find_live(ptr);
    return it != live_.end() ? std::optional<size_t>(it->size) : std::nullopt;
}

bool pool_async::any_live(void ** ptr, size_t * size) const {
    *ptr  = live_.empty() ? nullptr : live_.back().ptr;
    *size = live_.empty() ? 0 : live_.back().size;
    return !live_.empty();
}

void pool_async::release(void * ptr, size_t actual) noexcept {
    // a graph replays into it, or a free now would be captured into the graph: hold it back
    if (pinned(ptr) || capturing_as_declared() || !free_now(ptr, actual)) {
        deferred_.push_back({ ptr, actual }); // within the room alloc made
    }
}

void pool_async::flush_reuse() noexcept {
    reuse_.clear([this](const reuse_cache::buffer & b) { release(b.ptr, b.size); });
}

bool pool_async::free_now(void * ptr, size_t actual) {
    status st = drv_.free_async(device_, ptr, stream_);
    if (st == OK) {
        pool_used_ -= std::min(pool_used_, actual); // as the next read will say
    } else {
        say(GGML_CPOOL_LOG_ERROR, "async free of %p (%.2f MiB) failed (%s); kept, to retry", ptr, to_mib(actual),
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
    flush_reuse();
    drain();
    status st = synchronize();
    if (st == OK) {
        release_capture_cache();
        st = drv_.pool_trim(device_, 0);
    }
    if (st != OK) {
        say(GGML_CPOOL_LOG_ERROR, "trimming the stream-ordered pool failed (%s)", ggml_cpool_status_str(st));
    }
    observe();
    return st;
}

} // namespace gcp
