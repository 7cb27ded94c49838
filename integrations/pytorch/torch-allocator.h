#pragma once
// PyTorch's pluggable allocator over one module context, on any driver: alloc(size, device,
// stream) and free(ptr, size, device, stream) as torch.cuda.memory.CUDAPluggableAllocator calls
// them. Each (device, stream) PyTorch passes gets a stream slot, and so a pool, of its own
// (slot-map.h); each buffer goes back to its allocation's pool, after a synchronize of the
// freeing stream when that is another one (allocations.h). Thread-safe (PyTorch frees on
// whichever thread drops a tensor); nothing throws, a failure is nullptr and one log line.

#include "allocations.h"
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
    void *                                         default_stream = nullptr;
    // waits until the work queued on `stream` is complete; false when it cannot (say why in a line)
    std::function<bool(int device, void * stream)> wait_stream;
    // one line, without a newline
    std::function<void(const char * line)>         log;
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

    // nullptr for a size of 0 (as PyTorch's own allocator), or on failure, with one line
    void * alloc(size_t size, int device, void * stream) noexcept;
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

    // the slot of (device, stream), binding a vacant one; -1 with a line when none is left
    int  slot_for(int device, void * stream, size_t size);
    void say(const char * fmt, ...) const __attribute__((format(printf, 2, 3)));

    ggml_cpool_ctx_t   ctx_;
    platform           platform_;
    mutable std::mutex mutex_; // one thread at a time in the context, as the module requires
    slot_map           slots_;
    allocations        live_;
    pool_use           uses_[slot_map::DEVICES][slot_map::SLOTS];
};

} // namespace gcp_torch
