#include "pool-factory.h"

#include "../pools/async.h"
#include "../pools/legacy.h"
#include "../pools/vmm.h"

namespace gcp {

std::unique_ptr<pool> make_pool(ggml_cpool_kind kind, const std::shared_ptr<driver> & drv, int device, stream_t stream,
                                const ggml_cpool_ctx_params & params) {
    std::unique_ptr<pool> p;
    switch (kind) {
        case GGML_CPOOL_KIND_VMM:
            p = std::make_unique<pool_vmm>(*drv, device, stream, params.vmm_reserve, params.vmm_peer_access != 0);
            break;
        case GGML_CPOOL_KIND_ASYNC:
            p = std::make_unique<pool_async>(drv, device, stream, params.headroom_pct);
            break;
        default:
            // the plain kind is the legacy pool without the LRU step
            p = std::make_unique<pool_legacy>(*drv, device, kind, stream,
                                              pool_legacy::options{ kind == GGML_CPOOL_KIND_LEGACY,
                                                                    params.headroom_pct });
    }
    p->set_wait_ms(params.wait_ms);
    return p;
}

} // namespace gcp
