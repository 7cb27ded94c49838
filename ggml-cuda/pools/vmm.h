#pragma once
// VMM pool: reserves one virtual range (lazily, on the first allocation), maps physical memory
// at the driver's granularity as the pool grows, and hands out addresses as a stack. Frees out
// of order are accepted: the block becomes a hole (merged with freed neighbours) and the stack
// unwinds once everything above it is free. A request a hole holds takes the smallest such hole
// before the top: a consumer that frees out of order (PyTorch drops a step's temporaries below
// the K/V it keeps) would otherwise grow the stack step after step. ggml frees in the reverse
// order it allocates, leaves no hole, and never pays for the search. The block list, with the
// top block the hit line holds until the next push lists it, is also the pool's record of live
// buffers: a free finds its block (the top one first, where ggml's frees land) and is refused
// when there is none. Every driver failure returns a status and leaves the pool usable.

#include "pool.h"

#include <vector>

namespace gcp {

class pool_vmm final : public pool {
  public:
    static constexpr size_t ALIGNMENT = 128; // ggml's: keeps every tensor's vector loads aligned

    // peer_access: map for every peer device that can reach this one, too
    pool_vmm(driver & drv, int device, stream_t stream, size_t reserve_size, bool peer_access);
    ~pool_vmm() override;

    // unmaps the physical chunks wholly above the stack top
    status trim() override;

  protected:
    // who records the buffers out (pool::live_record)
    static constexpr live_record RECORD = live_record::kind; // the block list

    friend class pool; // calls the hit path (hit-path.h)
    // a request that does not grow, pushed on the top within the hit end; false, with nothing
    // changed, where it needs more (a hole, a growth, room in the block list)
    GCP_HIT_PATH bool   serve_hit(size_t size, void ** ptr, size_t * actual);
    GCP_HIT_PATH status do_alloc(const request & r, void ** ptr, size_t * actual);
    // ggml's free, of the top block with no hole below it; false, with nothing changed, otherwise
    GCP_HIT_PATH bool   serve_free(void * ptr, size_t actual) noexcept;
    GCP_HIT_PATH size_t do_free(void * ptr, size_t actual) noexcept;
    // mapped and not live, plus unmapped memory the driver has not taken back yet
    size_t              cached_bytes() const override { return mapped_ + held_ - hit_.counts.live_bytes; }
    size_t live_buffers() const override { return blocks_.size() - holes_ + (stack().top_size != 0 ? 1 : 0); }
    // the top block: holes never stay on top, so it is live
    bool   any_live(void ** ptr, size_t * size) const override;

  private:
    struct chunk { // one physical allocation mapped at the range's base + offset
        size_t     offset;
        size_t     size;
        vmm_handle handle;
    };
    struct block { // one handed-out buffer at the range's base + offset
        size_t offset;
        size_t size;
        bool   freed;
    };

    // physical memory the driver would not take back yet: retried before growth, at trim and
    // at destruction, so a transient driver failure leaks nothing. Room for every chunk to
    // become one is kept (grow makes it), so unmapping never needs host memory
    struct orphan {
        size_t     offset;
        size_t     size;
        vmm_handle handle;
        bool       mapped;
        bool       reserved; // counted in reserved_bytes (it was a chunk): counted out once released
    };

    status                       reserve();
    status                       grow(size_t bytes); // map at least bytes more
    // a block of `bytes` on the top, within the mapped memory and the block list's capacity
    void                         push(size_t bytes, void ** ptr, size_t * actual);
    // out of line, so that the hit paths stay short: a request the top's mapped memory cannot
    // serve at once (a hole, a growth, the first range); any free but the top's without a hole
    GCP_COLD status              take(const request & r, size_t bytes, void ** ptr, size_t * actual);
    GCP_COLD size_t              release(void * ptr, size_t actual) noexcept;
    // the live block at ptr, or blocks_.end()
    std::vector<block>::iterator live_block(const void * ptr);
    // the rungs of the out-of-memory ladder (recovery.h) when the top's growth for a request was
    // refused: nothing is cached to give back, so one retry after a synchronize
    class steps;
    // the smallest hole of at least `bytes`, split when larger; false when none holds it
    bool   take_hole(size_t bytes, void ** ptr);
    bool   unmap_last_chunk();
    status unmap_above(size_t floor); // every chunk wholly above the offset
    bool   release_orphans();         // true when none is left mapped

    status grant_access(uintptr_t addr, size_t size); // this device, and its peers when asked

    // where a hit may push the top to: the mapped end, or 0 while a push needs more than the
    // mapped memory (a hole to search first, or too little room in the block list). Set again
    // after the slow paths (take, release, an unmap), which change holes, the list's room and the
    // mapped end; a hit's push only takes room from the list (push)
    void refresh_hit_end() noexcept { stack().hit_end = holes_ == 0 && list_has_room() ? mapped_ : 0; }
    // room in the list for a push: the top it lists, and the new top listed later
    bool list_has_room() const { return blocks_.capacity() - blocks_.size() >= SPARE_BLOCKS; }
    // the top block the hit line holds goes into the list (within the room kept for it)
    void list_top() noexcept {
        stack_fields & s = stack();
        if (s.top_size != 0) {
            if (blocks_.size() == blocks_.capacity()) {
                GCP_UNREACHABLE(); // the room kept: no reallocation, whose code would cost the hit a frame
            }
            blocks_.push_back({ s.used - s.top_size, s.top_size, false });
            s.top_size = 0;
        }
    }
    // the list's room a push needs: the top it lists, and the new top, listed later by a call that
    // may not allocate (a free)
    static constexpr size_t SPARE_BLOCKS = 2;

    // what a hit reads, on the pool's hit line (pool::kind_hit): an alloc and its free of
    // ggml's pattern read no other line
    struct stack_fields {
        uintptr_t base    = 0; // 0 until the range is reserved
        size_t    used    = 0; // stack top, offset from base: the top block ends there
        size_t    hit_end = 0; // refresh_hit_end
        // the top block, held here rather than in the list (0: the list's last block is the top,
        // if any): an alloc and its free, ggml's pattern, then touch no line of the list. The next
        // push, or a free of another block, lists it, within the room kept for it
        size_t    top_size = 0;
    };
    stack_fields &       stack() { return kind_hit<stack_fields>(); }
    const stack_fields & stack() const { return kind_hit<stack_fields>(); }

    // a nested request's push and its free read the list too
    std::vector<block>  blocks_; // ascending offsets; a freed one below the top is a hole
    size_t              holes_        = 0;
    size_t              mapped_       = 0;
    size_t              reserve_size_ = 0; // the range's size
    bool                peer_access_;
    size_t              granularity_;
    size_t              held_ = 0; // bytes of reserved orphans
    std::vector<chunk>  chunks_;
    std::vector<orphan> orphans_;
};

} // namespace gcp
