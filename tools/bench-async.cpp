// bench-async: what keeping the stream-ordered pool warm saves (Google Benchmark).
//
//   StreamOrdered/<bytes>/<warm>  cudaMallocAsync + cudaFreeAsync + cudaStreamSynchronize on the
//                                 device's default pool, release threshold 0 (warm=0, CUDA's
//                                 default) or the maximum (warm=1)
//   AsyncPool/<bytes>             the same through this module's async pool
//   Delegates/<mode>              a program split into 25 contexts (delegates), each allocating
//                                 and freeing its scratch and synchronizing per run: mode 0 is
//                                 raw cudaMallocAsync at threshold 0 (CUDA's default), mode 1
//                                 raw at the maximum threshold, mode 2 this module's async pool
//   HitPair/<kind>                an allocation served from what the pool holds and its free, no
//                                 synchronize: the pair a graph evaluation makes hundreds of times
//                                 per token, each module kind on the real driver
//   CaptureQuery/api:<api>        one capture-status query, which the async kind makes per
//                                 allocation (a capture is served from its capture cache):
//                                 api 0 the runtime's cudaStreamIsCapturing, api 1 the driver's
//                                 cuStreamIsCapturing (reached through the runtime's entry point)
// Every number is the median of the repetitions; without a GPU each benchmark says why it skipped.

#include "ggml-cuda-pool.h"

#include <benchmark/benchmark.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace {

constexpr int      DELEGATES          = 25;
constexpr size_t   HIT_BYTES          = size_t(256) << 10; // a layer's scratch, within every kind's cache
constexpr int      DELEGATES_RAW_COLD = 0, DELEGATES_RAW_WARM = 1, DELEGATES_MODULE = 2;
constexpr int      QUERY_RUNTIME = 0, QUERY_DRIVER = 1;
constexpr unsigned DRIVER_ABI         = 12000; // the version asked of the driver's entry point
constexpr size_t   MiB                = size_t(1) << 20;
const size_t       DELEGATE_SCRATCH[] = { 1 * MiB, 4 * MiB, 16 * MiB }; // per delegate and run

bool have_gpu(benchmark::State & state) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        state.SkipWithError("no CUDA device");
        return false;
    }
    return true;
}

// sets the default pool's release threshold for a scope, then puts the old value back
struct threshold_scope {
    explicit threshold_scope(uint64_t value) {
        cudaDeviceGetDefaultMemPool(&pool, 0);
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &old);
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &value);
    }
    ~threshold_scope() {
        cudaDeviceSynchronize();
        cudaMemPoolTrimTo(pool, 0);
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &old);
    }
    cudaMemPool_t pool = nullptr;
    uint64_t      old  = 0;
};

bool check(benchmark::State & state, cudaError_t e) {
    if (e != cudaSuccess) {
        state.SkipWithError(cudaGetErrorString(e));
        return false;
    }
    return true;
}

void StreamOrdered(benchmark::State & state) {
    if (!have_gpu(state)) {
        return;
    }
    const size_t    size = size_t(state.range(0));
    threshold_scope t(state.range(1) ? UINT64_MAX : 0);
    cudaStream_t    s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    for (auto _ : state) {
        void * p = nullptr;
        if (!check(state, cudaMallocAsync(&p, size, s)) || !check(state, cudaFreeAsync(p, s)) ||
            !check(state, cudaStreamSynchronize(s))) {
            break;
        }
    }
    cudaStreamDestroy(s);
}

void AsyncPool(benchmark::State & state) {
    if (!have_gpu(state)) {
        return;
    }
    const size_t          size = size_t(state.range(0));
    ggml_cpool_ctx_params p    = ggml_cpool_ctx_default_params();
    p.kind[0]                  = GGML_CPOOL_KIND_ASYNC;
    ggml_cpool_ctx_t ctx       = nullptr;
    ggml_cpool_t     pool      = nullptr;
    void *           stream    = nullptr;
    if (ggml_cpool_ctx_create(&p, &ctx) != GGML_CPOOL_STATUS_OK ||
        ggml_cpool_ctx_get_pool(ctx, 0, &pool) != GGML_CPOOL_STATUS_OK ||
        ggml_cpool_ctx_stream(ctx, 0, &stream) != GGML_CPOOL_STATUS_OK) {
        state.SkipWithError("async pool unavailable");
        ggml_cpool_ctx_free(ctx);
        return;
    }
    for (auto _ : state) {
        void * ptr    = nullptr;
        size_t actual = 0;
        if (ggml_cpool_alloc(pool, size, 0, &ptr, &actual) != GGML_CPOOL_STATUS_OK) {
            state.SkipWithError("alloc failed");
            break;
        }
        ggml_cpool_free(pool, ptr, actual);
        cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
    }
    ggml_cpool_ctx_free(ctx);
}

// per run: every delegate allocates its scratch, frees it and synchronizes its stream
void Delegates(benchmark::State & state) {
    if (!have_gpu(state)) {
        return;
    }
    const bool                    warm = state.range(0) == DELEGATES_MODULE;
    std::vector<cudaStream_t>     streams(DELEGATES, nullptr);
    std::vector<ggml_cpool_ctx_t> ctxs(DELEGATES, nullptr);
    std::vector<ggml_cpool_t>     pools(DELEGATES, nullptr);
    // raw modes set the threshold themselves; the module starts from CUDA's default
    threshold_scope               threshold(state.range(0) == DELEGATES_RAW_WARM ? UINT64_MAX : 0);
    for (int d = 0; d < DELEGATES; d++) {
        if (warm) {
            ggml_cpool_ctx_params p = ggml_cpool_ctx_default_params();
            p.kind[0]               = GGML_CPOOL_KIND_ASYNC;
            void * s                = nullptr;
            if (ggml_cpool_ctx_create(&p, &ctxs[d]) != GGML_CPOOL_STATUS_OK ||
                ggml_cpool_ctx_get_pool(ctxs[d], 0, &pools[d]) != GGML_CPOOL_STATUS_OK ||
                ggml_cpool_ctx_stream(ctxs[d], 0, &s) != GGML_CPOOL_STATUS_OK) {
                state.SkipWithError("async pool unavailable");
                return;
            }
            streams[d] = static_cast<cudaStream_t>(s);
        } else {
            cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking);
        }
    }
    for (auto _ : state) {
        for (int d = 0; d < DELEGATES; d++) {
            void * ptrs[3];
            size_t sizes[3];
            for (int i = 0; i < 3; i++) {
                if (warm) {
                    ggml_cpool_alloc(pools[d], DELEGATE_SCRATCH[i], 0, &ptrs[i], &sizes[i]);
                } else {
                    cudaMallocAsync(&ptrs[i], DELEGATE_SCRATCH[i], streams[d]);
                }
            }
            for (int i = 2; i >= 0; i--) {
                if (warm) {
                    ggml_cpool_free(pools[d], ptrs[i], sizes[i]);
                } else {
                    cudaFreeAsync(ptrs[i], streams[d]);
                }
            }
            cudaStreamSynchronize(streams[d]);
        }
    }
    state.counters["us_per_alloc"] = benchmark::Counter(double(state.iterations()) * DELEGATES * 3,
                                                        benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
                                                        benchmark::Counter::OneK::kIs1000);
    for (int d = 0; d < DELEGATES; d++) {
        if (warm) {
            ggml_cpool_ctx_free(ctxs[d]);
        } else {
            cudaStreamDestroy(streams[d]);
        }
    }
}

void HitPair(benchmark::State & state) {
    if (!have_gpu(state)) {
        return;
    }
    ggml_cpool_ctx_params p = ggml_cpool_ctx_default_params();
    p.kind[0]               = ggml_cpool_kind(state.range(0));
    ggml_cpool_ctx_t ctx    = nullptr;
    ggml_cpool_t     pool   = nullptr;
    void *           ptr    = nullptr;
    size_t           actual = 0;
    // the first pair fills the pool; every timed one is served from it
    if (ggml_cpool_ctx_create(&p, &ctx) != GGML_CPOOL_STATUS_OK ||
        ggml_cpool_ctx_get_pool(ctx, 0, &pool) != GGML_CPOOL_STATUS_OK ||
        ggml_cpool_alloc(pool, HIT_BYTES, 0, &ptr, &actual) != GGML_CPOOL_STATUS_OK) {
        state.SkipWithError(ggml_cpool_last_error());
        ggml_cpool_ctx_free(ctx);
        return;
    }
    ggml_cpool_free(pool, ptr, actual);
    for (auto _ : state) {
        if (ggml_cpool_alloc(pool, HIT_BYTES, 0, &ptr, &actual) != GGML_CPOOL_STATUS_OK) {
            state.SkipWithError("alloc failed");
            break;
        }
        ggml_cpool_free(pool, ptr, actual);
    }
    ggml_cpool_stats stats{};
    if (ggml_cpool_get_stats(pool, &stats) == GGML_CPOOL_STATUS_OK) {
        state.counters["driver_allocs"] = double(stats.driver_allocs); // at most 1: every timed pair was a hit
    }
    ggml_cpool_ctx_free(ctx);
}

void CaptureQuery(benchmark::State & state) {
    if (!have_gpu(state)) {
        return;
    }
    decltype(&::cuStreamIsCapturing) driver_query = nullptr;
    cudaDriverEntryPointQueryResult  found        = cudaDriverEntryPointSymbolNotFound;
    if (state.range(0) == QUERY_DRIVER &&
        (cudaGetDriverEntryPointByVersion("cuStreamIsCapturing", reinterpret_cast<void **>(&driver_query), DRIVER_ABI,
                                          cudaEnableDefault, &found) != cudaSuccess ||
         found != cudaDriverEntryPointSuccess)) {
        state.SkipWithError("cuStreamIsCapturing not found");
        return;
    }
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    for (auto _ : state) {
        if (driver_query != nullptr) {
            CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
            if (driver_query(static_cast<CUstream>(s), &status) != CUDA_SUCCESS) {
                state.SkipWithError("cuStreamIsCapturing failed");
                break;
            }
            benchmark::DoNotOptimize(status);
        } else {
            cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
            if (!check(state, cudaStreamIsCapturing(s, &status))) {
                break;
            }
            benchmark::DoNotOptimize(status);
        }
    }
    cudaStreamDestroy(s);
}

constexpr int64_t SIZES[] = { int64_t(1) << 20, int64_t(16) << 20, int64_t(256) << 20, int64_t(1) << 30 };

void sizes_by_warmth(benchmark::internal::Benchmark * b) {
    for (int64_t size : SIZES) {
        for (int64_t warm : { 0, 1 }) {
            b->Args({ size, warm });
        }
    }
}

void sizes(benchmark::internal::Benchmark * b) {
    for (int64_t size : SIZES) {
        b->Arg(size);
    }
}

// every benchmark: five repetitions, reported as their aggregates
void repeated(benchmark::internal::Benchmark * b) {
    b->Repetitions(5)->ReportAggregatesOnly(true);
}

// the same, on the wall clock in microseconds
void timed(benchmark::internal::Benchmark * b) {
    repeated(b->UseRealTime()->Unit(benchmark::kMicrosecond));
}

BENCHMARK(StreamOrdered)->Apply(sizes_by_warmth)->ArgNames({ "bytes", "warm" })->Apply(timed);
BENCHMARK(AsyncPool)->Apply(sizes)->ArgNames({ "bytes" })->Apply(timed);
BENCHMARK(Delegates)
    ->Arg(DELEGATES_RAW_COLD)
    ->Arg(DELEGATES_RAW_WARM)
    ->Arg(DELEGATES_MODULE)
    ->ArgNames({ "mode" })
    ->Apply(timed);
BENCHMARK(HitPair)
    ->Arg(GGML_CPOOL_KIND_LEGACY)
    ->Arg(GGML_CPOOL_KIND_PLAIN)
    ->Arg(GGML_CPOOL_KIND_VMM)
    ->Arg(GGML_CPOOL_KIND_ASYNC)
    ->ArgNames({ "kind" })
    ->Apply(repeated);
BENCHMARK(CaptureQuery)->Arg(QUERY_RUNTIME)->Arg(QUERY_DRIVER)->ArgNames({ "api" })->Apply(repeated);

} // namespace

BENCHMARK_MAIN();
