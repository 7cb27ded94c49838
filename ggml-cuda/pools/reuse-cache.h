#pragma once
// The async pool's reuse cache: the buffers its stream freed last, handed out again with no
// driver call. Stream order makes that safe, as in a legacy pool: the next user of a buffer runs
// on the stream that freed it, after the work that freed it. A graph's evaluation asks for the
// same scratch sizes layer after layer and token after token, and a stream-ordered allocation and
// free cost a driver call each (plus the pool's usage reads), where ggml's own pools hand out a
// cached buffer in a few nanoseconds. The bounds hold a batch's scratch, not only a token's: a
// server's batch of 8 sequences of an 8B model asks for buffers of several MiB at every layer,
// and a cache of 1 MiB buffers sent nearly every one of them to the driver. What the cache holds
// is this context's alone, so it stays small next to the stream-ordered pool, whose memory every
// stream shares: larger buffers (a long prompt's attention conversions) go straight back to it,
// and an out-of-memory or a trim gives the cache back first.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gcp {

// a buffer a pool holds for later, and its size
struct held_buffer {
    void * ptr;
    size_t size;
};

// the index of the smallest of the n buffers whose size fits(size) accepts; n when none. Newest
// (last) first: a graph asks again for the sizes it freed last, and a fitting buffer of `least`
// bytes (the smallest size fits can accept) ends the search
template <typename Fits> size_t smallest_fitting(const held_buffer * buffers, size_t n, size_t least, Fits && fits) {
    size_t best = n;
    for (size_t i = n; i-- > 0;) {
        const size_t s = buffers[i].size;
        if (fits(s) && (best == n || s < buffers[best].size)) {
            best = i;
            if (s == least) {
                break;
            }
        }
    }
    return best;
}

// what the buffers hold in all
inline size_t bytes_of(const std::vector<held_buffer> & buffers) {
    size_t n = 0;
    for (const held_buffer & b : buffers) {
        n += b.size;
    }
    return n;
}

class reuse_cache {
  public:
    static constexpr size_t MAX_BUFFERS = 32;
    static constexpr size_t MAX_BUFFER  = size_t(16) << 20; // a batch's scratch; larger transients go back
    static constexpr size_t MAX_BYTES   = size_t(64) << 20;
    static constexpr size_t FIT_SLACK   = 8; // a buffer serves requests down to 1/8 below its size

    using buffer = held_buffer;

    bool   empty() const { return count_ == 0; }
    size_t bytes() const { return bytes_; }

    // takes out the smallest buffer of at least `need` bytes that a miss for `bytes` would not
    // have made smaller than FIT_SLACK allows (a growing request needs less than the 2x its miss
    // asks for); false when none does
    bool take(size_t need, size_t bytes, buffer * out) {
        const size_t best = smallest_fitting(buffers_, count_, need, [&](size_t s) {
            return s >= need && s - std::min(s, bytes) <= s / FIT_SLACK;
        });
        if (best == count_) {
            return false;
        }
        *out = buffers_[best];
        bytes_ -= out->size;
        remove(best);
        return true;
    }

    // keeps b when it is small enough (false: the caller frees it); the oldest buffers beyond the
    // bounds go to evict(buffer)
    template <typename Evict> bool put(buffer b, Evict && evict) {
        if (b.size > MAX_BUFFER) {
            return false;
        }
        buffers_[count_++] = b; // one past the bound at most: the loop below goes back to it
        bytes_ += b.size;
        while (count_ > MAX_BUFFERS || bytes_ > MAX_BYTES) {
            const buffer oldest = buffers_[0];
            remove(0);
            bytes_ -= oldest.size;
            evict(oldest);
        }
        return true;
    }

    // every buffer, oldest first, to f(buffer); the cache is empty after
    template <typename F> void clear(F && f) {
        std::for_each(buffers_, buffers_ + count_, f);
        count_ = 0;
        bytes_ = 0;
    }

  private:
    // buffer i goes, the newer ones move down a place
    void remove(size_t i) {
        std::copy(buffers_ + i + 1, buffers_ + count_, buffers_ + i);
        count_--;
    }

    // the count and the total first: with what the async pool puts before them, on the line every
    // call reads; the buffers follow, in the object, so a buffer comes back with no allocation
    uint32_t count_ = 0;
    size_t   bytes_ = 0;
    buffer   buffers_[MAX_BUFFERS + 1]; // oldest first
};

} // namespace gcp
