#include "warm-record.h"

#include "log.h"

namespace gcp {

warm_record & warm_record::instance() {
    static warm_record record;
    return record;
}

bool warm_record::known(const driver & drv, int device) const {
    for (const entry & e : raised_) {
        if (e.drv->identity() == drv.identity() && e.device == device) {
            return true;
        }
    }
    for (auto & k : kept_) {
        if (k.first == drv.identity() && k.second == device) {
            return true;
        }
    }
    return false;
}

void warm_record::acquire(const std::shared_ptr<driver> & drv, int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    handles_++;
    if (known(*drv, device)) {
        return;
    }
    const char * name     = platform_name(drv->platform());
    uint64_t     previous = 0;
    status       st       = drv->pool_threshold(device, &previous);
    if (st != OK) {
        drv->clear_error();
        GCP_LOG_WARN("%s pool[%d]: reading the stream-ordered pool's release threshold failed (%s); the pool "
                     "stays cold (slower, still correct)",
                     name, device, ggml_cpool_status_str(st));
        return;
    }
    if (previous >= THRESHOLD_MAX) {
        kept_.emplace_back(drv->identity(), device); // another user keeps it warm already
        return;
    }
    st = drv->pool_set_threshold(device, THRESHOLD_MAX);
    if (st != OK) {
        drv->clear_error();
        GCP_LOG_WARN("%s pool[%d]: raising the release threshold failed (%s); the pool stays cold (slower, still "
                     "correct)",
                     name, device, ggml_cpool_status_str(st));
        return;
    }
    GCP_LOG_DEBUG("%s pool[%d]: release threshold raised from %llu to the maximum", name, device,
                  (unsigned long long) previous);
    raised_.push_back({ drv, device, previous });
}

void warm_record::release() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (handles_ == 0 || --handles_ > 0) {
        return;
    }
    // every device from the record, not the thread's current one
    for (const entry & e : raised_) {
        const char * name = platform_name(e.drv->platform());
        status       st   = e.drv->synchronize(e.device);
        if (st == OK) {
            st = e.drv->pool_trim(e.device, 0);
        }
        if (st != OK) {
            e.drv->clear_error();
            GCP_LOG_WARN("%s pool[%d]: trimming the stream-ordered pool failed (%s)", name, e.device,
                         ggml_cpool_status_str(st));
        }
        st = e.drv->pool_set_threshold(e.device, e.previous);
        if (st != OK) {
            e.drv->clear_error();
            GCP_LOG_WARN("%s pool[%d]: restoring the release threshold to %llu failed (%s)", name, e.device,
                         (unsigned long long) e.previous, ggml_cpool_status_str(st));
        } else {
            GCP_LOG_DEBUG("%s pool[%d]: trimmed; release threshold back to %llu", name, e.device,
                          (unsigned long long) e.previous);
        }
    }
    raised_.clear();
    kept_.clear();
}

size_t warm_record::raised() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return raised_.size();
}

} // namespace gcp
