// The sim driver (testing/sim.h): its device memory, streams and parameters.

#include "sim.h"

#include "../support/log.h"

#include <sys/mman.h>

namespace gcp {

namespace {

constexpr size_t PAGE                = 4096; // mprotect works on whole host pages
constexpr size_t DEFAULT_CAPACITY    = 8 * GiB;
constexpr size_t DEFAULT_GRANULARITY = 2 * MiB; // the CUDA driver's recommended granularity

} // namespace

void * sim_map_pages(size_t size, int prot) {
    void * p = mmap(nullptr, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

status sim_take(sim_arena & arena, size_t size, sim_blocks & into, void ** ptr, sim_mempool * reclaim) {
    const size_t bytes  = round_up(size, SIM_ALIGNMENT);
    size_t       offset = 0;
    bool         taken  = arena.take(bytes, &offset);
    if (!taken && reclaim != nullptr) {
        reclaim->trim(arena, 0);
        taken = arena.take(bytes, &offset);
    }
    if (!taken) {
        return OUT_OF_MEMORY;
    }
    void * p = sim_map_pages(bytes, PROT_READ | PROT_WRITE);
    if (p == nullptr) {
        arena.give(offset, bytes);
        return OUT_OF_MEMORY;
    }
    try {
        into.emplace(p, sim_block{ offset, bytes });
    } catch (...) {
        munmap(p, bytes);
        arena.give(offset, bytes);
        throw;
    }
    *ptr = p;
    return OK;
}

bool sim_give(sim_arena & arena, sim_blocks & from, void * ptr) {
    auto it = from.find(ptr);
    if (it == from.end()) {
        return false;
    }
    munmap(ptr, it->second.size);
    arena.give(it->second.offset, it->second.size);
    from.erase(it);
    return true;
}

ggml_cpool_sim_params sim_primitives::defaults() {
    ggml_cpool_sim_params p = {};
    p.capacity              = DEFAULT_CAPACITY;
    p.device_count          = 1;
    p.platform              = GGML_CPOOL_PLATFORM_CUDA;
    p.granularity           = DEFAULT_GRANULARITY;
    p.vmm_supported         = 1;
    p.async_supported       = 1;
    return p;
}

status sim_primitives::check(const ggml_cpool_sim_params & sim) {
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

sim_primitives::sim_primitives(const ggml_cpool_sim_params & params) : params_(params) {
    devices_.reserve(size_t(params.device_count));
    for (int i = 0; i < params.device_count; i++) {
        devices_.emplace_back(params.capacity);
    }
}

void sim_primitives::share(std::shared_ptr<sim_share> shared) {
    shared_ = std::move(shared);
    for (size_t d = 0; d < devices_.size(); d++) {
        devices_[d].arena.share(shared_.get(), int(d));
    }
}

sim_primitives::~sim_primitives() {
    // whatever the pools failed to give back is reported by outstanding(); the host pages go anyway
    for (device_state & d : devices_) {
        for (const sim_blocks * blocks : { &d.allocs, &d.graph_allocs }) {
            for (auto & b : *blocks) {
                munmap(b.first, b.second.size);
            }
        }
        for (auto & r : d.reservations) {
            munmap(reinterpret_cast<void *>(r.first), r.second);
        }
    }
}

status sim_primitives::malloc(int device, size_t size, void ** ptr) {
    return with_device(device, [&](device_state & d) {
        return size == 0 ? INVALID_ARGUMENT : sim_take(d.arena, size, d.allocs, ptr, d.mempool.get());
    });
}

status sim_primitives::free(int device, void * ptr) {
    return with_device(device,
                       [&](device_state & d) { return sim_give(d.arena, d.allocs, ptr) ? OK : INVALID_ARGUMENT; });
}

status sim_primitives::synchronize(int device) {
    return with_device(device, [&](device_state & d) {
        d.mempool->synchronize(d.arena); // host work is complete; the stream-ordered pool sees its frees
        return OK;
    });
}

status sim_primitives::stream_create(int device, stream_t * stream) {
    return with_device(device, [&](device_state & d) {
        stream_t s = reinterpret_cast<stream_t>(next_stream_++);
        d.streams.emplace(s, stream_state{});
        *stream = s;
        return OK;
    });
}

status sim_primitives::stream_capturing(int device, stream_t stream, bool * capturing) {
    return with_stream(device, stream, [&](device_state &, stream_state & s) {
        *capturing = s.capturing;
        return OK;
    });
}

status sim_primitives::set_capturing(int device, stream_t stream, bool capturing) {
    return with_stream(device, stream, [&](device_state &, stream_state & s) {
        s.capturing = capturing;
        return OK;
    });
}

uint64_t sim_primitives::stream_calls(int device, stream_t stream) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device)) {
        return 0;
    }
    auto it = devices_[size_t(device)].streams.find(stream);
    return it == devices_[size_t(device)].streams.end() ? 0 : it->second.calls;
}

status sim_primitives::stream_destroy(int device, stream_t stream) {
    return with_device(device, [&](device_state & d) {
        return stream == nullptr || d.streams.erase(stream) == 0 ? INVALID_ARGUMENT : OK;
    });
}

status sim_primitives::stream_synchronize(int device, stream_t stream) {
    return with_stream(device, stream, [&](device_state & d, stream_state & s) {
        s.calls++;
        d.mempool->synchronize(d.arena); // host work is complete; the stream-ordered pool sees its frees
        return OK;
    });
}

size_t sim_primitives::outstanding() const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t                      n = 0;
    for (const device_state & d : devices_) {
        n += d.allocs.size() + d.handles.size() + d.reservations.size() + d.mappings.size() + d.mempool->blocks() +
             d.graph_allocs.size();
    }
    return n;
}

status sim_primitives::free_memory(int device, size_t * free) {
    if (!valid(device)) {
        return INVALID_ARGUMENT;
    }
    *free = shared_ ? shared_->free(device) : params_.capacity - used(device);
    return OK;
}

status sim_primitives::uuid(int device, device_uuid * out) const {
    if (!valid(device) || !shared_) {
        return valid(device) ? UNSUPPORTED : INVALID_ARGUMENT;
    }
    *out = shared_->uuid(device);
    return OK;
}

size_t sim_primitives::used(int device) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return valid(device) ? devices_[size_t(device)].arena.used() : 0;
}

} // namespace gcp
