#include "sim-mempool.h"

#include <algorithm>
#include <sys/mman.h>

namespace gcp {

namespace {

constexpr size_t ALIGNMENT = 256;

} // namespace

sim_mempool::~sim_mempool() {
    for (auto & b : free_) {
        munmap(b.host, b.size);
    }
    for (auto & kv : live_) {
        munmap(kv.second.host, kv.second.size);
    }
}

status sim_mempool::alloc(sim_arena & arena, size_t size, void * stream, void ** ptr) {
    size_t bytes = round_up(size, ALIGNMENT);
    auto   best  = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
        bool reusable = it->observed || it->stream == stream || reuse != 0;
        if (reusable && it->size >= bytes && (best == free_.end() || it->size < best->size)) {
            best = it;
        }
    }
    block b{};
    if (best != free_.end()) {
        b = *best;
        live_.emplace(b.host, b); // may throw: nothing changed yet
        free_.erase(best);
    } else {
        if (!arena.take(bytes, &b.offset)) {
            return OUT_OF_MEMORY;
        }
        void * host = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (host == MAP_FAILED) {
            arena.give(b.offset, bytes);
            return OUT_OF_MEMORY;
        }
        b.size = bytes;
        b.host = host;
        try {
            live_.emplace(b.host, b);
        } catch (...) {
            munmap(host, bytes);
            arena.give(b.offset, bytes);
            throw;
        }
        reserved_ += bytes;
    }
    used_ += b.size;
    *ptr = b.host;
    return OK;
}

status sim_mempool::free(void * ptr, void * stream) {
    auto it = live_.find(ptr);
    if (it == live_.end()) {
        return INVALID_ARGUMENT;
    }
    reserve_at_least(free_, free_.size() + 1); // may throw: nothing changed yet
    block b = it->second;
    live_.erase(it);
    b.stream   = stream;
    b.observed = false;
    used_ -= b.size;
    free_.push_back(b);
    return OK;
}

void sim_mempool::synchronize(sim_arena & arena) {
    for (auto & b : free_) {
        b.observed = true;
    }
    if (threshold < reserved_) {
        release_down_to(arena, size_t(threshold));
    }
}

void sim_mempool::trim(sim_arena & arena, size_t keep) {
    release_down_to(arena, keep);
}

void sim_mempool::release_down_to(sim_arena & arena, size_t keep) {
    std::sort(free_.begin(), free_.end(), [](const block & a, const block & b) { return a.size > b.size; });
    while (reserved_ > keep && !free_.empty()) {
        // only observed frees go back: a queued kernel may still use the others
        auto it = std::find_if(free_.begin(), free_.end(), [](const block & b) { return b.observed; });
        if (it == free_.end()) {
            break;
        }
        munmap(it->host, it->size);
        arena.give(it->offset, it->size);
        reserved_ -= it->size;
        free_.erase(it);
    }
}

} // namespace gcp
