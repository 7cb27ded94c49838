#include "torch-allocator.h"

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <new>
#include <utility>

namespace gcp_torch {

namespace {

constexpr double MiB         = 1024.0 * 1024.0;
constexpr size_t LINE_LENGTH = 512;
// PyTorch's caching allocator rounds every block to 512 bytes, so its tensors start 512-byte
// aligned and kernels count on it (a cuBLAS workspace needs 256); the VMM pool packs blocks at
// 128, so every request is rounded up to this before it reaches a pool
constexpr size_t TORCH_ALIGNMENT = 512;

} // namespace

torch_allocator::torch_allocator(ggml_cpool_ctx_t ctx, platform p) : ctx_(ctx), platform_(std::move(p)) {}

void torch_allocator::say(const char * fmt, ...) const {
    char    line[LINE_LENGTH];
    int     n = snprintf(line, sizeof(line), "ggml-cuda-pool-torch: ");
    va_list args;
    va_start(args, fmt);
    vsnprintf(line + n, sizeof(line) - size_t(n), fmt, args);
    va_end(args);
    if (platform_.log) {
        platform_.log(line);
    }
}

int torch_allocator::slot_for(int device, void * stream, size_t size, refusal * why) {
    int slot = slots_.find(device, stream);
    if (slot >= 0) {
        return slot;
    }
    slot = slots_.vacant(device);
    if (slot < 0) {
        why->set(refusal::kind::failure,
                 "ggml-cuda-pool-torch: alloc of %.2f MiB on device %d, stream %p: no stream slot left (all %d of the "
                 "device's hold live buffers of other streams)",
                 size / MiB, device, stream, slot_map::SLOTS);
        return -1;
    }
    // the slot's pool, if it has one, moves to the new stream once the old one is synchronized
    ggml_cpool_status st = ggml_cpool_ctx_set_stream(ctx_, device, slot, stream);
    if (st != GGML_CPOOL_STATUS_OK) {
        why->set(refusal::kind::failure,
                 "ggml-cuda-pool-torch: alloc of %.2f MiB on device %d: binding stream %p to slot %d failed (%s: %s)",
                 size / MiB, device, stream, slot, ggml_cpool_status_str(st), module_reason());
        return -1;
    }
    slots_.bind(device, slot, stream);
    return slot;
}

void * torch_allocator::alloc(size_t size, int device, void * stream, refusal * why) noexcept {
    if (size == 0) {
        return nullptr;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!slot_map::valid_device(device)) {
        why->set(refusal::kind::failure, "ggml-cuda-pool-torch: alloc of %.2f MiB: device %d out of range (0..%d)",
                 size / MiB, device, slot_map::DEVICES - 1);
        return nullptr;
    }
    stream   = stream != nullptr ? stream : platform_.default_stream;
    int slot = slot_for(device, stream, size, why);
    if (slot < 0) {
        return nullptr;
    }
    pool_use & use = uses_[device][slot];
    if (use.pool == nullptr) {
        ggml_cpool_status st = ggml_cpool_ctx_get_slot_pool(ctx_, device, slot, &use.pool);
        if (st != GGML_CPOOL_STATUS_OK) {
            use.pool = nullptr;
            why->set(refusal::kind::failure,
                     "ggml-cuda-pool-torch: alloc of %.2f MiB on device %d: no pool for slot %d (%s: %s)", size / MiB,
                     device, slot, ggml_cpool_status_str(st), module_reason());
            return nullptr;
        }
    }
    void * ptr    = nullptr;
    size_t actual = 0;
    if (serve(size, device, slot, &ptr, &actual, why) != GGML_CPOOL_STATUS_OK) {
        return nullptr;
    }
    try {
        live_.add(ptr, { use.pool, device, slot, stream, size, actual });
    } catch (const std::bad_alloc &) {
        (void) ggml_cpool_free(use.pool, ptr, actual); // a buffer just handed out: never refused
        why->set(refusal::kind::failure,
                 "ggml-cuda-pool-torch: alloc of %.2f MiB on device %d: out of host memory for its record", size / MiB,
                 device);
        return nullptr;
    }
    slots_.hold(device, slot);
    use.live_requested += size;
    use.peak_requested = std::max(use.peak_requested, use.live_requested);
    return ptr;
}

ggml_cpool_status torch_allocator::serve(size_t size, int device, int slot, void ** ptr, size_t * actual,
                                         refusal * why) {
    if (size > SIZE_MAX - (TORCH_ALIGNMENT - 1)) { // rounding it up would wrap: no device has that much
        why->set(refusal::kind::out_of_memory, "CUDA out of memory. Tried to allocate %s, more than any device has.",
                 format_size(size).text);
        return GGML_CPOOL_STATUS_OUT_OF_MEMORY;
    }
    const size_t      rounded = (size + TORCH_ALIGNMENT - 1) / TORCH_ALIGNMENT * TORCH_ALIGNMENT;
    ggml_cpool_t      pool    = uses_[device][slot].pool;
    ggml_cpool_status st      = ggml_cpool_alloc(pool, rounded, 0, ptr, actual);
    char              reason[refusal::MESSAGE_LENGTH / 2]; // the pool's line, before the other pools say theirs
    size_t            given_back = 0;
    if (st == GGML_CPOOL_STATUS_OUT_OF_MEMORY) {
        snprintf(reason, sizeof(reason), "%s", module_reason());
        given_back = trim_other_pools(device, slot);
        if (given_back > 0) {
            st = ggml_cpool_alloc(pool, rounded, 0, ptr, actual);
            snprintf(reason, sizeof(reason), "%s", module_reason());
        }
    }
    if (st == GGML_CPOOL_STATUS_OUT_OF_MEMORY) {
        refuse_out_of_memory(why, facts(size, device, slot, given_back, reason));
    } else if (st != GGML_CPOOL_STATUS_OK) {
        why->set(refusal::kind::failure, "ggml-cuda-pool-torch: alloc of %s on device %d failed (%s: %s)",
                 format_size(size).text, device, ggml_cpool_status_str(st), module_reason());
    }
    return st;
}

out_of_memory_facts torch_allocator::facts(size_t size, int device, int slot, size_t given_back,
                                           const char * reason) const {
    ggml_cpool_t        pool = uses_[device][slot].pool;
    ggml_cpool_stats    stats{};
    out_of_memory_facts f{};
    (void) ggml_cpool_get_stats(pool, &stats);
    for (int s = 0; s < slot_map::SLOTS; s++) {
        f.other_pools += s != slot && uses_[device][s].pool != nullptr;
    }
    f.size         = size;
    f.device       = device;
    f.memory_known = platform_.memory && platform_.memory(device, &f.free, &f.total);
    f.kind         = ggml_cpool_kind_str(ggml_cpool_get_kind(pool));
    f.live         = stats.live_bytes;
    f.reserved     = stats.reserved_bytes;
    f.given_back   = given_back;
    f.reason       = reason;
    return f;
}

size_t torch_allocator::trim_other_pools(int device, int slot) {
    size_t given_back = 0;
    for (int s = 0; s < slot_map::SLOTS; s++) {
        ggml_cpool_t     pool = uses_[device][s].pool;
        ggml_cpool_stats before{}, after{};
        if (s == slot || pool == nullptr || ggml_cpool_get_stats(pool, &before) != GGML_CPOOL_STATUS_OK) {
            continue;
        }
        // a pool whose stream captures a graph, or whose buffer the driver keeps, says so itself
        (void) ggml_cpool_trim(pool);
        if (ggml_cpool_get_stats(pool, &after) == GGML_CPOOL_STATUS_OK &&
            after.reserved_bytes < before.reserved_bytes) {
            given_back += before.reserved_bytes - after.reserved_bytes;
        }
    }
    return given_back;
}

void torch_allocator::free(void * ptr, size_t size, int device, void * stream) noexcept {
    if (ptr == nullptr) {
        return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    const allocation *          found = live_.find(ptr);
    if (found == nullptr) {
        say("free of %p: not a live buffer of this allocator; ignored", ptr);
        return;
    }
    const allocation a = *found;
    if (size != a.size || device != a.device) {
        say("free of %p: %zu bytes on device %d, but it was allocated with %zu bytes on device %d; kept live", ptr,
            size, device, a.size, a.device);
        return;
    }
    stream = stream != nullptr ? stream : platform_.default_stream;
    if (freed_on_another_stream(a, stream)) {
        // under the lock: rare (PyTorch passes the allocation's stream), and simplest to reason about
        if (!platform_.wait_stream || !platform_.wait_stream(device, stream)) {
            say("free of %p on stream %p (allocated on %p): that stream could not be synchronized, so the buffer "
                "stays live rather than be reused under its work",
                ptr, stream, a.stream);
            return;
        }
        uses_[device][a.slot].cross_stream_frees++;
    }
    ggml_cpool_status st = ggml_cpool_free(a.pool, ptr, a.actual);
    if (st != GGML_CPOOL_STATUS_OK) { // the record and the pool disagree: keep both as they are
        say("free of %p: the pool refused it (%s: %s)", ptr, ggml_cpool_status_str(st), module_reason());
        return;
    }
    live_.remove(ptr);
    slots_.release(device, a.slot);
    uses_[device][a.slot].live_requested -= size;
}

std::vector<std::string> torch_allocator::stats_lines() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string>    lines;
    for (int d = 0; d < slot_map::DEVICES; d++) {
        for (int s = 0; s < slot_map::SLOTS; s++) {
            const pool_use & use = uses_[d][s];
            ggml_cpool_stats st{};
            if (use.pool == nullptr || ggml_cpool_get_stats(use.pool, &st) != GGML_CPOOL_STATUS_OK) {
                continue;
            }
            char line[LINE_LENGTH];
            snprintf(line, sizeof(line),
                     "ggml-cuda-pool stats: device=%d slot=%d pool=%s allocs=%llu hits=%llu driver_allocs=%llu "
                     "driver_frees=%llu live_mib=%.2f peak_live_mib=%.2f peak_reserved_mib=%.2f "
                     "peak_requested_mib=%.2f syncs=%llu cross_stream_frees=%llu streams=%llu neighbour_asks=%llu "
                     "neighbour_received_mib=%.2f neighbour_ask_ms=%.1f neighbour_gives=%llu neighbour_given_mib=%.2f "
                     "call_ms=%.6f",
                     d, s, ggml_cpool_kind_str(ggml_cpool_get_kind(use.pool)), (unsigned long long) st.allocs,
                     (unsigned long long) st.hits, (unsigned long long) st.driver_allocs,
                     (unsigned long long) st.driver_frees, st.live_bytes / MiB, st.peak_live_bytes / MiB,
                     st.peak_reserved_bytes / MiB, use.peak_requested / MiB, (unsigned long long) st.synchronizes,
                     (unsigned long long) use.cross_stream_frees, (unsigned long long) slots_.at(d, s).bindings,
                     (unsigned long long) st.neighbour_asks, st.neighbour_received_bytes / MiB,
                     st.neighbour_ask_ns / 1e6, (unsigned long long) st.neighbour_gives, st.neighbour_given_bytes / MiB,
                     st.call_ns / 1e6);
            lines.emplace_back(line);
        }
    }
    return lines;
}

size_t torch_allocator::live_buffers() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.size();
}

} // namespace gcp_torch
