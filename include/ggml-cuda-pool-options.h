#pragma once

// ggml-cuda-pool: every environment variable the module and its integrations read, in one table.
// Each row names its variable, who reads it and the values it takes; docs/design.md says what each does
// (Environment variables, Use from llama.cpp, Use from PyTorch).
//
// The table is constants, not calls into the module: the module (ggml-cuda/options.h), the
// llama.cpp adapter and the PyTorch library each expand this one list, and the two integrations,
// which see only the public headers, take their names from it with no symbol of the module to
// link. The PyTorch library's Python helper cannot include a header; tests/test-docs.cpp reads
// every variable read under ggml-cuda/, integrations/ and tools/ and fails on one that is not here.

// X(id, name, readers, values)
#define GGML_CPOOL_OPTIONS(X)                                                                                   \
    X(NO_VMM, "GGML_CUDA_NO_VMM", "module",                                                                     \
      "1 | 0 (on/off, true/false, yes/no): the legacy pool instead of VMM where the kind is auto")              \
    X(POOL, "GGML_CUDA_POOL", "module, llama.cpp adapter, PyTorch library",                                     \
      "auto | vmm | legacy | plain | async, any case; the llama.cpp adapter also takes ggml | ggml-legacy "     \
      "(ggml's own pools); the PyTorch library asks for legacy where it is unset or empty")                     \
    X(LOG, "GGML_CUDA_POOL_LOG", "module", "debug | info | warn | error: the default logger's threshold")       \
    X(FAULT, "GGML_CUDA_POOL_FAULT", "module", "a fault spec: every context's driver fails on command")         \
    X(TRACE, "GGML_CUDA_POOL_TRACE", "module", "a file: every call into the module is traced to it")            \
    X(TIMING, "GGML_CUDA_POOL_TIMING", "module", "1 | 0: the time inside each pool's calls into its stats")     \
    X(STATS, "GGML_CUDA_POOL_STATS", "llama.cpp adapter, PyTorch library",                                      \
      "1 (stderr) | a file (appended) | 0 or empty (none): a statistics line per pool "                         \
      "(the adapter: also on SIGUSR1)")                                                                         \
    X(KV_F16, "GGML_CUDA_POOL_KV_F16", "llama.cpp adapter",                                                     \
      "graph (default) | pool | pool-1x: where the flash-attention K/V f16 conversions live")                   \
    X(ON_OOM, "GGML_CUDA_POOL_ON_OOM", "llama.cpp adapter",                                                     \
      "error (default) | abort: what an allocation the module's pools cannot serve inside a compute does: "     \
      "the compute returns GGML_STATUS_ALLOC_FAILED (llama.cpp drops the batch), or the process ends")          \
    X(ROTATE, "GGML_CUDA_POOL_ROTATE", "llama.cpp adapter",                                                     \
      "configurations, comma-separated (ggml, ggml-legacy, pool kinds), taken in turn by the backend contexts " \
      "instead of GGML_CUDA_POOL")                                                                              \
    X(TORCH_LIBRARY, "GGML_CUDA_POOL_TORCH_LIBRARY", "PyTorch library's Python helper",                         \
      "a path: where libggml-cuda-pool-torch.so is")

// clang-format 14 indents the enumerator after the table's expansion as its continuation
// clang-format off
enum ggml_cpool_option {
#define GGML_CPOOL_OPTION_ENUM(id, name, readers, values) GGML_CPOOL_OPTION_##id,
    GGML_CPOOL_OPTIONS(GGML_CPOOL_OPTION_ENUM)
#undef GGML_CPOOL_OPTION_ENUM
    GGML_CPOOL_OPTION_COUNT,
};
// clang-format on

// the variable's name ("GGML_CUDA_POOL", ...); "" past the table
static inline const char * ggml_cpool_option_name(enum ggml_cpool_option option) {
#define GGML_CPOOL_OPTION_NAME(id, name, readers, values) name,
    static const char * const names[] = { GGML_CPOOL_OPTIONS(GGML_CPOOL_OPTION_NAME) };
#undef GGML_CPOOL_OPTION_NAME
    return (unsigned) option < (unsigned) GGML_CPOOL_OPTION_COUNT ? names[option] : "";
}
