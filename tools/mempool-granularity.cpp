// mempool-granularity: how much device memory a stream-ordered pool maps for one request, the unit
// the async kind's total memory moves by. For the device's default pool and for pools made with
// cudaMemPoolCreate (maxSize 0, 2, 8, 16, 32, 64 MiB, 1 GiB, 16 GiB), each request size is
// allocated once and then a second time, on an emptied pool (trimmed to 0, threshold raised so
// nothing is given back between the two); printed: the pool's ReservedMemCurrent and the fall of
// cudaMemGetInfo's free memory after each, and cudaMalloc's fall for comparison.
//
//   mempool-granularity [device]      exit 1 with the failing call where a CUDA call fails

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr size_t KiB        = size_t(1) << 10;
constexpr size_t MiB        = size_t(1) << 20;
constexpr size_t GiB        = size_t(1) << 30;
const size_t     REQUESTS[] = { 64 * KiB, 1 * MiB, 3 * MiB, 6 * MiB, 12 * MiB, 20 * MiB, 33 * MiB, 100 * MiB };
// cudaMemPoolProps::maxSize of the created pools (0: the system's default)
const size_t     MAX_SIZES[] = { 0, 2 * MiB, 8 * MiB, 16 * MiB, 32 * MiB, 64 * MiB, 1 * GiB, 16 * GiB };

bool ok(cudaError_t e, const char * what) {
    if (e == cudaSuccess) {
        return true;
    }
    std::printf("%s: %s\n", what, cudaGetErrorString(e));
    cudaGetLastError();
    return false;
}

#define CHECK(call)               \
    do {                          \
        if (!ok((call), #call)) { \
            return false;         \
        }                         \
    } while (0)

double mib(double bytes) {
    return bytes / double(MiB);
}

struct reading {
    uint64_t reserved = 0;
    size_t   free     = 0;
};

bool read(cudaMemPool_t pool, reading & r) {
    size_t total = 0;
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &r.reserved));
    CHECK(cudaMemGetInfo(&r.free, &total));
    return true;
}

// one request size: the first and the second allocation's footprint on an emptied pool
bool probe_size(const char * name, cudaMemPool_t pool, cudaStream_t stream, size_t bytes) {
    CHECK(cudaMemPoolTrimTo(pool, 0));
    CHECK(cudaStreamSynchronize(stream));
    reading base, one, two;
    void *  a = nullptr, *b = nullptr;
    if (!read(pool, base)) {
        return false;
    }
    if (!ok(cudaMallocFromPoolAsync(&a, bytes, pool, stream), "first request")) {
        std::printf("%-20s %9.3f MiB: refused (the pool's maxSize)\n", name, mib(bytes));
        return true;
    }
    CHECK(cudaStreamSynchronize(stream));
    if (!read(pool, one)) {
        return false;
    }
    const bool second = ok(cudaMallocFromPoolAsync(&b, bytes, pool, stream), "second request");
    CHECK(cudaStreamSynchronize(stream));
    if (second && !read(pool, two)) {
        return false;
    }
    std::printf("%-20s %9.3f MiB: reserved %7.2f MiB (free -%7.2f)", name, mib(bytes),
                mib(one.reserved - base.reserved), mib(double(base.free) - double(one.free)));
    if (second) {
        std::printf(", with a second %7.2f MiB (free -%7.2f)\n", mib(two.reserved - base.reserved),
                    mib(double(base.free) - double(two.free)));
        CHECK(cudaFreeAsync(b, stream));
    } else {
        std::printf(", a second refused (the pool's maxSize)\n");
    }
    CHECK(cudaFreeAsync(a, stream));
    CHECK(cudaStreamSynchronize(stream));
    return true;
}

bool probe_pool(const char * name, cudaMemPool_t pool, cudaStream_t stream) {
    uint64_t keep = UINT64_MAX; // nothing given back at the synchronizes between the two requests
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    for (size_t bytes : REQUESTS) {
        if (!probe_size(name, pool, stream, bytes)) {
            return false;
        }
    }
    CHECK(cudaMemPoolTrimTo(pool, 0));
    return true;
}

bool probe_created(int device, cudaStream_t stream, size_t max_size) {
    cudaMemPoolProps props = {};
    props.allocType        = cudaMemAllocationTypePinned;
    props.location.type    = cudaMemLocationTypeDevice;
    props.location.id      = device;
    props.maxSize          = max_size;
    cudaMemPool_t pool     = nullptr;
    CHECK(cudaMemPoolCreate(&pool, &props));
    char name[48];
    std::snprintf(name, sizeof name, "created, max %zu MiB", max_size / MiB);
    const bool done = probe_pool(name, pool, stream);
    CHECK(cudaMemPoolDestroy(pool));
    return done;
}

bool probe_malloc(size_t bytes) {
    size_t before = 0, after = 0, total = 0;
    void * p = nullptr;
    CHECK(cudaMemGetInfo(&before, &total));
    CHECK(cudaMalloc(&p, bytes));
    CHECK(cudaMemGetInfo(&after, &total));
    CHECK(cudaFree(p));
    std::printf("%-20s %9.3f MiB: free -%7.2f\n", "cudaMalloc", mib(bytes), mib(double(before) - double(after)));
    return true;
}

bool run(int device) {
    CHECK(cudaSetDevice(device));
    CHECK(cudaFree(nullptr)); // the context first, so its memory is not counted against a request
    cudaStream_t stream = nullptr;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaMemPool_t def  = nullptr;
    bool          done = ok(cudaDeviceGetDefaultMemPool(&def, device), "cudaDeviceGetDefaultMemPool") &&
                probe_pool("default pool", def, stream);
    for (size_t max_size : MAX_SIZES) {
        done = done && probe_created(device, stream, max_size);
    }
    for (size_t bytes : REQUESTS) {
        done = done && probe_malloc(bytes);
    }
    CHECK(cudaStreamDestroy(stream));
    return done;
}

} // namespace

int main(int argc, char ** argv) {
    return run(argc > 1 ? std::atoi(argv[1]) : 0) ? 0 : 1;
}
