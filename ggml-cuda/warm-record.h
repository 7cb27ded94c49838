#pragma once
// The process-wide record that keeps stream-ordered pools warm. The first async pool on a
// device reads the device pool's release threshold and raises it to the maximum only if it is
// lower, remembering the previous value. When the last live async pool goes, every device this
// record raised is synchronized, trimmed and given its previous threshold back, whichever
// device is current on the thread that destroys it. A failure here only costs speed: it is
// logged, the driver's error is cleared, and allocation carries on.

#include "driver.h"

#include <memory>
#include <mutex>
#include <vector>

namespace gcp {

class warm_record {
  public:
    static warm_record & instance();

    // an async pool on `device` starts
    void acquire(const std::shared_ptr<driver> & drv, int device);
    // an async pool ends; the last one restores every raised device
    void release();

    // devices currently raised (for tests and logs)
    size_t raised() const;

  private:
    struct entry {
        std::shared_ptr<driver> drv; // keeps the driver alive until the threshold is back
        int                     device;
        uint64_t                previous;
    };
    bool known(const driver & drv, int device) const;

    mutable std::mutex mutex_;
    size_t             handles_ = 0;
    std::vector<entry> raised_;
    // devices seen whose threshold was already at the maximum: left alone, not re-read
    std::vector<std::pair<const void *, int>> kept_;
};

} // namespace gcp
