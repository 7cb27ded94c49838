#include "fault.h"

#include "../support/log.h"

#include <sys/stat.h>

namespace gcp {

namespace {

// what each call takes from the device (GGML_CPOOL_CALLS' third column)
enum class takes { NOTHING, RESOURCE, MEMORY };
constexpr takes CALL_TAKES[CALL_KINDS] = {
#define GCP_CALL(name, spec, what) takes::what,
    GGML_CPOOL_CALLS(GCP_CALL)
#undef GCP_CALL
};

} // namespace

void fault_driver::arm(const fault_spec & spec) {
    fault_spec                  copy = spec; // may throw: the armed spec stays whole until here
    std::lock_guard<std::mutex> lock(mutex_);
    spec_ = std::move(copy);
    rng_.seed(spec.seed);
    std::fill(std::begin(seen_), std::end(seen_), 0);
    seen_any_     = 0;
    fired_        = 0;
    oneshot_done_ = false;
}

// asked only where a fault could fire: a stat() per driver call, and the pools call the driver on a miss alone
bool fault_driver::window_open() const {
    struct stat st;
    return spec_.window.empty() || stat(spec_.window.c_str(), &st) == 0;
}

void fault_driver::completed(call c, int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    allocated_[device] += CALL_TAKES[size_t(c)] == takes::MEMORY;
}

uint64_t fault_driver::fired() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return fired_;
}

status fault_driver::free_memory(int device, size_t * free) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!spec_.chooses() && !spec_.window.empty() && fired_ < spec_.limit && window_open()) {
            *free = 0;
            return OK;
        }
    }
    return driver::free_memory(device, free);
}

status fault_driver::intercept(call c, int device, size_t size) {
    log_hold                    hold; // lines said under the lock go out once it is released
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t              nth     = ++seen_[size_t(c)];
    const uint64_t              nth_any = ++seen_any_;
    if (spec_.empty() || fired_ >= spec_.limit || !window_open()) {
        return OK;
    }
    const takes      what = CALL_TAKES[size_t(c)];
    const status     fail = what != takes::NOTHING ? OUT_OF_MEMORY : DRIVER_ERROR;
    const pool_label name(platform(), device);

    if (!spec_.chooses()) { // while= alone: every call that takes device memory, while the window is open
        if (what != takes::MEMORY) {
            return OK;
        }
        fired_++;
        GCP_LOG_INFO("%s: injected fault: %s call %llu fails (%s exists)", name.c_str(), call_name(ggml_cpool_call(c)),
                     (unsigned long long) nth, spec_.window.c_str());
        return fail;
    }

    if (spec_.oneshot && !oneshot_done_ && what == takes::MEMORY && size >= spec_.oneshot_at &&
        (spec_.oneshot_any || allocated_[device] > 0)) {
        oneshot_done_ = true;
        fired_++;
        GCP_LOG_INFO("%s: injected one-shot reclaim test at %.2f MiB", name.c_str(), to_mib(size));
        return fail;
    }
    for (const fault_spec::nth & n : spec_.nths) {
        uint64_t count = n.kind == ANY_CALL ? nth_any : nth;
        if ((n.kind == ANY_CALL || n.kind == int(c)) && (count == n.k || (n.and_later && count > n.k))) {
            fired_++;
            GCP_LOG_INFO("%s: injected fault: %s call %llu fails (%s)", name.c_str(), call_name(ggml_cpool_call(c)),
                         (unsigned long long) nth, status_name(fail));
            return fail;
        }
    }
    if (spec_.prob > 0.0 && (spec_.prob_kind == ANY_CALL || spec_.prob_kind == int(c)) &&
        std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < spec_.prob) {
        fired_++;
        GCP_LOG_INFO("%s: injected fault: %s call %llu fails with probability %g (seed %llu, %s)", name.c_str(),
                     call_name(ggml_cpool_call(c)), (unsigned long long) nth, spec_.prob,
                     (unsigned long long) spec_.seed, status_name(fail));
        return fail;
    }
    return OK;
}

} // namespace gcp
