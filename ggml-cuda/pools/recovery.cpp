#include "recovery.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace gcp {

using clock = std::chrono::steady_clock;

bool ladder::fall_back(const request & r, size_t ahead, size_t rounding) {
    const size_t refused = bytes, more = round_up(r.size + ahead, rounding), alone = round_up(r.size, rounding);
    for (size_t next : { more, alone }) {
        if (next < bytes) {
            bytes = next;
            if (ends(p_.fell_back(ask_(p_, *this), refused, r.size, &next))) {
                return true;
            }
        }
    }
    return false;
}

bool ladder::retry_transient() {
    for (int i = 1; i <= TRANSIENT_RETRIES; i++) {
        const uint32_t us = p_.drv_.transient_pause_us();
        if (us != 0) {
            std::this_thread::sleep_for(std::chrono::microseconds(uint64_t(us) << (i - 1)));
        }
        if (p_.synchronize() != OK) {
            return false; // the report says which allocation failed
        }
        if (ask()) {
            if (st == OK) {
                GCP_LOG_DEBUG("%s: retry %d of %d after a pause and a synchronize succeeded", p_.name(), i,
                              TRANSIENT_RETRIES);
            }
            return true;
        }
    }
    return false;
}

bool ladder::wait() {
    // the processes beside it give their idle memory back first, where there are any (neighbours.h)
    if (neighbours::ask(p_.seat_, bytes, neighbours::ASK_BOUND_MS) == OK && ask()) {
        return true;
    }
    if (p_.wait_ms_ == 0) {
        return false;
    }
    const auto start = clock::now(), end = start + std::chrono::milliseconds(p_.wait_ms_);
    size_t     free = 0;
    if (p_.drv_.free_memory(p_.device_, &free) == OK) {
        GCP_LOG_INFO("%s: alloc of %.2f MiB waits up to %u ms for memory (%.2f MiB free)", p_.name(), to_mib(bytes),
                     p_.wait_ms_, to_mib(free));
    } else {
        GCP_LOG_INFO("%s: alloc of %.2f MiB waits up to %u ms for memory", p_.name(), to_mib(bytes), p_.wait_ms_);
    }
    p_.stats_.waits++;
    bool ended = false;
    auto pause = std::chrono::duration_cast<clock::duration>(std::chrono::milliseconds(WAIT_FIRST_PAUSE_MS));
    for (auto now = start; !ended && now < end; now = clock::now()) {
        std::this_thread::sleep_for(std::min(pause, end - now));
        pause = std::min<clock::duration>(2 * pause, std::chrono::milliseconds(WAIT_LONGEST_PAUSE_MS));
        // a query the driver cannot answer lets every poll try; a failure other than a refusal ends the wait
        if (p_.drv_.free_memory(p_.device_, &free) != OK || free >= bytes) {
            ended = ask();
        }
    }
    const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start).count();
    p_.stats_.wait_ns += uint64_t(waited);
    p_.stats_.waits_served += st == OK;
    GCP_LOG_INFO("%s: alloc of %.2f MiB %s after waiting %lld ms", p_.name(), to_mib(bytes),
                 st == OK ? "served" : "still refused", (long long) (waited / 1000000));
    return ended;
}

bool ladder::refused_in_capture() const {
    GCP_LOG_WARN("%s: alloc of %.2f MiB failed during graph capture, where synchronize and free are illegal: "
                 "returning OUT_OF_MEMORY (allocate before capturing, as a warm-up run does)",
                 p_.name(), to_mib(bytes));
    return false;
}

} // namespace gcp
