#pragma once
// The sim driver's stream-ordered pool of one device, modelled on CUDA's default memory pool:
// freed blocks stay reserved; the freeing stream may reuse one at once; another stream may too
// under the cross-stream reuse policies (CUDA's default: host work here is always complete, so
// every free counts as completed), else only once a synchronize has observed the free; at a
// synchronize, reserved memory above the release threshold goes back to the device; trim gives
// unused memory back down to a floor.

#include "../drivers/primitives.h"
#include "sim-arena.h"

#include <unordered_map>
#include <vector>

namespace gcp {

class sim_mempool {
  public:
    ~sim_mempool();

    // best fit among the reusable free blocks, else new memory from the arena; alloc and free
    // may throw std::bad_alloc, changing nothing then
    status alloc(sim_arena & arena, size_t size, void * stream, void ** ptr);
    // INVALID_ARGUMENT for a pointer the pool did not hand out
    status free(void * ptr, void * stream);
    // every pending free is observed; memory above the threshold is released
    void   synchronize(sim_arena & arena);
    void   trim(sim_arena & arena, size_t keep);

    uint64_t threshold = 0; // CUDA's default: release everything unused at each synchronize
    uint64_t reuse     = REUSE_OPPORTUNISTIC | REUSE_INTERNAL_DEPENDENCIES; // CUDA's default
    size_t   reserved() const { return reserved_; }
    size_t   used() const { return used_; }
    size_t   blocks() const { return live_.size() + free_.size(); }

  private:
    struct block {
        size_t offset; // in the device arena
        size_t size;
        void * host;
        void * stream;   // the stream that freed it
        bool   observed; // a synchronize has seen the free: any stream may reuse it
    };
    void release_down_to(sim_arena & arena, size_t keep); // largest unused blocks first

    size_t                            reserved_ = 0, used_ = 0;
    std::vector<block>                free_;
    std::unordered_map<void *, block> live_;
};

} // namespace gcp
