#include "observed.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace gcp {

namespace {

// every live flag, and the setting set_all gave them last
struct registry {
    std::mutex                   mutex;
    std::vector<observed_flag *> flags;
    bool                         on = false;
};

registry & the_registry() {
    static registry * r = new registry; // never destroyed: a quarantined pool lives to exit
    return *r;
}

} // namespace

observed_flag::observed_flag() {
    registry &                  r = the_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.flags.push_back(this);
    on_.store(r.on, std::memory_order_relaxed);
}

observed_flag::~observed_flag() {
    registry &                  r = the_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.flags.erase(std::find(r.flags.begin(), r.flags.end(), this));
}

void observed_flag::set_all(bool on) {
    registry &                  r = the_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.on = on;
    for (observed_flag * f : r.flags) {
        f->on_.store(on, std::memory_order_relaxed);
    }
}

} // namespace gcp
