#include "driver-sim.h"

#include "log.h"

#include <new>
#include <sys/mman.h>

namespace gcp {

namespace {

constexpr size_t PAGE                = 4096;        // mprotect works on whole host pages
constexpr size_t DEFAULT_CAPACITY    = 8 * GiB;
constexpr size_t DEFAULT_GRANULARITY = 2 * MiB;     // the CUDA driver's recommended granularity

void * map_pages(size_t size, int prot) {
    void * p = mmap(nullptr, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

// a host allocation of the sim's own records failed: as a device runtime does, the call says
// OUT_OF_MEMORY (each call has undone what it did by then)
template <typename F> status host_memory(F && f) {
    try {
        return f();
    } catch (const std::bad_alloc &) {
        return OUT_OF_MEMORY;
    }
}

} // namespace

ggml_cpool_sim_params sim_driver::defaults() {
    ggml_cpool_sim_params p = {};
    p.capacity              = DEFAULT_CAPACITY;
    p.device_count          = 1;
    p.platform              = GGML_CPOOL_PLATFORM_CUDA;
    p.granularity           = DEFAULT_GRANULARITY;
    p.vmm_supported         = 1;
    p.async_supported       = 1;
    return p;
}

status sim_driver::check(const ggml_cpool_sim_params & sim) {
    // a granularity above the largest request would overflow the rounding of a VMM range
    if (sim.device_count < 1 || sim.device_count > GGML_CPOOL_MAX_DEVICES || sim.capacity == 0 ||
        sim.granularity == 0 || sim.granularity % PAGE != 0 || sim.granularity > MAX_REQUEST ||
        (raw_enum(sim.platform) != GGML_CPOOL_PLATFORM_CUDA && raw_enum(sim.platform) != GGML_CPOOL_PLATFORM_HIP)) {
        GCP_LOG_ERROR("sim driver: bad parameters (devices %d of 1..%d, capacity %zu, granularity %zu: a multiple "
                      "of %zu up to %zu, platform %d)",
                      sim.device_count, GGML_CPOOL_MAX_DEVICES, sim.capacity, sim.granularity, PAGE, MAX_REQUEST,
                      raw_enum(sim.platform));
        return INVALID_ARGUMENT;
    }
    return OK;
}

sim_driver::sim_driver(const ggml_cpool_sim_params & params) : params_(params) {
    devices_.reserve(size_t(params.device_count));
    for (int i = 0; i < params.device_count; i++) {
        devices_.emplace_back(params.capacity);
    }
}

sim_driver::~sim_driver() {
    // whatever the pools failed to give back is reported by outstanding(); the host pages go anyway
    for (device_state & d : devices_) {
        for (auto & a : d.allocs) {
            munmap(a.first, a.second.size);
        }
        for (auto & r : d.reservations) {
            munmap(reinterpret_cast<void *>(r.first), r.second);
        }
        for (auto & g : d.graph_allocs) {
            munmap(g.first, g.second.size);
        }
    }
}

status sim_driver::do_malloc(int device, size_t size, void ** ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device) || size == 0) {
        return INVALID_ARGUMENT;
    }
    return host_memory([&] {
        device_state & d      = devices_[size_t(device)];
        size_t         bytes  = round_up(size, ALIGNMENT);
        size_t         offset = 0;
        if (!d.arena.take(bytes, &offset)) {
            return OUT_OF_MEMORY;
        }
        void * p = map_pages(bytes, PROT_READ | PROT_WRITE);
        if (p == nullptr) {
            d.arena.give(offset, bytes);
            return OUT_OF_MEMORY;
        }
        try {
            d.allocs.emplace(p, block{ offset, bytes });
        } catch (...) {
            munmap(p, bytes);
            d.arena.give(offset, bytes);
            throw;
        }
        *ptr = p;
        return OK;
    });
}

status sim_driver::do_free(int device, void * ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device)) {
        return INVALID_ARGUMENT;
    }
    device_state & d  = devices_[size_t(device)];
    auto           it = d.allocs.find(ptr);
    if (it == d.allocs.end()) {
        return INVALID_ARGUMENT;
    }
    munmap(ptr, it->second.size); // later use of the pointer faults, as on a device
    d.arena.give(it->second.offset, it->second.size);
    d.allocs.erase(it);
    return OK;
}

status sim_driver::do_synchronize(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device)) {
        return INVALID_ARGUMENT;
    }
    // host work is already complete; the stream-ordered pool sees its frees and may release
    device_state & d = devices_[size_t(device)];
    d.mempool->synchronize(d.arena);
    return OK;
}

bool sim_driver::async_supported(int device) const {
    // as on the real platforms: HIP builds compile the stream-ordered pool out
    return valid(device) && params_.async_supported != 0 && params_.platform != GGML_CPOOL_PLATFORM_HIP;
}

sim_driver::device_state::stream_state * sim_driver::find_stream(int device, stream_t stream) {
    if (!valid(device)) {
        return nullptr;
    }
    auto it = devices_[size_t(device)].streams.find(stream);
    return it == devices_[size_t(device)].streams.end() ? nullptr : &it->second;
}

sim_mempool * sim_driver::stream_pool(int device, stream_t stream) {
    device_state::stream_state * s = async_supported(device) ? find_stream(device, stream) : nullptr;
    if (s == nullptr) {
        return nullptr;
    }
    s->calls++;
    return devices_[size_t(device)].mempool.get();
}

status sim_driver::do_stream_create(int device, stream_t * stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device)) {
        return INVALID_ARGUMENT;
    }
    return host_memory([&] {
        stream_t s = reinterpret_cast<stream_t>(next_stream_++);
        devices_[size_t(device)].streams.emplace(s, device_state::stream_state{});
        *stream = s;
        return OK;
    });
}

status sim_driver::stream_capturing(int device, stream_t stream, bool * capturing) {
    std::lock_guard<std::mutex> lock(mutex_);
    device_state::stream_state * s = find_stream(device, stream);
    if (s == nullptr) {
        return INVALID_ARGUMENT;
    }
    *capturing = s->capturing;
    return OK;
}

status sim_driver::set_capturing(int device, stream_t stream, bool capturing) {
    std::lock_guard<std::mutex> lock(mutex_);
    device_state::stream_state * s = find_stream(device, stream);
    if (s == nullptr) {
        return INVALID_ARGUMENT;
    }
    s->capturing = capturing;
    return OK;
}

uint64_t sim_driver::stream_calls(int device, stream_t stream) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device)) {
        return 0;
    }
    auto it = devices_[size_t(device)].streams.find(stream);
    return it == devices_[size_t(device)].streams.end() ? 0 : it->second.calls;
}

status sim_driver::do_stream_destroy(int device, stream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device) || stream == nullptr || devices_[size_t(device)].streams.erase(stream) == 0) {
        return INVALID_ARGUMENT;
    }
    return OK;
}

status sim_driver::do_malloc_async(int device, size_t size, stream_t stream, void ** ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    sim_mempool *               pool = stream_pool(device, stream);
    if (pool == nullptr || size == 0) {
        return INVALID_ARGUMENT;
    }
    device_state & d = devices_[size_t(device)];
    if (!d.streams[stream].capturing) {
        return host_memory([&] { return pool->alloc(d.arena, size, stream, ptr); });
    }
    // a memory node of the graph being captured: device memory of the graph's, not the pool's
    size_t bytes  = round_up(size, ALIGNMENT);
    size_t offset = 0;
    if (!d.arena.take(bytes, &offset)) {
        return OUT_OF_MEMORY;
    }
    void * p = map_pages(bytes, PROT_READ | PROT_WRITE);
    status st = p == nullptr ? OUT_OF_MEMORY : host_memory([&] {
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

status sim_driver::do_free_async(int device, void * ptr, stream_t stream) {
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
    return host_memory([&] { return pool->free(ptr, stream); });
}

status sim_driver::do_stream_synchronize(int device, stream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    device_state::stream_state * s = find_stream(device, stream);
    if (s == nullptr) {
        return INVALID_ARGUMENT;
    }
    s->calls++;
    // host work is complete; the stream-ordered pool (where there is one) sees its frees
    device_state & d = devices_[size_t(device)];
    d.mempool->synchronize(d.arena);
    return OK;
}

status sim_driver::do_pool_threshold(int device, uint64_t * threshold) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!async_supported(device)) {
        return INVALID_ARGUMENT;
    }
    *threshold = devices_[size_t(device)].mempool->threshold;
    return OK;
}

status sim_driver::do_pool_set_threshold(int device, uint64_t threshold) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!async_supported(device)) {
        return INVALID_ARGUMENT;
    }
    devices_[size_t(device)].mempool->threshold = threshold;
    return OK;
}

status sim_driver::do_pool_reuse(int device, uint32_t * policies) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!async_supported(device)) {
        return INVALID_ARGUMENT;
    }
    *policies = devices_[size_t(device)].mempool->reuse;
    return OK;
}

status sim_driver::do_pool_set_reuse(int device, uint32_t policies) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!async_supported(device)) {
        return INVALID_ARGUMENT;
    }
    devices_[size_t(device)].mempool->reuse = policies;
    return OK;
}

status sim_driver::do_pool_usage(int device, size_t * reserved, size_t * used) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!async_supported(device)) {
        return INVALID_ARGUMENT;
    }
    *reserved = devices_[size_t(device)].mempool->reserved();
    *used     = devices_[size_t(device)].mempool->used();
    return OK;
}

status sim_driver::do_pool_trim(int device, size_t keep) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!async_supported(device)) {
        return INVALID_ARGUMENT;
    }
    device_state & d = devices_[size_t(device)];
    d.mempool->trim(d.arena, keep);
    return OK;
}

bool sim_driver::vmm_supported(int device) const {
    return valid(device) && params_.vmm_supported != 0;
}

bool sim_driver::in_reservation(const device_state & d, uintptr_t addr, size_t size) const {
    auto it = d.reservations.upper_bound(addr);
    if (it == d.reservations.begin()) {
        return false;
    }
    --it;
    return addr >= it->first && addr + size <= it->first + it->second;
}

status sim_driver::do_vmm_reserve(int device, size_t size, uintptr_t * addr) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!vmm_supported(device) || size == 0 || size % params_.granularity != 0) {
        return INVALID_ARGUMENT;
    }
    void * p = map_pages(size, PROT_NONE);
    if (p == nullptr) {
        return OUT_OF_MEMORY;
    }
    return host_memory([&] {
        try {
            devices_[size_t(device)].reservations.emplace(reinterpret_cast<uintptr_t>(p), size);
        } catch (...) {
            munmap(p, size);
            throw;
        }
        *addr = reinterpret_cast<uintptr_t>(p);
        return OK;
    });
}

status sim_driver::do_vmm_unreserve(int device, uintptr_t addr, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device)) {
        return INVALID_ARGUMENT;
    }
    device_state & d  = devices_[size_t(device)];
    auto           it = d.reservations.find(addr);
    if (it == d.reservations.end() || it->second != size) {
        return INVALID_ARGUMENT;
    }
    auto m = d.mappings.lower_bound(addr);
    if (m != d.mappings.end() && m->first < addr + size) {
        return INVALID_ARGUMENT; // still mapped, as the real driver refuses
    }
    munmap(reinterpret_cast<void *>(addr), size);
    d.reservations.erase(it);
    return OK;
}

status sim_driver::do_vmm_create(int device, size_t size, vmm_handle * handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!vmm_supported(device) || size == 0 || size % params_.granularity != 0) {
        return INVALID_ARGUMENT;
    }
    return host_memory([&] {
        device_state & d      = devices_[size_t(device)];
        size_t         offset = 0;
        if (!d.arena.take(size, &offset)) {
            return OUT_OF_MEMORY;
        }
        try {
            d.handles.emplace(next_handle_, block{ offset, size });
        } catch (...) {
            d.arena.give(offset, size);
            throw;
        }
        *handle = next_handle_++;
        return OK;
    });
}

status sim_driver::do_vmm_release(int device, vmm_handle handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device)) {
        return INVALID_ARGUMENT;
    }
    device_state & d  = devices_[size_t(device)];
    auto           it = d.handles.find(handle);
    if (it == d.handles.end()) {
        return INVALID_ARGUMENT;
    }
    for (auto & m : d.mappings) {
        if (m.second == handle) {
            return INVALID_ARGUMENT; // the pools unmap before they release
        }
    }
    d.arena.give(it->second.offset, it->second.size);
    d.handles.erase(it);
    return OK;
}

status sim_driver::do_vmm_map(int device, uintptr_t addr, size_t size, vmm_handle handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device)) {
        return INVALID_ARGUMENT;
    }
    device_state & d  = devices_[size_t(device)];
    auto           it = d.handles.find(handle);
    if (it == d.handles.end() || it->second.size != size || !in_reservation(d, addr, size) || d.mappings.count(addr)) {
        return INVALID_ARGUMENT;
    }
    return host_memory([&] {
        d.mappings.emplace(addr, handle);
        return OK;
    });
}

status sim_driver::do_vmm_unmap(int device, uintptr_t addr, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device)) {
        return INVALID_ARGUMENT;
    }
    device_state & d  = devices_[size_t(device)];
    auto           it = d.mappings.find(addr);
    if (it == d.mappings.end() || d.handles.count(it->second) == 0 || d.handles[it->second].size != size) {
        return INVALID_ARGUMENT;
    }
    void * p = reinterpret_cast<void *>(addr);
    madvise(p, size, MADV_DONTNEED); // the contents are gone, as on a device
    mprotect(p, size, PROT_NONE);
    d.mappings.erase(it);
    return OK;
}

status sim_driver::do_vmm_access(int device, uintptr_t addr, size_t size, int accessor) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device) || !valid(accessor) || !in_reservation(devices_[size_t(device)], addr, size)) {
        return INVALID_ARGUMENT;
    }
    if (mprotect(reinterpret_cast<void *>(addr), size, PROT_READ | PROT_WRITE) != 0) {
        return DRIVER_ERROR;
    }
    return OK;
}

size_t sim_driver::outstanding() const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t n = 0;
    for (const device_state & d : devices_) {
        n += d.allocs.size() + d.handles.size() + d.reservations.size() + d.mappings.size() + d.mempool->blocks() +
             d.graph_allocs.size();
    }
    return n;
}

size_t sim_driver::used(int device) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return valid(device) ? devices_[size_t(device)].arena.used() : 0;
}

} // namespace gcp
