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
#include <vector>

namespace gcp {

// a buffer a pool holds for later, and its size
struct held_buffer {
    void * ptr;
    size_t size;
};

// the index of the smallest buffer whose size fits(size) accepts; buffers.size() when none. Newest
// first: a graph asks again for the sizes it freed last, and a fitting buffer of `least` bytes
// (the smallest size fits can accept) ends the search
template <typename Fits> size_t smallest_fitting(const std::vector<held_buffer> & buffers, size_t least, Fits && fits) {
    size_t best = buffers.size();
    for (size_t i = buffers.size(); i-- > 0;) {
        const size_t s = buffers[i].size;
        if (fits(s) && (best == buffers.size() || s < buffers[best].size)) {
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

    // every buffer comes back without an allocation
    reuse_cache() { buffers_.reserve(MAX_BUFFERS + 1); }

    bool   empty() const { return buffers_.empty(); }
    size_t bytes() const { return bytes_; }

    // takes out the smallest buffer of at least `need` bytes that a miss for `bytes` would not
    // have made smaller than FIT_SLACK allows (a growing request needs less than the 2x its miss
    // asks for); false when none does
    bool take(size_t need, size_t bytes, buffer * out) {
        const size_t best = smallest_fitting(buffers_, need, [&](size_t s) {
            return s >= need && s - std::min(s, bytes) <= s / FIT_SLACK;
        });
        if (best == buffers_.size()) {
            return false;
        }
        *out = buffers_[best];
        bytes_ -= out->size;
        buffers_.erase(buffers_.begin() + std::ptrdiff_t(best));
        return true;
    }

    // keeps b when it is small enough (false: the caller frees it); the oldest buffers beyond the
    // bounds go to evict(buffer)
    template <typename Evict> bool put(buffer b, Evict && evict) {
        if (b.size > MAX_BUFFER) {
            return false;
        }
        buffers_.push_back(b); // within the room the constructor made
        bytes_ += b.size;
        while (buffers_.size() > MAX_BUFFERS || bytes_ > MAX_BYTES) {
            const buffer oldest = buffers_.front();
            buffers_.erase(buffers_.begin());
            bytes_ -= oldest.size;
            evict(oldest);
        }
        return true;
    }

    // every buffer, oldest first, to f(buffer); the cache is empty after
    template <typename F> void clear(F && f) {
        for (const buffer & b : buffers_) {
            f(b);
        }
        buffers_.clear();
        bytes_ = 0;
    }

  private:
    std::vector<buffer> buffers_; // oldest first
    size_t              bytes_ = 0;
};

} // namespace gcp
