#pragma once
// A pool shaped like ggml's legacy CUDA pool (ggml_cuda_pool_leg at the pinned llama.cpp), written
// from its description. A fixed array of 256 slots; alloc scans every slot for the smallest cached
// buffer that holds the request (best fit) and stops early only at one of exactly the requested
// size; a miss allocates round_up(1.05 x size, 256); when that allocation fails, it synchronizes,
// frees every cached buffer and retries once (a second failure aborts in ggml: here the pool
// returns null). free puts the buffer into the first empty slot, or releases it when none is
// left. It checks nothing: a foreign pointer, a double free or a wrong size are taken as given.
//
// Where its memory comes from is a parameter: host memory for bench-hit (only hits are timed),
// a sim device for reclaim-sim. Memory has alloc(size) (null when refused), free(ptr) and
// synchronize().

#include <cstddef>
#include <cstdint>
#include <cstdlib>

// host memory stands in for the device
struct ggml_style_host_memory {
    void * alloc(size_t size) { return std::malloc(size); }
    void   free(void * ptr) { std::free(ptr); }
    void   synchronize() {}
};

template <typename Memory> class ggml_style_pool_on {
  public:
    static constexpr int    MAX_BUFFERS        = 256;
    static constexpr size_t LOOK_AHEAD_DIVISOR = 20; // 5% more on a miss
    static constexpr size_t ROUNDING           = 256;

    explicit ggml_style_pool_on(Memory memory = Memory()) : memory_(memory) {}
    ggml_style_pool_on(const ggml_style_pool_on &)             = delete;
    ggml_style_pool_on & operator=(const ggml_style_pool_on &) = delete;
    ~ggml_style_pool_on() { clear(); }

    // a call boundary, as ggml's virtual alloc and free are: the compiler may not fold the pair
    __attribute__((noinline)) void * alloc(size_t size, size_t * actual) {
        int    best      = -1;
        size_t best_diff = SIZE_MAX;
        for (int i = 0; i < MAX_BUFFERS; i++) {
            const slot & s = slots_[i];
            if (s.ptr != nullptr && s.size >= size && s.size - size < best_diff) {
                best      = i;
                best_diff = s.size - size;
                if (best_diff == 0) {
                    break;
                }
            }
        }
        if (best >= 0) {
            slot & s = slots_[best];
            void * p = s.ptr;
            *actual  = s.size;
            s        = {};
            return p;
        }
        *actual  = (size + size / LOOK_AHEAD_DIVISOR + ROUNDING - 1) / ROUNDING * ROUNDING;
        void * p = memory_.alloc(*actual);
        if (p == nullptr) {
            memory_.synchronize();
            clear();
            flushes_++;
            p = memory_.alloc(*actual);
        }
        return p;
    }

    __attribute__((noinline)) void free(void * ptr, size_t size) {
        for (slot & s : slots_) {
            if (s.ptr == nullptr) {
                s = { ptr, size };
                return;
            }
        }
        memory_.free(ptr);
    }

    // out-of-memory recoveries: every one freed all that was cached
    uint64_t flushes() const { return flushes_; }
    Memory & memory() { return memory_; }

  private:
    struct slot {
        void * ptr  = nullptr;
        size_t size = 0;
    };

    void clear() {
        for (slot & s : slots_) {
            if (s.ptr != nullptr) {
                memory_.free(s.ptr);
                s = {};
            }
        }
    }

    Memory   memory_;
    slot     slots_[MAX_BUFFERS];
    uint64_t flushes_ = 0;
};

using ggml_style_pool = ggml_style_pool_on<ggml_style_host_memory>;

// A pool shaped like ggml's VMM pool (ggml_cuda_pool_vmm at the pinned llama.cpp), its hit path
// alone: a stack over one reserved range, alloc hands out the top rounded to 128 bytes and free
// takes it back, in reverse order (ggml asserts it). Growth (mapping more of the range) is left
// out: the range here is host memory reserved up front, and only hits are timed.
class ggml_style_vmm_pool {
  public:
    static constexpr size_t ALIGNMENT = 128;

    explicit ggml_style_vmm_pool(size_t range) : base_(static_cast<char *>(std::malloc(range))), size_(range) {}
    ggml_style_vmm_pool(const ggml_style_vmm_pool &)             = delete;
    ggml_style_vmm_pool & operator=(const ggml_style_vmm_pool &) = delete;
    ~ggml_style_vmm_pool() { std::free(base_); }

    // null when the range is full (ggml would map more)
    __attribute__((noinline)) void * alloc(size_t size, size_t * actual) {
        size = (size + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
        if (base_ == nullptr || size_ - used_ < size) {
            return nullptr;
        }
        void * p = base_ + used_;
        used_ += size;
        *actual = size;
        return p;
    }

    // the top buffer only, as ggml's pool asserts
    __attribute__((noinline)) void free(void * ptr, size_t size) {
        if (ptr == base_ + used_ - size) {
            used_ -= size;
        }
    }

  private:
    char * base_;
    size_t size_;
    size_t used_ = 0;
};
