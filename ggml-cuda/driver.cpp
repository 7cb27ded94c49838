#include "driver.h"

namespace gcp {

namespace {

const char * const CALL_NAMES[CALL_KINDS] = {
    "malloc", "free", "sync", "reserve", "unreserve", "create", "release", "map", "unmap", "access",
    "stream", "malloc_async", "free_async", "stream_sync", "attr", "pool_trim",
};

} // namespace

const char * call_name(call c) {
    return size_t(c) < CALL_KINDS ? CALL_NAMES[size_t(c)] : "any";
}

bool call_allocates(call c) {
    return c == call::malloc || c == call::vmm_reserve || c == call::vmm_create || c == call::vmm_map ||
           c == call::malloc_async;
}

uint64_t driver::calls() const {
    uint64_t n = 0;
    for (size_t i = 0; i < CALL_KINDS; i++) {
        n += calls(call(i));
    }
    return n;
}

} // namespace gcp
