#pragma once
// Whether the C API times and traces a pool's calls (trace.h): one switch for every pool at once,
// read on the line every call reads anyway.

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

namespace gcp {

class observed_flag {
  public:
    // takes the switch's setting, and follows it while alive
    observed_flag() {
        registry &                  r = the_registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        r.flags.push_back(this);
        on_.store(r.on, std::memory_order_relaxed);
    }

    ~observed_flag() {
        registry &                  r = the_registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        r.flags.erase(std::find(r.flags.begin(), r.flags.end(), this));
    }

    bool on() const { return on_.load(std::memory_order_relaxed); }

    static void set_all(bool on) {
        registry &                  r = the_registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        r.on = on;
        for (observed_flag * f : r.flags) {
            f->on_.store(on, std::memory_order_relaxed);
        }
    }

  private:
    // every live flag, and the setting set_all gave them last
    struct registry {
        std::mutex                   mutex;
        std::vector<observed_flag *> flags;
        bool                         on = false;
    };

    static registry & the_registry() {
        static registry * r = new registry; // never destroyed: a quarantined pool lives to exit
        return *r;
    }

    std::atomic<bool> on_{ false };
};

} // namespace gcp
