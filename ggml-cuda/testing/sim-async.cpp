// The sim driver's stream-ordered pool (testing/sim.h): sim_mempool, one per device, reached through
// known streams; an allocation on a capturing stream is a memory node of the graph, outside it.

#include "sim.h"

#include <sys/mman.h>

namespace gcp {

sim_mempool::~sim_mempool() {
    for (auto & b : free_) {
        munmap(b.host, b.size);
    }
    for (auto & b : live_) {
        munmap(b.first, b.second.size);
    }
}

status sim_mempool::alloc(sim_arena & arena, size_t size, void * stream, void ** ptr) {
    const size_t bytes    = round_up(size, SIM_ALIGNMENT);
    const auto   reusable = [&](const free_block & b) { return b.observed || b.stream == stream || reuse != 0; };
    auto best = smallest_holding(free_.rbegin(), free_.rend(), bytes, reusable); // backwards: the first of equal sizes
    if (best != free_.rend()) {
        live_.emplace(best->host, *best); // may throw: nothing changed yet
        used_ += best->size;
        *ptr = best->host;
        free_.erase(std::next(best).base());
        return OK;
    }
    const status st = sim_take(arena, bytes, live_, ptr);
    if (st == OK) {
        reserved_ += bytes;
        used_ += bytes;
    }
    return st;
}

status sim_mempool::free(void * ptr, void * stream) {
    auto it = live_.find(ptr);
    if (it == live_.end()) {
        return INVALID_ARGUMENT;
    }
    free_.push_back({ it->second, ptr, stream, false }); // may throw: nothing changed yet
    used_ -= it->second.size;
    live_.erase(it);
    return OK;
}

void sim_mempool::synchronize(sim_arena & arena) {
    for (auto & b : free_) {
        b.observed = true;
    }
    if (threshold < reserved_) {
        trim(arena, size_t(threshold));
    }
}

void sim_mempool::trim(sim_arena & arena, size_t keep) {
    std::sort(free_.begin(), free_.end(), [](const free_block & a, const free_block & b) { return a.size > b.size; });
    while (reserved_ > keep && !free_.empty()) {
        // only observed frees go back: a queued kernel may still use the others
        auto it = std::find_if(free_.begin(), free_.end(), [](const free_block & b) { return b.observed; });
        if (it == free_.end()) {
            break;
        }
        munmap(it->host, it->size);
        arena.give(it->offset, it->size);
        reserved_ -= it->size;
        free_.erase(it);
    }
}

status sim_primitives::malloc_async(int device, size_t size, stream_t stream, void ** ptr) {
    return with_stream(device, stream, [&](device_state & d, stream_state & s) {
        s.calls++;
        if (size == 0) {
            return INVALID_ARGUMENT;
        }
        // while capturing, a memory node of the graph: device memory of the graph's, not the pool's
        return s.capturing ? sim_take(d.arena, size, d.graph_allocs, ptr) :
                             d.mempool->alloc(d.arena, size, stream, ptr);
    });
}

status sim_primitives::free_async(int device, void * ptr, stream_t stream) {
    return with_stream(device, stream, [&](device_state & d, stream_state & s) {
        s.calls++;
        return sim_give(d.arena, d.graph_allocs, ptr) ? OK : d.mempool->free(ptr, stream);
    });
}

status sim_primitives::trim(int device, size_t keep) {
    return with_device(device, [&](device_state & d) {
        d.mempool->trim(d.arena, keep);
        return OK;
    });
}

status sim_primitives::get_attr(int device, mempool_attr attr, uint64_t * value) {
    return with_device(device, [&](device_state & d) {
        sim_mempool & pool = *d.mempool;
        switch (attr) {
            // clang-format off
            case mempool_attr::release_threshold: *value = pool.threshold; return OK;
            case mempool_attr::reuse_policies:    *value = pool.reuse; return OK;
            case mempool_attr::reserved:          *value = pool.reserved(); return OK;
            case mempool_attr::used:              *value = pool.used(); return OK;
                // clang-format on
        }
        return INVALID_ARGUMENT;
    });
}

status sim_primitives::set_attr(int device, mempool_attr attr, uint64_t value) {
    return with_device(device, [&](device_state & d) {
        sim_mempool & pool = *d.mempool;
        switch (attr) {
            // clang-format off
            case mempool_attr::release_threshold: pool.threshold = value; return OK;
            case mempool_attr::reuse_policies:    pool.reuse = value; return OK;
            case mempool_attr::reserved:
            case mempool_attr::used:              break; // read only
                // clang-format on
        }
        return INVALID_ARGUMENT;
    });
}

} // namespace gcp
