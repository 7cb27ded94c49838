#pragma once
// A context's stream slots: per (device, slot), the consumer's stream (borrowed) or one of the
// context's own (made when first needed), and the slot's pool, which lives on that stream.

#include "../drivers/driver.h"
#include "../pools/pool.h"
#include "../support/log.h"

#include <array>
#include <memory>

namespace gcp {

class stream_slots {
  public:
    // the streams params lends are borrowed; drv outlives the slots
    stream_slots(driver & drv, const ggml_cpool_ctx_params & params);

    // false, with a log line, for a device or slot out of range
    bool                    valid(int device, int slot) const;
    // the stream of (device, slot): the borrowed one, or the context's own, created now if needed
    status                  stream(int device, int slot, stream_t * out);
    // borrows stream for (device, slot), moving its pool there; nullptr: one of the context's own
    status                  set_stream(int device, int slot, stream_t stream);
    // the pool of a valid (device, slot), null until one is made
    std::unique_ptr<pool> & pool_of(int device, int slot) { return slots_[size_t(device)][size_t(slot)].instance; }

    template <typename F> void each_pool(F && f) const {
        for (auto & device : slots_) {
            for (auto & s : device) {
                if (s.instance) {
                    f(*s.instance);
                }
            }
        }
    }
    // hands every pool to retire, then destroys the context's own streams
    template <typename F> void release(F && retire) {
        for (int d = 0; d < GGML_CPOOL_MAX_DEVICES; d++) {
            for (slot & s : slots_[size_t(d)]) {
                if (s.instance) {
                    retire(std::move(s.instance));
                }
                if (s.stream != nullptr && !s.borrowed) {
                    destroy_own(d, s.stream);
                }
            }
        }
    }

  private:
    struct slot {
        stream_t              stream   = nullptr;
        bool                  borrowed = false;
        std::unique_ptr<pool> instance;
    };

    status create_own(int device, int slot, stream_t * out) {
        status st = drv_.stream_create(device, out);
        if (st != OK) {
            GCP_LOG_ERROR("%s: creating a stream for slot %d failed (%s)", pool_label(drv_.platform(), device).c_str(),
                          slot, status_name(st));
        }
        return st;
    }

    void destroy_own(int device, stream_t stream) {
        if (drv_.stream_destroy(device, stream) != OK) {
            GCP_LOG_ERROR("%s: destroying the context's stream failed", pool_label(drv_.platform(), device).c_str());
        }
    }

    driver &                                                                     drv_;
    std::array<std::array<slot, GGML_CPOOL_MAX_STREAMS>, GGML_CPOOL_MAX_DEVICES> slots_;
};

} // namespace gcp
