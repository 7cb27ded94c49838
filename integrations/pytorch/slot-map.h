#pragma once
// Which stream slot of the module's context each consumer stream occupies, per device. A
// context has GGML_CPOOL_MAX_STREAMS slots a device, each with a pool of its own on its stream,
// so a buffer freed on one stream is never handed to another stream's kernels. PyTorch may use
// more streams than that over a run (its stream pool has 32 a priority), so a new stream takes
// an unbound slot, else the least recently used slot that has no live buffer (the module moves
// that slot's pool after synchronizing the old stream); with every slot live there is none.

#include "ggml-cuda-pool.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace gcp_torch {

class slot_map {
  public:
    static constexpr int SLOTS   = GGML_CPOOL_MAX_STREAMS;
    static constexpr int DEVICES = GGML_CPOOL_MAX_DEVICES;

    struct slot {
        void *   stream   = nullptr; // nullptr: never bound
        size_t   live     = 0;       // buffers handed out on it and not yet freed
        uint64_t last_use = 0;       // a tick of the map's clock
        uint64_t bindings = 0;       // streams it has served
    };

    static bool valid_device(int device) { return device >= 0 && device < DEVICES; }

    // the slot `stream` is bound to on `device`, or -1 (device valid, stream not null)
    int find(int device, const void * stream) const {
        for (int s = 0; s < SLOTS; s++) {
            if (slots_[size_t(device)][size_t(s)].stream == stream) {
                return s;
            }
        }
        return -1;
    }

    // a slot a new stream may take: an unbound one, else the least recently used one without
    // live buffers; -1 when every slot has some
    int vacant(int device) const {
        int best = -1;
        for (int s = 0; s < SLOTS; s++) {
            const slot & c = slots_[size_t(device)][size_t(s)];
            if (c.stream == nullptr) {
                return s;
            }
            if (c.live == 0 && (best < 0 || c.last_use < slots_[size_t(device)][size_t(best)].last_use)) {
                best = s;
            }
        }
        return best;
    }

    // `stream` now occupies the slot (the caller moved the slot's pool to it)
    void bind(int device, int s, void * stream) {
        slot & c = slots_[size_t(device)][size_t(s)];
        c.stream = stream;
        c.bindings++;
        c.last_use = ++clock_;
    }

    void hold(int device, int s) {
        slot & c = slots_[size_t(device)][size_t(s)];
        c.live++;
        c.last_use = ++clock_;
    }
    void release(int device, int s) { slots_[size_t(device)][size_t(s)].live--; }

    const slot & at(int device, int s) const { return slots_[size_t(device)][size_t(s)]; }

  private:
    std::array<std::array<slot, SLOTS>, DEVICES> slots_{};
    uint64_t                                     clock_ = 0;
};

} // namespace gcp_torch
