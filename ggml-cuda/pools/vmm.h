#pragma once
// VMM pool: ggml's VMM pool, made recoverable. It reserves one virtual range (on the first
// allocation), maps physical memory at the driver's granularity as it grows, and hands out
// addresses as a stack. A free out of order leaves a hole (merged with freed neighbours); the
// stack unwinds once everything above it is free. A request takes the smallest hole that holds it
// before the top, so that a consumer that frees out of order (PyTorch) does not grow the stack.
// The block list, with the top block on the hot line, is the pool's record of live buffers.
// Every driver failure returns a status and leaves the pool usable.

#include "pool.h"

#include <vector>

namespace gcp {

class pool_vmm final : public pool {
  public:
    static constexpr size_t ALIGNMENT = 128; // ggml's: keeps every tensor's vector loads aligned

    // peer_access: map for every peer device that can reach this one, too
    pool_vmm(driver & drv, int device, stream_t stream, size_t range_size, bool peer_access);
    ~pool_vmm() override;

  protected:
    friend class pool; // calls do_alloc and do_free by this class's name
    status do_alloc(const request & r, void ** ptr, size_t * actual) final;
    bool   do_free(void * ptr, size_t actual) noexcept final;
    // unmaps the physical chunks wholly above the stack top
    status do_trim() override;
    bool   live_buffer(const void * ptr, held_buffer * out) const override;

  private:
    struct chunk { // one physical allocation mapped at base + offset
        size_t     offset;
        size_t     size;
        vmm_handle handle;
    };
    struct block { // one handed-out buffer at base + offset
        size_t offset;
        size_t size;
        bool   freed;
    };
    // physical memory the driver would not take back yet, retried at growth, trim and destruction;
    // grow keeps room for every chunk to become one, so unmapping needs no host memory
    struct orphan : chunk {
        bool mapped;
        bool counted; // counted in reserved_bytes (it was a chunk): counted out once released
    };

    // a block of `bytes` on the top, within the mapped memory (may throw: nothing changed)
    void                         push(size_t bytes, void ** ptr, size_t * actual);
    // a request the mapped top cannot serve at once: a hole, a growth, the first range
    GCP_NOINLINE status          alloc_beyond_top(const request & r, size_t bytes, void ** ptr, size_t * actual);
    // the ladder's reclaim rung: nothing is cached, so one retry after a synchronize
    bool                         reclaim(class ladder & l);
    // a free of any block but the top one
    GCP_NOINLINE bool            free_block(void * ptr, size_t actual) noexcept;
    // the top block goes into the list, within the room push kept
    void                         list_top() noexcept;
    // the live block at ptr, in the list (s_.blocks.end(): none)
    std::vector<block>::iterator live_block(const void * ptr);
    status                       grow(size_t bytes);        // map at least bytes more
    status                       unmap_above(size_t floor); // every chunk wholly above the offset
    bool                         release_orphans();         // true when none is left mapped

    // what a hit reads, on a line of its own
    struct stack {
        uintptr_t          base   = 0; // 0 until the range is reserved
        size_t             used   = 0; // the top, an offset from base: the top block ends there
        size_t             mapped = 0;
        size_t             holes  = 0;
        // the top block's size, here rather than in the list, so ggml's pair reads no line of the list
        // (0: the list's last block is the top, if any)
        size_t             top_size = 0;
        std::vector<block> blocks; // ascending offsets, but the top block; a freed one is a hole
    };
    static_assert(sizeof(stack) <= CACHE_LINE, "a hit reads one line of the kind");
    alignas(CACHE_LINE) stack s_;

    bool                peer_access_;
    size_t              granularity_;
    size_t              range_size_;
    std::vector<chunk>  chunks_;
    std::vector<orphan> orphans_;
};

} // namespace gcp
