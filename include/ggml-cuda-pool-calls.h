#pragma once

// ggml-cuda-pool's driver vocabulary, included by ggml-cuda-pool-testing.h (include that one): the
// platforms and the table of driver calls that fault specs, call counters and the sim driver's
// parameters name. The library's core uses it without the testing header's calls.

#ifdef __cplusplus
extern "C" {
#endif

// the platform a driver runs on (the sim driver's is a parameter)
enum ggml_cpool_platform {
    GGML_CPOOL_PLATFORM_CUDA = 0,
    GGML_CPOOL_PLATFORM_HIP  = 1,
};

// clang-format off
// The driver calls, one row each: X(NAME, "spec name", takes). The enum below, the names fault
// specs use (docs/fault-injection.md) and the per-call counters all come from this table.
// takes: MEMORY, device memory of the size asked (a one-shot fault fires on it); RESOURCE,
// something else the device can run out of; NOTHING. An injected failure of a call that takes
// something is an out-of-memory, of any other a driver error.
#define GGML_CPOOL_CALLS(X)                                                                       \
    X(MALLOC,        "malloc",       MEMORY)                                                       \
    X(FREE,          "free",         NOTHING)                                                      \
    X(SYNCHRONIZE,   "sync",         NOTHING)  /* the whole device */                              \
    X(VMM_RESERVE,   "reserve",      RESOURCE) /* a virtual address range */                       \
    X(VMM_UNRESERVE, "unreserve",    NOTHING)                                                      \
    X(VMM_CREATE,    "create",       MEMORY)   /* physical memory for a range */                   \
    X(VMM_RELEASE,   "release",      NOTHING)                                                      \
    X(VMM_MAP,       "map",          RESOURCE)                                                     \
    X(VMM_UNMAP,     "unmap",        NOTHING)                                                      \
    X(VMM_ACCESS,    "access",       NOTHING)                                                      \
    X(STREAM,        "stream",       NOTHING)  /* create or destroy a stream */                    \
    X(MALLOC_ASYNC,  "malloc_async", MEMORY)                                                       \
    X(FREE_ASYNC,    "free_async",   NOTHING)                                                      \
    X(STREAM_SYNC,   "stream_sync",  NOTHING)                                                      \
    X(POOL_ATTR,     "attr",         NOTHING)  /* read or set a stream-ordered pool attribute */   \
    X(POOL_TRIM,     "pool_trim",    NOTHING)

enum ggml_cpool_call {
#define GGML_CPOOL_CALL_ENUM(name, spec, takes) GGML_CPOOL_CALL_##name,
    GGML_CPOOL_CALLS(GGML_CPOOL_CALL_ENUM)
#undef GGML_CPOOL_CALL_ENUM
    GGML_CPOOL_CALL_COUNT,
};
// clang-format on

#ifdef __cplusplus
}
#endif
