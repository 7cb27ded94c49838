#include "shared-device.h"

#include "../ggml-cuda/neighbours/board.h"

#include <cstdio>
#include <sys/mman.h>

using gcp::neighbours::alive;

constexpr size_t SIM_SHARED_SLOTS = 64; // sim drivers that share one name at once

// zeros are devices of no capacity yet and free slots
struct shared_device::segment {
    std::atomic<uint64_t> capacity[GGML_CPOOL_MAX_DEVICES]; // set by the first driver to open it
    struct slot {
        std::atomic<pid_t>    pid; // 0: free; -1: being cleared of a dead driver's use
        std::atomic<uint64_t> used[GGML_CPOOL_MAX_DEVICES];
    } slots[SIM_SHARED_SLOTS];
};

shared_device::shared_device(segment * seg, size_t slot, const char * name) : seg_(seg), slot_(slot) {
    snprintf(name_, sizeof(name_), "%s", name);
}

std::shared_ptr<shared_device> shared_device::open(const char * name, int devices, size_t capacity) {
    char path[32 + NAME_LONGEST];
    snprintf(path, sizeof(path), "/ggml-cpool-sim-%u-%s", unsigned(geteuid()), name);
    void * at = nullptr;
    if (strlen(name) > NAME_LONGEST || gcp::neighbours::map_segment(path, sizeof(segment), &at) != gcp::OK) {
        return nullptr;
    }
    auto * seg = static_cast<segment *>(at);
    for (int d = 0; d < devices; d++) {
        uint64_t none = 0;
        seg->capacity[d].compare_exchange_strong(none, capacity);
    }
    for (segment::slot & s : seg->slots) {
        pid_t p = s.pid;
        if (p > 0 && !alive(p) && s.pid.compare_exchange_strong(p, -1)) { // a dead driver's use goes back
            for (auto & u : s.used) {
                u = 0;
            }
            s.pid = 0;
        }
        pid_t none = 0;
        if (s.pid.compare_exchange_strong(none, getpid())) {
            return std::shared_ptr<shared_device>(new shared_device(seg, size_t(&s - seg->slots), name));
        }
    }
    fprintf(stderr, "shared device: %zu drivers already share %s\n", SIM_SHARED_SLOTS, name);
    munmap(at, sizeof(segment));
    return nullptr;
}

std::shared_ptr<gcp::sim_primitives> shared_device::sim(const char * name, size_t capacity) {
    ggml_cpool_sim_params p = gcp::sim_primitives::defaults();
    p.capacity              = capacity;
    auto shared             = open(name, p.device_count, capacity);
    auto prims              = shared ? std::make_shared<gcp::sim_primitives>(p) : nullptr;
    if (prims) {
        prims->share(shared);
    }
    return prims;
}

shared_device::~shared_device() {
    for (auto & u : seg_->slots[slot_].used) {
        u = 0;
    }
    seg_->slots[slot_].pid = 0;
    if (munmap(seg_, sizeof(segment)) != 0) {
        fprintf(stderr, "shared device: unmapping the devices of %s failed\n", name_);
    }
}

size_t shared_device::used(int device) const {
    uint64_t n = 0;
    for (const segment::slot & s : seg_->slots) {
        n += s.pid > 0 && alive(s.pid) ? s.used[device].load() : 0;
    }
    return size_t(n);
}

bool shared_device::take(int device, size_t bytes) {
    // counted, then checked: two drivers taking at once may both be refused, never both served past capacity
    seg_->slots[slot_].used[device] += bytes;
    if (used(device) > seg_->capacity[device]) {
        seg_->slots[slot_].used[device] -= bytes;
        return false;
    }
    return true;
}

void shared_device::give(int device, size_t bytes) {
    seg_->slots[slot_].used[device] -= bytes;
}

size_t shared_device::free(int device) const {
    const size_t capacity = seg_->capacity[device], in_use = used(device);
    return in_use < capacity ? capacity - in_use : 0;
}

gcp::device_uuid shared_device::uuid(int device) const {
    gcp::device_uuid id{}; // the name, then the device's number
    memcpy(id.bytes, name_, strlen(name_));
    id.bytes[NAME_LONGEST] = uint8_t(device);
    return id;
}
