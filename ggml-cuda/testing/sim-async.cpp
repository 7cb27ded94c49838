// The sim driver is a driver over sim_primitives: their stream-ordered pool here
// (mempool_primitives). sim-mempool.h per device, reached through known streams; an allocation
// on a capturing stream is a memory node of the graph, outside the pool.

#include "sim.h"

#include <sys/mman.h>

namespace gcp {

sim_mempool * sim_primitives::stream_pool(int device, stream_t stream) {
    device_state::stream_state * s = async_supported(device) ? find_stream(device, stream) : nullptr;
    if (s == nullptr) {
        return nullptr;
    }
    s->calls++;
    return devices_[size_t(device)].mempool.get();
}

status sim_primitives::malloc_async(int device, size_t size, stream_t stream, void ** ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    sim_mempool *               pool = stream_pool(device, stream);
    if (pool == nullptr || size == 0) {
        return INVALID_ARGUMENT;
    }
    device_state & d = devices_[size_t(device)];
    if (!d.streams[stream].capturing) {
        return sim_host_memory([&] { return pool->alloc(d.arena, size, stream, ptr); });
    }
    // a memory node of the graph being captured: device memory of the graph's, not the pool's
    size_t bytes  = round_up(size, ALIGNMENT);
    size_t offset = 0;
    if (!d.arena.take(bytes, &offset)) {
        return OUT_OF_MEMORY;
    }
    void * p  = sim_map_pages(bytes, PROT_READ | PROT_WRITE);
    status st = p == nullptr ? OUT_OF_MEMORY : sim_host_memory([&] {
        d.graph_allocs[p] = { offset, bytes };
        return OK;
    });
    if (st != OK) { // undone: nothing taken
        if (p != nullptr) {
            munmap(p, bytes);
        }
        d.arena.give(offset, bytes);
        return st;
    }
    *ptr = p;
    return OK;
}

status sim_primitives::free_async(int device, void * ptr, stream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    sim_mempool *               pool = stream_pool(device, stream);
    if (pool == nullptr) {
        return INVALID_ARGUMENT;
    }
    device_state & d     = devices_[size_t(device)];
    auto           graph = d.graph_allocs.find(ptr);
    if (graph != d.graph_allocs.end()) {
        munmap(ptr, graph->second.size);
        d.arena.give(graph->second.offset, graph->second.size);
        d.graph_allocs.erase(graph);
        return OK;
    }
    return sim_host_memory([&] { return pool->free(ptr, stream); });
}

status sim_primitives::trim(int device, size_t keep) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!async_supported(device)) {
        return INVALID_ARGUMENT;
    }
    device_state & d = devices_[size_t(device)];
    d.mempool->trim(d.arena, keep);
    return OK;
}

status sim_primitives::get_attr(int device, mempool_attr attr, uint64_t * value) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!async_supported(device)) {
        return INVALID_ARGUMENT;
    }
    const sim_mempool & pool = *devices_[size_t(device)].mempool;
    switch (attr) {
        // clang-format off
        case mempool_attr::release_threshold: *value = pool.threshold; return OK;
        case mempool_attr::reuse_policies:    *value = pool.reuse; return OK;
        case mempool_attr::reserved:          *value = pool.reserved(); return OK;
        case mempool_attr::used:              *value = pool.used(); return OK;
            // clang-format on
    }
    return INVALID_ARGUMENT;
}

status sim_primitives::set_attr(int device, mempool_attr attr, uint64_t value) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!async_supported(device)) {
        return INVALID_ARGUMENT;
    }
    sim_mempool & pool = *devices_[size_t(device)].mempool;
    switch (attr) {
        // clang-format off
        case mempool_attr::release_threshold: pool.threshold = value; return OK;
        case mempool_attr::reuse_policies:    pool.reuse = value; return OK;
        case mempool_attr::reserved:
        case mempool_attr::used:              break; // read only
            // clang-format on
    }
    return INVALID_ARGUMENT;
}

} // namespace gcp
