#pragma once

// ggml-cuda-pool as PyTorch's CUDA allocator: the two functions
// torch.cuda.memory.CUDAPluggableAllocator(path, "ggml_cuda_pool_torch_alloc",
// "ggml_cuda_pool_torch_free") loads, over one module context for the whole process (created at
// the first allocation; kind from GGML_CUDA_POOL, legacy where it is unset). Streams are
// cudaStream_t, passed as void *. The package ggml_cuda_pool_torch installs it.
//
// Unlike the module's C ABI, the allocation function throws: PyTorch calls it from C++ and does
// not check for NULL, so a request it cannot serve is a C++ exception that PyTorch raises in
// Python: torch.OutOfMemoryError for want of memory where the library was built against torch's
// headers (RuntimeError otherwise), ValueError (RuntimeError) for a bad setting, RuntimeError for
// the rest. Nothing else here throws.

#include <stddef.h>

#if defined(_WIN32) && !defined(__MINGW32__)
#    define GGML_CPOOL_TORCH_API __declspec(dllexport) extern
#else
#    define GGML_CPOOL_TORCH_API __attribute__((visibility("default"))) extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

// clang-format off
// a buffer of `size` bytes on `device` for work on `stream`; NULL for 0 bytes; throws (above) when it cannot serve one
GGML_CPOOL_TORCH_API void * ggml_cuda_pool_torch_alloc(size_t size, int device, void * stream);
// gives a buffer back to the pool of its allocation's stream, after synchronizing `stream` if that is another one
GGML_CPOOL_TORCH_API void   ggml_cuda_pool_torch_free (void * ptr, size_t size, int device, void * stream);
// one statistics line per pool to `where` ("-": stderr; else a file, appended); the number of lines, -1 on failure
GGML_CPOOL_TORCH_API int    ggml_cuda_pool_torch_report(const char * where);
// every setting the library reads, checked now as the first allocation will (no device touched): 0, or -1 with the line naming the bad value in `line`
GGML_CPOOL_TORCH_API int    ggml_cuda_pool_torch_check (char * line, size_t size);
// 1 where a refused allocation raises PyTorch's own types (torch.OutOfMemoryError), 0 where it raises RuntimeError
GGML_CPOOL_TORCH_API int    ggml_cuda_pool_torch_raises_torch_errors(void);
// the module's timing of its pool calls on (1) or off (0), as GGML_CUDA_POOL_TIMING: their time is the lines' call_ms
GGML_CPOOL_TORCH_API void   ggml_cuda_pool_torch_timing(int on);
// clang-format on

#ifdef __cplusplus
}
#endif
