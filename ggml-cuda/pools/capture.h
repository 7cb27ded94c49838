#pragma once
// Whether a pool's stream captures a CUDA graph, where synchronize and free are illegal: as the
// consumer declares it, or, where it declares nothing, as the driver says.

#include "../drivers/driver.h"

namespace gcp {

class capture_state {
  public:
    // 1 capturing, 0 not, -1: ask the driver
    void declare(int capturing) { declared_ = int8_t(capturing < 0 ? -1 : capturing != 0); }

    // the driver's answer; unknown is the worst case, since an illegal call would break a capture
    static bool asked(driver & drv, int device, stream_t stream) {
        bool active = false;
        return stream != nullptr && (drv.stream_capturing(device, stream, &active) != OK || active);
    }
    // the consumer's word where it gave one, sparing the driver's query on a hit path
    bool as_declared(driver & drv, int device, stream_t stream) const {
        return declared_ >= 0 ? declared_ != 0 : asked(drv, device, stream);
    }

  private:
    int8_t declared_ = -1;
};

} // namespace gcp
