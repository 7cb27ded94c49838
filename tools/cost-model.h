#pragma once
// Modelled driver time: what the driver calls a replay makes would cost on an NVIDIA H200
// (CUDA 13.0), from the cost table in docs/results/README.md (Driver primitives; median of 50, one
// run). Each figure is a pair, the allocation and its release, measured at 1 MiB, 16 MiB, 256 MiB
// and 1 GiB; between those sizes the cost is interpolated linearly, below 1 MiB it is the 1 MiB
// cost, above 1 GiB the last segment is extended. A model, not a measurement: every report says
// "modelled".

#include <cstddef>

namespace replay {

enum class cost : int {
    malloc_pair = 0, // cudaMalloc + cudaFree
    async_cold,      // cudaMallocAsync + cudaFreeAsync + synchronize, release threshold 0
    async_warm,      // the same, release threshold at the maximum (the pool keeps its memory)
    vmm_pair,        // cuMemCreate + map + set access + unmap + release
};

struct cost_point {
    double mib;
    double us[4]; // by cost
};

constexpr cost_point H200_COSTS[] = {
    { 1, { 84, 122, 3.2, 74 } },
    { 16, { 100, 122, 3.2, 87 } },
    { 256, { 265, 812, 3.3, 296 } },
    { 1024, { 818, 3324, 3.4, 845 } },
};
constexpr size_t H200_COST_POINTS = sizeof(H200_COSTS) / sizeof(H200_COSTS[0]);

inline double modelled_us(cost c, size_t bytes) {
    const double mib = double(bytes) / double(size_t(1) << 20);
    const int    k   = int(c);
    if (mib <= H200_COSTS[0].mib) {
        return H200_COSTS[0].us[k];
    }
    size_t i = 1;
    while (i + 1 < H200_COST_POINTS && mib > H200_COSTS[i].mib) {
        i++;
    }
    const cost_point & a = H200_COSTS[i - 1];
    const cost_point & b = H200_COSTS[i];
    return a.us[k] + (b.us[k] - a.us[k]) * (mib - a.mib) / (b.mib - a.mib);
}

} // namespace replay
