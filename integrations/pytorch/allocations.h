#pragma once
// What the allocator remembers of each buffer it handed out: PyTorch's free names the pointer,
// its requested size, device and stream, but the module's free needs the pool and the size the
// pool returned, and the pool is the allocation's stream's, whatever stream the free names.

#include "ggml-cuda-pool.h"

#include <cstddef>
#include <unordered_map>

namespace gcp_torch {

struct allocation {
    ggml_cpool_t pool; // the pool of the allocation's (device, stream)
    int          device;
    int          slot;
    void *       stream; // the allocation's stream (a null stream already replaced by its stand-in)
    size_t       size;   // what PyTorch asked for (its free passes it again)
    size_t       actual; // what the pool handed out (the pool's free needs it)
};

// The cross-stream rule: the buffer goes back to the pool of the stream it was allocated on,
// whose later allocations are ordered on that stream only. Freed on another stream, it may
// still be in use by work queued there, so that stream is synchronized first.
inline bool freed_on_another_stream(const allocation & a, const void * free_stream) {
    return free_stream != a.stream;
}

// live buffers by pointer
class allocations {
  public:
    // may throw std::bad_alloc (nothing is recorded then)
    void               add(void * ptr, const allocation & a) { live_.emplace(ptr, a); }
    // the record of a live pointer, or nullptr
    const allocation * find(void * ptr) const {
        auto it = live_.find(ptr);
        return it == live_.end() ? nullptr : &it->second;
    }
    void   remove(void * ptr) { live_.erase(ptr); }
    size_t size() const { return live_.size(); }

  private:
    std::unordered_map<void *, allocation> live_;
};

} // namespace gcp_torch
