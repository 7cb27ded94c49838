#pragma once
// PyTorch's pluggable allocator over one module context, on any driver: alloc(size, device,
// stream) and free(ptr, size, device, stream) as torch.cuda.memory.CUDAPluggableAllocator calls
// them. Each (device, stream) PyTorch passes gets a stream slot, and so a pool, of its own
// (slot-map.h); each buffer goes back to its allocation's pool, after a synchronize of the
// freeing stream when that is another one (allocations.h). A request the pool refuses for want of
// memory is retried once after the device's other pools gave back what they cache, as PyTorch's
// allocator empties its cache before it raises. Thread-safe (PyTorch frees on whichever thread
// drops a tensor); nothing throws: a refusal is nullptr and its reason (refusal.h), which the
// library raises, and a bad free is one log line.

#include "allocations.h"
#include "refusal.h"
#include "slot-map.h"

#include "ggml-cuda-pool.h"

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace gcp_torch {

// what the allocator needs besides the module: the real device (ggml-cuda-pool-torch.cpp) or a
// test's sim driver
struct platform {
    // what a null stream (PyTorch's default stream) stands for: a handle the module can borrow,
    // since it reads a null one as "a stream of the context's own" (CUDA: cudaStreamLegacy)
    void *                                                         default_stream = nullptr;
    // waits until the work queued on `stream` is complete; false when it cannot (say why in a line)
    std::function<bool(int device, void * stream)>                 wait_stream;
    // one line, without a newline
    std::function<void(const char * line)>                         log;
    // (optional) the device's free and total memory now, for an out-of-memory message; false
    // when they cannot be read
    std::function<bool(int device, size_t * free, size_t * total)> memory;
};

// the module's last warning or error line on this thread, or where its reason is when it gave
// one at a lower level (a missing device is said at info)
inline const char * module_reason() {
    const char * line = ggml_cpool_last_error();
    return *line != '\0' ? line : "GGML_CUDA_POOL_LOG=debug shows the module's reason";
}

class torch_allocator {
  public:
    // ctx is borrowed and outlives the allocator
    torch_allocator(ggml_cpool_ctx_t ctx, platform p);

    // nullptr for a size of 0 (as PyTorch's own allocator), or on failure with its reason in *why
    void * alloc(size_t size, int device, void * stream, refusal * why) noexcept;
    // a pointer that is not live here, or whose size or device differ from the allocation's, is
    // refused with one line and stays as it was
    void   free(void * ptr, size_t size, int device, void * stream) noexcept;

    // one statistics line per pool made so far (docs/pytorch.md)
    std::vector<std::string> stats_lines() const;
    size_t                   live_buffers() const;

  private:
    struct pool_use { // what the module's statistics do not know of a pool
        ggml_cpool_t pool           = nullptr;
        size_t       live_requested = 0, peak_requested = 0;
        uint64_t     cross_stream_frees = 0;
    };

    // the slot of (device, stream), binding a vacant one; -1 with the reason when none is left
    int                 slot_for(int device, void * stream, size_t size, refusal * why);
    // the pool's allocation; refused for want of memory, the device's other pools trimmed and,
    // if that gave anything back, one retry; still refused, the reason in PyTorch's words
    ggml_cpool_status   serve(size_t size, int device, int slot, void ** ptr, size_t * actual, refusal * why);
    // what the refusal of `size` by the pool of (device, slot) says
    out_of_memory_facts facts(size_t size, int device, int slot, size_t given_back, const char * reason) const;
    // torch.cuda.empty_cache() for the pools of the device's other streams: the bytes they gave back
    size_t              trim_other_pools(int device, int slot);
    void                say(const char * fmt, ...) const __attribute__((format(printf, 2, 3)));

    ggml_cpool_ctx_t   ctx_;
    platform           platform_;
    mutable std::mutex mutex_; // one thread at a time in the context, as the module requires
    slot_map           slots_;
    allocations        live_;
    pool_use           uses_[slot_map::DEVICES][slot_map::SLOTS];
};

} // namespace gcp_torch
