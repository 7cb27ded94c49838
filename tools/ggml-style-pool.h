#pragma once
// bench-hit's baseline: a pool shaped like ggml-master's legacy CUDA pool, written from its
// description. A fixed array of 256 slots; alloc scans every slot for the smallest cached buffer
// that holds the request (best fit) and stops early only at one of exactly the requested size; a
// miss allocates round_up(1.05 x size, 256); free puts the buffer into the first empty slot, or
// releases it when none is left. It checks nothing: a foreign pointer, a double free or a wrong
// size are taken as given. Host memory stands in for the device (only hits are timed).

#include <cstddef>
#include <cstdint>
#include <cstdlib>

class ggml_style_pool {
  public:
    static constexpr int    MAX_BUFFERS        = 256;
    static constexpr size_t LOOK_AHEAD_DIVISOR = 20; // 5% more on a miss
    static constexpr size_t ROUNDING           = 256;

    ggml_style_pool()                                   = default;
    ggml_style_pool(const ggml_style_pool &)             = delete;
    ggml_style_pool & operator=(const ggml_style_pool &) = delete;
    ~ggml_style_pool() {
        for (slot & s : slots_) {
            std::free(s.ptr);
        }
    }

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
        *actual = (size + size / LOOK_AHEAD_DIVISOR + ROUNDING - 1) / ROUNDING * ROUNDING;
        return std::malloc(*actual);
    }

    __attribute__((noinline)) void free(void * ptr, size_t size) {
        for (slot & s : slots_) {
            if (s.ptr == nullptr) {
                s = { ptr, size };
                return;
            }
        }
        std::free(ptr);
    }

  private:
    struct slot {
        void * ptr  = nullptr;
        size_t size = 0;
    };
    slot slots_[MAX_BUFFERS];
};
