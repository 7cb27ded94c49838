#pragma once
// Pools a destroyed context could not free safely (a graph may still replay into pinned buffers,
// kernels may still run behind a failed synchronize), kept with their driver until release().
// Never destroyed: no driver call may run while the runtime shuts down.

#include "../drivers/driver.h"
#include "../pools/pool.h"

#include <memory>
#include <mutex>
#include <vector>

namespace gcp {

class quarantine {
  public:
    static quarantine & instance();

    // keeps p (and the driver it uses) and says why, once
    void   admit(std::unique_ptr<pool> p, std::shared_ptr<driver> drv, const char * why);
    // what it keeps; either may be null
    void   totals(size_t * bytes, size_t * pools) const;
    // frees every pool whose device synchronizes; the first failure's status, else OK
    status release();

  private:
    struct entry {
        std::shared_ptr<driver> drv; // declared first: destroyed after the pool that uses it
        std::unique_ptr<pool>   held;
    };

    mutable std::mutex mutex_;
    std::vector<entry> entries_;
};

} // namespace gcp
