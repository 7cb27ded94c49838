#include "pool-factory.h"

#include "../pools/async.h"
#include "../pools/legacy.h"
#include "../pools/vmm.h"

namespace gcp {

std::unique_ptr<pool> make_pool(ggml_cpool_kind kind, const std::shared_ptr<driver> & drv, int device, stream_t stream,
                                const ggml_cpool_ctx_params & params) {
    switch (kind) {
        case GGML_CPOOL_KIND_VMM:
            return std::make_unique<pool_vmm>(*drv, device, stream, params.vmm_reserve, params.vmm_peer_access != 0);
        case GGML_CPOOL_KIND_ASYNC:
            return std::make_unique<pool_async>(drv, device, stream, params.headroom_pct);
        default:
            // the plain kind is the legacy pool without the LRU step
            return std::make_unique<pool_legacy>(*drv, device, kind, stream,
                                                 pool_legacy::options{ kind == GGML_CPOOL_KIND_LEGACY,
                                                                       params.headroom_pct });
    }
}

} // namespace gcp
