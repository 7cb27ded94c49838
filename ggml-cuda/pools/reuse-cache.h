#pragma once
// The async pool's reuse cache: the buffers its stream freed last, handed out again with no driver
// call. Stream order makes that safe: the next user of a buffer runs on the stream that freed it,
// after the work that freed it. It holds a batch's scratch (a server's batch of an 8B model asks
// for several MiB at every layer); larger buffers go straight back to the device's stream-ordered
// pool, whose memory every stream shares, and an out-of-memory or a trim empties it first.

#include "pool.h"

#include <algorithm>

namespace gcp {

class reuse_cache {
  public:
    static constexpr size_t MAX_BUFFERS = 32;
    static constexpr size_t MAX_BUFFER  = 16 * MiB;
    static constexpr size_t MAX_BYTES   = 64 * MiB;
    static constexpr size_t FIT_SLACK   = 8; // a buffer serves requests down to 1/8 below its size

    static constexpr size_t HEADER_BYTES = 2 * sizeof(uint32_t); // the count and the total, first

    size_t bytes() const { return bytes_; }

    // takes out the smallest buffer of at least `need` bytes that a miss for `bytes` would not
    // have made smaller than FIT_SLACK allows; false when none does
    bool take(size_t need, size_t bytes, held_buffer * out) {
        held_buffer * best = smallest_holding(buffers_, buffers_ + count_, need, [&](const held_buffer & b) {
            return b.size - std::min(b.size, bytes) <= b.size / FIT_SLACK;
        });
        if (best == buffers_ + count_) {
            return false;
        }
        *out = *best;
        remove(best);
        return true;
    }

    // keeps b when it is small enough, else it goes to evict; so do the oldest past the bounds
    template <typename Evict> void put(held_buffer b, Evict && evict) {
        if (b.size > MAX_BUFFER) {
            evict(b);
            return;
        }
        buffers_[count_++] = b; // one past the bound at most: the loop below goes back to it
        bytes_ += uint32_t(b.size);
        while (count_ > MAX_BUFFERS || bytes_ > MAX_BYTES) {
            const held_buffer oldest = buffers_[0];
            remove(buffers_);
            evict(oldest);
        }
    }

    // every buffer, oldest first, to f(buffer); the cache is empty after
    template <typename F> void clear(F && f) {
        std::for_each(buffers_, buffers_ + count_, f);
        count_ = 0;
        bytes_ = 0;
    }

  private:
    // b goes, the newer ones move down a place
    void remove(held_buffer * b) {
        bytes_ -= uint32_t(b->size);
        std::copy(b + 1, buffers_ + count_, b);
        count_--;
    }

    // the count and total first, with the pool's hot fields; the buffers in the object, so a free never allocates
    uint32_t count_ = 0;
    uint32_t bytes_ = 0; // at most MAX_BYTES and one MAX_BUFFER
    static_assert(MAX_BYTES + MAX_BUFFER <= UINT32_MAX, "the total fits bytes_");
    held_buffer buffers_[MAX_BUFFERS + 1]; // oldest first
};

} // namespace gcp
