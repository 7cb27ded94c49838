#include "async.h"

#include "recovery.h"
#include "warm-record.h"

#include <algorithm>

namespace gcp {

pool_async::pool_async(std::shared_ptr<driver> drv, int device, stream_t stream, uint32_t headroom_pct) :
    pool(*drv, device, GGML_CPOOL_KIND_ASYNC, stream),
    owner_(std::move(drv)),
    headroom_pct_(headroom_pct) {
    warm_record::instance().join(owner_, device_);
    read_usage();
}

pool_async::~pool_async() {
    free_live();
    flush_reuse();
    drain(true);
    if (synchronize() != OK) {
        say(GGML_CPOOL_LOG_ERROR, "synchronizing the stream before release failed");
    }
    release_capture_cache(true);
    warm_record::instance().leave();
}

bool pool_async::read_usage(size_t pending) {
    size_t reserved = 0, used = 0;
    if (drv_.pool_usage(device_, &reserved, &used) == OK) { // statistics only: where it fails, the last read stands
        pool_reserved_ = reserved;
        pool_used_     = used;
    }
    pool_peak_used_ = std::max(pool_peak_used_, pool_used_);
    // the device pool holds at least what this context has live from it, held back, kept for
    // reuse or about to hand out: never report less, even when the read failed (live + cached ==
    // reserved); the capture cache's buffers come on top
    const size_t capture_out = capture_bytes_ - total_size(capture_cache_);
    const size_t device_live = hot_.live_bytes - std::min(hot_.live_bytes, capture_out);
    const size_t held_back   = total_size(deferred_) + reuse_.bytes();
    reserved                 = std::max(pool_reserved_, device_live + held_back + pending) + capture_bytes_;
    bool grew                = reserved > stats_.reserved_bytes;
    if (grew) {
        on_driver_alloc(reserved - stats_.reserved_bytes);
    } else if (reserved < stats_.reserved_bytes) {
        on_driver_free(stats_.reserved_bytes - reserved);
    }
    return grew;
}

status pool_async::alloc_in_capture(const request & r, void ** ptr, size_t * actual) {
    const size_t bytes = miss_bytes(r, 0, ALIGNMENT);
    // its free needs no memory once the graph uses it: a place among those out, and in the cache
    ensure_capacity(capture_out_, capture_out_.size() + 1);
    ensure_capacity(capture_cache_, capture_cache_.size() + capture_out_.size() + 1);
    auto best =
        smallest_holding(capture_cache_.begin(), capture_cache_.end(), bytes, [](const held_buffer &) { return true; });
    if (best != capture_cache_.end()) {
        *ptr    = best->ptr;
        *actual = best->size;
        capture_cache_.erase(best);
        capture_out_.push_back(*ptr);
        return OK;
    }
    // synchronous and outside the stream: legal in a relaxed-mode capture, and no graph node
    asking();
    ladder l(*this, bytes, ptr, ladder::driver_malloc);
    if (!l.ask() && round_up(r.size, ALIGNMENT) < bytes) {
        // no synchronize or trim is legal here: a growing request takes its own size (cached, or its own)
        return fell_back(alloc_in_capture(request{ r.size, 0, 0 }, ptr, actual), bytes, r.size, actual);
    }
    l.st != OUT_OF_MEMORY || l.wait(); // no synchronize or trim is legal here to make room; a wait is
    if (l.st != OK) {
        say(GGML_CPOOL_LOG_WARN, "alloc of %.2f MiB failed during graph capture (%s)", to_mib(bytes),
            ggml_cpool_status_str(l.st));
        return l.st;
    }
    capture_out_.push_back(*ptr);
    capture_bytes_ += bytes;
    on_driver_alloc(bytes);
    *actual = bytes;
    return OK;
}

void pool_async::release_capture_cache(bool force) {
    bool gone = false;
    for (size_t i = capture_cache_.size(); i-- > 0;) {
        const held_buffer b = capture_cache_[i];
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
    read_usage();
}

status pool_async::do_alloc(const request & r, void ** ptr, size_t * actual) {
    ensure_capacity(live_, live_.size() + 1); // its record, before anything is taken
    const status st = alloc_stream_ordered(r, ptr, actual);
    if (st == OK) {
        live_.push_back({ *ptr, *actual }); // within the room made above
    }
    return st;
}

status pool_async::alloc_stream_ordered(const request & r, void ** ptr, size_t * actual) {
    if (capturing_as_declared()) {
        return alloc_in_capture(r, ptr, actual);
    }
    const size_t bytes = miss_bytes(r, 0, ALIGNMENT);
    held_buffer  again{};
    if (reuse_.take(round_up(r.size, ALIGNMENT), bytes, &again)) {
        *ptr    = again.ptr;
        *actual = again.size;
        return OK;
    }
    // a buffer from the device: room first for every buffer to be held back, which only these add to
    ensure_capacity(deferred_, deferred_.size() + live_.size() + 1 + reuse_cache::MAX_BUFFERS);
    drain(); // what a capture held back goes first
    if (reuse_.bytes() != 0 && pool_used_ + bytes > pool_reserved_) {
        read_usage(); // the last read may be stale: other contexts' calls move the device pool too
        if (pool_used_ + bytes > pool_reserved_) {
            flush_reuse(); // what the cache holds may serve this instead
            read_usage();
        }
    }
    // the device pool holds at most headroom_pct_ above its peak use: before it grows (what it holds
    // unused cannot serve this), what it would hold beyond goes back
    const size_t unused = pool_reserved_ - std::min(pool_reserved_, pool_used_);
    if (headroom_pct_ != GGML_CPOOL_HEADROOM_UNLIMITED && unused != 0 && unused < bytes) {
        const size_t budget = headroom_budget(std::max(pool_peak_used_, pool_used_ + bytes), headroom_pct_);
        trim_to(budget > bytes ? budget - bytes : 0, 0);
    }
    asking();
    ladder l(*this, bytes, ptr, [](pool & p, ladder & at) {
        auto & self = static_cast<pool_async &>(p);
        return self.drv_.malloc_async(p.device(), at.bytes, self.stream_, at.ptr);
    });
    if (!l.ask() && capturing()) {
        l.fall_back(r, 0, ALIGNMENT) || l.wait() || l.refused_in_capture();
    } else if (l.st == OUT_OF_MEMORY &&
               !(reclaim(l) || l.fall_back(r, 0, ALIGNMENT) || l.retry_transient() || l.wait())) {
        say(GGML_CPOOL_LOG_WARN,
            "async alloc of %.2f MiB failed: out of memory, also after trimming the stream-ordered pool and %d "
            "retries after a pause",
            to_mib(l.bytes), TRANSIENT_RETRIES);
    } else if (l.st != OK) {
        say(GGML_CPOOL_LOG_WARN, "async alloc of %.2f MiB failed (%s)", to_mib(l.bytes), ggml_cpool_status_str(l.st));
    }
    if (l.st != OK) {
        read_usage();
        return l.st;
    }
    if (read_usage(l.bytes)) {
        // it grew where the unused memory looked enough (fragmented): what is beyond the headroom goes back
        trim_to(headroom_budget(pool_peak_used_, headroom_pct_), l.bytes);
    }
    *actual = l.bytes;
    return OK;
}

bool pool_async::reclaim(ladder & l) {
    // the device pool holds unused memory of every stream: let the frees land, give it back, retry once
    say(GGML_CPOOL_LOG_DEBUG, "async alloc of %.2f MiB failed, trimming the stream-ordered pool and retrying once",
        to_mib(l.bytes));
    flush_reuse();
    status st = synchronize();
    if (st == OK) {
        st = drv_.pool_trim(device_, 0);
    }
    if (st != OK) {
        return l.ends(st);
    }
    stats_.flushes++;
    return l.ask();
}

void pool_async::trim_to(size_t keep, size_t pending) {
    if (pool_reserved_ <= keep) {
        return;
    }
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
    read_usage(pending);
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
    reuse_.put({ ptr, actual }, [this](const held_buffer & b) { free_or_defer(b.ptr, b.size); });
    return true;
}

std::vector<held_buffer>::iterator pool_async::find_live(const void * ptr) {
    // ggml frees the newest first: from the back
    auto it = std::find_if(live_.rbegin(), live_.rend(), [&](const held_buffer & b) { return b.ptr == ptr; });
    return it == live_.rend() ? live_.end() : std::prev(it.base());
}

bool pool_async::live_buffer(const void * ptr, held_buffer * out) const {
    auto it = ptr == nullptr && !live_.empty() ? live_.end() - 1 : const_cast<pool_async *>(this)->find_live(ptr);
    if (it == live_.end()) {
        return false;
    }
    *out = *it;
    return true;
}

void pool_async::free_or_defer(void * ptr, size_t actual) noexcept {
    // a graph replays into it, or a free now would be captured into the graph: hold it back
    if (pinned(ptr) || capturing_as_declared() || !free_now(ptr, actual)) {
        deferred_.push_back({ ptr, actual }); // within the room alloc made
    }
}

void pool_async::flush_reuse() noexcept {
    reuse_.clear([this](const held_buffer & b) { free_or_defer(b.ptr, b.size); });
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

status pool_async::do_trim() {
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
    read_usage();
    return st;
}

} // namespace gcp
