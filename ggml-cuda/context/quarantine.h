#pragma once
// Pools a destroyed context could not free safely (a graph may still replay into pinned buffers,
// kernels may still run behind a failed synchronize), kept with their driver until release().
// Never destroyed: no driver call may run while the runtime shuts down.

#include "../drivers/driver.h"
#include "../pools/pool.h"
#include "../support/log.h"

#include <memory>
#include <mutex>
#include <vector>

namespace gcp {

class quarantine {
  public:
    static quarantine & instance() {
        static quarantine * q = new quarantine; // never destroyed (above)
        return *q;
    }

    // keeps p (and the driver it uses) and says why, once
    void admit(std::unique_ptr<pool> p, std::shared_ptr<driver> drv, const char * why) {
        GCP_LOG_WARN("%s: context destroyed while %s: %.2f MiB kept in quarantine (ggml_cpool_quarantine_release "
                     "frees it once the graphs are gone)",
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

    // what it keeps; either may be null
    void totals(size_t * bytes, size_t * pools) const {
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

    // frees every pool whose device synchronizes; the first failure's status, else OK
    status release() {
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

  private:
    struct entry {
        std::shared_ptr<driver> drv; // declared first: destroyed after the pool that uses it
        std::unique_ptr<pool>   held;
    };

    mutable std::mutex mutex_;
    std::vector<entry> entries_;
};

} // namespace gcp
