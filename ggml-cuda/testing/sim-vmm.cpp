// The sim driver's virtual memory (testing/sim.h): PROT_NONE host pages, handles from the arena, mappings.

#include "sim.h"

#include <sys/mman.h>

namespace gcp {

bool sim_primitives::in_reservation(const device_state & d, uintptr_t addr, size_t size) const {
    auto it = d.reservations.upper_bound(addr);
    if (it == d.reservations.begin()) {
        return false;
    }
    --it;
    return addr >= it->first && addr + size <= it->first + it->second;
}

status sim_primitives::reserve(int device, size_t size, uintptr_t * addr) {
    return with_device(device, [&](device_state & d) {
        if (vmm(device) == nullptr || size == 0 || size % params_.granularity != 0) {
            return INVALID_ARGUMENT;
        }
        void * p = sim_map_pages(size, PROT_NONE);
        if (p == nullptr) {
            return OUT_OF_MEMORY;
        }
        try {
            d.reservations.emplace(reinterpret_cast<uintptr_t>(p), size);
        } catch (...) {
            munmap(p, size);
            throw;
        }
        *addr = reinterpret_cast<uintptr_t>(p);
        return OK;
    });
}

status sim_primitives::unreserve(int device, uintptr_t addr, size_t size) {
    return with_device(device, [&](device_state & d) {
        auto it = d.reservations.find(addr);
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
    });
}

status sim_primitives::create(int device, size_t size, vmm_handle * handle) {
    return with_device(device, [&](device_state & d) {
        if (vmm(device) == nullptr || size == 0 || size % params_.granularity != 0) {
            return INVALID_ARGUMENT;
        }
        size_t offset = 0;
        if (!d.arena.take(size, &offset)) {
            return OUT_OF_MEMORY;
        }
        try {
            d.handles.emplace(next_handle_, sim_block{ offset, size });
        } catch (...) {
            d.arena.give(offset, size);
            throw;
        }
        *handle = next_handle_++;
        return OK;
    });
}

status sim_primitives::release(int device, vmm_handle handle) {
    return with_device(device, [&](device_state & d) {
        auto it     = d.handles.find(handle);
        auto mapped = [&](const std::pair<const uintptr_t, vmm_handle> & m) { return m.second == handle; };
        if (it == d.handles.end() || std::any_of(d.mappings.begin(), d.mappings.end(), mapped)) {
            return INVALID_ARGUMENT; // unknown, or still mapped: the pools unmap before they release
        }
        d.arena.give(it->second.offset, it->second.size);
        d.handles.erase(it);
        return OK;
    });
}

status sim_primitives::map(int device, uintptr_t addr, size_t size, vmm_handle handle) {
    return with_device(device, [&](device_state & d) {
        auto it = d.handles.find(handle);
        if (it == d.handles.end() || it->second.size != size || !in_reservation(d, addr, size) ||
            d.mappings.count(addr) != 0) {
            return INVALID_ARGUMENT;
        }
        d.mappings.emplace(addr, handle);
        return OK;
    });
}

status sim_primitives::unmap(int device, uintptr_t addr, size_t size) {
    return with_device(device, [&](device_state & d) {
        auto it = d.mappings.find(addr);
        if (it == d.mappings.end() || d.handles.count(it->second) == 0 || d.handles[it->second].size != size) {
            return INVALID_ARGUMENT;
        }
        void * p = reinterpret_cast<void *>(addr);
        madvise(p, size, MADV_DONTNEED); // the contents are gone, as on a device
        mprotect(p, size, PROT_NONE);
        d.mappings.erase(it);
        return OK;
    });
}

status sim_primitives::access(int device, uintptr_t addr, size_t size, int accessor) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid(device) || !valid(accessor) || !in_reservation(devices_[size_t(device)], addr, size)) {
        return INVALID_ARGUMENT;
    }
    return mprotect(reinterpret_cast<void *>(addr), size, PROT_READ | PROT_WRITE) != 0 ? DRIVER_ERROR : OK;
}

} // namespace gcp
