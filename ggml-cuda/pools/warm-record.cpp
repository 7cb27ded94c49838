#include "warm-record.h"

#include "../support/log.h"

namespace gcp {

namespace {

constexpr mempool_attr THRESHOLD = mempool_attr::release_threshold;
constexpr mempool_attr REUSE     = mempool_attr::reuse_policies;

// a failure that only costs speed: say so, carry on
bool check(driver & drv, status st, int device, const char * what) {
    if (st == OK) {
        return true;
    }
    GCP_LOG_WARN("%s: %s failed (%s); the pool stays cold (slower, still correct)",
                 pool_label(drv.platform(), device).c_str(), what, status_name(st));
    return false;
}

} // namespace

warm_record & warm_record::instance() {
    static warm_record record;
    return record;
}

void warm_record::join(const std::shared_ptr<driver> & drv, int device) {
    log_hold                    hold; // lines said under the lock go out once it is released
    std::lock_guard<std::mutex> lock(mutex_);
    // room for this device's entry first: past it nothing throws, so no failed pool leaves the count raised
    ensure_capacity(devices_, devices_.size() + 1);
    handles_++;
    for (const entry & e : devices_) {
        if (e.drv->identity() == drv->identity() && e.device == device) {
            return;
        }
    }
    entry e{ drv, device, false, 0, false, 0 };
    if (check(*drv, drv->pool_attr(device, THRESHOLD, &e.threshold), device, "reading the release threshold") &&
        e.threshold < THRESHOLD_MAX) { // a threshold another user set to the maximum stays theirs
        e.raised =
            check(*drv, drv->pool_set_attr(device, THRESHOLD, THRESHOLD_MAX), device, "raising the release threshold");
    }
    if (check(*drv, drv->pool_attr(device, REUSE, &e.reuse), device, "reading the reuse policies") && e.reuse != 0) {
        e.reuse_changed = check(*drv, drv->pool_set_attr(device, REUSE, 0), device, "turning cross-stream reuse off");
    }
    GCP_LOG_DEBUG("%s: release threshold %llu%s", pool_label(drv->platform(), device).c_str(),
                  (unsigned long long) e.threshold, e.raised ? ", raised to the maximum" : ", kept");
    devices_.push_back(e);
}

void warm_record::leave() {
    log_hold                    hold;
    std::lock_guard<std::mutex> lock(mutex_);
    if (handles_ == 0 || --handles_ > 0) {
        return;
    }
    // every device from the record, not the thread's current one. Each async pool synchronized
    // its own stream as it went, so every free of theirs has landed; a device-wide synchronize
    // would break a graph capture running elsewhere on the device
    for (const entry & e : devices_) {
        driver & drv = *e.drv;
        if (e.raised) {
            check(drv, drv.pool_trim(e.device, 0), e.device, "trimming the stream-ordered pool");
            check(drv, drv.pool_set_attr(e.device, THRESHOLD, e.threshold), e.device,
                  "restoring the release threshold");
        }
        if (e.reuse_changed) {
            check(drv, drv.pool_set_attr(e.device, REUSE, e.reuse), e.device, "restoring the reuse policies");
        }
    }
    devices_.clear();
}

} // namespace gcp
