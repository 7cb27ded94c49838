#include <ggml-cuda-pool-options.h>
#include <ggml-cuda-pool-testing.h>
#include <stdio.h>
int main(void) {
    struct ggml_cpool_sim_params sim = ggml_cpool_sim_default_params();
    struct ggml_cpool_ctx_params p   = ggml_cpool_ctx_default_params();
    p.driver_kind                    = GGML_CPOOL_DRIVER_SIM;
    p.sim                            = &sim;
    ggml_cpool_ctx_t ctx;
    ggml_cpool_t     pool;
    void *           ptr;
    size_t           actual;
    if (ggml_cpool_ctx_create(&p, &ctx) || ggml_cpool_ctx_get_pool(ctx, 0, &pool) ||
        ggml_cpool_alloc(pool, 1000, 0, &ptr, &actual))
        return 1;
    ggml_cpool_free(pool, ptr, actual);
    if (*ggml_cpool_option_name(GGML_CPOOL_OPTION_POOL) == '\0')
        return 1; /* the options table is C too */
    printf("%s pool: %zu bytes, %llu driver calls\n", ggml_cpool_kind_str(ggml_cpool_get_kind(pool)), actual,
           (unsigned long long) ggml_cpool_driver_calls(ggml_cpool_ctx_driver(ctx), GGML_CPOOL_CALL_COUNT));
    ggml_cpool_ctx_free(ctx);
    return 0;
}
