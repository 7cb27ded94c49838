#include "pool.h"

#include "../support/log.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace gcp {

size_t headroom_budget(size_t peak, uint32_t headroom_pct) {
    if (headroom_pct == GGML_CPOOL_HEADROOM_UNLIMITED) {
        return SIZE_MAX;
    }
    const double extra = double(peak) * headroom_pct / 100.0;
    return extra >= double(SIZE_MAX - peak) ? SIZE_MAX : peak + size_t(extra);
}

pool::pool(driver & drv, int device, ggml_cpool_kind kind, stream_t stream) :
    device_(device),
    stream_(stream),
    drv_(drv) {
    hot_.kind = kind;
    format_pool_label(drv_.platform(), device_, name_, sizeof(name_));
}

ggml_cpool_stats pool::stats() const {
    neighbours::owner_call own(hot_.turn);
    ggml_cpool_stats       s = stats_;
    s.live_bytes             = hot_.live_bytes;
    s.peak_live_bytes        = hot_.peak_live_bytes;
    s.allocs                 = hot_.allocs;
    s.hits                   = hot_.allocs - stats_.misses;
    s.cached_bytes           = cached_bytes();
    return s;
}

size_t pool::give_idle(size_t /*want*/) noexcept {
    // queued kernels may use cached memory, and a capture allows neither a synchronize nor a free
    const size_t before = stats_.reserved_bytes;
    if (!capturing_as_declared() && synchronize() == OK) {
        (void) do_trim(); // what the driver refused stays cached, and its line says so
    }
    return before - std::min(before, stats_.reserved_bytes);
}

size_t pool::miss_bytes(const request & r, size_t ahead, size_t rounding) {
    const size_t doubled = OVERALLOCATE_FACTOR * r.size;
    const size_t limited = r.limit != 0 ? std::max(r.size, std::min(doubled, r.limit)) : doubled;
    return round_up(r.growing() ? limited : r.size + ahead, rounding);
}

status pool::settle(status st, void ** ptr, size_t * actual) {
    const bool asked = (hot_.flags & ASKED) != 0;
    hot_.flags       = uint8_t(hot_.flags & ~ASKED);
    if (st != OK) {
        stats_.oom_returned += st == OUT_OF_MEMORY;
        return st;
    }
    if ((hot_.flags & PINNING) != 0) {
        try {
            pins_.add(*ptr, *actual);
        } catch (...) {
            // no room to record the pin: the buffer goes back rather than be lost
            do_free(*ptr, *actual);
            *ptr    = nullptr;
            *actual = 0;
            throw;
        }
    }
    stats_.misses += asked;
    hot_.allocs++;
    hot_.live_bytes += *actual;
    hot_.peak_live_bytes = std::max(hot_.peak_live_bytes, hot_.live_bytes);
    return OK;
}

status pool::reject_alloc(size_t size, uint32_t flags, void ** ptr, size_t * actual) {
    if (ptr == nullptr || actual == nullptr || size == 0) {
        GCP_LOG_ERROR("%s: alloc of %zu bytes with %s rejected", name(), size,
                      size == 0 ? "zero size" : "a null output pointer");
        return INVALID_ARGUMENT;
    }
    if ((flags & ~GGML_CPOOL_ALLOC_OVERALLOCATE) != 0) {
        GCP_LOG_ERROR("%s: alloc with unknown flags 0x%x rejected", name(), flags);
        return INVALID_ARGUMENT;
    }
    GCP_LOG_ERROR("%s: alloc of %zu bytes exceeds the largest request (%zu)", name(), size, MAX_REQUEST);
    stats_.oom_returned++;
    return OUT_OF_MEMORY;
}

status pool::reject_free(const void * ptr, size_t actual) const {
    held_buffer live{};
    if (ptr == nullptr || !live_buffer(ptr, &live)) {
        GCP_LOG_ERROR("%s: free of %p rejected: not a live buffer of this pool (double free or foreign pointer)",
                      name(), ptr);
    } else {
        GCP_LOG_ERROR("%s: free of %p rejected: size %zu differs from the %zu bytes allocated", name(), ptr, actual,
                      live.size);
    }
    return INVALID_ARGUMENT;
}

void pool::pin_begin(uint64_t graph) {
    neighbours::owner_call own(hot_.turn);
    pins_.begin(graph);
    hot_.flags = uint8_t(graph != 0 ? hot_.flags | PINNING : hot_.flags & ~PINNING);
}

void pool::pin_release(uint64_t graph) {
    neighbours::owner_call own(hot_.turn);
    if (pins_.unpin(graph)) {
        on_unpinned();
    }
}

status pool::synchronize() {
    stats_.synchronizes++;
    return stream_ ? drv_.stream_synchronize(device_, stream_) : drv_.synchronize(device_);
}

status pool::trim() {
    neighbours::owner_call own(hot_.turn);
    return refused_in_capture("trim refused") ? UNSUPPORTED : do_trim();
}

status pool::set_stream(stream_t stream) {
    neighbours::owner_call own(hot_.turn);
    if (stream == stream_) {
        return OK;
    }
    if (refused_in_capture("switching streams refused")) {
        return UNSUPPORTED;
    }
    on_stream_change();
    // the old stream's kernels may still use buffers the new stream would be handed
    status st = synchronize();
    if (st != OK) {
        say(GGML_CPOOL_LOG_ERROR, "synchronizing the previous stream failed (%s); the pool stays on it",
            ggml_cpool_status_str(st));
        return st;
    }
    stream_ = stream;
    return OK;
}

void pool::say(ggml_cpool_log_level level, const char * fmt, ...) const {
    constexpr size_t LOG_DETAIL_BYTES = 512; // what a failed driver call's line says after the pool's name
    char             text[LOG_DETAIL_BYTES];
    va_list          args;
    va_start(args, fmt);
    vsnprintf(text, sizeof(text), fmt, args);
    va_end(args);
    log(level, "%s: %s", name(), text);
}

bool pool::refused_in_capture(const char * what) const {
    if (!capturing()) {
        return false;
    }
    GCP_LOG_WARN("%s: %s: the context's stream is capturing a graph, where synchronize and free are illegal "
                 "(allocate before capturing, as a warm-up run does)",
                 name(), what);
    return true;
}

status pool::fell_back(status st, size_t refused, size_t size, const size_t * actual) const {
    if (st == OK) {
        GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed; took %.2f MiB instead, for a request of %.2f MiB", name(),
                      to_mib(refused), to_mib(*actual), to_mib(size));
    }
    return st;
}

void pool::on_driver_alloc(size_t bytes) {
    stats_.driver_allocs++;
    stats_.reserved_bytes += bytes;
    stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
}

void pool::on_released(size_t bytes) {
    stats_.driver_frees++;
    stats_.reserved_bytes -= bytes;
}

void pool::free_live() {
    // one at a time, as the record names them: no copy, so no allocation in a destructor. A free of
    // what the record holds never fails; the test stops a kind's mistake from looping
    const size_t bytes = hot_.live_bytes;
    size_t       n     = 0;
    held_buffer  b{};
    while (live_buffer(nullptr, &b) && free(b.ptr, b.size) == OK) {
        n++;
    }
    if (n != 0) {
        GCP_LOG_WARN("%s: destroyed with %zu live buffers (%.2f MiB); released them", name(), n, to_mib(bytes));
    }
}

} // namespace gcp
