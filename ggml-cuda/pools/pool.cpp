#include "pool.h"

#include "../support/log.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace gcp {

namespace {

constexpr size_t LOG_DETAIL_BYTES = 512; // what a failed driver call's line says after the pool's name

// every live pool, and the setting observe_all gave them last
struct observed_registry {
    std::mutex          mutex;
    std::vector<pool *> pools;
    bool                on = false;
};

observed_registry & registry() {
    static observed_registry * r = new observed_registry; // never destroyed: a quarantined pool lives to exit
    return *r;
}

} // namespace

pool::pool(driver & drv, int device, ggml_cpool_kind kind, stream_t stream) :
    device_(device),
    stream_(stream),
    drv_(drv) {
    hot_.kind                     = kind;
    observed_registry &         r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.pools.push_back(this);
    hot_.observed.store(r.on, std::memory_order_relaxed);
}

pool::~pool() {
    observed_registry &         r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.pools.erase(std::find(r.pools.begin(), r.pools.end(), this));
}

void pool::observe_all(bool on) {
    observed_registry &         r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.on = on;
    for (pool * p : r.pools) {
        p->hot_.observed.store(on, std::memory_order_relaxed);
    }
}

const char * pool::name() const {
    if (name_[0] == '\0') {
        format_pool_label(drv_.platform(), device_, name_, sizeof(name_));
    }
    return name_;
}

ggml_cpool_stats pool::stats() const {
    ggml_cpool_stats s = stats_;
    s.live_bytes       = hot_.live_bytes;
    s.peak_live_bytes  = hot_.peak_live_bytes;
    s.allocs           = hot_.allocs;
    s.hits             = hot_.hits;
    s.cached_bytes     = cached_bytes();
    return s;
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

void pool::pin_new(void ** ptr, size_t * actual, uint64_t hits) {
    try {
        // everything that allocates first: the graph's list then never holds a buffer that
        // was not handed out
        std::vector<void *> & list = graphs_[pinning_];
        make_room(list, list.size() + 1);
        pin & p = pins_[*ptr];
        list.push_back(*ptr);
        p.graphs++;
        // an address can come back with another size: the pin covers the largest
        p.size = std::max(p.size, *actual);
    } catch (...) {
        // no room to record the pin: give the buffer back rather than lose it (a hit was no hit)
        do_free(*ptr, *actual);
        hot_.hits = hits;
        *ptr      = nullptr;
        *actual   = 0;
        throw;
    }
}

status pool::reject_free(const void * ptr, size_t actual) const {
    const std::optional<size_t> live = live_size(ptr);
    if (!live) {
        GCP_LOG_ERROR("%s: free of %p rejected: not a live buffer of this pool (double free or foreign pointer)",
                      name(), ptr);
    } else {
        GCP_LOG_ERROR("%s: free of %p rejected: size %zu differs from the %zu bytes allocated", name(), ptr, actual,
                      *live);
    }
    return INVALID_ARGUMENT;
}

void pool::pin_begin(uint64_t graph) {
    pinning_   = graph;
    hot_.flags = uint8_t(graph != 0 ? hot_.flags | PINNING : hot_.flags & ~PINNING);
}

void pool::declare_capture(int capturing) {
    hot_.flags = uint8_t(hot_.flags & ~(DECLARED | DECLARED_CAPTURING));
    if (capturing >= 0) {
        hot_.flags = uint8_t(hot_.flags | DECLARED | (capturing != 0 ? DECLARED_CAPTURING : 0));
    }
}

void pool::pin_release(uint64_t graph) {
    auto it = graphs_.find(graph);
    if (it == graphs_.end()) {
        return; // this pool handed nothing out under that graph
    }
    for (void * p : it->second) {
        auto it2 = pins_.find(p);
        if (--it2->second.graphs == 0) {
            pins_.erase(it2);
        }
    }
    graphs_.erase(it);
    on_unpinned();
}

void pool::log_fallback(size_t refused, size_t taken, size_t size) const {
    GCP_LOG_DEBUG("%s: alloc of %.2f MiB failed; took %.2f MiB instead, for a request of %.2f MiB", name(),
                  to_mib(refused), to_mib(taken), to_mib(size));
}

status pool::synchronize() {
    stats_.synchronizes++;
    return stream_ ? drv_.stream_synchronize(device_, stream_) : drv_.synchronize(device_);
}

status pool::set_stream(stream_t stream) {
    if (stream == stream_) {
        return OK;
    }
    if (capturing()) {
        log_capture_refusal("switching streams refused");
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
    char    text[LOG_DETAIL_BYTES];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof(text), fmt, args);
    va_end(args);
    log(level, "%s: %s", name(), text);
}

bool pool::capturing() {
    if (stream_ == nullptr) {
        return false;
    }
    bool   active = false;
    status st     = drv_.stream_capturing(device_, stream_, &active);
    // unknown: assume the worst, an illegal call would break a capture
    return st != OK || active;
}

void pool::log_capture_refusal(const char * what) {
    GCP_LOG_WARN("%s: %s: the context's stream is capturing a graph, where synchronize and free are illegal "
                 "(allocate before capturing, as a warm-up run does)",
                 name(), what);
}

uintptr_t pool::pinned_top() const {
    uintptr_t top = 0;
    for (auto & p : pins_) {
        top = std::max(top, reinterpret_cast<uintptr_t>(p.first) + p.second.size);
    }
    return top;
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
    void *       ptr   = nullptr;
    size_t       size  = 0;
    while (any_live(&ptr, &size) && free(ptr, size) == OK) {
        n++;
    }
    if (n != 0) {
        GCP_LOG_WARN("%s: destroyed with %zu live buffers (%.2f MiB); released them", name(), n, to_mib(bytes));
    }
}

} // namespace gcp
