#pragma once
// A pool of a kind, on a device and the stream its kernels run on: the one place that knows
// every pool class.

#include "../pools/pool.h"

#include <memory>

namespace gcp {

// kind is settled (not AUTO) and the device has what it needs (VMM, a stream-ordered pool)
std::unique_ptr<pool> make_pool(ggml_cpool_kind kind, const std::shared_ptr<driver> & drv, int device, stream_t stream,
                                const ggml_cpool_ctx_params & params);

} // namespace gcp
