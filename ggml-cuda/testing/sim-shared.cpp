// The sim's shared devices (testing/sim-shared.h).

#include "sim-shared.h"

#include "../neighbours/board.h"
#include "../support/log.h"

#include <cctype>
#include <cstdio>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

namespace gcp {

using neighbours::alive;

// zeros are devices of no capacity yet and free slots
struct sim_shared::segment {
    std::atomic<uint64_t> capacity[GGML_CPOOL_MAX_DEVICES]; // set by the first driver to open it
    struct slot {
        std::atomic<pid_t>    pid; // 0: free; -1: being cleared of a dead driver's use
        std::atomic<uint64_t> used[GGML_CPOOL_MAX_DEVICES];
    } slots[SIM_SHARED_SLOTS];
};

bool sim_shared::valid_name(const char * name) {
    size_t n = 0;
    while (name[n] != '\0' && (isalnum((unsigned char) name[n]) || name[n] == '-' || name[n] == '_')) {
        n++;
    }
    return n > 0 && name[n] == '\0' && n <= SIM_SHARED_NAME_MAX;
}

status sim_shared::open(const char * name, int devices, size_t capacity, std::unique_ptr<sim_shared> * out) {
    char path[32 + SIM_SHARED_NAME_MAX];
    snprintf(path, sizeof(path), "/ggml-cpool-sim-%u-%s", unsigned(geteuid()), name);
    void * at = nullptr;
    if (neighbours::map_segment(path, sizeof(segment), &at) != OK) {
        return UNSUPPORTED;
    }
    auto * seg = static_cast<segment *>(at);
    for (int d = 0; d < devices; d++) {
        uint64_t none = 0;
        seg->capacity[d].compare_exchange_strong(none, capacity);
    }
    for (segment::slot & s : seg->slots) { // a dead driver's use goes back to its devices
        pid_t p = s.pid;
        if (p > 0 && !alive(p) && s.pid.compare_exchange_strong(p, -1)) {
            for (auto & u : s.used) {
                u = 0;
            }
            s.pid = 0;
        }
    }
    for (segment::slot & s : seg->slots) {
        pid_t none = 0;
        if (s.pid.compare_exchange_strong(none, getpid())) {
            out->reset(new (std::nothrow) sim_shared(seg, int(&s - seg->slots), name));
            s.pid = *out ? s.pid.load() : 0;
            return *out ? OK : OUT_OF_MEMORY;
        }
    }
    GCP_LOG_ERROR("sim driver: %zu drivers already share %s", SIM_SHARED_SLOTS, name);
    if (munmap(at, sizeof(segment)) != 0) {
        GCP_LOG_ERROR("sim driver: unmapping the shared devices of %s failed", name);
    }
    return UNSUPPORTED;
}

sim_shared::~sim_shared() {
    for (auto & u : seg_->slots[slot_].used) {
        u = 0;
    }
    seg_->slots[slot_].pid = 0;
    if (munmap(seg_, sizeof(segment)) != 0) {
        GCP_LOG_ERROR("sim driver: unmapping the shared devices of %s failed", name_.c_str());
    }
}

size_t sim_shared::used(int device) const {
    uint64_t n = 0;
    for (const segment::slot & s : seg_->slots) {
        const pid_t p = s.pid;
        if (p > 0 && (p == getpid() || alive(p))) {
            n += s.used[device];
        }
    }
    return size_t(n);
}

bool sim_shared::take(int device, size_t bytes) {
    // counted first, then checked: two drivers taking at once may both be refused, never both served past capacity
    seg_->slots[slot_].used[device] += bytes;
    if (used(device) > seg_->capacity[device]) {
        seg_->slots[slot_].used[device] -= bytes;
        return false;
    }
    return true;
}

void sim_shared::give(int device, size_t bytes) {
    seg_->slots[slot_].used[device] -= bytes;
}

size_t sim_shared::free(int device) const {
    const size_t capacity = seg_->capacity[device], in_use = used(device);
    return in_use < capacity ? capacity - in_use : 0;
}

device_uuid sim_shared::uuid(int device) const {
    // FNV-1a of the name and the device, in two lanes of different offsets
    device_uuid id{};
    for (int lane = 0; lane < 2; lane++) {
        uint64_t h = 0xcbf29ce484222325ull ^ uint64_t(lane);
        for (char c : name_ + "/" + std::to_string(device)) {
            h = (h ^ uint8_t(c)) * 0x100000001b3ull;
        }
        memcpy(id.bytes + 8 * lane, &h, sizeof(h));
    }
    return id;
}

} // namespace gcp
