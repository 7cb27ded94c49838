#pragma once
// The process-wide record that keeps stream-ordered pools warm. The first async pool on a
// device reads the device pool's release threshold and raises it to the maximum only if it is
// lower, and turns off the pool's cross-stream reuse policies (so a block one context freed goes
// to another context's stream only after a synchronize has seen the free), remembering the
// previous values. When the last live async pool goes (each synchronizes its stream as it
// goes), every device this record raised is trimmed and given its previous values back,
// whichever device is current on the thread that destroys it. A failure here only costs speed: it is logged, the driver's error is
// cleared, and allocation carries on.

#include "../drivers/driver.h"

#include <memory>
#include <mutex>
#include <vector>

namespace gcp {

class warm_record {
  public:
    static warm_record & instance();

    // an async pool on `device` starts; may throw std::bad_alloc, changing nothing then
    void acquire(const std::shared_ptr<driver> & drv, int device);
    // an async pool ends; the last one restores every device it changed (allocates nothing)
    void release();

  private:
    struct entry {
        std::shared_ptr<driver> drv; // keeps the driver alive until the values are back
        int                     device;
        bool                    raised; // threshold raised: trim and restore on release
        uint64_t                threshold;
        bool                    reuse_changed;
        uint64_t                reuse;
    };

    mutable std::mutex mutex_;
    size_t             handles_ = 0;
    std::vector<entry> devices_; // every device seen since the record was last empty
};

} // namespace gcp
