#pragma once
// What the pool that is asking the driver for memory could give back if the driver refused it.
// A one-shot fault (oneshot=<size>, fault-spec.h) waits for a request made while there is some,
// so that the recovery it exists to exercise (LRU reclaim, a flush, a trim) has something to
// recover. The pools set it around their allocating driver calls; the fault decorator reads it.
// Per thread: a pool's driver calls run on the thread that called the pool.

#include <cstddef>

namespace gcp {

class reclaimable_scope {
  public:
    explicit reclaimable_scope(size_t bytes) : saved_(bytes_) { bytes_ = bytes; }
    ~reclaimable_scope() { bytes_ = saved_; }
    reclaimable_scope(const reclaimable_scope &)             = delete;
    reclaimable_scope & operator=(const reclaimable_scope &) = delete;

    // 0 outside any pool's allocating call
    static size_t bytes() { return bytes_; }

  private:
    static inline thread_local size_t bytes_ = 0;
    size_t                            saved_;
};

} // namespace gcp
