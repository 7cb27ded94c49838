#include <ggml-cuda-pool.h>
#include <stdio.h>
int main(void) {
    struct ggml_cpool_ctx_params p = ggml_cpool_ctx_default_params();
    p.driver_kind = GGML_CPOOL_DRIVER_SIM;
    ggml_cpool_ctx_t ctx; ggml_cpool_t pool; void * ptr; size_t actual;
    if (ggml_cpool_ctx_create(&p, &ctx) || ggml_cpool_ctx_get_pool(ctx, 0, &pool) ||
        ggml_cpool_alloc(pool, 1000, 0, &ptr, &actual)) return 1;
    ggml_cpool_free(pool, ptr, actual);
    printf("%s pool: %zu bytes\n", ggml_cpool_kind_str(ggml_cpool_get_kind(pool)), actual);
    ggml_cpool_ctx_free(ctx);
    return 0;
}
