// Holds device memory until it is killed, so that only <free MiB> stay free on the current device
// (scripts/llama.sh pressure: another tenant of the GPU). Prints one line once it holds it.
//
//   nvcc -o hold-memory scripts/hold-memory.cu && hold-memory 2048
#include <cuda_runtime.h>
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>

namespace {

constexpr size_t MiB = size_t(1) << 20;
// the driver hands memory out in pages of 2 MiB: smaller steps would not move what is free
constexpr size_t STEP = 2 * MiB;

bool free_bytes(size_t * out) {
    size_t            total = 0;
    const cudaError_t err   = cudaMemGetInfo(out, &total);
    if (err != cudaSuccess) {
        std::fprintf(stderr, "hold-memory: cudaMemGetInfo: %s\n", cudaGetErrorString(err));
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char ** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: hold-memory <MiB to leave free>\n");
        return 2;
    }
    const size_t        target = std::strtoull(argv[1], nullptr, 10) * MiB;
    std::vector<void *> held;
    size_t              free = 0;
    if (!free_bytes(&free)) {
        return 1;
    }
    // what is too much free, in whole pages, taken in the largest blocks the driver grants:
    // a block's real cost is known only after the driver placed it
    size_t step = SIZE_MAX;
    while (free >= target + STEP && step >= STEP) {
        step     = std::min(step, (free - target) / STEP * STEP);
        void * p = nullptr;
        if (cudaMalloc(&p, step) != cudaSuccess) {
            (void) cudaGetLastError();
            step /= 2;
            continue;
        }
        held.push_back(p);
        if (!free_bytes(&free)) {
            return 1;
        }
        step = SIZE_MAX;
    }
    std::printf("hold-memory: holding %zu blocks, %zu MiB free (asked %zu)\n", held.size(), free / MiB, target / MiB);
    std::fflush(stdout);
    signal(SIGTERM, [](int) { _exit(0); }); // the driver gives the memory back with the process
    for (;;) {
        pause();
    }
}
