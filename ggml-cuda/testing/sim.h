#pragma once
// The sim driver is a driver (driver.h) over sim_primitives: host memory that behaves like a device,
// with virtual ranges that are PROT_NONE until mapped (a stray access faults) and streams that can be
// marked as capturing. Virtual memory in sim-vmm.cpp, the stream-ordered pool in sim-async.cpp.

#include "ggml-cuda-pool-testing.h"
#include "../drivers/primitives.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace gcp {

constexpr size_t SIM_ALIGNMENT = 256; // cudaMalloc's guaranteed alignment

struct sim_block { // a piece of device memory, or a free range: where it sits in the arena
    size_t offset;
    size_t size;
};

// A device's memory that other processes use too (tests/shared-device.h keeps it in shared memory):
// what an arena takes counts there as well, and the device's free memory and UUID are its
class sim_share {
  public:
    virtual ~sim_share()                               = default;
    virtual bool        take(int device, size_t bytes) = 0; // false: the device is full
    virtual void        give(int device, size_t bytes) = 0;
    virtual size_t      free(int device) const         = 0;
    virtual device_uuid uuid(int device) const         = 0;
};

// A device's memory: offsets in [0, capacity) handed out first fit, with free ranges coalesced.
// Contiguity makes an out-of-memory depend on fragmentation, as on a device.
class sim_arena {
  public:
    explicit sim_arena(size_t capacity) : free_{ { 0, capacity } } {}

    // first fit; false when no free range holds size. May throw std::bad_alloc, changing nothing
    bool take(size_t size, size_t * offset) {
        // give never allocates: the free ranges are gaps between the pieces out, one more at most
        ensure_capacity(free_, pieces_ + 2);
        auto it = std::find_if(free_.begin(), free_.end(), [&](const sim_block & r) { return r.size >= size; });
        if (it == free_.end() || (shared_ != nullptr && !shared_->take(device_, size))) {
            return false;
        }
        *offset = it->offset;
        it->offset += size;
        it->size -= size;
        if (it->size == 0) {
            free_.erase(it);
        }
        used_ += size;
        pieces_++;
        return true;
    }

    void give(size_t offset, size_t size) noexcept {
        if (shared_ != nullptr) {
            shared_->give(device_, size);
        }
        used_ -= size;
        pieces_--;
        auto next = std::find_if(free_.begin(), free_.end(), [&](const sim_block & r) { return r.offset >= offset; });
        const bool after  = next != free_.end() && offset + size == next->offset;
        const bool before = next != free_.begin() && std::prev(next)->offset + std::prev(next)->size == offset;
        if (before) {
            std::prev(next)->size += size + (after ? next->size : 0);
            if (after) {
                free_.erase(next);
            }
        } else if (after) {
            next->offset = offset;
            next->size += size;
        } else {
            free_.insert(next, { offset, size }); // within the room take made
        }
    }

    size_t used() const { return used_; }
    // device `device` of shared ones: what this arena takes counts there too
    void   share(sim_share * shared, int device) { shared_ = shared, device_ = device; }

  private:
    sim_share *            shared_ = nullptr;
    int                    device_ = 0;
    size_t                 used_   = 0;
    size_t                 pieces_ = 0;
    std::vector<sim_block> free_; // ascending offsets
};

using sim_blocks = std::unordered_map<void *, sim_block>; // device memory by its host pages

// A device's stream-ordered pool, modelled on CUDA's default: freed blocks stay reserved; the freeing
// stream may reuse one at once, another under the cross-stream reuse policies (CUDA's default: host
// work is always complete here) or once a synchronize has observed the free.
class sim_mempool {
  public:
    ~sim_mempool();

    // best fit among the reusable free blocks, else new memory; it and free may throw std::bad_alloc, undone
    status alloc(sim_arena & arena, size_t size, void * stream, void ** ptr);
    // INVALID_ARGUMENT for a pointer the pool did not hand out
    status free(void * ptr, void * stream);
    // every pending free is observed; memory above the threshold is released
    void   synchronize(sim_arena & arena);
    // observed free blocks go back to the arena, largest first, until at most keep is reserved
    void   trim(sim_arena & arena, size_t keep);

    uint64_t threshold = 0; // CUDA's default: release everything unused at each synchronize
    uint64_t reuse     = REUSE_OPPORTUNISTIC | REUSE_INTERNAL_DEPENDENCIES; // CUDA's default
    size_t   reserved() const { return reserved_; }
    size_t   used() const { return used_; }
    size_t   blocks() const { return live_.size() + free_.size(); }

  private:
    struct free_block : sim_block {
        void * host;
        void * stream;   // the stream that freed it
        bool   observed; // a synchronize has seen the free: any stream may reuse it
    };

    size_t                  reserved_ = 0, used_ = 0;
    std::vector<free_block> free_;
    sim_blocks              live_;
};

// host pages for the sim's device memory (nullptr when the host has none); prot as mmap takes it
void * sim_map_pages(size_t size, int prot);
// size, aligned, from the arena behind fresh host pages, recorded in `into`; OUT_OF_MEMORY where the
// arena or the host has none. A full arena takes `reclaim`'s unused memory first, as a cudaMalloc
// takes the stream-ordered pool's (measured on an H200). May throw std::bad_alloc, having undone it
status sim_take(sim_arena & arena, size_t size, sim_blocks & into, void ** ptr, sim_mempool * reclaim = nullptr);
// the block at ptr back to the arena, unmapped so that later use faults; false where `from` has none
bool   sim_give(sim_arena & arena, sim_blocks & from, void * ptr);

class sim_primitives final : public device_primitives, public vmm_primitives, public mempool_primitives {
  public:
    // the defaults a C caller starts from, and the check of what it asks for (a status and a line)
    static ggml_cpool_sim_params defaults();
    static status                check(const ggml_cpool_sim_params & params);

    explicit sim_primitives(const ggml_cpool_sim_params & params);
    ~sim_primitives() override;
    // before any allocation: its devices' memory is used by other processes too
    void share(std::shared_ptr<sim_share> shared);

    ggml_cpool_platform platform() const override { return params_.platform; }
    int                 device_count() const override { return params_.device_count; }
    status              malloc(int device, size_t size, void ** ptr) override;
    status              free(int device, void * ptr) override;
    status              synchronize(int device) override;
    status              stream_create(int device, stream_t * stream) override;
    status              stream_destroy(int device, stream_t stream) override;
    status              stream_synchronize(int device, stream_t stream) override;
    status              stream_capturing(int device, stream_t stream, bool * capturing) override;
    bool can_access_peer(int device, int peer) const override { return valid(device) && valid(peer) && device != peer; }
    vmm_primitives * vmm(int device) override { return valid(device) && params_.vmm_supported != 0 ? this : nullptr; }
    mempool_primitives * mempool(int device) override { return async_supported(device) ? this : nullptr; }
    size_t               outstanding() const override;
    size_t               used(int device) const override;
    status               free_memory(int device, size_t * free) override;
    status               uuid(int device, device_uuid * out) const override; // shared devices alone have one

    // the sim's stand-in for cudaStreamBeginCapture / cudaStreamEndCapture
    status   set_capturing(int device, stream_t stream, bool capturing);
    // stream-ordered calls made on a stream (0 for an unknown one)
    uint64_t stream_calls(int device, stream_t stream) const;

    // virtual memory (testing/sim-vmm.cpp)
    size_t granularity(int /*device*/) const override { return params_.granularity; }
    status reserve(int device, size_t size, uintptr_t * addr) override;
    status unreserve(int device, uintptr_t addr, size_t size) override;
    status create(int device, size_t size, vmm_handle * handle) override;
    status release(int device, vmm_handle handle) override;
    status map(int device, uintptr_t addr, size_t size, vmm_handle handle) override;
    status unmap(int device, uintptr_t addr, size_t size) override;
    status access(int device, uintptr_t addr, size_t size, int accessor) override;

    // the stream-ordered pool (testing/sim-async.cpp)
    status malloc_async(int device, size_t size, stream_t stream, void ** ptr) override;
    status free_async(int device, void * ptr, stream_t stream) override;
    status get_attr(int device, mempool_attr attr, uint64_t * value) override;
    status set_attr(int device, mempool_attr attr, uint64_t value) override;
    status trim(int device, size_t keep) override;

  private:
    struct stream_state {
        bool     capturing = false;
        uint64_t calls     = 0; // stream-ordered calls made on it
    };
    struct device_state {
        explicit device_state(size_t capacity) : arena(capacity) {}
        sim_arena                                 arena;
        sim_blocks                                allocs;
        std::unordered_map<vmm_handle, sim_block> handles;      // physical handle -> device memory
        std::map<uintptr_t, size_t>               reservations; // base -> bytes
        std::map<uintptr_t, vmm_handle>           mappings;     // mapped base -> handle
        std::unique_ptr<sim_mempool>              mempool = std::make_unique<sim_mempool>();
        // every stream created, and nullptr: the default stream, which always exists
        std::map<stream_t, stream_state>          streams{ { nullptr, {} } };
        // stream-ordered allocations on a capturing stream: the graph's, outside the pool, as CUDA's memory nodes are
        sim_blocks                                graph_allocs;
    };

    bool                         valid(int device) const { return device >= 0 && device < params_.device_count; }
    // f(the device's state) under the lock; INVALID_ARGUMENT for an unknown device. Where the sim's own
    // records find no host memory, f undoes what it did and the call says OUT_OF_MEMORY, as a runtime does
    template <typename F> status with_device(int device, F && f) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!valid(device)) {
            return INVALID_ARGUMENT;
        }
        try {
            return f(devices_[size_t(device)]);
        } catch (const std::bad_alloc &) {
            return OUT_OF_MEMORY;
        }
    }
    // f(the device's state, the stream's) under the lock; INVALID_ARGUMENT for an unknown one
    template <typename F> status with_stream(int device, stream_t stream, F && f) {
        return with_device(device, [&](device_state & d) {
            auto it = d.streams.find(stream);
            return it == d.streams.end() ? INVALID_ARGUMENT : f(d, it->second);
        });
    }
    // as on the real platforms: HIP builds compile the stream-ordered pool out
    bool async_supported(int device) const {
        return valid(device) && params_.async_supported != 0 && params_.platform != GGML_CPOOL_PLATFORM_HIP;
    }
    bool in_reservation(const device_state & d, uintptr_t addr, size_t size) const;

    ggml_cpool_sim_params      params_;
    std::shared_ptr<sim_share> shared_; // before devices_, whose arenas count in it
    mutable std::mutex         mutex_;
    std::vector<device_state>  devices_;
    vmm_handle                 next_handle_ = 1;
    uintptr_t                  next_stream_ = 1;
};

} // namespace gcp
