#include "driver.h"

namespace gcp {

namespace {

constexpr takes CALL_TAKES[CALL_KINDS] = {
#define GCP_CALL(name, spec, what) takes::what,
    GGML_CPOOL_CALLS(GCP_CALL)
#undef GCP_CALL
};

} // namespace

takes call_takes(call c) {
    return size_t(c) < CALL_KINDS ? CALL_TAKES[size_t(c)] : takes::NOTHING;
}

uint64_t driver::calls() const {
    uint64_t n = 0;
    for (size_t i = 0; i < CALL_KINDS; i++) {
        n += calls(call(i));
    }
    return n;
}

} // namespace gcp
