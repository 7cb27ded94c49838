#include "recovery.h"

#include "pool.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace gcp {

using clock = std::chrono::steady_clock;

status pool::climb(recovery_steps & steps) {
    if (capturing()) {
        status st = steps.fall_back();
        if (st == OUT_OF_MEMORY) {
            st = wait_for_memory(steps); // sleeping and allocating are legal in a capture
        }
        if (st == OUT_OF_MEMORY) {
            GCP_LOG_WARN("%s: alloc of %.2f MiB failed during graph capture, where synchronize and free are illegal: "
                         "returning OUT_OF_MEMORY (allocate before capturing, as a warm-up run does)",
                         name(), to_mib(steps.asking()));
        }
        return st;
    }
    status st = steps.reclaim();
    if (st == OUT_OF_MEMORY) {
        st = steps.fall_back();
    }
    if (st == OUT_OF_MEMORY) {
        st = retry_transient(steps);
    }
    if (st == OUT_OF_MEMORY) {
        st = wait_for_memory(steps);
    }
    if (st != OK) {
        steps.report(st);
    }
    return st;
}

status pool::retry_transient(recovery_steps & steps) {
    status st = OUT_OF_MEMORY;
    for (int i = 1; i <= TRANSIENT_RETRIES && st == OUT_OF_MEMORY; i++) {
        pause_before_retry(i);
        if (synchronize() != OK) {
            return OUT_OF_MEMORY; // the report says which allocation failed
        }
        st = steps.retry();
        if (st == OK) {
            GCP_LOG_DEBUG("%s: retry %d of %d after a pause and a synchronize succeeded", name(), i, TRANSIENT_RETRIES);
        }
    }
    return st;
}

status pool::wait_for_memory(recovery_steps & steps) {
    if (wait_ms_ == 0) {
        return OUT_OF_MEMORY;
    }
    const size_t want  = steps.asking();
    const auto   start = clock::now(), end = start + std::chrono::milliseconds(wait_ms_);
    size_t       free = 0;
    if (drv_.free_memory(device_, &free) == OK) {
        GCP_LOG_INFO("%s: alloc of %.2f MiB waits up to %u ms for memory (%.2f MiB free)", name(), to_mib(want),
                     wait_ms_, to_mib(free));
    } else {
        GCP_LOG_INFO("%s: alloc of %.2f MiB waits up to %u ms for memory", name(), to_mib(want), wait_ms_);
    }
    stats_.waits++;
    status st    = OUT_OF_MEMORY;
    auto   pause = std::chrono::duration_cast<clock::duration>(std::chrono::milliseconds(WAIT_FIRST_PAUSE_MS));
    for (auto now = start; st == OUT_OF_MEMORY && now < end; now = clock::now()) {
        std::this_thread::sleep_for(std::min(pause, end - now));
        pause = std::min<clock::duration>(2 * pause, std::chrono::milliseconds(WAIT_LONGEST_PAUSE_MS));
        // a query the driver cannot answer lets every poll try
        if (drv_.free_memory(device_, &free) != OK || free >= want) {
            st = steps.retry(); // a refusal waits on; another failure ends the wait, and its line says it
        }
    }
    const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start).count();
    stats_.wait_ns += uint64_t(waited);
    stats_.waits_served += st == OK;
    GCP_LOG_INFO("%s: alloc of %.2f MiB %s after waiting %lld ms", name(), to_mib(want),
                 st == OK ? "served" : "still refused", (long long) (waited / 1000000));
    return st;
}

void pool::pause_before_retry(int attempt) const {
    const uint32_t us = drv_.transient_pause_us();
    if (us != 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(uint64_t(us) << (attempt - 1)));
    }
}

} // namespace gcp
