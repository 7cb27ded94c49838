#include "stream-slots.h"

namespace gcp {

stream_slots::stream_slots(driver & drv, const ggml_cpool_ctx_params & params) : drv_(drv) {
    for (int d = 0; d < GGML_CPOOL_MAX_DEVICES; d++) {
        for (int s = 0; s < GGML_CPOOL_MAX_STREAMS; s++) {
            slots_[size_t(d)][size_t(s)].stream   = params.streams[d][s];
            slots_[size_t(d)][size_t(s)].borrowed = params.streams[d][s] != nullptr;
        }
    }
}

bool stream_slots::valid(int device, int slot) const {
    if (device < 0 || device >= drv_.device_count() || device >= GGML_CPOOL_MAX_DEVICES) {
        GCP_LOG_ERROR("context: device %d out of range (%d devices)", device, drv_.device_count());
        return false;
    }
    if (slot < 0 || slot >= GGML_CPOOL_MAX_STREAMS) {
        GCP_LOG_ERROR("context: stream slot %d out of range (0..%d)", slot, GGML_CPOOL_MAX_STREAMS - 1);
        return false;
    }
    return true;
}

status stream_slots::stream(int device, int slot, stream_t * out) {
    if (!valid(device, slot)) {
        return INVALID_ARGUMENT;
    }
    struct slot & s = slots_[size_t(device)][size_t(slot)];
    if (s.stream == nullptr) {
        stream_t own = nullptr;
        status   st  = create_own(device, slot, &own);
        if (st != OK) {
            return st;
        }
        s.stream = own; // not borrowed: a borrowed slot has a stream
    }
    *out = s.stream;
    return OK;
}

status stream_slots::set_stream(int device, int slot, stream_t stream) {
    if (!valid(device, slot)) {
        return INVALID_ARGUMENT;
    }
    struct slot & s = slots_[size_t(device)][size_t(slot)];
    if (stream == nullptr ? !s.borrowed : stream == s.stream) {
        return OK;
    }
    stream_t next = stream;
    if (s.instance) { // the pool moves to the stream, or to one of the context's own where none is lent
        status st = stream == nullptr ? create_own(device, slot, &next) : OK;
        if (st == OK) {
            st = s.instance->set_stream(next);
            if (st != OK && stream == nullptr) {
                destroy_own(device, next);
            }
        }
        if (st != OK) {
            return st;
        }
    }
    if (s.stream != nullptr && !s.borrowed) {
        destroy_own(device, s.stream);
    }
    s.stream   = next; // nullptr without a pool: created when one is needed
    s.borrowed = stream != nullptr;
    return OK;
}

} // namespace gcp
