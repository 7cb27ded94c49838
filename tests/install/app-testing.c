#include <ggml-cuda-pool-testing.h>
#include <stdio.h>
/* the testing calls, from the headers installed with --component testing */
int main(void) {
    struct ggml_cpool_sim_params sim = ggml_cpool_sim_default_params();
    struct ggml_cpool_ctx_params p   = ggml_cpool_ctx_default_params();
    p.driver_kind                    = GGML_CPOOL_DRIVER_SIM;
    p.sim                            = &sim;
    ggml_cpool_ctx_t ctx;
    if (ggml_cpool_ctx_create(&p, &ctx))
        return 1;
    printf("testing calls: %llu driver calls\n",
           (unsigned long long) ggml_cpool_driver_calls(ggml_cpool_ctx_driver(ctx), GGML_CPOOL_CALL_COUNT));
    ggml_cpool_ctx_free(ctx);
    return 0;
}
