#include "quarantine.h"

#include "../support/log.h"

namespace gcp {

quarantine & quarantine::instance() {
    static quarantine * q = new quarantine; // never destroyed (quarantine.h says why)
    return *q;
}

void quarantine::admit(std::unique_ptr<pool> p, std::shared_ptr<driver> drv, const char * why) {
    GCP_LOG_WARN("%s: context destroyed while %s: %.2f MiB kept in quarantine (ggml_cpool_quarantine_release frees "
                 "it once the graphs are gone)",
                 p->name(), why, to_mib(p->held_bytes()));
    std::lock_guard<std::mutex> lock(mutex_);
    try {
        entries_.reserve(entries_.size() + 1); // the push below cannot fail, so p is never dropped
    } catch (...) {
        // no room for the record: the memory is still kept, only release() cannot reach it
        (void) p.release();
        GCP_LOG_ERROR("quarantine: no host memory to record a pool; its memory stays until the process ends");
        return;
    }
    entries_.push_back({ std::move(drv), std::move(p) });
}

void quarantine::totals(size_t * bytes, size_t * pools) const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t                      held = 0;
    for (const entry & e : entries_) {
        held += e.held->held_bytes();
    }
    if (bytes) {
        *bytes = held;
    }
    if (pools) {
        *pools = entries_.size();
    }
}

status quarantine::release() {
    std::lock_guard<std::mutex> lock(mutex_);
    status                      result = OK;
    for (size_t i = entries_.size(); i-- > 0;) {
        entry & e  = entries_[i];
        status  st = e.drv->synchronize(e.held->device());
        if (st != OK) {
            GCP_LOG_ERROR("%s: quarantined memory kept: synchronizing the device failed (%s)", e.held->name(),
                          status_name(st));
            result = result == OK ? st : result;
            continue;
        }
        entries_.erase(entries_.begin() + std::ptrdiff_t(i));
    }
    return result;
}

} // namespace gcp
