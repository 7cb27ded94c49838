#pragma once
// The process-wide record that keeps stream-ordered pools warm. The first async pool on a device
// raises the device pool's release threshold to the maximum, only if it is lower, and turns off
// its cross-stream reuse (a block one context freed reaches another's stream only after a
// synchronize saw the free), remembering the previous values. When the last async pool goes, every
// device the record raised is trimmed and given its values back, whatever device is current.
// A failure here only costs speed: it is logged, cleared, and allocation carries on.

#include "../drivers/driver.h"

#include <memory>
#include <mutex>
#include <vector>

namespace gcp {

class warm_record {
  public:
    static warm_record & instance();

    // an async pool on `device` starts; may throw std::bad_alloc, changing nothing then
    void join(const std::shared_ptr<driver> & drv, int device);
    // an async pool ends; the last one restores every device it changed (allocates nothing)
    void leave();

  private:
    struct entry {
        std::shared_ptr<driver> drv; // keeps the driver alive until the values are back
        int                     device;
        bool                    raised; // threshold raised: trim and restore when the last pool leaves
        uint64_t                threshold;
        bool                    reuse_changed;
        uint64_t                reuse;
    };

    mutable std::mutex mutex_;
    size_t             handles_ = 0;
    std::vector<entry> devices_; // every device seen since the record was last empty
};

} // namespace gcp
