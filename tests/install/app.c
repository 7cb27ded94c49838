#include <ggml-cuda-pool.h>
#include <stdio.h>
/* a C program as the README shows one, on the sim driver (no GPU needed), with the default install's headers */
int main(void) {
    struct ggml_cpool_ctx_params p = ggml_cpool_ctx_default_params();
    p.driver_kind                  = GGML_CPOOL_DRIVER_SIM; /* its default parameters: sim is NULL */
    ggml_cpool_ctx_t ctx;
    ggml_cpool_t     pool;
    void *           ptr;
    size_t           actual;
    if (ggml_cpool_ctx_create(&p, &ctx) || ggml_cpool_ctx_get_pool(ctx, 0, &pool) ||
        ggml_cpool_alloc(pool, 1000, 0, &ptr, &actual)) {
        fprintf(stderr, "app: %s\n", ggml_cpool_last_error());
        return 1;
    }
    ggml_cpool_free(pool, ptr, actual);
    if (*ggml_cpool_option_name(GGML_CPOOL_OPTION_POOL) == '\0')
        return 1; /* the options table is C too */
    printf("%s pool: %zu bytes\n", ggml_cpool_kind_str(ggml_cpool_get_kind(pool)), actual);
    ggml_cpool_ctx_free(ctx);
    return 0;
}
