#include "recovery.h"

#include "pool.h"

#include <chrono>
#include <thread>

namespace gcp {

status pool::climb(recovery_steps & steps) {
    driver_failed(); // the refusal that led here: the lines below say how it ends
    if (capturing()) {
        status st = steps.fall_back();
        if (st == OUT_OF_MEMORY) {
            driver_failed();
            steps.refuse_in_capture();
        }
        return st;
    }
    status st = steps.reclaim();
    if (st == OUT_OF_MEMORY) {
        driver_failed();
        st = steps.fall_back();
    }
    if (st == OUT_OF_MEMORY) {
        driver_failed();
        st = retry_transient(steps);
    }
    if (st != OK) {
        steps.report(st);
    }
    return st;
}

status pool::retry_transient(recovery_steps & steps) {
    if (capturing()) {
        return OUT_OF_MEMORY;
    }
    status st = OUT_OF_MEMORY;
    for (int i = 1; i <= TRANSIENT_RETRIES && st == OUT_OF_MEMORY; i++) {
        pause_before_retry(i);
        st = synchronize();
        if (st != OK) {
            driver_failed(); // the report says which allocation failed
            return OUT_OF_MEMORY;
        }
        st = steps.retry();
        if (st == OK) {
            GCP_LOG_DEBUG("%s: retry %d of %d after a pause and a synchronize succeeded", name(), i, TRANSIENT_RETRIES);
        } else {
            driver_failed(); // the next attempt or the report says how it ends
        }
    }
    return st;
}

void pool::pause_before_retry(int attempt) const {
    const uint32_t us = drv_.transient_pause_us();
    if (us != 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(uint64_t(us) << (attempt - 1)));
    }
}

} // namespace gcp
