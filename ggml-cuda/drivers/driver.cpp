#include "driver.h"

namespace gcp {

driver::driver(std::shared_ptr<device_primitives> prims) : prims_(std::move(prims)) {}

driver::driver(std::shared_ptr<driver> below) : prims_(below->prims_), below_(std::move(below)) {}

status driver::pool_usage(int device, size_t * reserved, size_t * used) {
    return run_mempool(call::POOL_ATTR, device, 0, [&](mempool_primitives & m) {
        uint64_t r = 0, u = 0;
        status   st = m.get_attr(device, mempool_attr::reserved, &r);
        if (st == OK) {
            st = m.get_attr(device, mempool_attr::used, &u);
        }
        *reserved = size_t(r);
        *used     = size_t(u);
        return st;
    });
}

uint64_t driver::calls() const {
    uint64_t n = 0;
    for (size_t i = 0; i < CALL_KINDS; i++) {
        n += calls(call(i));
    }
    return n;
}

} // namespace gcp
