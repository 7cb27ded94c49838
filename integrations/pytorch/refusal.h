#pragma once
// Why the allocator refused a request, as PyTorch's caller is to see it. The library's exported
// allocation function raises it (torch-raise.h) instead of returning NULL: PyTorch does not check
// the pointer, so a NULL became a tensor whose first kernel wrote through it, an illegal address
// that ends every later CUDA call of the process. Plain data, so that it crosses from the core to
// the file built against torch's headers whatever C++ ABI each was compiled with.

#include <cstddef>

namespace gcp_torch {

struct refusal {
    enum class kind {
        none,
        out_of_memory, // the device after every recovery, or a VMM pool's range: torch.OutOfMemoryError
        bad_setting,   // a variable the library reads has a value it does not take: ValueError
        failure,       // anything else (no device, no stream slot, a driver error): RuntimeError
    };
    // the module's line (up to 1024 bytes) and the library's sentences around it
    static constexpr size_t MESSAGE_LENGTH = 2048;

    kind what                    = kind::none;
    char message[MESSAGE_LENGTH] = "";

    // sets the kind and the message, printf-style
    void set(kind k, const char * fmt, ...) __attribute__((format(printf, 3, 4)));
};

// a size as PyTorch's allocator writes one in its messages: "512 bytes", "1.50 KiB", "20.00 MiB",
// "200.00 GiB"
struct size_text {
    char text[32];
};
size_text format_size(size_t bytes);

// what an out-of-memory refusal says: PyTorch's words for the request and the device first (so
// that what matches PyTorch's own message matches this one), then the pools'
struct out_of_memory_facts {
    size_t       size; // what PyTorch asked for
    int          device;
    bool         memory_known; // free and total were read
    size_t       free, total;
    const char * kind;           // the kind of the pool that refused
    size_t       live, reserved; // that pool's
    int          other_pools;    // the device's other stream pools, trimmed before the refusal
    size_t       given_back;     // what trimming them gave back
    const char * reason;         // the pool's own line
};
void refuse_out_of_memory(refusal * why, const out_of_memory_facts & f);

} // namespace gcp_torch
