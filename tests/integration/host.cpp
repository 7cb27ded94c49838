// The host's own code, compiled with its default visibility: what it defines stays exported, and
// it reaches the module through the C API, as ggml-cuda's adapter does.
#include "ggml-cuda-pool.h"

extern "C" int host_pool_kind_count() {
    return ggml_cpool_kind_str(GGML_CPOOL_KIND_VMM) != nullptr ? 1 : 0;
}
