#pragma once
// Whether the C API times and traces a pool's calls (trace.h): one switch for every pool at once,
// read on the line every call reads anyway.

#include <atomic>

namespace gcp {

class observed_flag {
  public:
    observed_flag(); // takes the switch's setting, and follows it while alive
    ~observed_flag();

    bool        on() const { return on_.load(std::memory_order_relaxed); }
    static void set_all(bool on);

  private:
    std::atomic<bool> on_{ false };
};

} // namespace gcp
